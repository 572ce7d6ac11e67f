"""RTY201: a retry with no delay at all."""

from __future__ import annotations

from typing import Iterable, Optional

from ..describe import bound_phrase
from ..fixes import Fix, Fixer
from ..model import DelayKind, RetryPolicy, known
from .library_fixes import add_tenacity_argument, set_argument
from ..settings import Settings
from .advice import advice
from .base import Diagnostic, Invalid, Rule, Valid


class ImmediateRetry(Rule):
    """
    ## What it does
    Finds retries that start the next attempt immediately after a failure: no
    `time.sleep`/`asyncio.sleep`/`trio.sleep`/`anyio.sleep`, no
    `Event.wait(timeout)`, and no call whose name says it waits (`backoff()`,
    `wait_before_retry()`, … count as a delay of unknown shape). `sleep(0)`
    is no delay.

    When only some failures are retried at once while others back off, the
    finding names those failures.

    A single immediate retry (at most two attempts, typically after repairing
    something: reconnecting, refreshing a token, following a redirect) is not
    reported: it can at most double the load.

    ## Why is this bad?
    A failure caused by overload or an outage does not go away in the
    microseconds between two attempts. Immediate retries multiply the load on a
    downstream at the moment it can least take it, and burn the attempt budget
    before the downstream had any chance to recover.

    ## Fix safety
    Unsafe only (`--unsafe-fixes`, a delay is a number the code does not have):
    urllib3 `Retry` gets `backoff_factor=0.5`; tenacity gets
    `wait=wait_random_exponential(multiplier=0.5, max=20)`.

    ## Example
    ```python
    for attempt in range(3):
        try:
            return client.get(url)
        except ConnectionError:
            pass
    ```

    ## Use instead
    ```python
    for attempt in range(3):
        try:
            return client.get(url)
        except ConnectionError:
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
    ```
    """

    code = "RTY201"
    name = "immediate-retry"
    summary = "A failed operation is retried with no delay"

    VALID = [
        Valid(
            """
            import requests
            class Notify:
                def _post(self, payload, retries=3):
                    self.throttle()
                    r = requests.post(self.url, data=payload, timeout=5)
                    if r.status_code == 429 and retries > 0:
                        return self._post(payload, retries=retries - 1)
                    return r.ok
            """,
            "every call waits in self.throttle() before the request (apprise's plugins)",
        ),
        Valid(
            """
            import socket
            def listen(host, port):
                while True:
                    sock = socket.socket()
                    try:
                        sock.bind((host, port))
                        return sock
                    except OSError:
                        port += 1
            """,
            "hunting a free port (celery rdb): each pass tries another port, a search",
        ),
        Valid(
            """
            def post(client, url, body):
                while True:
                    response = client.post(url, json=body)
                    if response.status_code in (307, 308):
                        url = response.headers["Location"]
                        continue
                    if response.status_code == 200:
                        return response
                    raise RuntimeError(response.status_code)
            """,
            "following redirects (posthog): the next pass goes elsewhere",
        ),
        Valid(
            """
            def embed(client, batch):
                while True:
                    try:
                        return client.embed(batch)
                    except InvalidArgument:
                        if len(batch) == 1:
                            raise
                        batch = batch[: len(batch) // 2]
            """,
            "truncating the payload (langchain vertexai): a repair, not a retry",
        ),
        Valid(
            """
            import json, logging, queue

            def next_batch(self):
                batch = []
                while len(batch) < self.batch_size:
                    try:
                        item = self._events.get(block=True, timeout=1)
                        try:
                            batch.append(json.loads(json.dumps(item)))
                        except Exception:
                            logging.warning("dropping an event that does not serialize")
                            continue
                    except queue.Empty:
                        break
                return batch
            """,
            "the failing step works on the item just taken from the queue; the next round takes another",
        ),
        Valid(
            """
            import time, backoff

            def wait_retry_after(details):
                time.sleep(float(details["exception"].retry_after))

            @backoff.on_exception(backoff.constant, RateLimited, interval=0, jitter=None, on_backoff=wait_retry_after, max_tries=5)
            def fetch(client, url):
                return client.get(url)
            """,
            "`interval=0` with an `on_backoff` handler: the handler does the waiting",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "a jittered backoff delay",
        ),
        Valid(
            """
            import queue
            def drain(q):
                while True:
                    try:
                        return q.get(timeout=1)
                    except queue.Empty:
                        continue
            """,
            "queue.Empty means nothing arrived yet: polling",
        ),
        Valid(
            """
            import os
            def read(fd, n):
                while True:
                    try:
                        return os.read(fd, n)
                    except InterruptedError:
                        continue
            """,
            "retrying after EINTR is correct and immediate by design",
        ),
        Valid(
            """
            import logging
            def consume(messages, handle):
                for message in messages:
                    try:
                        handle(message)
                    except Exception:
                        logging.exception("failed")
                        continue
            """,
            "a consumer moves on to the next message",
        ),
        Valid(
            """
            def connect_any(hosts, connect):
                for host in hosts:
                    try:
                        return connect(host)
                    except OSError:
                        continue
                raise ConnectionError("no host reachable")
            """,
            "failing over to the next host is not retrying the same call",
        ),
        Valid(
            """
            class Client:
                def fetch(self, url):
                    for attempt in range(5):
                        try:
                            return self.session.get(url)
                        except ConnectionError:
                            self._backoff(attempt)
            """,
            "a helper named for backing off is a delay of unknown shape",
        ),
        Valid(
            """
            import threading
            class Worker:
                def __init__(self):
                    self._stop = threading.Event()
                def connect(self):
                    for attempt in range(5):
                        try:
                            return self.open()
                        except OSError:
                            self._stop.wait(2 ** attempt)
            """,
            "an Event.wait with a timeout is a delay",
        ),
        Valid(
            """
            def ask():
                while True:
                    try:
                        return int(input("port: "))
                    except ValueError:
                        pass
            """,
            "re-prompting the user",
        ),
        Valid(
            '''
            RECIPE = """
            for attempt in range(3):
                try:
                    return call()
                except ConnectionError:
                    pass
            """
            ''',
            "code inside a string",
        ),
        Valid(
            """
            class Api:
                def call(self, request):
                    for attempt in range(2):
                        try:
                            return self.session.send(request)
                        except TokenExpired:
                            self.refresh_token()
            """,
            "one immediate retry after refreshing a token",
        ),
        Valid(
            """
            import asyncio
            async def connect(self):
                for attempt in range(5):
                    try:
                        return await self.open()
                    except OSError:
                        await asyncio.wait_for(self._closing.wait(), timeout=2 ** attempt)
            """,
            "asyncio.wait_for on an event with a timeout is a delay",
        ),
        Valid(
            """
            import os
            def find_repo(path):
                while path:
                    parent = os.path.dirname(path)
                    if parent == path:
                        break
                    path = parent
                    try:
                        return open_repo(path)
                    except NotARepository:
                        pass
            """,
            "a walk up the directory tree: each pass opens another path",
        ),
        Valid(
            """
            import os
            def acquire(lock_dir):
                while True:
                    try:
                        os.mkdir(lock_dir)
                        return
                    except FileExistsError:
                        pass
            """,
            "waiting for a lock another process holds is no retry of a failure",
        ),
        Valid(
            """
            def reconnect(self):
                for _ in range(len(self.strategy.addrs)):
                    try:
                        return self.connect()
                    except NetworkError:
                        addr = self.strategy.getnext()
                        update_connection(self, addr)
            """,
            "a failover to the next address, not the same request again",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import requests
            class Notify:
                def _post(self, payload, retries=3):
                    self.log(payload)
                    r = requests.post(self.url, data=payload, timeout=5)
                    if r.status_code == 429 and retries > 0:
                        return self._post(payload, retries=retries - 1)
                    return r.ok
            """,
            line=4,
            message="retries immediately",
        ),
        Invalid(
            """
            import backoff, requests

            @backoff.on_exception(backoff.constant, requests.ConnectionError, interval=0, max_tries=5)
            def fetch(url):
                return requests.get(url, timeout=10)
            """,
            line=4,
            message="immediately",
        ),
        Invalid(
            """
            def fetch(client, url):
                for attempt in range(3):
                    try:
                        return client.get(url)
                    except ConnectionError:
                        pass
            """,
            line=3,
            message="retries immediately",
        ),
        Invalid(
            """
            def fetch(call):
                while True:
                    try:
                        result = call()
                        break
                    except Exception:
                        continue
                return result
            """,
            line=3,
        ),
        Invalid(
            """
            import requests
            def fetch(url):
                for _ in range(5):
                    response = requests.get(url)
                    if response.ok:
                        return response
            """,
            line=4,
        ),
        Invalid(
            """
            def fetch(url, retries=3):
                try:
                    return get(url)
                except ConnectionError:
                    if not retries:
                        raise
                    return fetch(url, retries - 1)
            """,
            line=2,
        ),
        Invalid(
            """
            import asyncio
            async def fetch(call):
                for attempt in range(5):
                    try:
                        return await call()
                    except ConnectionError:
                        await asyncio.sleep(0)
            """,
            line=4,
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionResetError:
                        continue
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=4,
            message="`ConnectionResetError` immediately",
        ),
    ]

    def fix(self, policy: RetryPolicy, fixer: Fixer) -> Optional[Fix]:
        if policy.delay.kind is not DelayKind.NONE:
            return None
        if policy.source == "urllib3":
            return set_argument(policy, fixer, "backoff_factor", "0.5", "back off: `backoff_factor=0.5`")
        if policy.source == "tenacity":
            return add_tenacity_argument(policy, fixer, "wait", "wait_random_exponential", "multiplier=0.5, max=20",
                                         "wait with full jitter: `wait_random_exponential(multiplier=0.5, max=20)`")
        return None

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        if known(policy.bound.attempts) and float(policy.bound.attempts) <= 2:  # type: ignore[arg-type]
            return
        if policy.immediate_on:
            yield self.at(
                policy,
                f"{policy.description} retries {', '.join(_named(n) for n in policy.immediate_on)} immediately, "
                "with no delay, while other failures wait; back off on every retry path "
                "(exponential backoff with jitter)",
            )
            return
        if policy.delay.kind is not DelayKind.NONE or policy.delay.honours_retry_after:
            return
        yield self.at(
            policy,
            f"{policy.description} retries immediately, with no delay between attempts "
            f"({bound_phrase(policy.bound)}); {advice(self.code, policy)}",
        )


def _named(failure: str) -> str:
    """An exception name in code quotes (``ConnectionError (other cases)``); a kind of failure
    written in words (``HTTP statuses (some responses)``) as it is."""
    head, _, rest = failure.partition(" ")
    if head == "HTTP":
        return failure
    return f"`{head}`" + (f" {rest}" if rest else "")
