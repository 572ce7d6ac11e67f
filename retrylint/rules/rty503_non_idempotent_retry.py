"""RTY503: a retried operation creates something and carries no idempotency key."""

from __future__ import annotations

from typing import Iterable

from ..model import RetriedCreate
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


class NonIdempotentRetry(Rule):
    """
    ## What it does
    Finds operations that create something and that a retry runs again with nothing the
    server can deduplicate on:

    - HTTP `POST`/`PATCH` through requests, httpx or aiohttp with no `Idempotency-Key`
      (or `X-Idempotency-Key`, a dedup or request id, a client token) in its headers or body;
    - SQL `INSERT` without `ON CONFLICT`/`ON DUPLICATE KEY`/`INSERT OR IGNORE` (also
      SQLAlchemy `insert(...)`), Django `objects.create(...)`, a SQLAlchemy ORM
      `session.add(Model(...))` committed in the attempt (`session.commit()`);
    - payment calls (`stripe.Charge.create`, `stripe.PaymentIntent.create`,
      `client.payment_intents.create`, …) without `idempotency_key`;
    - DynamoDB `put_item` without `ConditionExpression` whose item holds a value made anew on
      each attempt (`uuid4()`, `time.time()`), and SQS FIFO `send_message` whose deduplication
      id (or, without one, body) is made anew on each attempt;
    - a key that exists but is made inside the retry (`str(uuid4())` in the retried
      function), so that every attempt sends a different one.

    "Retried" means inside a hand-written retry loop or recursion, a function decorated by a
    retry library (tenacity, backoff, stamina, retrying, retry, celery tasks that retry), a
    `for attempt in Retrying(...)` block, or a POST on a requests session mounted with a
    urllib3 `Retry` whose `allowed_methods` includes POST and that retries after the request
    was sent (read or status retries).

    Not reported: GET/PUT/DELETE; a POST to an endpoint named for a read, a login or a
    computation (`search`, `query`, `graphql`, `token`, `oauth`, `login`, `completions`,
    `embeddings`, …: POST is only the transport there), or to an endpoint whose last path
    segment cannot be read (a parameter, `f"https://{host}/api/{route}"`); a database create inside
    `transaction.atomic()`/`session.begin()` that ends the attempt (a failed attempt rolls it
    back); a create that records the attempt number (`is_retry=self.request.retries > 0`:
    one row per attempt is the intent); upserts and conditional puts; an
    unconditional `put_item` of the same item (an overwrite); FIFO sends without a
    deduplication id and with a stable body (SQS refuses them or deduplicates on the body);
    standard-queue sends; urllib3's default `allowed_methods` (no POST); httpx
    `HTTPTransport(retries=...)`, `Retry(read=0)` without status retries and retries of
    connection failures only (`requests.ConnectTimeout`, `httpx.ConnectError`: they retry only
    connections that never carried the request); headers that cannot be read. A key visibly
    sent anywhere in the request counts: in the headers, in the body beside a `**spread`
    (`json={**order, "idempotency_key": order["id"]}`), set on the body before the call
    (`body["idempotency_key"] = ...`, `body.update(...)`, `body.setdefault(...)`), in
    `dict(order, idempotency_key=...)` or `json.dumps(...)`, or in the URL.

    ## Why is this bad?
    Failures are ambiguous: a timeout after the server committed, a connection reset after
    the write, a 502 from a proxy whose upstream applied the request. The retry then runs
    the create again: a second order, a second row, a second charge. An idempotency key made
    once per operation, before the retry, lets the server answer the repeat with the first
    result instead.

    ## Example
    ```python
    @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
    def place_order(session, order):
        return session.post("https://api.shop.example/orders", json=order, timeout=10)
    ```

    ## Use instead
    ```python
    def place_order(session, order):
        key = str(uuid.uuid4())  # once per order, reused by every attempt
        return _post_order(session, order, key)

    @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
    def _post_order(session, order, key):
        return session.post("https://api.shop.example/orders", json=order, timeout=10,
                            headers={"Idempotency-Key": key})
    ```
    """

    code = "RTY503"
    name = "non-idempotent-retry"
    summary = "A retried create (POST, INSERT, charge) carries no idempotency key"

    VALID = [
        Valid(
            """
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def create(order):
                return requests.post("https://api.shop.example/v1/orders", json={**order, "idempotency_key": order["id"]}, timeout=10)
            """,
            "the key is in the body, beside the spread order: the server can deduplicate on it",
        ),
        Valid(
            """
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def create(order):
                body = dict(order)
                body["idempotency_key"] = order["id"]
                return requests.post("https://api.shop.example/v1/orders", json=body, timeout=10)
            """,
            "the key is set on the body before the call",
        ),
        Valid(
            """
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def fetch_order(order_id):
                return requests.get(f"https://api.shop.example/orders/{order_id}", timeout=10)

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def save_order(order):
                return requests.put(f"https://api.shop.example/orders/{order['id']}", json=order, timeout=10)

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def cancel_order(order_id):
                return requests.delete(f"https://api.shop.example/orders/{order_id}", timeout=10)
            """,
            "GET, PUT and DELETE are idempotent: repeating them leaves the same state",
        ),
        Valid(
            """
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def place_order(order, key):
                return requests.post("https://api.shop.example/orders", json=order, timeout=10,
                                     headers={"Idempotency-Key": key})
            """,
            "the caller's key, made once, goes with every attempt",
        ),
        Valid(
            """
            import httpx, stamina

            @stamina.retry(on=httpx.TransportError, attempts=5)
            def search(client: httpx.Client, text):
                return client.post("https://search.example/_search", json={"query": {"match": {"title": text}}})
            """,
            "a POST to a search endpoint reads: POST is only the transport",
        ),
        Valid(
            """
            import boto3, backoff
            from botocore.exceptions import ClientError

            table = boto3.resource("dynamodb").Table("orders")

            @backoff.on_exception(backoff.expo, ClientError, max_tries=5)
            def record(order):
                table.put_item(Item={"pk": order["id"], "total": order["total"]},
                               ConditionExpression="attribute_not_exists(pk)")
            """,
            "a conditional put creates the item once",
        ),
        Valid(
            """
            import time
            import psycopg

            def record(conn, order):
                for attempt in range(5):
                    try:
                        with conn.cursor() as cur:
                            cur.execute("INSERT INTO orders (id, total) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING",
                                        (order["id"], order["total"]))
                        conn.commit()
                        return
                    except psycopg.OperationalError:
                        time.sleep(2 ** attempt)
            """,
            "an upsert on the business key",
        ),
        Valid(
            """
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def publish(order):
                sqs.send_message(QueueUrl="https://sqs.eu-west-1.amazonaws.com/1/orders", MessageBody=order.to_json())
            """,
            "a standard queue is at-least-once anyway: its consumers deduplicate",
        ),
        Valid(
            """
            import requests
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=Retry(total=5, backoff_factor=0.5,
                                                                     status_forcelist=[502, 503, 504])))

            def place_order(order):
                return session.post("https://api.shop.example/orders", json=order, timeout=10)
            """,
            "urllib3's default allowed_methods has no POST: the POST is not re-sent",
        ),
        Valid(
            """
            import requests
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            retry = Retry(total=3, connect=3, read=0, backoff_factor=0.5, allowed_methods=None)
            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=retry))

            def place_order(order):
                return session.post("https://api.shop.example/orders", json=order, timeout=10)
            """,
            "read=0 and no status retries: only connections that never carried the request are retried",
        ),
        Valid(
            """
            import httpx

            client = httpx.Client(transport=httpx.HTTPTransport(retries=3))

            def place_order(order):
                return client.post("https://api.shop.example/orders", json=order)
            """,
            "httpx's transport retries only failed connections",
        ),
        Valid(
            """
            import stripe, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_random_exponential(max=10))
            def charge(order, key):
                return stripe.PaymentIntent.create(amount=order.total, currency="eur", idempotency_key=key)
            """,
            "the payment carries the caller's idempotency key",
        ),
        Valid(
            """
            import time
            import requests

            def get_token(client_id, secret):
                for attempt in range(4):
                    try:
                        return requests.post("https://auth.example/oauth/token",
                                             data={"grant_type": "client_credentials"}, auth=(client_id, secret))
                    except requests.ConnectionError:
                        time.sleep(2 ** attempt)
            """,
            "asking for a token again creates nothing that matters",
        ),
        Valid(
            """
            import boto3, tenacity

            sqs = boto3.client("sqs")

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def publish(order):
                sqs.send_message(QueueUrl="https://sqs.eu-west-1.amazonaws.com/1/orders.fifo", MessageBody=order.to_json(),
                                 MessageGroupId=order.customer_id)
            """,
            "a FIFO send with a stable body: SQS refuses it or deduplicates on the body's hash",
        ),
        Valid(
            """
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def deliver(url, payload):
                return requests.post(url, json=payload, timeout=10)
            """,
            "the endpoint is a parameter: it may be a search or a token endpoint, so it is not judged",
        ),
        Valid(
            """
            from celery import shared_task
            from django.db import IntegrityError, transaction

            @shared_task(autoretry_for=(IntegrityError,), retry_backoff=60, max_retries=3)
            def remove_project(pk, user):
                with transaction.atomic():
                    project = Project.objects.get(pk=pk)
                    AuditEntry.objects.create(action="remove", target=project.slug, user=user)
                    project.delete()
            """,
            "a failed attempt rolls the transaction back, the row with it (Weblate's project removal)",
        ),
        Valid(
            """
            import requests
            from celery import shared_task

            @shared_task(bind=True, autoretry_for=(ConnectionError,), max_retries=5)
            def ping(self, url):
                response = requests.get(url, timeout=10)
                DeliveryAttempt.objects.create(url=url, status=response.status_code, is_retry=self.request.retries > 0)
            """,
            "a row that records each attempt (it carries the attempt number) is meant to be written per attempt",
        ),
        Valid(
            """
            import requests

            def place_order(order):
                try:
                    return requests.post("https://api.shop.example/orders", json=order, timeout=10)
                except requests.ConnectionError:
                    return None
            """,
            "no retry: the POST runs once",
        ),
        Valid(
            """
            import httpx, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(4), wait=tenacity.wait_random_exponential(max=10),
                            retry=tenacity.retry_if_exception_type((httpx.ConnectError, httpx.ConnectTimeout)))
            def place_order(client: httpx.Client, order):
                return client.post("https://api.shop.example/orders", json=order)
            """,
            "only connection failures are retried: the POST never reached the server when it is sent again",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def place_order(session: requests.Session, order):
                return session.post("https://api.shop.example/orders", json=order, timeout=10)
            """,
            line=6,
            message="up to 5 times",
        ),
        Invalid(
            """
            import time
            import httpx

            async def create_ticket(client: httpx.AsyncClient, ticket):
                for attempt in range(4):
                    try:
                        response = await client.post("/api/tickets", json=ticket)
                        response.raise_for_status()
                        return response.json()
                    except httpx.TransportError:
                        time.sleep(2 ** attempt)
            """,
            line=8,
            message="HTTP POST to `/api/tickets`",
        ),
        Invalid(
            """
            import uuid
            import requests, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=20))
            def place_order(order):
                return requests.post("https://api.shop.example/orders", json=order, timeout=10,
                                     headers={"Idempotency-Key": str(uuid.uuid4())})
            """,
            line=7,
            message="made anew on every attempt",
        ),
        Invalid(
            """
            import stripe
            from celery import shared_task

            @shared_task(autoretry_for=(stripe.error.APIConnectionError,), max_retries=3, retry_backoff=True)
            def charge(order_id, amount):
                stripe.Charge.create(amount=amount, currency="eur", source="tok_visa", description=order_id)
            """,
            line=7,
            message="stripe.Charge.create",
        ),
        Invalid(
            """
            import time
            import sqlite3

            def record(db: sqlite3.Connection, order):
                for attempt in range(5):
                    try:
                        db.execute("INSERT INTO orders (customer, total) VALUES (?, ?)", (order.customer, order.total))
                        db.commit()
                        return
                    except sqlite3.OperationalError:
                        time.sleep(0.1 * 2 ** attempt)
            """,
            line=8,
            message="SQL INSERT",
        ),
        Invalid(
            """
            import requests
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            retry = Retry(total=5, backoff_factor=0.5, status_forcelist=[502, 503, 504],
                          allowed_methods=["GET", "POST"])
            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=retry))

            def place_order(order):
                return session.post("https://api.shop.example/orders", json=order, timeout=10)
            """,
            line=12,
            message="allowed_methods",
        ),
        Invalid(
            """
            import time, uuid
            import boto3

            table = boto3.resource("dynamodb").Table("events")

            def record(event):
                for attempt in range(5):
                    try:
                        table.put_item(Item={"pk": str(uuid.uuid4()), "type": event.type, "body": event.body})
                        return
                    except Exception:
                        time.sleep(2 ** attempt)
            """,
            line=10,
            message="uuid.uuid4()",
        ),
        Invalid(
            """
            import uuid
            import backoff, boto3

            sqs = boto3.client("sqs")

            @backoff.on_exception(backoff.expo, Exception, max_tries=4)
            def publish(order):
                sqs.send_message(QueueUrl="https://sqs.eu-west-1.amazonaws.com/1/orders.fifo", MessageBody=order.to_json(),
                                 MessageGroupId=order.customer_id, MessageDeduplicationId=uuid.uuid4().hex)
            """,
            line=9,
            message="MessageDeduplicationId",
        ),
    ]

    def check_around(self, site: object, settings: Settings) -> Iterable[Diagnostic]:
        if not isinstance(site, RetriedCreate) or site.keyed is not False:
            return
        yield self.at(
            site,
            f"{site.operation} is retried with no stable idempotency key: {site.retry}; an attempt whose answer is "
            f"lost after the server applied it is applied again on the next one; {site.advice}",
        )
