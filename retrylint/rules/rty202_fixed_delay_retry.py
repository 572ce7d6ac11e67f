"""RTY202: every retry waits the same delay."""

from __future__ import annotations

from typing import Iterable

from ..describe import bound_phrase
from ..model import RetryPolicy, known
from ..schedule import format_seconds
from ..settings import Settings
from .advice import advice
from .base import Diagnostic, Invalid, Rule, Valid


def _amount(policy: RetryPolicy) -> str:
    delay = policy.delay
    if delay.steps:
        return format_seconds(delay.steps[0])
    if known(delay.base):
        return format_seconds(delay.base)
    return f"`{delay.text}`" if delay.text else "the same delay"


class FixedDelayRetry(Rule):
    """
    ## What it does
    Finds retries whose delay never grows: a literal (`sleep(5)`), a constant,
    a parameter or attribute the retry does not change (`sleep(self.delay)`),
    or a constant random range (`sleep(random.uniform(1, 3))`).

    A single retry (at most two attempts) is not reported: there is no schedule
    to grow.

    ## Why is this bad?
    A fixed interval keeps the pressure on a struggling downstream constant for
    as long as it stays down. Exponential backoff (1 s, 2 s, 4 s, 8 s …) makes
    the pressure fall the longer the outage lasts, which is what lets a
    recovering service recover. A constant random range spreads clients but
    still never backs off.

    ## Example
    ```python
    for attempt in range(5):
        try:
            return client.get(url)
        except ConnectionError:
            time.sleep(5)
    ```

    ## Use instead
    ```python
    for attempt in range(5):
        try:
            return client.get(url)
        except ConnectionError:
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
    ```
    """

    code = "RTY202"
    name = "fixed-delay-retry"
    summary = "Every retry waits the same constant delay"

    VALID = [
        Valid(
            """
            import time
            class rate_limited:
                def __init__(self, sleep=0.5, retries=1):
                    self.sleep = sleep
                    self.retries = retries

                def __call__(self, call):
                    def wrapper(*args, **kwargs):
                        for _ in range(self.retries + 1):
                            try:
                                return call(*args, **kwargs)
                            except ServiceUnavailableError:
                                time.sleep(self.sleep)
                    return wrapper

            class Driver:
                @rate_limited()
                def list_nodes(self):
                    ...
            """,
            "one retry as shipped: retries=1 is a default no caller changes (libcloud's vultr driver)",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, min(20, 2 ** attempt)))
            """,
            "exponential backoff with jitter and a cap",
        ),
        Valid(
            """
            import time
            def wait_until_done(job):
                while not job.done():
                    time.sleep(5)
            """,
            "polling at a fixed interval is not a retry",
        ),
        Valid(
            """
            import logging, time
            def send_all(messages, send):
                for message in messages:
                    try:
                        send(message)
                    except ConnectionError:
                        logging.warning("skipped")
                    time.sleep(1)
            """,
            "pacing a batch of different messages",
        ),
        Valid(
            """
            import time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code != 429:
                        return response
                    time.sleep(int(response.headers.get("Retry-After", "1")))
            """,
            "the server chooses the delay (Retry-After)",
        ),
        Valid(
            """
            import time
            class Client:
                def fetch(self, url):
                    for attempt in range(5):
                        try:
                            return self.session.get(url)
                        except ConnectionError:
                            time.sleep(self.backoff.next_delay())
            """,
            "a delay computed elsewhere has an unknown shape",
        ),
        Valid(
            """
            import time
            def fetch(call):
                for attempt in range(1, 6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(attempt * 2)
            """,
            "a linear backoff grows",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for delay in (1, 2, 4, 8):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(delay + random.random())
            """,
            "an explicit growing list of delays",
        ),
        Valid(
            """
            import time
            def run_forever(job):
                while True:
                    job.run()
                    time.sleep(60)
            """,
            "a periodic job is not a retry",
        ),
        Valid(
            '''
            def doc():
                """Bad: ``while True: try: call() except: time.sleep(5)``"""
            ''',
            "code in a docstring",
        ),
        Valid(
            """
            import asyncio, random
            async def fetch(call):
                delay = 0.5
                for attempt in range(6):
                    try:
                        return await call()
                    except ConnectionError:
                        await asyncio.sleep(random.uniform(0, delay))
                        delay = min(delay * 2, 30)
            """,
            "a delay variable doubled in the loop grows",
        ),
        Valid(
            """
            import time
            def wait_available(client, cluster_id):
                while True:
                    try:
                        status = client.describe_cluster(cluster_id)["Status"]
                    except ConnectionError:
                        time.sleep(10)
                        continue
                    if status == "available":
                        return
                    time.sleep(10)
            """,
            "a wait-for-state poll whose failures go round at the poll's own pace is polling",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import time
            class rate_limited:
                def __init__(self, sleep=0.5, retries=1):
                    self.sleep = sleep
                    self.retries = retries

                def __call__(self, call):
                    def wrapper(*args, **kwargs):
                        for _ in range(self.retries + 1):
                            try:
                                return call(*args, **kwargs)
                            except ServiceUnavailableError:
                                time.sleep(self.sleep)
                    return wrapper

            class Driver:
                @rate_limited(retries=3)
                def list_nodes(self):
                    ...
            """,
            line=14,
            message="0.5 s",
        ),
        Invalid(
            """
            from celery import shared_task

            @shared_task(bind=True)
            def send_mail(self, mail_id):
                try:
                    attach_tickets(mail_id)
                except TicketsNotReady:
                    retry_after = 60
                    mark_waiting(mail_id, retry_after)
                    self.retry(max_retries=5, countdown=retry_after)
                try:
                    deliver(mail_id)
                except SMTPError:
                    retry_after = min(30 + self.request.retries * 10, 1800)
                    self.retry(max_retries=5, countdown=retry_after)
            """,
            line=11,
            message="1 min",
        ),
        Invalid(
            """
            from myproject.worker import app
            from myproject.locking import LockTimeout

            @app.task(bind=True, max_retries=5, default_retry_delay=1)
            def add_to_cart(self, cart_id, items):
                try:
                    with lock(cart_id):
                        save(cart_id, items)
                except LockTimeout:
                    self.retry()
            """,
            line=11,
            message="1 s",
        ),
        Invalid(
            """
            import time
            def fetch(client, url):
                for attempt in range(5):
                    try:
                        return client.get(url)
                    except ConnectionError:
                        time.sleep(5)
            """,
            line=8,
            message="waits the same 5 s",
        ),
        Invalid(
            """
            import time
            RETRY_DELAY = 2
            def fetch(call):
                for attempt in range(3):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(RETRY_DELAY)
            """,
            line=9,
            message="2 s",
        ),
        Invalid(
            """
            import time
            def retry(operation, attempts=3, delay=1.0):
                for attempt in range(attempts):
                    try:
                        return operation()
                    except ConnectionError:
                        time.sleep(delay)
            """,
            line=8,
            message="`delay`",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(1, 3))
            """,
            line=8,
        ),
        Invalid(
            """
            class Worker:
                def connect(self):
                    for attempt in range(10):
                        try:
                            return self.open()
                        except OSError:
                            self._stop_event.wait(10)
            """,
            line=8,
        ),
        Invalid(
            """
            import asyncio
            class Client:
                async def fetch(self, url):
                    while True:
                        try:
                            return await self.session.get(url)
                        except ConnectionError:
                            await asyncio.sleep(self.retry_interval)
            """,
            line=9,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        delay = policy.delay
        if not delay.is_constant or delay.honours_retry_after:
            return
        if known(policy.bound.attempts) and float(policy.bound.attempts) <= 2:  # type: ignore[arg-type]
            return  # a single retry has no schedule to grow
        jitter = " (jittered, but never growing)" if delay.jitter.present else ""
        yield self.at(
            policy,
            f"{policy.description} waits the same {_amount(policy)} before every retry{jitter} "
            f"({bound_phrase(policy.bound)}); {advice(self.code, policy)}",
            policy.delay_location,
        )
