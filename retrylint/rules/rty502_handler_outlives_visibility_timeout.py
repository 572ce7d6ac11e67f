"""RTY502: a consumer can hold a message longer than the queue hides it, with no heartbeat."""

from __future__ import annotations

from typing import Iterable

from ..model import VisibilityWindow, known
from ..schedule import format_seconds
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid

_HEARTBEAT = {
    "sqs": "a heartbeat that calls `change_message_visibility` every {beat} while the work runs",
    "pubsub": "a heartbeat that calls `modify_ack_deadline` every {beat} (or the streaming `subscribe`, which extends leases itself)",
    "servicebus": "an `AutoLockRenewer` whose `max_lock_renewal_duration` covers the work (or `renew_message_lock` every {beat})",
}


class HandlerOutlivesVisibilityTimeout(Rule):
    """
    ## What it does
    Finds consumers that can hold a message longer than the queue hides it from other
    consumers, with nothing that extends the window:

    - celery with `broker_transport_options={"visibility_timeout": N}` (SQS, redis; on a
      literal `redis://` broker URL with none given, kombu's default of 1 h): a
      task whose retry countdown is longer than `N` (a retried task waits as an
      unacknowledged ETA message, as does `apply_async(countdown=...)`), or, with
      `acks_late`, whose `time_limit` (`task_time_limit`, else at least `soft_time_limit`) is;
    - SQS `receive_message(VisibilityTimeout=N)` (or a queue created with
      `Attributes={"VisibilityTimeout": ...}`), a Pub/Sub `pull` from a subscription created
      with `ack_deadline_seconds`, a Service Bus receiver on a queue created with
      `lock_duration`: a retry after the receive (in the receiving function, in a function
      of the module that a retry library decorates, or a hand-written retry in a helper of
      the module that it calls) whose worst-case total wait (its whole
      schedule, as `retrylint explain` prints it, plus the sleep a `for attempt in range(n)`
      loop also takes after its last failure) reaches the window, or a handler timeout
      around the message's work (`asyncio.wait_for(handle(m), timeout=120)`,
      `asyncio.timeout(120)`) or an HTTP call of the handler on the message whose
      `timeout=` is longer than the window (`requests.post(..., json=body, timeout=300)`).
      A message deleted or acked
      before the retrying work (`delete_message`, `message.delete()`, `acknowledge`,
      `complete_message`, on every path) can no longer be delivered again: not reported.

    Both numbers must be in the module. A heartbeat anywhere in it
    (`change_message_visibility`, `modify_ack_deadline`, `renew_message_lock`,
    `AutoLockRenewer`, `auto_lock_renewer=`) and Pub/Sub's streaming `subscribe` (it extends
    leases itself) keep the rule silent; a Service Bus renewer with a known
    `max_lock_renewal_duration` extends the window by that much only. Without `acks_late`, celery acks a message before
    the task runs, so a long run alone is not reported.

    ## Why is this bad?
    When the window ends before the consumer acks, the queue delivers the message again, to
    another consumer, while the first is still working on it: the work is done twice (a
    second charge, a second e-mail), and a retry inside the handler makes it likelier the
    longer it waits. The handler's time must stay shorter than the window, with a
    heartbeat for long work (e.g. visibility 60 s, handler 45 s, heartbeat every 15 s).

    ## Example
    ```python
    sqs = boto3.client("sqs")

    @tenacity.retry(stop=tenacity.stop_after_attempt(7),
                    wait=tenacity.wait_exponential(multiplier=1, max=20))
    def charge(order): ...  # waits 1 + 2 + 4 + 8 + 16 + 20 = 51 s at worst

    def consume(queue_url):
        while True:
            resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
            for message in resp.get("Messages", []):
                charge(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    ```

    ## Use instead
    ```python
    def consume(queue_url):
        while True:
            resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=60)
            for message in resp.get("Messages", []):
                with heartbeat(every=15, extend=lambda: sqs.change_message_visibility(
                        QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=60)):
                    charge(json.loads(message["Body"]))  # a retry budget under 45 s
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    ```
    """

    code = "RTY502"
    name = "handler-outlives-visibility-timeout"
    summary = "A consumer can hold a message longer than the queue's visibility timeout, with no heartbeat"

    VALID = [
        Valid(
            """
            import json
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(4), wait=tenacity.wait_exponential(multiplier=1, max=20))
            def charge(order): ...

            def consume(queue_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=60)
                    for message in resp.get("Messages", []):
                        charge(json.loads(message["Body"]))
                        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            "the retry waits 1 + 2 + 4 = 7 s at worst, well inside a 60 s visibility timeout",
        ),
        Valid(
            """
            import json
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
            def charge(order): ...

            def consume(queue_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
                    for message in resp.get("Messages", []):
                        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"],
                                                      VisibilityTimeout=120)
                        charge(json.loads(message["Body"]))
                        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            "the consumer extends the visibility before the long work (a heartbeat)",
        ),
        Valid(
            """
            import json
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
            def charge(order): ...

            def consume(queue_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=20)
                    for message in resp.get("Messages", []):
                        charge(json.loads(message["Body"]))
            """,
            "the queue's visibility timeout is not in the code: unknown, not judged",
        ),
        Valid(
            """
            import boto3

            sqs = boto3.client("sqs")

            def consume(queue_url, handle):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
                    for message in resp.get("Messages", []):
                        handle(message)
            """,
            "the handler is a parameter: how long it runs is unknown",
        ),
        Valid(
            """
            from celery import Celery

            app = Celery("shop", broker="sqs://")
            app.conf.broker_transport_options = {"visibility_timeout": 3600}

            @app.task(bind=True, max_retries=5, default_retry_delay=60)
            def send_receipt(self, order_id):
                try:
                    deliver(order_id)
                except ConnectionError as exc:
                    raise self.retry(exc=exc)
            """,
            "a 60 s retry countdown under a 1 h visibility timeout",
        ),
        Valid(
            """
            from celery import Celery

            app = Celery("shop", broker="redis://")
            app.conf.broker_transport_options = {"visibility_timeout": 60}
            app.conf.task_time_limit = 300

            @app.task
            def rebuild_index():
                ...
            """,
            "without acks_late celery acks the message before the task runs: a long task is not redelivered",
        ),
        Valid(
            """
            from celery import Celery

            app = Celery("shop", broker="redis://")
            app.conf.update(broker_transport_options={"visibility_timeout": 60}, task_acks_late=True, task_time_limit=45)

            @app.task(bind=True, max_retries=3, default_retry_delay=10)
            def export(self, report_id):
                try:
                    upload(report_id)
                except TimeoutError as exc:
                    raise self.retry(exc=exc)
            """,
            "the doctrine's numbers: visibility 60 s, handler 45 s, retries wait 10 s",
        ),
        Valid(
            """
            from google.cloud import pubsub_v1
            import tenacity

            subscriber = pubsub_v1.SubscriberClient()
            subscriber.create_subscription(request={"name": "projects/p/subscriptions/orders", "topic": "projects/p/topics/orders",
                                                    "ack_deadline_seconds": 10})

            @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_fixed(5))
            def handle(message):
                ...

            def callback(message):
                handle(message)
                message.ack()

            subscriber.subscribe("projects/p/subscriptions/orders", callback=callback)
            """,
            "streaming pull (subscribe) extends the ack deadline of messages in flight by itself",
        ),
        Valid(
            """
            import time
            from datetime import timedelta
            from azure.servicebus import AutoLockRenewer, ServiceBusClient
            from azure.servicebus.management import ServiceBusAdministrationClient

            admin = ServiceBusAdministrationClient.from_connection_string("Endpoint=sb://shop/")
            admin.create_queue("orders", lock_duration=timedelta(seconds=30))

            def consume(client: ServiceBusClient):
                renewer = AutoLockRenewer(max_lock_renewal_duration=600)
                with client.get_queue_receiver("orders", auto_lock_renewer=renewer) as receiver:
                    for message in receiver:
                        for attempt in range(6):
                            try:
                                process(message)
                                break
                            except ConnectionError:
                                time.sleep(2 ** attempt)
                        receiver.complete_message(message)
            """,
            "an AutoLockRenewer keeps renewing the lock while the retry waits",
        ),
        Valid(
            """
            from celery import Celery

            app = Celery("shop", broker="redis://")
            app.conf.broker_transport_options = {"visibility_timeout": 60}

            @app.task(autoretry_for=(ConnectionError,), retry_backoff=True, retry_backoff_max=30, max_retries=5)
            def notify(user_id):
                ...
            """,
            "the backoff is capped at 30 s, under the 60 s visibility timeout",
        ),
        Valid(
            """
            import asyncio, json
            import aioboto3, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential(multiplier=1, max=20))
            async def charge(order): ...

            async def consume(sqs, queue_url):
                while True:
                    resp = await sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=60)
                    for message in resp.get("Messages", []):
                        await asyncio.wait_for(charge(json.loads(message["Body"])), timeout=45)
                        await sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            "a 45 s handler timeout cuts the 71 s retry under the 60 s visibility timeout (the doctrine's numbers)",
        ),
        Valid(
            """
            import json
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
            def charge(order): ...

            def consume(queue_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
                    for message in resp.get("Messages", []):
                        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                        charge(json.loads(message["Body"]))
            """,
            "the message is deleted before the 51 s retry: it can no longer be delivered again (at-most-once)",
        ),
        Valid(
            """
            import asyncio

            async def consume(sqs, queue_url):
                while True:
                    resp = await sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=60)
                    for message in resp.get("Messages", []):
                        await asyncio.wait_for(handle(message["Body"]), timeout=45)
                        await sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            "the handler's 45 s timeout is shorter than the 60 s window",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import asyncio

            async def consume(sqs, queue_url):
                while True:
                    resp = await sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
                    for message in resp.get("Messages", []):
                        await asyncio.wait_for(handle(message["Body"]), timeout=120)
                        await sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            line=6,
            message="the handler timeout `asyncio.wait_for(..., timeout=120)` (line 8) lets the handler hold the message for up to 2 min",
        ),
        Invalid(
            """
            import json, time
            import boto3

            sqs = boto3.client("sqs")

            def worker(queue_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=40)
                    for message in resp.get("Messages", []):
                        for attempt in range(6):
                            try:
                                post_order(json.loads(message["Body"]))
                                break
                            except ConnectionError:
                                time.sleep(min(20, 2 ** attempt))
                        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            line=9,
            message="can wait 51 s in all (with the 20 s it also sleeps after its last failure)",
        ),
        Invalid(
            """
            import json
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential(multiplier=1, max=20))
            def charge(order): ...

            def consume(queue_url):
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=30)
                    for message in resp.get("Messages", []):
                        charge(json.loads(message["Body"]))
                        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            line=12,
            message="can wait 51 s in all",
        ),
        Invalid(
            """
            from celery import Celery

            app = Celery("shop", broker="sqs://")
            app.conf.broker_transport_options = {"visibility_timeout": 30, "region": "eu-west-1"}

            @app.task(bind=True, max_retries=5)
            def send_receipt(self, order_id):
                try:
                    deliver(order_id)
                except ConnectionError as exc:
                    raise self.retry(exc=exc)
            """,
            line=7,
            message="3 min",
        ),
        Invalid(
            """
            from celery import Celery

            app = Celery("shop", broker="redis://")
            app.conf.update(broker_transport_options={"visibility_timeout": 60}, task_acks_late=True)

            @app.task(time_limit=300)
            def rebuild_index():
                ...
            """,
            line=7,
            message="`time_limit` = 5 min",
        ),
        Invalid(
            """
            broker_url = "sqs://"
            broker_transport_options = {"visibility_timeout": 120}
            task_acks_late = True
            task_time_limit = 600
            """,
            line=5,
            message="visibility_timeout` of 2 min",
        ),
        Invalid(
            """
            import time
            import boto3

            sqs = boto3.client("sqs")
            queue_url = sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "20"})["QueueUrl"]

            def consume():
                while True:
                    resp = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
                    for message in resp.get("Messages", []):
                        for attempt in range(6):
                            try:
                                process(message["Body"])
                                break
                            except ConnectionError:
                                time.sleep(2 ** attempt)
                        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            """,
            line=10,
            message="20 s",
        ),
        Invalid(
            """
            from google.cloud import pubsub_v1
            import tenacity

            subscriber = pubsub_v1.SubscriberClient()
            subscriber.create_subscription(name="projects/p/subscriptions/orders", topic="projects/p/topics/orders",
                                           ack_deadline_seconds=10)

            @tenacity.retry(stop=tenacity.stop_after_attempt(4), wait=tenacity.wait_fixed(5))
            def handle(data): ...

            def drain():
                response = subscriber.pull(request={"subscription": "projects/p/subscriptions/orders", "max_messages": 10})
                for received in response.received_messages:
                    handle(received.message.data)
                    subscriber.acknowledge(request={"subscription": "projects/p/subscriptions/orders",
                                                    "ack_ids": [received.ack_id]})
            """,
            line=13,
            message="modify_ack_deadline",
        ),
        Invalid(
            """
            import time
            from datetime import timedelta
            from azure.servicebus import ServiceBusClient
            from azure.servicebus.management import ServiceBusAdministrationClient

            admin = ServiceBusAdministrationClient.from_connection_string("Endpoint=sb://shop/")
            admin.create_queue("orders", lock_duration=timedelta(seconds=30))

            def consume(client: ServiceBusClient):
                with client.get_queue_receiver("orders") as receiver:
                    for message in receiver:
                        for attempt in range(6):
                            try:
                                process(message)
                                break
                            except ConnectionError:
                                time.sleep(2 ** attempt)
                        receiver.complete_message(message)
            """,
            line=11,
            message="AutoLockRenewer",
        ),
        Invalid(
            """
            from celery import Celery

            app = Celery("shop", broker="redis://")
            app.conf.broker_transport_options = {"visibility_timeout": 3600}

            @app.task
            def send_webhook(event_id, attempt=0):
                if not deliver(event_id):
                    send_webhook.apply_async(args=(event_id, attempt + 1), countdown=4 * 3600)
            """,
            line=10,
            message="waits 4 h as an unacknowledged ETA message",
        ),
    ]

    def check_around(self, site: object, settings: Settings) -> Iterable[Diagnostic]:
        if not isinstance(site, VisibilityWindow) or site.heartbeat:
            return
        if not known(site.window) or float(site.window) <= 0 or site.holds < float(site.window):  # type: ignore[arg-type]
            return
        window = float(site.window)  # type: ignore[arg-type]
        if site.broker == "celery":
            remedy = (f"keep every retry countdown and time limit under {format_seconds(window)} "
                      f"(e.g. visibility 60 s, handler 45 s), or raise `visibility_timeout` above {format_seconds(site.holds)}")
        else:
            beat = format_seconds(max(window / 4, 1.0))
            heartbeat = _HEARTBEAT.get(site.broker, "a heartbeat that extends the window every {beat}").format(beat=beat)
            remedy = (f"keep the handler's work under {format_seconds(window)} (a shorter retry budget or a handler "
                      f"timeout, e.g. visibility 60 s, handler 45 s), or add {heartbeat}")
        yield self.at(
            site,
            f"{site.holds_text}: longer than the {site.window_text}, and nothing extends it, so the message is "
            f"delivered again while this consumer still holds it; {remedy}",
        )
