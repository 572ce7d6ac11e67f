"""RTY402: a dead letter without the failure reason, the attempt count or the first-received time."""

from __future__ import annotations

from typing import Iterable

from ..extract.dead_letter_context import LABELS
from ..model import DeadLetterKind, DeadLetterOperation
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid

_EXAMPLES = {"reason": "`reason`", "attempts": "`attempts`", "first_received": "`first_received`"}


def _join(items: list) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class DeadLetterWithoutContext(Rule):
    """
    ## What it does
    Finds messages sent to a dead-letter queue (a queue, topic, routing key, list or
    stream whose name matches `dead-letter-pattern`: `orders-dlq`, `orders.DLQ`,
    `DEAD_LETTER_QUEUE_URL`, ...) whose body, headers and attributes do not carry
    the failure reason, the attempt count and the first-received time next to the
    original message. Fields are recognised by name (`reason`, `error`, `exception`,
    `status`; `attempts`, `retries`, `retry_count`, `delivery_count`;
    `first_received`, `first_seen`, `received_at`, `enqueued_at`, and names that
    contain them, such as `error_message` or `x-retry-count`); add your own with
    `dead-letter-reason-fields`, `dead-letter-attempt-fields` and
    `dead-letter-first-received-fields`.

    Dead letters written through the project's own helpers count too: a send
    wrapper given a DLQ-named destination (`self.publish(self.dead_letter_queue,
    message)`, `publish_to(channel, "orders.dlq", body)`), a DLQ-named list kept
    as a store (`self.dead_letters.append((topic, event, exc))`), a store method
    named for the DLQ (`store.dlq_insert(DeadLetter(payload=..., error=...))`,
    with the fields of record classes the checked tree defines), and
    `client.call("SendMessage", ...)`. A wrapper defined in the same module counts
    only when it sends something itself.

    Only dead letters the code builds where we can read them are judged: a payload
    built by a helper, a parameter that may already be an envelope, or original
    headers forwarded as they came are not. Broker-native dead-lettering (a nack
    without requeue, an SQS redrive policy, Service Bus `dead_letter_message`) is
    not a write by the code and is not judged.

    ## Why is this bad?
    A dead-letter queue is a to-investigate list. A dead letter that carries only
    the message cannot say why it is there, how often it was tried or since when
    it has been failing, so nobody can tell a poison message from an outage, or
    decide whether it is safe to replay.

    ## Example
    ```python
    except Exception:
        sqs.send_message(QueueUrl=DLQ_URL, MessageBody=message["Body"])
    ```

    ## Use instead
    ```python
    except Exception as exc:
        sqs.send_message(
            QueueUrl=DLQ_URL,
            MessageBody=message["Body"],
            MessageAttributes={
                "reason": {"DataType": "String", "StringValue": repr(exc)},
                "attempts": {"DataType": "Number", "StringValue": str(attempts)},
                "first_received": {"DataType": "String", "StringValue": first_received},
            },
        )
    ```
    """

    code = "RTY402"
    name = "dead-letter-without-context"
    summary = "A dead letter lacks the failure reason, the attempt count or the first-received time"

    VALID = [
        Valid(
            """
            import json, time
            import boto3

            sqs = boto3.client("sqs")
            DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"

            def dead_letter(message, exc, attempts, first_received):
                sqs.send_message(
                    QueueUrl=DLQ_URL,
                    MessageBody=json.dumps({
                        "original": message,
                        "error_message": str(exc),
                        "delivery_count": attempts,
                        "enqueued_at": first_received,
                    }),
                )
            """,
            "the four fields under other names (original, error_message, delivery_count, enqueued_at)",
        ),
        Valid(
            """
            import pika

            def on_message(ch, method, properties, body):
                try:
                    handle(body)
                except Exception as exc:
                    ch.basic_publish(
                        exchange="",
                        routing_key="orders.dlq",
                        body=body,
                        properties=pika.BasicProperties(headers={
                            "x-exception": repr(exc),
                            "x-retry-count": properties.headers.get("x-retry-count", 0),
                            "x-first-seen-at": properties.headers.get("x-first-seen-at"),
                        }),
                    )

            channel = pika.BlockingConnection().channel()
            channel.basic_consume(queue="orders", on_message_callback=on_message)
            """,
            "reason, attempts and first-received time in the headers, next to the original body",
        ),
        Valid(
            """
            import boto3

            sqs = boto3.client("sqs")

            def dead_letter(message, exc):
                sqs.send_message(QueueUrl="orders-dlq", MessageBody=build_dead_letter(message, exc))
            """,
            "the payload is built by a helper: what it carries is not known here",
        ),
        Valid(
            """
            def on_message(ch, method, properties, body):
                try:
                    handle(body)
                except Exception:
                    ch.basic_nack(delivery_tag=method.delivery_tag, requeue=False)
            """,
            "broker-native dead-lettering (nack without requeue) is not a write by the code",
        ),
        Valid(
            """
            import json
            import boto3

            sqs = boto3.client("sqs")
            sqs.set_queue_attributes(
                QueueUrl="https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
                Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": "arn:aws:sqs:eu-west-1:123456789012:orders-dlq", "maxReceiveCount": "5"})},
            )
            """,
            "an SQS redrive policy: the broker moves the messages and counts the receives",
        ),
        Valid(
            """
            from confluent_kafka import Message, Producer

            producer = Producer({"bootstrap.servers": "kafka:9092"})

            def dead_letter(msg: Message, exc: Exception):
                producer.produce(
                    "orders.DLQ",
                    value=msg.value(),
                    headers=[("error", str(exc).encode()), ("retry_count", b"5"), ("first_seen", str(msg.timestamp()[1]).encode())],
                )
            """,
            "Kafka headers given as (key, value) tuples carry the three fields",
        ),
        Valid(
            """
            from google.cloud import pubsub_v1

            publisher = pubsub_v1.PublisherClient()
            topic = publisher.topic_path("shop", "orders-dead-letter")

            def dead_letter(message: pubsub_v1.subscriber.message.Message, exc: Exception):
                publisher.publish(
                    topic, message.data,
                    reason=repr(exc), attempts=str(message.delivery_attempt), first_received=message.attributes["received_at"],
                )
            """,
            "Pub/Sub attributes passed as keywords",
        ),
        Valid(
            """
            import pika

            def on_message(ch, method, properties, body):
                try:
                    handle(body)
                except Exception:
                    ch.basic_publish(exchange="", routing_key="orders.dlq", body=body, properties=properties)
            """,
            "the original properties are forwarded as they came: their headers are not known here",
        ),
        Valid(
            """
            import redis

            r = redis.Redis()

            def alert(depth):
                r.lpush("alerts", f"orders-dlq holds {depth} messages")
            """,
            "a DLQ named in a message sent elsewhere is not a write to the DLQ",
        ),
        Valid(
            """
            from celery import Celery

            app = Celery("shop")

            @app.task(queue="orders.dlq")
            def park(payload, error, retries, first_seen):
                pass

            @app.task(bind=True, queue="orders")
            def process(self, payload, first_seen):
                try:
                    handle(payload)
                except Exception as exc:
                    park.delay(payload, str(exc), self.request.retries, first_seen)
            """,
            "a celery task's arguments named like the fields (`exc`, `self.request.retries`, `first_seen`)",
        ),
        Valid(
            """
            import boto3

            sqs = boto3.client("sqs")

            def dead_letter(envelope):
                sqs.send_message(QueueUrl="orders-dlq", MessageBody=envelope)
            """,
            "a parameter may already be an envelope built by the caller",
        ),
        Valid(
            '''
            def doc():
                """Bad: ``sqs.send_message(QueueUrl="orders-dlq", MessageBody=body)``"""
            ''',
            "code in a docstring",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import boto3

            sqs = boto3.client("sqs")
            DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq"
            QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"

            def consume():
                while True:
                    resp = sqs.receive_message(QueueUrl=QUEUE_URL, WaitTimeSeconds=20)
                    for message in resp.get("Messages", []):
                        try:
                            handle(message["Body"])
                        except Exception:
                            sqs.send_message(QueueUrl=DLQ_URL, MessageBody=message["Body"])
                        sqs.delete_message(QueueUrl=QUEUE_URL, ReceiptHandle=message["ReceiptHandle"])
            """,
            line=15,
            message="without the failure reason, the attempt count and the first-received time",
        ),
        Invalid(
            """
            import pika

            def on_message(ch, method, properties, body):
                try:
                    handle(body)
                except Exception as exc:
                    ch.basic_publish(
                        exchange="",
                        routing_key="orders.dlq",
                        body=body,
                        properties=pika.BasicProperties(headers={"error": str(exc)}),
                    )

            connection = pika.BlockingConnection(pika.ConnectionParameters("localhost"))
            channel = connection.channel()
            channel.basic_consume(queue="orders", on_message_callback=on_message)
            """,
            line=8,
            message="without the attempt count and the first-received time",
        ),
        Invalid(
            """
            import aio_pika

            async def on_message(message: aio_pika.abc.AbstractIncomingMessage):
                try:
                    await handle(message.body)
                except Exception as exc:
                    await channel.default_exchange.publish(
                        aio_pika.Message(body=message.body, headers={"x-exception": repr(exc)}),
                        routing_key="orders.dlq",
                    )
            """,
            line=8,
            message="`orders.dlq`",
        ),
        Invalid(
            """
            from kombu import Connection

            def dead_letter(body, exc):
                with Connection("amqp://localhost") as conn:
                    producer = conn.Producer()
                    producer.publish({"payload": body, "error": str(exc)}, routing_key="orders.dead_letter")
            """,
            line=7,
            message="without the attempt count and the first-received time",
        ),
        Invalid(
            """
            from celery import Celery

            app = Celery("shop")

            @app.task(queue="orders.dlq")
            def park(payload):
                pass

            @app.task(queue="orders")
            def process(payload):
                try:
                    handle(payload)
                except Exception:
                    park.delay(payload)
            """,
            line=15,
        ),
        Invalid(
            """
            from confluent_kafka import Consumer, Producer

            consumer = Consumer({"group.id": "orders"})
            producer = Producer({"bootstrap.servers": "kafka:9092"})
            consumer.subscribe(["orders"])
            while True:
                msg = consumer.poll(1.0)
                if msg is None:
                    continue
                try:
                    handle(msg.value())
                except Exception as e:
                    producer.produce("orders.DLQ", value=msg.value(), headers={"error": str(e)})
            """,
            line=14,
            message="without the attempt count and the first-received time",
        ),
        Invalid(
            """
            from kafka import KafkaProducer

            producer = KafkaProducer(bootstrap_servers="kafka:9092")

            def dead_letter(value: bytes, exc: Exception):
                producer.send("orders-dlq", value=b"failed", headers=[("error", repr(exc).encode())])
            """,
            line=7,
        ),
        Invalid(
            """
            import json
            import redis

            r = redis.Redis()

            def work():
                while True:
                    _, job = r.brpop("jobs")
                    try:
                        run(job)
                    except Exception as exc:
                        r.lpush("jobs:dead-letter", json.dumps({"job": job.decode(), "error": str(exc)}))
            """,
            line=13,
            message="without the attempt count and the first-received time",
        ),
        Invalid(
            """
            import redis.asyncio as aioredis

            r = aioredis.from_url("redis://localhost")

            async def dead_letter(payload: bytes):
                await r.xadd("orders:dlq", {"payload": payload.hex()})
            """,
            line=7,
        ),
        Invalid(
            """
            from google.cloud import pubsub_v1

            publisher = pubsub_v1.PublisherClient()
            DEAD_LETTER_TOPIC = publisher.topic_path("shop", "orders-dead-letter")

            def callback(message):
                try:
                    handle(message.data)
                except Exception as exc:
                    publisher.publish(DEAD_LETTER_TOPIC, message.data, error=repr(exc))
                message.ack()

            subscriber = pubsub_v1.SubscriberClient()
            subscriber.subscribe(subscriber.subscription_path("shop", "orders-sub"), callback=callback)
            """,
            line=11,
            message="without the attempt count and the first-received time",
        ),
        Invalid(
            """
            from azure.servicebus import ServiceBusClient, ServiceBusMessage

            client = ServiceBusClient.from_connection_string("Endpoint=sb://shop/")
            sender = client.get_queue_sender(queue_name="orders-deadletter")

            def dead_letter(body: str, error: str):
                sender.send_messages(ServiceBusMessage(f"{body}", application_properties={"error": error}))
            """,
            line=8,
        ),
    ]

    def check_dead_letter(self, operation: DeadLetterOperation, settings: Settings) -> Iterable[Diagnostic]:
        if operation.kind is not DeadLetterKind.WRITE or not operation.missing:
            return
        missing = [LABELS[f] for f in operation.missing]
        pronoun = "it" if len(missing) == 1 else "them"
        examples = ", ".join(_EXAMPLES[f] for f in operation.missing)
        yield self.at(
            operation,
            f"dead letter sent to `{operation.queue}` without {_join(missing)}; add {pronoun} next to the "
            f"original message (e.g. {examples} in the headers or attributes) so that whoever reads the DLQ "
            "can tell why it is there",
        )
