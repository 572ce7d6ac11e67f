"""DLQ traffic through a project's own helpers (issue 12): send wrappers, list stores, record
classes, transports' ``pop``, ``client.call("SendMessage", ...)``; each with look-alikes that
must stay silent (a work queue through the same wrapper, a restore, a human-triggered replay,
an opaque payload)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from retrylint.engine import check_path, check_source, settings_with
from retrylint.model import DeadLetterKind

DLQ_CODES = ("RTY401", "RTY402", "RTY403")
SETTINGS = settings_with(DLQ_CODES)


def report(code: str):
    found = check_source(textwrap.dedent(code), "case.py", SETTINGS, want_policies=True)
    assert found.error is None, found.error
    return found


def codes(code: str):
    return [(f.code, f.location.line) for f in report(code).findings]


# ---------------------------------------------------------------- send wrappers

_VS_QUEUE = '''
import json
import redis.asyncio as redis

class RedisQueue:
    def __init__(self, url):
        self._client = redis.from_url(url)

    async def publish(self, queue: str, message: "QueueMessage") -> None:
        data = {"id": message.id, "payload": json.dumps(message.payload)}
        await self._client.xadd(queue, data)

    async def subscribe(self, queue, consumer, retry_policy):
        while True:
            results = await self._client.xreadgroup("g", "c", {queue: ">"}, count=10)
            for _, messages in results:
                for msg_id, data in messages:
                    message = QueueMessage(id=data["id"], retry_count=int(data["retry_count"]), payload=data["payload"])
                    try:
                        await consumer.handle(message)
                    except Rejected as e:
                        {call}
                    await self._client.xack(queue, "g", msg_id)

class QueueMessage:
    def __init__(self, id, retry_count, payload):
        self.id = id
        self.retry_count = retry_count
        self.payload = payload
'''


def test_wrapper_around_redis_xadd_to_a_dlq_is_a_dead_letter_write():
    found = report(_VS_QUEUE.replace("{call}", "await self.publish(retry_policy.dead_letter_queue, message)"))
    writes = [op for op in found.dead_letters if op.kind is DeadLetterKind.WRITE]
    assert [(op.queue, op.missing) for op in writes] == [("retry_policy.dead_letter_queue", ("reason", "first_received"))]
    assert [f.code for f in found.findings] == ["RTY402"]


def test_same_wrapper_to_the_work_queue_is_not_a_dead_letter():
    assert codes(_VS_QUEUE.replace("{call}", "await self.publish(queue, message)")) == []


def test_wrapper_carrying_the_exception_keeps_the_reason():
    found = report(_VS_QUEUE.replace(
        "{call}", "await self.publish(retry_policy.dead_letter_queue, message, error=str(e))"))
    assert [op.missing for op in found.dead_letters] == [("first_received",)]


def test_opaque_payload_from_a_builder_is_not_judged():
    assert codes(_VS_QUEUE.replace(
        "{call}", "await self.publish(retry_policy.dead_letter_queue, self.dead_letter_record(message, e))")) == []


def test_helper_of_this_module_that_sends_nothing_is_not_a_send():
    assert codes(
        """
        from dataclasses import dataclass

        class EventBus:
            def publish(self, topic, event):
                for handler in self.handlers.get(topic, []):
                    handler(event)

        def fail(bus: EventBus, event: "OrderEvent", exc):
            bus.publish("orders.dlq", event)
        """
    ) == []


def test_pika_publish_helper_in_a_consumer_callback():
    code = """
        import pika

        def publish_to(channel, queue, body):
            channel.basic_publish(exchange="", routing_key=queue, body=body)

        def on_message(ch, method, properties, body):
            try:
                handle(body)
            except Exception:
                publish_to(ch, "{queue}", body)
            ch.basic_ack(delivery_tag=method.delivery_tag)

        connection = pika.BlockingConnection(pika.ConnectionParameters("localhost"))
        channel = connection.channel()
        channel.basic_consume(queue="orders", on_message_callback=on_message)
        """
    assert [c for c, _ in codes(code.replace("{queue}", "orders.dlq"))] == ["RTY402"]
    assert codes(code.replace("{queue}", "orders.retry")) == []


def test_kafka_produce_wrapper_with_the_failed_record():
    found = report(
        """
        from confluent_kafka import Consumer, Message, Producer

        class Worker:
            def __init__(self, conf):
                self.producer = Producer(conf)
                self.dlq_topic = "orders.dlq"

            def _produce(self, topic, value, headers=None):
                self.producer.produce(topic, value=value, headers=headers)

            def on_failure(self, record: Message, exc: Exception):
                self._produce(self.dlq_topic, record.value(), headers=[("error", str(exc).encode())])
        """
    )
    assert [(op.queue, op.missing) for op in found.dead_letters] == [("self.dlq_topic", ("attempts", "first_received"))]


# ---------------------------------------------------------------- list stores and record classes


def test_in_process_bus_keeps_dead_letters_in_a_list():
    found = report(
        """
        class Bus:
            def __init__(self):
                self.dead_letters = []
                self.dlq_ids = []

            def _dead(self, event, exc):
                self.dead_letters.append((event.topic, event, exc))
                self.dlq_ids.append(event.id)
        """
    )
    assert [(op.queue, op.missing) for op in found.dead_letters] == [("self.dead_letters", ("attempts", "first_received"))]


def test_a_local_list_of_dead_letters_is_a_result_not_a_store():
    assert codes(
        """
        import boto3
        sqs = boto3.client("sqs")

        def inspect(dlq_url):
            dead_letters = []
            for m in sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10).get("Messages", []):
                dead_letters.append({"id": m["MessageId"], "body": m["Body"]})
            return dead_letters
        """
    ) == []


def test_stub_broker_nack_appends_the_message_as_is():
    found = report(
        """
        import queue

        class StubConsumer:
            def __init__(self):
                self.queue = queue.Queue()
                self.dead_letters = []

            def nack(self, message):
                self.queue.task_done()
                self.dead_letters.append(message)
        """
    )
    assert [f.code for f in found.findings] == ["RTY402"]


_STORE = '''
from dataclasses import dataclass, field
import time

@dataclass
class DeadLetter:
    payload: object
    error: str
    attempts: int
    {extra}

class Client:
    async def _dead_letter(self, msg: "QueueMessage", error: str, attempts: int) -> None:
        await self.store.dlq_insert(DeadLetter(payload=msg.payload, error=error, attempts=attempts))
'''


def test_record_class_without_first_received_time():
    found = report(_STORE.replace("{extra}", ""))
    assert [(op.queue, op.missing) for op in found.dead_letters] == [("dlq_insert", ("first_received",))]


def test_record_class_that_sets_the_first_received_time_itself():
    assert codes(_STORE.replace("{extra}", "first_received_at: float = field(default_factory=time.time)")) == []


def test_record_class_we_cannot_read_is_not_judged():
    assert codes(_STORE.replace("DeadLetter(payload", "ImportedDeadLetter(payload")) == []


def test_record_class_from_another_module_of_the_tree(tmp_path: Path):
    package = tmp_path / "events"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ports.py").write_text(textwrap.dedent(
        """
        from dataclasses import dataclass

        @dataclass
        class DeadLetter:
            payload: object
            error: str
            attempts: int
            redriven_at: str = None
        """
    ))
    client = package / "client.py"
    client.write_text(textwrap.dedent(
        """
        from .ports import DeadLetter

        class Client:
            async def _dead_letter(self, msg: "QueueMessage", error: str, attempts: int) -> None:
                await self.store.dlq_insert(DeadLetter(payload=msg.payload, error=error, attempts=attempts))
        """
    ))
    found = check_path(client, "client.py", SETTINGS, want_policies=True)
    assert [(f.code, f.location.line) for f in found.findings] == [("RTY402", 6)]
    assert any(path.endswith("ports.py") for path, _ in found.dependencies)


# ---------------------------------------------------------------- replays through helpers

_REDRIVE = '''
def redrive(transport, dlq, to_queue=None, max=0):
    popped = []
    while max == 0 or len(popped) < max:
        message = transport.pop(dlq, 1.0)
        if message is None:
            break
        popped.append(message)
    batch = [(m, decode(m.body)) for m in popped]
    for message, envelope in batch:
        if envelope is None:
            publish_keeping_route(transport, dlq, message.body, message.key)  # restore unchanged
            continue
        target = to_queue or envelope["source_queue"]
        reset = dict(envelope)
        reset["attempts"] = 0
        publish_keeping_route(transport, target, encode(reset), message.key)
        {pace}
'''


def test_redrive_through_a_transport_pop_and_a_publish_helper():
    found = report(_REDRIVE.replace("{pace}", ""))
    assert [(f.code, f.location.line) for f in found.findings] == [("RTY403", 10)]
    # The restore into the DLQ it came from is neither a write nor a replay.
    assert [op.kind for op in found.dead_letters] == [DeadLetterKind.REPLAY]


def test_paced_redrive_is_not_reported():
    assert codes("import time\n" + _REDRIVE.replace("{pace}", "time.sleep(0.1)")) == []


def test_click_replay_through_helpers_is_human_triggered():
    found = report(
        """
        import json
        import boto3
        import click

        @click.command()
        @click.option("--dlq-name")
        @click.option("--queue-url")
        def sqs(dlq_name, queue_url):
            client = boto3.client("sqs")
            dlq_url = get_queue_url(client, queue_name=dlq_name)
            for message in read_messages(client=client, queue_url=dlq_url):
                task = json.loads(message["Body"])
                requeue(client=client, message_id=message["MessageId"], queue_url=queue_url, payload=task)
        """
    )
    assert [f.code for f in found.findings] == ["RTY403"]
    assert [op.automatic for op in found.dead_letters] == [False]


_AIO = '''
from aws_util.aio._engine import async_client

async def reprocess_sqs_dlq(dlq_url, target_queue_url, max_messages=100):
    sqs = async_client("sqs")
    total = 0
    while total < max_messages:
        resp = await sqs.call("ReceiveMessage", QueueUrl=dlq_url, MaxNumberOfMessages=10)
        messages = resp.get("Messages", [])
        if not messages:
            break
        total += len(messages)
        for msg in messages:
            await sqs.call("{operation}", QueueUrl=target_queue_url, MessageBody=msg["Body"])
'''


def test_operation_by_name_sdk_wrapper_replay():
    assert codes(_AIO.replace("{operation}", "SendMessage")) == [("RTY403", 7)]


def test_operation_by_name_that_is_not_a_send():
    assert codes(_AIO.replace("{operation}", "GetQueueAttributes")) == []


def test_dlq_depth_read_by_operation_name_is_nothing():
    assert report(
        """
        async def depth(sqs, dlq_url):
            attrs = await sqs.call("GetQueueAttributes", QueueUrl=dlq_url, AttributeNames=["All"])
            return int(attrs["Attributes"]["ApproximateNumberOfMessages"])
        """
    ).dead_letters == []


def test_environment_pop_of_a_dlq_name_is_no_receive():
    assert codes(
        """
        import os
        import boto3
        sqs = boto3.client("sqs")

        def forward(work_url):
            dlq_url = os.environ.pop("DLQ_URL")
            sqs.send_message(QueueUrl=work_url, MessageBody=dlq_url)
        """
    ) == []


# ---------------------------------------------------------------- a generic drain loop fed by a DLQ

_DRAIN = '''
import boto3

def drain_queue(queue_url, handler, max_messages=None):
    sqs = boto3.client("sqs")
    processed = 0
    while max_messages is None or processed < max_messages:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            break
        for msg in messages:
            handler(msg)
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"])
            processed += 1
    return processed

def replay_dlq(dlq_url, target_url, max_messages=None):
    def _replay(msg):
        kwargs = {"QueueUrl": target_url, "MessageBody": msg["Body"]}
        boto3.client("sqs").{send}(**kwargs)

    return drain_queue({source}, handler=_replay, max_messages=max_messages)
'''


def test_drain_of_a_dlq_with_a_republishing_handler_is_an_unpaced_replay():
    found = report(_DRAIN.replace("{send}", "send_message").replace("{source}", "dlq_url"))
    assert [(f.code, f.location.line) for f in found.findings] == [("RTY403", 22)]
    assert "pace it" in found.findings[0].message


def test_drain_of_a_work_queue_or_with_a_handler_that_does_not_publish_is_nothing():
    assert codes(_DRAIN.replace("{send}", "send_message").replace("{source}", "target_url")) == []
    assert codes(_DRAIN.replace("{send}", "get_queue_attributes").replace("{source}", "dlq_url")) == []


def test_move_task_whose_rate_is_written_into_its_kwargs_later_is_paced():
    assert codes(
        """
        import boto3

        def start_move(source_arn, rate=None):
            kwargs = {"SourceArn": source_arn}
            if rate is not None:
                kwargs["MaxNumberOfMessagesPerSecond"] = rate
            return boto3.client("sqs").start_message_move_task(**kwargs)
        """
    ) == []


def test_a_store_copying_the_dead_letter_it_was_given_is_not_a_new_one():
    # (demystify_events' in-memory adapter; the dead letter is judged where the client builds it)
    assert codes(_STORE.replace("{extra}", "").split("class Client")[0] + '''
class MemoryStore:
    def __init__(self):
        self.dlq = []

    async def dlq_insert(self, dl: DeadLetter) -> bool:
        self.dlq.append(DeadLetter(payload=dl.payload, error=dl.error, attempts=dl.attempts))
        return True
''') == []


def test_dlq_messages_dumped_to_a_file_or_handed_to_a_user_callback_are_no_replay_and_no_write():
    assert report(
        """
        import boto3
        sqs = boto3.client("sqs")

        class Inspector:
            def dump(self, dlq_url, target_file):
                for m in sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10).get("Messages", []):
                    write_message(target_file, m["Body"])

            def send_to_dlq(self, msg, reason):
                self.dlq_handler(msg, reason)
        """
    ).dead_letters == []
