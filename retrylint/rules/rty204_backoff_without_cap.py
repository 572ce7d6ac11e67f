"""RTY204: exponential backoff that can grow past any sensible delay."""

from __future__ import annotations

import math
from typing import Iterable, Optional

from ..fixes import UNSAFE, Fix, Fixer
from ..model import RetryPolicy, known
from .library_fixes import DEFAULT_CAP, set_argument, tenacity_wait_call
from ..schedule import INF, format_seconds, largest_reachable_delay
from ..settings import Settings
from .advice import advice
from .base import Diagnostic, Invalid, Rule, Valid


def _power_of_two(value: float) -> str:
    exponent = math.log2(value) if value > 0 else 0
    if value >= 1 and abs(exponent - round(exponent)) < 1e-9 and exponent >= 10:
        return f"2^{int(round(exponent))} s ≈ {format_seconds(value)}"
    return format_seconds(value)


class BackoffWithoutCap(Rule):
    """
    ## What it does
    Finds exponential backoff with no cap on the single delay (no
    `min(cap, …)`, no `if delay > cap: delay = cap`, no clamped exponent) when
    the largest delay the retry can reach is longer than `max-delay` (default
    120 s), or when the retry never stops. The largest reachable delay comes
    from the bound: `for attempt in range(11): sleep(2 ** attempt)` makes ten
    retries, the last after 2^9 = 512 s. When the bound is a value retrylint cannot read (a parameter),
    the rule stays silent.

    ## Options
    - `max-delay` (seconds, default `120`): the longest single delay accepted
      without a cap.

    ## Why is this bad?
    Without a cap the delay doubles past anything useful: after 24 retries a
    client waits 2^24 s, about 194 days, before the next attempt — it has
    silently given up without saying so, and the work never reaches a
    dead-letter queue. Cap single delays at 20–30 s (at most a few minutes) and
    let the attempt limit end the retry.

    ## Example
    ```python
    for attempt in range(26):
        ...
        time.sleep(random.uniform(0, 2 ** attempt))
    ```

    ## Use instead
    ```python
    for attempt in range(8):
        ...
        time.sleep(random.uniform(0, min(20, 2 ** attempt)))
    ```

    ## Fix safety
    Unsafe only (`--unsafe-fixes`): the cap is a number the code does not have,
    20 s by default. tenacity waits get `max=20`, backoff gets `max_value=20`,
    retrying `wait_exponential_max=20000`, the retry package `max_delay=20`.
    """

    code = "RTY204"
    name = "backoff-without-cap"
    summary = "Exponential backoff with no cap on the delay"

    VALID = [
        Valid(
            """
            import backoff, requests

            @backoff.on_exception(backoff.expo, requests.ConnectionError, max_time=180)
            def fetch(url):
                return requests.get(url, timeout=10)
            """,
            "backoff cuts the last wait to what is left of max_time: 1, 2 … 64 s, then 53 s",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(30):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, min(30, 2 ** attempt)))
            """,
            "min() caps the delay",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(30):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.random() * 2 ** min(attempt, 5))
            """,
            "a clamped exponent caps the delay",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.random() * 2 ** attempt)
            """,
            "five attempts reach at most 16 s",
        ),
        Valid(
            """
            import random, time
            MAX_DELAY = 30
            def fetch(call):
                delay = 1
                while True:
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, delay))
                        delay *= 2
                        if delay > MAX_DELAY:
                            delay = MAX_DELAY
            """,
            "an if-statement caps the delay",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                delay = 1
                for attempt in range(50):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, delay))
                        delay = min(delay * 2, 60)
            """,
            "min() in the doubling caps the delay",
        ),
        Valid(
            """
            import random, time
            def fetch(call, max_attempts):
                for attempt in range(max_attempts):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "the bound is a parameter: the largest delay is unknown",
        ),
        Valid(
            """
            import time
            def fetch(call):
                attempt = 0
                while True:
                    try:
                        return call()
                    except ConnectionError:
                        attempt += 1
                        time.sleep(attempt * 5)
            """,
            "linear growth is not exponential (RTY101 covers the missing bound)",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for delay in [1, 2, 4, 8, 16, 32, 64, 128, 256]:
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(delay * random.random())
            """,
            "an explicit list ends: its last step is the cap",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                deadline = time.monotonic() + 60
                attempt = 0
                while time.monotonic() < deadline:
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.random() * 2 ** attempt)
                        attempt += 1
            """,
            "a 60 s deadline keeps every delay under two minutes",
        ),
        Valid(
            '''
            def doc():
                """sleep(2 ** attempt) forever is bad"""
            ''',
            "code in a docstring",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(11):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.random() * 2 ** attempt)
            """,
            line=8,
            message="8.53 min",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                delay = 1
                while True:
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, delay))
                        delay *= 2
            """,
            line=9,
            message="never stops growing",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(26):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=8,
            message="2^24 s ≈ 194 days",
        ),
        Invalid(
            """
            import asyncio, random
            async def fetch(call, retries=20):
                try:
                    return await call()
                except ConnectionError:
                    if retries == 0:
                        raise
                    await asyncio.sleep(random.random() * 2 ** (20 - retries))
                    return await fetch(call, retries - 1)
            """,
            line=9,
        ),
        Invalid(
            """
            import time
            def fetch(call):
                for attempt in range(12):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(0.5 * 3 ** attempt)
            """,
            line=8,
        ),
    ]

    def fix(self, policy: RetryPolicy, fixer: Fixer) -> Optional[Fix]:
        cap = DEFAULT_CAP
        if policy.source == "tenacity":
            wait = tenacity_wait_call(policy, fixer, ["wait_exponential", "wait_random_exponential", "wait_exponential_jitter"])
            if wait is not None and fixer.keyword(wait, "max") is None:
                return Fix(UNSAFE, f"cap the wait: `max={cap}`", (fixer.add_keyword(wait, "max", str(cap)),))
            return None
        keyword = {"backoff": "max_value", "retrying": "wait_exponential_max", "retry": "max_delay"}.get(policy.source)
        if keyword is None:
            return None
        value = str(cap * 1000) if policy.source == "retrying" else str(cap)
        return set_argument(policy, fixer, keyword, value, f"cap the delay: `{keyword}={value}`")

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        delay = policy.delay
        if not delay.grows_exponentially or delay.has_cap:
            return
        largest = largest_reachable_delay(policy)
        if not known(largest):
            return
        value = float(largest)  # type: ignore[arg-type]
        if value <= settings.max_delay:
            return
        limit = format_seconds(settings.max_delay)
        if value == INF:
            reach = "never stops growing (the retry has no bound)"
        else:
            reach = f"reaches {_power_of_two(value)} between attempts"
        yield self.at(
            policy,
            f"{policy.description} backs off exponentially with no cap: the delay {reach}, "
            f"over the {limit} max-delay; {advice(self.code, policy)}",
            policy.delay_location,
        )
