"""RTY403: a replay moves dead letters back with no rate limit or no batch limit."""

from __future__ import annotations

from typing import Iterable

from ..model import DeadLetterKind, DeadLetterOperation
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class UnthrottledDlqReplay(Rule):
    """
    ## What it does
    Finds replays (a loop that reads a dead-letter queue and publishes its
    messages to a work queue, or a broker-side move such as SQS
    `start_message_move_task` or redis `rpoplpush`/`lmove`) that are not paced
    (no `sleep`, rate limiter or token bucket in the loop; no
    `MaxNumberOfMessagesPerSecond`) or not bounded (no `range(limit)`, no
    `islice`, no counter checked against a limit: the loop drains the whole
    queue, or reads it forever).

    One bounded receive (`MaxNumberOfMessages=10`, `max_message_count=limit`) is a
    bounded batch. Consumer callbacks are judged by RTY401, not here.

    ## Why is this bad?
    Dead letters pile up while something is broken: thousands of them. Putting
    them all back at once makes a new spike on the service that has just
    recovered, and can knock it over again. A replay takes a `--limit` and a rate.

    ## Example
    ```python
    while True:
        resp = sqs.receive_message(QueueUrl=DLQ_URL, MaxNumberOfMessages=10)
        if not resp.get("Messages"):
            break
        for m in resp["Messages"]:
            sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=m["Body"])
            sqs.delete_message(QueueUrl=DLQ_URL, ReceiptHandle=m["ReceiptHandle"])
    ```

    ## Use instead
    ```python
    moved = 0
    while moved < args.limit:
        resp = sqs.receive_message(QueueUrl=DLQ_URL, MaxNumberOfMessages=10)
        if not resp.get("Messages"):
            break
        for m in resp["Messages"]:
            sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=m["Body"])
            sqs.delete_message(QueueUrl=DLQ_URL, ReceiptHandle=m["ReceiptHandle"])
            moved += 1
            time.sleep(1 / args.rate)
    ```
    """

    code = "RTY403"
    name = "unthrottled-dlq-replay"
    summary = "A dead-letter replay has no rate limit or no batch limit"

    VALID = [
        Valid(
            """
            import argparse, time
            import boto3

            def main():
                parser = argparse.ArgumentParser(prog="dlq replay")
                parser.add_argument("--queue", required=True)
                parser.add_argument("--since", required=True)
                parser.add_argument("--limit", type=int, default=500)
                args = parser.parse_args()
                sqs = boto3.client("sqs")
                dlq_url = sqs.get_queue_url(QueueName=f"{args.queue}-dlq")["QueueUrl"]
                queue_url = sqs.get_queue_url(QueueName=args.queue)["QueueUrl"]
                moved = 0
                while moved < args.limit:
                    resp = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)
                    if not resp.get("Messages"):
                        break
                    for m in resp["Messages"]:
                        sqs.send_message(QueueUrl=queue_url, MessageBody=m["Body"])
                        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=m["ReceiptHandle"])
                        moved += 1
                        time.sleep(0.05)

            if __name__ == "__main__":
                main()
            """,
            "the doctrine's replay tool: --limit and a sleep between messages",
        ),
        Valid(
            """
            import boto3

            def redrive(dlq_arn):
                boto3.client("sqs").start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=10)
            """,
            "an SQS move task with a rate",
        ),
        Valid(
            """
            from itertools import islice
            from confluent_kafka import Consumer, Producer

            def replay(limit, bucket):
                consumer = Consumer({"group.id": "replay"})
                consumer.subscribe(["orders.DLQ"])
                producer = Producer({"bootstrap.servers": "kafka:9092"})
                for _ in range(limit):
                    msg = consumer.poll(5.0)
                    if msg is None:
                        break
                    bucket.consume(1)
                    producer.produce("orders", msg.value())
            """,
            "range(limit) and a token bucket",
        ),
        Valid(
            """
            import time
            import redis

            def replay(limit: int, rate: float):
                r = redis.Redis()
                for _ in range(limit):
                    if r.rpoplpush("orders:dlq", "orders") is None:
                        return
                    time.sleep(1 / rate)
            """,
            "redis rpoplpush, bounded and paced",
        ),
        Valid(
            """
            import aio_pika
            from aiolimiter import AsyncLimiter

            async def replay(url: str, limit: int):
                connection = await aio_pika.connect_robust(url)
                channel = await connection.channel()
                dlq = await channel.declare_queue("orders.dlq", passive=True)
                limiter = AsyncLimiter(20, 1)
                moved = 0
                async with dlq.iterator() as messages:
                    async for message in messages:
                        async with limiter:
                            await channel.default_exchange.publish(aio_pika.Message(message.body), routing_key="orders")
                        await message.ack()
                        moved += 1
                        if moved >= limit:
                            break
            """,
            "an aio-pika iterator with a counter and an async limiter",
        ),
        Valid(
            """
            import boto3

            sqs = boto3.client("sqs")

            def dlq_depth(dlq_url):
                attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
                return int(attributes["Attributes"]["ApproximateNumberOfMessages"])
            """,
            "counting the DLQ's depth is not a replay",
        ),
        Valid(
            """
            import time
            import boto3

            def replay_one_batch(dlq_url, queue_url):
                sqs = boto3.client("sqs")
                resp = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)
                for m in resp.get("Messages", []):
                    sqs.send_message(QueueUrl=queue_url, MessageBody=m["Body"])
                    sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=m["ReceiptHandle"])
                    time.sleep(0.2)
            """,
            "one receive returns at most ten messages: a bounded batch, paced",
        ),
        Valid(
            """
            import redis

            r = redis.Redis()

            def pause_between_messages():
                pass

            def replay(limit):
                for item in r.lrange("orders:dlq", 0, limit - 1):
                    r.lpush("orders", item)
                    pause_between_messages()
            """,
            "a bounded range of the list, paced by a call named like a pause",
        ),
        Valid(
            """
            import time
            from google.cloud import pubsub_v1

            def replay(project):
                subscriber = pubsub_v1.SubscriberClient()
                publisher = pubsub_v1.PublisherClient()
                response = subscriber.pull(subscription=subscriber.subscription_path(project, "orders-dlq-sub"), max_messages=50)
                for received in response.received_messages:
                    publisher.publish(publisher.topic_path(project, "orders"), received.message.data)
                    time.sleep(0.1)
            """,
            "one Pub/Sub pull of at most 50 messages, paced",
        ),
        Valid(
            """
            import boto3

            sqs = boto3.client("sqs")

            def replay(dlq_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)
                    if not resp.get("Messages"):
                        break
                    for m in resp["Messages"]:
                        sqs.send_message(QueueUrl=route_for(m), MessageBody=m["Body"])
            """,
            "the destination is computed per message: we cannot tell it is a work queue",
        ),
        Valid(
            """
            import time
            import redis

            def replay(seconds):
                r = redis.Redis()
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    item = r.rpop("orders:dlq")
                    if item is None:
                        break
                    r.lpush("orders", item)
                    time.sleep(0.1)
            """,
            "bounded by a deadline and paced",
        ),
        Valid(
            """
            import pika

            def requeue(ch, method, properties, body):
                ch.basic_publish(exchange="", routing_key="orders", body=body)

            channel = pika.BlockingConnection().channel()
            channel.basic_consume(queue="orders.dlq", on_message_callback=requeue)
            """,
            "a consumer callback: RTY401's business, not a replay loop",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import boto3

            def replay(dlq_url, queue_url):
                sqs = boto3.client("sqs")
                while True:
                    resp = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10)
                    if not resp.get("Messages"):
                        break
                    for m in resp["Messages"]:
                        sqs.send_message(QueueUrl=queue_url, MessageBody=m["Body"])
                        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=m["ReceiptHandle"])
            """,
            line=6,
            message="no rate limit and no batch limit",
        ),
        Invalid(
            """
            import boto3

            def redrive(dlq_arn):
                boto3.client("sqs").start_message_move_task(SourceArn=dlq_arn)
            """,
            line=5,
            message="MaxNumberOfMessagesPerSecond",
        ),
        Invalid(
            """
            import click, pika

            @click.command()
            def replay():
                channel = pika.BlockingConnection().channel()
                while True:
                    method, properties, body = channel.basic_get("orders.dlq")
                    if method is None:
                        break
                    channel.basic_publish(exchange="", routing_key="orders", body=body)
                    channel.basic_ack(method.delivery_tag)
            """,
            line=7,
        ),
        Invalid(
            """
            import time
            import typer
            from kafka import KafkaConsumer, KafkaProducer

            app = typer.Typer()

            @app.command()
            def replay():
                consumer = KafkaConsumer("orders-dlq", consumer_timeout_ms=10_000)
                producer = KafkaProducer()
                for record in consumer:
                    producer.send("orders", value=record.value)
                    time.sleep(0.05)
            """,
            line=12,
            message="no batch limit",
        ),
        Invalid(
            """
            import redis

            def replay():
                r = redis.Redis()
                for item in r.lrange("orders:dlq", 0, -1):
                    r.rpush("orders", item)
                r.delete("orders:dlq")
            """,
            line=6,
        ),
        Invalid(
            """
            from google.cloud import pubsub_v1

            def replay(project):
                subscriber = pubsub_v1.SubscriberClient()
                publisher = pubsub_v1.PublisherClient()
                subscription = subscriber.subscription_path(project, "orders-dead-letter-sub")
                while True:
                    response = subscriber.pull(request={"subscription": subscription, "max_messages": 100})
                    if not response.received_messages:
                        break
                    for received in response.received_messages:
                        publisher.publish(publisher.topic_path(project, "orders"), received.message.data)
                    subscriber.acknowledge(request={"subscription": subscription, "ack_ids": [m.ack_id for m in response.received_messages]})
            """,
            line=8,
        ),
        Invalid(
            """
            from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

            def replay(client: ServiceBusClient, limit: int):
                receiver = client.get_queue_receiver(queue_name="orders", sub_queue=ServiceBusSubQueue.DEAD_LETTER)
                sender = client.get_queue_sender(queue_name="orders")
                for msg in receiver.receive_messages(max_message_count=limit, max_wait_time=5):
                    sender.send_messages(ServiceBusMessage(str(msg)))
                    receiver.complete_message(msg)
            """,
            line=7,
            message="no rate limit",
        ),
        Invalid(
            """
            import json
            import redis
            from celery import Celery

            app = Celery("shop")
            r = redis.Redis()

            @app.task(queue="orders")
            def process_order(payload):
                pass

            def replay():
                for raw in r.lrange("orders:dead_letter", 0, -1):
                    process_order.apply_async(args=[json.loads(raw)], queue="orders")
            """,
            line=14,
        ),
        Invalid(
            """
            from kombu import Connection
            from queue import Empty

            def replay():
                with Connection("amqp://localhost") as conn:
                    dlq = conn.SimpleQueue("orders.dlq")
                    main = conn.SimpleQueue("orders")
                    while True:
                        try:
                            message = dlq.get(block=False)
                        except Empty:
                            break
                        main.put(message.payload)
                        message.ack()
            """,
            line=9,
        ),
        Invalid(
            """
            import redis

            def replay():
                r = redis.Redis()
                while r.llen("orders:dlq") > 0:
                    r.lmove("orders:dlq", "orders", "RIGHT", "LEFT")
            """,
            line=6,
        ),
    ]

    def check_dead_letter(self, operation: DeadLetterOperation, settings: Settings) -> Iterable[Diagnostic]:
        if operation.kind is not DeadLetterKind.REPLAY:
            return
        unpaced = operation.rate_limited is False
        unbounded = operation.batch_limited is False
        if not (unpaced or unbounded):
            return
        if operation.loop_location is None:
            advice = ("pass `MaxNumberOfMessagesPerSecond`" if operation.broker == "sqs"
                      else "pace it (a rate limit in the handler or the loop that calls it)")
            yield self.at(
                operation,
                f"{operation.description} moves every dead letter of `{operation.queue}` back to "
                f"{_queue(operation.destination)} as fast as the broker can; {advice} "
                "so that the replay does not make a new spike",
            )
            return
        lacks = " and ".join(
            part for part, missing in (("no rate limit", unpaced), ("no batch limit (it drains the whole queue)", unbounded)) if missing
        )
        advice = []
        if unbounded:
            advice.append("take a `--limit`")
        if unpaced:
            advice.append("pace it (`time.sleep(1 / rate)` or a token bucket)")
        yield self.at(
            operation,
            f"replay of `{operation.queue}` into {_queue(operation.destination)} (`{operation.loop_text}`) has {lacks}; "
            f"{' and '.join(advice)} so that thousands of dead letters do not come back at once",
            operation.loop_location,
        )


def _queue(text: str) -> str:
    return text if text.startswith("the ") else f"`{text}`"
