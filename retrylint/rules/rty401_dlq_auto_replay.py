"""RTY401: dead letters re-published to a work queue automatically."""

from __future__ import annotations

from typing import Iterable

from ..model import DeadLetterKind, DeadLetterOperation
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class DlqAutoReplay(Rule):
    """
    ## What it does
    Finds code that reads a dead-letter queue and publishes its messages back to a
    work queue automatically: in a consumer callback on the DLQ (pika
    `basic_consume`, aio-pika `queue.consume`, kombu `Consumer`, Pub/Sub
    `subscribe`), a celery task bound to the DLQ, a loop over a consumer that never
    stops (Kafka, Service Bus), a scheduled job (celery beat, APScheduler,
    `schedule`), or a `while True` loop; SQS `start_message_move_task` and redis
    `lmove`/`rpoplpush` run that way too.

    A replay reachable only from a command line (click, typer, argparse, Django
    management commands, `if __name__ == "__main__":`) is started by a human and
    is fine, as are DLQ consumers that archive, count or alert, and re-drives
    bounded by the attempt count the message carries.

    ## Why is this bad?
    A message is in the DLQ because processing it failed. Re-publishing it
    automatically, before anyone has fixed the cause, makes it fail again and
    come back again: an endless loop that burns capacity and hides the failure.
    A human confirms the cause, then triggers the replay explicitly.

    ## Example
    ```python
    def requeue(ch, method, properties, body):
        ch.basic_publish(exchange="", routing_key="orders", body=body)
        ch.basic_ack(method.delivery_tag)

    channel.basic_consume(queue="orders.dlq", on_message_callback=requeue)
    ```

    ## Use instead
    ```python
    # Alert on the DLQ's depth; after the fix, a human runs
    #   dlq replay --queue orders --since 2026-09-06T12:00 --limit 500
    @click.command()
    @click.option("--queue")
    @click.option("--limit", type=int, default=100)
    def replay(queue, limit):
        for _ in range(limit):
            method, properties, body = channel.basic_get(f"{queue}.dlq")
            if method is None:
                break
            channel.basic_publish(exchange="", routing_key=queue, body=body)
            channel.basic_ack(method.delivery_tag)
            time.sleep(0.1)
    ```
    """

    code = "RTY401"
    name = "dlq-auto-replay"
    summary = "Dead letters are re-published to a work queue automatically"

    VALID = [
        Valid(
            """
            import argparse, datetime, time
            import boto3

            def replay(sqs, dlq_url, queue_url, since, limit, rate):
                moved = 0
                while moved < limit:
                    resp = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10,
                                               AttributeNames=["SentTimestamp"])
                    messages = resp.get("Messages", [])
                    if not messages:
                        break
                    for m in messages:
                        sent = datetime.datetime.fromtimestamp(int(m["Attributes"]["SentTimestamp"]) / 1000)
                        if sent < since:
                            continue
                        sqs.send_message(QueueUrl=queue_url, MessageBody=m["Body"])
                        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=m["ReceiptHandle"])
                        moved += 1
                        time.sleep(1 / rate)

            def main():
                parser = argparse.ArgumentParser(prog="dlq replay")
                parser.add_argument("--queue", required=True)
                parser.add_argument("--since", type=datetime.datetime.fromisoformat, required=True)
                parser.add_argument("--limit", type=int, default=500)
                parser.add_argument("--rate", type=float, default=20.0)
                args = parser.parse_args()
                sqs = boto3.client("sqs")
                dlq_url = sqs.get_queue_url(QueueName=f"{args.queue}-dlq")["QueueUrl"]
                queue_url = sqs.get_queue_url(QueueName=args.queue)["QueueUrl"]
                replay(sqs, dlq_url, queue_url, args.since, args.limit, args.rate)

            if __name__ == "__main__":
                main()
            """,
            "the doctrine's replay tool: a human runs it with --queue --since --limit, and it is rate-limited",
        ),
        Valid(
            """
            import boto3

            sqs = boto3.client("sqs")
            sns = boto3.client("sns")
            DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"

            def check_dlq_depth():
                attributes = sqs.get_queue_attributes(QueueUrl=DLQ_URL, AttributeNames=["ApproximateNumberOfMessages"])
                depth = int(attributes["Attributes"]["ApproximateNumberOfMessages"])
                if depth > 0:
                    sns.publish(TopicArn="arn:aws:sns:eu-west-1:123456789012:oncall", Message=f"orders-dlq holds {depth}")

            while True:
                check_dlq_depth()
            """,
            "a DLQ monitor only counts the depth and alerts",
        ),
        Valid(
            """
            import json
            import boto3, pika

            s3 = boto3.client("s3")

            def archive(ch, method, properties, body):
                s3.put_object(Bucket="dead-letters", Key=f"orders/{method.delivery_tag}", Body=body)
                ch.basic_ack(method.delivery_tag)

            channel = pika.BlockingConnection().channel()
            channel.basic_consume(queue="orders.dlq", on_message_callback=archive)
            """,
            "a consumer that reads the DLQ to archive it",
        ),
        Valid(
            """
            from kombu import Connection, Consumer, Queue

            def archive(body, message):
                producer.publish(body, routing_key="orders.dlq.archive", headers=message.headers)
                message.ack()

            with Connection("amqp://localhost") as conn:
                producer = conn.Producer()
                with Consumer(conn, queues=[Queue("orders.dlq")], callbacks=[archive]):
                    while True:
                        conn.drain_events()
            """,
            "dead letters copied to an archive queue, not to a work queue",
        ),
        Valid(
            """
            import time
            import click
            from kafka import KafkaConsumer, KafkaProducer

            @click.group()
            def dlq():
                pass

            @dlq.command()
            @click.option("--limit", type=int, default=500)
            def replay(limit):
                consumer = KafkaConsumer("orders.dlq", consumer_timeout_ms=5000)
                producer = KafkaProducer(bootstrap_servers="kafka:9092")
                for count, record in enumerate(consumer):
                    if count >= limit:
                        break
                    producer.send("orders", value=record.value)
                    time.sleep(0.05)
            """,
            "a click command: a human starts it, with a limit and a rate",
        ),
        Valid(
            """
            import time
            import redis
            from django.core.management.base import BaseCommand

            class Command(BaseCommand):
                help = "Replay dead letters after the cause is fixed"

                def add_arguments(self, parser):
                    parser.add_argument("--limit", type=int, default=100)

                def handle(self, *args, **options):
                    r = redis.Redis()
                    for _ in range(options["limit"]):
                        if r.rpoplpush("orders:dlq", "orders") is None:
                            break
                        time.sleep(0.1)
            """,
            "a Django management command is run by a human",
        ),
        Valid(
            """
            import pika

            def redrive(ch, method, properties, body):
                retries = int((properties.headers or {}).get("x-retries", 0))
                if retries < 3:
                    ch.basic_publish(exchange="", routing_key="orders", body=body,
                                     properties=pika.BasicProperties(headers={"x-retries": retries + 1}))
                else:
                    ch.basic_publish(exchange="", routing_key="orders.parking-lot", body=body)
                ch.basic_ack(method.delivery_tag)

            channel = pika.BlockingConnection().channel()
            channel.basic_consume(queue="orders.dlq", on_message_callback=redrive)
            """,
            "a re-drive bounded by the attempt count the message carries cannot loop forever",
        ),
        Valid(
            """
            import pika

            def on_message(ch, method, properties, body):
                try:
                    handle(body)
                except TimeoutError:
                    ch.basic_publish(exchange="", routing_key="orders.retry-30s", body=body)
                ch.basic_ack(method.delivery_tag)

            channel = pika.BlockingConnection().channel()
            channel.basic_consume(queue="orders", on_message_callback=on_message)
            """,
            "a work-queue consumer that delays a retry is not reading a DLQ",
        ),
        Valid(
            """
            import time
            import typer
            from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

            app = typer.Typer()

            @app.command()
            def replay(queue: str, limit: int = 100):
                client = ServiceBusClient.from_connection_string("Endpoint=sb://shop/")
                receiver = client.get_queue_receiver(queue_name=queue, sub_queue=ServiceBusSubQueue.DEAD_LETTER)
                sender = client.get_queue_sender(queue_name=queue)
                for msg in receiver.receive_messages(max_message_count=limit, max_wait_time=5):
                    sender.send_messages(ServiceBusMessage(str(msg)))
                    receiver.complete_message(msg)
                    time.sleep(0.1)
            """,
            "a typer command moving a bounded batch out of the dead-letter sub-queue",
        ),
        Valid(
            """
            import boto3, click

            @click.command()
            @click.argument("dlq_arn")
            def redrive(dlq_arn):
                boto3.client("sqs").start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=10)
            """,
            "an SQS move task started from a command line",
        ),
        Valid(
            """
            import redis

            r = redis.Redis()

            def replay(limit=100):
                for _ in range(limit):
                    if r.rpoplpush("orders:dlq", "orders") is None:
                        break
            """,
            "nobody in this module calls it: what triggers it is not known",
        ),
        Valid(
            """
            import time
            import redis

            r = redis.Redis()
            if __name__ == "__main__":
                while True:
                    item = r.rpop("orders:dlq")
                    if item is None:
                        break
                    r.lpush("orders", item)
                    time.sleep(0.1)
            """,
            "a script run by hand that stops when the DLQ is empty",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import boto3

            sqs = boto3.client("sqs")
            DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"
            QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"

            def redrive_forever():
                while True:
                    resp = sqs.receive_message(QueueUrl=DLQ_URL, MaxNumberOfMessages=10, WaitTimeSeconds=20)
                    for m in resp.get("Messages", []):
                        sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=m["Body"])
                        sqs.delete_message(QueueUrl=DLQ_URL, ReceiptHandle=m["ReceiptHandle"])
            """,
            line=12,
            message="inside `while True`",
        ),
        Invalid(
            """
            import pika

            def requeue(ch, method, properties, body):
                ch.basic_publish(exchange="", routing_key="orders", body=body)
                ch.basic_ack(method.delivery_tag)

            connection = pika.BlockingConnection(pika.ConnectionParameters("localhost"))
            channel = connection.channel()
            channel.basic_consume(queue="orders.dlq", on_message_callback=requeue)
            channel.start_consuming()
            """,
            line=5,
            message="dead letters from `orders.dlq` are re-published to `orders` automatically",
        ),
        Invalid(
            """
            import aio_pika

            async def main():
                connection = await aio_pika.connect_robust("amqp://localhost")
                channel = await connection.channel()
                dlq = await channel.declare_queue("orders.dlq", durable=True)

                async def on_dead(message):
                    async with message.process():
                        await channel.default_exchange.publish(aio_pika.Message(message.body), routing_key="orders")

                await dlq.consume(on_dead)
            """,
            line=11,
            message="callback",
        ),
        Invalid(
            """
            from kombu import Connection, Consumer, Queue

            with Connection("amqp://localhost") as conn:
                producer = conn.Producer()

                def replay(body, message):
                    producer.publish(body, routing_key="orders")
                    message.ack()

                with Consumer(conn, queues=[Queue("orders.dlq")], callbacks=[replay]):
                    while True:
                        conn.drain_events()
            """,
            line=8,
        ),
        Invalid(
            """
            from celery import Celery

            app = Celery("shop")

            @app.task(queue="orders")
            def process_order(payload):
                pass

            @app.task(queue="orders.dlq")
            def redrive(payload):
                process_order.delay(payload)
            """,
            line=12,
            message="a celery task bound to `orders.dlq`",
        ),
        Invalid(
            """
            import redis
            from celery import Celery

            app = Celery("shop")
            app.conf.beat_schedule = {
                "redrive": {"task": "shop.tasks.redrive_dead_letters", "schedule": 300.0},
            }
            r = redis.Redis()

            @app.task
            def redrive_dead_letters():
                while True:
                    item = r.rpop("orders:dlq")
                    if item is None:
                        break
                    r.lpush("orders", item)
            """,
            line=17,
            message="celery beat",
        ),
        Invalid(
            """
            from kafka import KafkaConsumer, KafkaProducer

            def redrive():
                consumer = KafkaConsumer("orders.dlq", group_id="redrive")
                producer = KafkaProducer(bootstrap_servers="kafka:9092")
                for record in consumer:
                    producer.send("orders", value=record.value, key=record.key)
            """,
            line=8,
            message="consumer",
        ),
        Invalid(
            """
            from confluent_kafka import Consumer, Producer

            consumer = Consumer({"group.id": "redrive", "bootstrap.servers": "kafka:9092"})
            producer = Producer({"bootstrap.servers": "kafka:9092"})
            consumer.subscribe(["orders.DLQ"])
            while True:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    continue
                producer.produce("orders", msg.value())
            """,
            line=11,
        ),
        Invalid(
            """
            import redis
            from apscheduler.schedulers.blocking import BlockingScheduler

            r = redis.Redis()
            scheduler = BlockingScheduler()

            def redrive():
                for _ in range(100):
                    r.rpoplpush("orders:dead-letter", "orders")

            scheduler.add_job(redrive, "interval", minutes=5)
            scheduler.start()
            """,
            line=10,
            message="APScheduler",
        ),
        Invalid(
            """
            from google.cloud import pubsub_v1

            publisher = pubsub_v1.PublisherClient()
            subscriber = pubsub_v1.SubscriberClient()
            topic = publisher.topic_path("shop", "orders")

            def redeliver(message):
                publisher.publish(topic, message.data, **message.attributes)
                message.ack()

            subscriber.subscribe(subscriber.subscription_path("shop", "orders-dlq-sub"), callback=redeliver)
            """,
            line=9,
        ),
        Invalid(
            """
            from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

            def redrive(connection_string):
                client = ServiceBusClient.from_connection_string(connection_string)
                receiver = client.get_queue_receiver(queue_name="orders", sub_queue=ServiceBusSubQueue.DEAD_LETTER)
                sender = client.get_queue_sender(queue_name="orders")
                with receiver, sender:
                    for msg in receiver:
                        sender.send_messages(ServiceBusMessage(str(msg)))
                        receiver.complete_message(msg)
            """,
            line=10,
        ),
        Invalid(
            """
            import boto3
            from apscheduler.schedulers.background import BackgroundScheduler

            scheduler = BackgroundScheduler()

            @scheduler.scheduled_job("interval", hours=1)
            def redrive():
                boto3.client("sqs").start_message_move_task(
                    SourceArn="arn:aws:sqs:eu-west-1:123456789012:orders-dlq", MaxNumberOfMessagesPerSecond=50
                )
            """,
            line=9,
            message="scheduled job",
        ),
    ]

    def check_dead_letter(self, operation: DeadLetterOperation, settings: Settings) -> Iterable[Diagnostic]:
        if operation.kind is not DeadLetterKind.REPLAY or operation.automatic is not True:
            return
        yield self.at(
            operation,
            f"dead letters from `{operation.queue}` are re-published to `{operation.destination}` automatically "
            f"({operation.trigger_detail}); if the cause is not fixed they fail and come back forever: alert on "
            "the DLQ's depth and let a human replay them after the fix (e.g. `dlq replay --queue … --since … --limit …`)",
        )
