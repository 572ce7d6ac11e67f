"""The dead-letter extractor: brokers, queue names, payloads, what runs the code, narrowing."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from retrylint.engine import check_source
from retrylint.model import DeadLetterKind
from retrylint.rules import RULES
from retrylint.settings import Settings

ALL_CODES = tuple(rule.code for rule in RULES)


def operations(code: str, settings: Settings = Settings(), narrowing: bool = True):
    report = check_source(textwrap.dedent(code), "case.py", settings, want_policies=True, narrowing=narrowing)
    assert report.error is None, report.error
    return report.dead_letters


def only(code: str, **kwargs):
    found = operations(code, **kwargs)
    assert len(found) == 1, found
    return found[0]


# ---------------------------------------------------------------- brokers, through aliases


def test_boto3_alias_and_constant_queue_url():
    op = only(
        """
        import boto3 as b
        DLQ = "https://sqs.eu-west-1.amazonaws.com/1/orders-dlq"
        client = b.client("sqs")
        def fail(body):
            client.send_message(QueueUrl=DLQ, MessageBody=body)
        """
    )
    assert (op.kind, op.broker, op.queue) == (DeadLetterKind.WRITE, "sqs", "DLQ")


def test_boto3_client_for_another_service_is_not_sqs():
    assert operations(
        """
        import boto3
        sns = boto3.client("sns")
        def alert(text):
            sns.publish(TopicArn="arn:aws:sns:eu-west-1:1:orders-dlq-alerts", Message=text)
        """
    ) == []


def test_pika_imported_by_name_and_channel_traced():
    op = only(
        """
        from pika import BlockingConnection
        channel = BlockingConnection().channel()
        def fail(body):
            channel.basic_publish(exchange="", routing_key="orders.DLQ", body=body)
        """
    )
    assert (op.broker, op.queue) == ("rabbitmq", "orders.DLQ")


def test_sqs_resource_queue_object_names_the_queue():
    op = only(
        """
        import boto3
        dlq = boto3.resource("sqs").get_queue_by_name(QueueName="orders-dead-letter")
        def fail(body, exc):
            dlq.send_message(MessageBody=body, MessageAttributes={"error": {"DataType": "String", "StringValue": str(exc)}})
        """
    )
    assert (op.broker, op.queue) == ("sqs", "orders-dead-letter")


def test_aiobotocore_client_from_async_with():
    op = only(
        """
        from aiobotocore.session import get_session
        async def fail(body):
            async with get_session().create_client("sqs") as client:
                await client.send_message(QueueUrl="orders-dlq", MessageBody=body)
        """
    )
    assert op.broker == "sqs"


def test_self_attribute_client_and_queue():
    op = only(
        """
        import redis
        class Worker:
            def __init__(self):
                self.redis = redis.Redis()
                self.dead = "jobs:dead-letter"
            def fail(self, job):
                self.redis.lpush(self.dead, job)
        """
    )
    assert (op.broker, op.queue) == ("redis", "self.dead")


def test_lookalike_methods_of_unknown_objects_are_not_brokers():
    assert operations(
        """
        import queue
        import kombu, redis

        class EventBus:
            def publish(self, topic, event):
                pass

        bus = EventBus()
        dead_letter_queue = queue.Queue()

        def record(metrics, events, dlq_depth, item):
            metrics.publish("orders.dlq.depth", dlq_depth)
            events.send("orders-dlq", {"depth": dlq_depth})
            {}.get("orders-dlq")
            dead_letter_queue.put(item)
            bus.publish("orders.dlq", item)
        """
    ) == []


# ---------------------------------------------------------------- queue names


@pytest.mark.parametrize(
    "queue, dlq",
    [
        ('f"{env}.orders.DLQ"', True),
        ('f"{ORDERS}-dlq"', True),
        ('f"{env}-orders"', False),
        ('os.environ["ORDERS_DLQ_URL"]', True),
        ('os.environ["ORDERS_QUEUE_URL"]', False),
        ('sqs.get_queue_url(QueueName="orders-dead-letter")["QueueUrl"]', True),
        ("settings.DEAD_LETTER_QUEUE", True),
        ('"orders/$DeadLetterQueue"', True),
        ('"orders-poison"', True),
        ("queue_name", None),
    ],
)
def test_queue_names(queue, dlq):
    found = operations(
        f"""
        import os, boto3
        sqs = boto3.client("sqs")
        ORDERS = "orders"
        def send(env, body, queue_name, settings):
            sqs.send_message(QueueUrl={queue}, MessageBody="x")
        """
    )
    assert bool(found) is bool(dlq), found


def test_configured_pattern_replaces_the_default():
    code = """
        import redis
        r = redis.Redis()
        def fail(job):
            r.lpush("jobs:graveyard", job)
            r.lpush("jobs:dlq", job)
        """
    custom = replace(Settings(), dead_letter_pattern=r"graveyard")
    assert [op.queue for op in operations(code, settings=custom)] == ["jobs:graveyard"]
    assert [op.queue for op in operations(code)] == ["jobs:dlq"]


# ---------------------------------------------------------------- what a dead letter carries


@pytest.mark.parametrize(
    "payload, missing",
    [
        ('json.dumps({"message": m["Body"]})', ("reason", "attempts", "first_received")),
        ('json.dumps({"message": m["Body"], "error": str(exc)})', ("attempts", "first_received")),
        ('json.dumps({"body": m["Body"], "errorMessage": repr(exc), "retryCount": n, "firstSeenAt": t})', ()),
        ('json.dumps([m["Body"], str(exc)])', ("attempts", "first_received")),
        ('f"{m[\'Body\']} failed after {n} attempts: {exc}"', ("first_received",)),
        ("envelope", ("attempts", "first_received")),
        ('build(m["Body"], exc)', ()),  # a helper: unknown
        ("json.dumps({**extra, 'error': str(exc)})", ()),  # a spread parameter: unknown
    ],
)
def test_carried_context(payload, missing):
    op = only(
        f"""
        import json, boto3
        sqs = boto3.client("sqs")
        def consume(extra, n, t):
            while True:
                for m in sqs.receive_message(QueueUrl="orders").get("Messages", []):
                    try:
                        handle(m)
                    except Exception as exc:
                        envelope = {{"message": m["Body"]}}
                        envelope["error"] = str(exc)
                        sqs.send_message(QueueUrl="orders-dlq", MessageBody={payload})
        """
    )
    assert op.missing == missing


def test_starred_arguments_make_the_payload_unknown():
    op = only(
        """
        import redis
        r = redis.Redis()
        def fail(items):
            r.lpush("jobs:dlq", *items)
        """
    )
    assert (op.carries, op.missing) == ((), ())


def test_extra_field_names_from_settings():
    code = """
        import json, redis
        r = redis.Redis()
        def fail(job, exc, tries_so_far, born):
            r.lpush("jobs:dlq", json.dumps({"job": job, "error": str(exc), "tries_so_far": tries_so_far, "born": born}))
        """
    assert only(code).missing == ("first_received",)
    extended = replace(Settings(), dead_letter_first_received_fields=Settings().dead_letter_first_received_fields + ("born",))
    assert only(code, settings=extended).missing == ()


def test_envelope_built_from_the_message_is_not_the_raw_message():
    op = only(
        """
        from confluent_kafka import Message, Producer
        producer = Producer({})
        def fail(msg: Message, exc):
            envelope = Envelope(value=msg.value(), error=str(exc))
            producer.produce("orders.DLQ", value=envelope.to_json())
        """
    )
    assert op.missing == ()  # what Envelope carries is not known


# ---------------------------------------------------------------- replays and what runs them


def test_replay_model_fields():
    op = only(
        """
        import time, boto3
        sqs = boto3.client("sqs")
        def replay(dlq_url, queue_url, limit):
            for _ in range(limit):
                resp = sqs.receive_message(QueueUrl=dlq_url)
                for m in resp.get("Messages", []):
                    sqs.send_message(QueueUrl=queue_url, MessageBody=m["Body"])
        """
    )
    assert op.kind is DeadLetterKind.REPLAY
    assert (op.queue, op.destination, op.rate_limited, op.batch_limited) == ("dlq_url", "queue_url", False, True)
    assert op.loop_text == "for _ in range(limit)"
    assert op.loop_location.line == 5 and set(op.header_lines) == {5, 8}


@pytest.mark.parametrize(
    "wrapper, trigger",
    [
        ("@click.command()\n", "cli"),
        ("@app.command()\n", "cli"),
        ("@scheduler.scheduled_job('interval', minutes=5)\n", "scheduled"),
        ("@celery_app.task\n", "scheduled"),  # named in beat_schedule below
        ("", "unknown"),
    ],
)
def test_trigger_of_the_replay_function(wrapper, trigger):
    code = (
        "import click, typer, redis\n"
        "from apscheduler.schedulers.background import BackgroundScheduler\n"
        "from celery import Celery\n"
        "app = typer.Typer()\n"
        "scheduler = BackgroundScheduler()\n"
        "celery_app = Celery('shop')\n"
        "celery_app.conf.beat_schedule = {'r': {'task': 'shop.redrive', 'schedule': 60}}\n"
        "r = redis.Redis()\n"
        f"{wrapper}"
        "def redrive():\n"
        "    for _ in range(10):\n"
        "        r.rpoplpush('orders:dlq', 'orders')\n"
    )
    op = only(code)
    assert op.trigger == trigger, op.trigger_detail
    assert op.automatic is {"cli": False, "scheduled": True, "unknown": None}[trigger]


@pytest.mark.parametrize(
    "caller, trigger",
    [
        ("def main():\n    while True:\n        redrive()\n", "forever-loop"),
        ("def main():\n    parser = argparse.ArgumentParser()\n    parser.parse_args()\n    redrive()\n", "cli"),
        ('if __name__ == "__main__":\n    redrive()\n', "cli"),
        ("import schedule\nschedule.every(10).minutes.do(redrive)\n", "scheduled"),
        ("import threading\nthreading.Thread(target=redrive).start()\n", "unknown"),
    ],
)
def test_trigger_through_callers(caller, trigger):
    code = (
        "import argparse, redis\n"
        "r = redis.Redis()\n"
        "def redrive():\n"
        "    for _ in range(10):\n"
        "        r.rpoplpush('orders:dlq', 'orders')\n"
        f"{caller}"
    )
    assert only(code).trigger == trigger


def test_django_management_command_is_human_triggered():
    op = only(
        """
        import redis
        from django.core.management import BaseCommand
        class Command(BaseCommand):
            def handle(self, *args, **options):
                for _ in range(options["limit"]):
                    redis.Redis().rpoplpush("orders:dlq", "orders")
        """
    )
    assert (op.trigger, op.automatic) == ("cli", False)


def test_lambda_and_partial_callbacks_are_consumers():
    found = operations(
        """
        import functools, pika
        def requeue(ch, method, properties, body, target):
            ch.basic_publish(exchange="", routing_key=target, body=body)
        channel = pika.BlockingConnection().channel()
        channel.basic_consume(queue="a.dlq", on_message_callback=lambda ch, m, p, b: requeue(ch, m, p, b, "orders_queue"))
        channel.basic_consume(queue="b.dlq", on_message_callback=functools.partial(requeue, target="orders_queue"))
        """
    )
    assert [(op.trigger, op.automatic) for op in found] == [("consumer", True)]


def test_kafka_consumer_that_stops_by_itself_is_not_a_forever_loop():
    code = """
        from kafka import KafkaConsumer, KafkaProducer
        def replay():
            producer = KafkaProducer()
            for record in KafkaConsumer("orders.dlq"{timeout}):
                producer.send("orders", record.value)
        """
    assert only(code.format(timeout="")).trigger == "consumer"
    stopping = only(code.format(timeout=", consumer_timeout_ms=5000"))
    assert (stopping.trigger, stopping.batch_limited) == ("unknown", False)


def test_dlq_to_dlq_copy_is_neither_write_nor_replay():
    assert operations(
        """
        import redis
        r = redis.Redis()
        def archive():
            while True:
                item = r.brpop("orders:dlq")
                r.lpush("orders:dlq:archive", item[1])
        """
    ) == []


def test_several_publishes_in_one_loop_are_judged_once_for_limits():
    found = operations(
        """
        import redis
        r = redis.Redis()
        def replay():
            while True:
                item = r.rpop("orders:dlq")
                if item is None:
                    break
                r.lpush("orders", item)
                r.lpush("orders-audit-copy", item)
        """
    )
    assert [(op.rate_limited, op.batch_limited) for op in found] == [(False, False)]


def test_a_command_decorated_by_itself_does_not_recurse():
    op = only(
        """
        import click, redis
        @cli.command()
        def cli():
            for _ in range(10):
                redis.Redis().rpoplpush("orders:dlq", "orders")
        """
    )
    assert op.trigger == "unknown"
