"""RTY101: a hand-written retry loop that never gives up."""

from __future__ import annotations

from typing import Iterable

from ..describe import delay_phrase
from ..model import DelayKind, JitterKind, RetryPolicy
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


def advice(policy: RetryPolicy) -> str:
    delay = policy.delay
    good_backoff = delay.grows_exponentially and delay.jitter.kind is not JitterKind.NONE
    if good_backoff or delay.kind is DelayKind.UNKNOWN:
        return "add an attempt limit (e.g. 6) or a deadline"
    return "add an attempt limit (e.g. 6) or a deadline, and exponential backoff with jitter"


class UnboundedRetryLoop(Rule):
    """
    ## What it does
    Finds hand-written retry loops with no attempt limit and no deadline: a
    `while True` (or `itertools.count()`, or a loop on a success flag) whose
    `except` handler or failed-status branch goes round again.

    Bounds it recognises: `for attempt in range(n)` (also when `n` is a
    parameter), a counter that the loop steps and compares before raising,
    breaking or returning, and a deadline (`time.monotonic() - start > 30`,
    `while time.monotonic() < deadline`). A success flag (`while not done`)
    or a shutdown flag (`while self.running`) is not a bound.

    The finding is reported on the loop's header line (`while …:` / `for …:`);
    a `# noqa: RTY101` on any line of that header suppresses it.

    ## Why is this bad?
    "Immediately, at a fixed interval, forever" is the worst possible retry.
    When the downstream stays down, every client keeps hammering it, and the
    work never reaches a dead-letter queue where someone would look at it. In
    the seed incident, 2,000 failed messages retried every 100 ms became 20,000
    connection attempts a second and knocked a recovering database over again.

    ## Example
    ```python
    while True:
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            time.sleep(5)
    ```

    ## Use instead
    ```python
    for attempt in range(6):
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            if attempt == 5:
                raise
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
    ```
    """

    code = "RTY101"
    name = "unbounded-retry-loop"
    summary = "Hand-written retry loop with no attempt limit and no deadline"

    VALID = [
        Valid(
            """
            import time
            def take(rate_limiter, want):
                while True:
                    result = rate_limiter.acquire(want)
                    if result.ok:
                        return
                    time.sleep(result.time_to_wait)
            """,
            "waiting for a permit of a local rate limiter is pacing, not a retry (tos)",
        ),
        Valid(
            """
            import asyncio
            class Updater:
                async def run(self):
                    while not self.stop_event.is_set():
                        try:
                            await self.refresh_all()
                            try:
                                await asyncio.wait_for(self.stop_event.wait(), timeout=1.0)
                                break
                            except asyncio.TimeoutError:
                                continue
                        except Exception as e:
                            log.error(e)
                            await asyncio.sleep(1)
            """,
            "a periodic worker: the break is the stop signal, a pass that succeeds goes round (nacos)",
        ),
        Valid(
            """
            import importlib
            def import_attribute(name):
                module_bits = name.split(".")
                attribute_bits = []
                while True:
                    try:
                        return importlib.import_module(".".join(module_bits)), attribute_bits
                    except ImportError:
                        attribute_bits.insert(0, module_bits.pop())
            """,
            "a shorter module path on each pass (rq import_attribute): a search",
        ),
        Valid(
            """
            import click
            def ask_settings():
                settings = None
                while settings is None:
                    value = click.prompt("settings")
                    try:
                        settings = [parse(v) for v in value.split(",")]
                    except ValueError as ex:
                        click.secho(str(ex), fg="red")
                return settings
            """,
            "re-prompting a person (meltano): not a retry",
        ),
        Valid(
            """
            import time
            def wait_for(job):
                while not job.done():
                    time.sleep(5)
            """,
            "polling a job has no failure to retry",
        ),
        Valid(
            """
            import logging
            def consume(consumer, handle):
                for message in consumer:
                    try:
                        handle(message)
                    except Exception:
                        logging.exception("message failed")
            """,
            "a consumer moves on to the next message",
        ),
        Valid(
            """
            import logging
            def serve(sock, handle):
                while True:
                    conn, _ = sock.accept()
                    try:
                        handle(conn)
                    except OSError:
                        logging.warning("client went away")
            """,
            "a server loops forever on success too",
        ),
        Valid(
            """
            import random, time, requests
            def fetch(url):
                attempt = 0
                while True:
                    try:
                        return requests.get(url, timeout=5)
                    except requests.ConnectionError:
                        attempt += 1
                        if attempt >= 5:
                            raise
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "an attempt counter inside while True is a bound",
        ),
        Valid(
            """
            import random, time, requests
            def fetch(url):
                start = time.monotonic()
                while True:
                    try:
                        return requests.get(url, timeout=5)
                    except requests.ConnectionError:
                        if time.monotonic() - start > 60:
                            raise
                        time.sleep(random.uniform(0, 5))
            """,
            "a deadline inside while True is a bound",
        ),
        Valid(
            """
            import time
            def connect(open_connection):
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    try:
                        return open_connection()
                    except ConnectionRefusedError:
                        time.sleep(1)
                raise TimeoutError
            """,
            "a deadline in the loop condition is a bound",
        ),
        Valid(
            """
            def backoff_delays(base=1.0, cap=30.0):
                delay = base
                while True:
                    yield delay
                    delay = min(cap, delay * 2)
            """,
            "an infinite generator of delays retries nothing",
        ),
        Valid(
            """
            import time
            def call_with_retries(operation, attempts, delay):
                for attempt in range(attempts):
                    try:
                        return operation()
                    except ConnectionError:
                        time.sleep(delay * 2 ** attempt)
                raise RuntimeError("gave up")
            """,
            "a retry engine whose bound is a parameter is bounded",
        ),
        Valid(
            '''
            def explain():
                """Never write this:

                while True:
                    try:
                        return call()
                    except Exception:
                        pass
                """
            ''',
            "code in a docstring is not code",
        ),
        Valid(
            """
            import queue, time
            def next_item(q):
                while True:
                    try:
                        return q.get_nowait()
                    except queue.Empty:
                        time.sleep(0.1)
            """,
            "waiting for a queue item is polling, not retrying a failure",
        ),
        Valid(
            """
            def ask_number():
                while True:
                    try:
                        return int(input("number: "))
                    except ValueError:
                        print("not a number")
            """,
            "re-prompting a user is not a retry",
        ),
        Valid(
            """
            import itertools, random, time
            def fetch(call):
                for attempt in itertools.count():
                    try:
                        return call()
                    except ConnectionError:
                        if attempt >= 4:
                            raise
                        time.sleep(random.random() * 2 ** attempt)
            """,
            "itertools.count with an attempt check is bounded",
        ),
        Valid(
            """
            import random, time
            def fetch(call, delays):
                for delay in delays():
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(delay)
            """,
            "iterating over a delay generator: the generator decides the bound",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import asyncio
            class Client:
                async def connect(self):
                    while not self.stop_event.is_set():
                        try:
                            await self.open_connection()
                            break
                        except Exception as e:
                            log.error(e)
                            await asyncio.sleep(1)
            """,
            line=5,
            message="retries forever",
        ),
        Invalid(
            """
            import time, requests
            def fetch(url):
                while True:
                    try:
                        return requests.get(url, timeout=5)
                    except requests.ConnectionError:
                        time.sleep(5)
            """,
            line=4,
            message="retries forever with a fixed 5 s delay",
        ),
        Invalid(
            """
            import time
            def send(client, payload):
                done = False
                while not done:
                    try:
                        client.send(payload)
                        done = True
                    except ConnectionError:
                        time.sleep(1)
            """,
            line=5,
            message="forever",
        ),
        Invalid(
            """
            import itertools, random, time
            def fetch(call):
                for attempt in itertools.count():
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, min(30, 2 ** attempt)))
            """,
            line=4,
            message="add an attempt limit (e.g. 6) or a deadline",
        ),
        Invalid(
            """
            import asyncio, httpx
            async def fetch(client, url):
                while True:
                    try:
                        return await client.get(url)
                    except httpx.TransportError:
                        await asyncio.sleep(1)
            """,
            line=4,
        ),
        Invalid(
            """
            import time, requests
            def fetch(url):
                while True:
                    response = requests.get(url)
                    if response.status_code == 200:
                        return response
                    time.sleep(10)
            """,
            line=4,
        ),
        Invalid(
            """
            import time
            class Client:
                def connect(self):
                    while self.running:
                        try:
                            self.sock = self.open()
                            return
                        except OSError:
                            time.sleep(5)
            """,
            line=5,
        ),
        Invalid(
            """
            from time import sleep as pause
            def fetch(call):
                while 1:
                    try:
                        result = call()
                    except OSError:
                        pause(0.1)
                        continue
                    break
            """,
            line=4,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        if policy.source != "loop" or not policy.bound.unbounded:
            return
        message = f"{policy.description} retries forever {delay_phrase(policy.delay)}; {advice(policy)}"
        yield self.at(policy, message)
