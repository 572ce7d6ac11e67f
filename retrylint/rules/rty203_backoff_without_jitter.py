"""RTY203: exponential backoff that every client computes identically."""

from __future__ import annotations

from typing import Iterable

from ..model import JitterKind, RetryPolicy, known
from ..settings import Settings
from .advice import advice
from .base import Diagnostic, Invalid, Rule, Valid

#: A proportional jitter narrower than ±10 % leaves clients in lock-step.
TOKEN_JITTER = 0.10


def lacks_jitter(policy: RetryPolicy) -> str:
    """Why the jitter is missing ("" when it is there)."""
    jitter = policy.delay.jitter
    if jitter.kind is JitterKind.NONE:
        return "without jitter"
    if jitter.kind is JitterKind.PROPORTIONAL and known(jitter.amount) and float(jitter.amount) < TOKEN_JITTER:  # type: ignore[arg-type]
        return f"with only ±{float(jitter.amount) * 100:.2g} % jitter"  # type: ignore[arg-type]
    return ""


def _waits(policy: RetryPolicy) -> float:
    """How many retries wait at all (infinite when the count is not known)."""
    retries = policy.bound.retries
    if not known(retries):
        return float("inf")
    skipped = 1 if policy.delay.first_immediate else 0
    return max(float(retries) - skipped, 0.0)  # type: ignore[arg-type]


class BackoffWithoutJitter(Rule):
    """
    ## What it does
    Finds exponential backoff (`2 ** attempt`, `base * 2 ** attempt`,
    `delay *= 2`, `1 << attempt`, an explicit list such as `[1, 2, 4, 8]`)
    with no randomness, or with a token randomness narrower than ±10 %.

    Jitter it recognises: `random.*`, `secrets`, NumPy random generators,
    `random.Random`/`SystemRandom` instances, and helpers whose name contains
    `jitter`. Full, equal, decorrelated and ±50 % band jitter all pass.

    ## Why is this bad?
    Clients that failed at the same instant (a deploy, a network blip) compute
    the same delays and retry at the same instants, 1 s, 2 s, 4 s later. Each
    synchronized wave knocks the recovering service over again: the thundering
    herd. In the AWS simulation recorded in the design notes, backoff without
    jitter took about 12× longer to let 100 clients finish than full jitter,
    and did more than twice the work.

    ## Example
    ```python
    time.sleep(min(30, 2 ** attempt))
    ```

    ## Use instead
    ```python
    time.sleep(random.uniform(0, min(30, 2 ** attempt)))  # full jitter
    ```
    """

    code = "RTY203"
    name = "backoff-without-jitter"
    summary = "Exponential backoff without jitter"

    VALID = [
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, min(30, 2 ** attempt)))
            """,
            "full jitter",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        d = min(30, 2 ** attempt)
                        time.sleep(d / 2 + random.uniform(0, d / 2))
            """,
            "equal jitter",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                delay = 1.0
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        delay = min(30, random.uniform(1.0, delay * 3))
                        time.sleep(delay)
            """,
            "decorrelated jitter",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(min(30, 2 ** attempt) * random.uniform(0.5, 1.5))
            """,
            "a ±50 % band",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(2 ** attempt + random.random())
            """,
            "additive jitter",
        ),
        Valid(
            """
            import time
            from myapp.retry import add_jitter
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(add_jitter(2 ** attempt))
            """,
            "a jitter helper",
        ),
        Valid(
            """
            import time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(attempt + 1)
            """,
            "linear growth is not exponential backoff",
        ),
        Valid(
            """
            import numpy as np, time
            rng = np.random.default_rng()
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(rng.uniform(0, 2 ** attempt))
            """,
            "a NumPy generator",
        ),
        Valid(
            """
            import secrets, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(secrets.randbelow(1000 * 2 ** attempt) / 1000)
            """,
            "secrets.randbelow",
        ),
        Valid(
            """
            import time
            def poll(job):
                for i in range(8):
                    if job.done():
                        return job.result()
                    time.sleep(2 ** i)
            """,
            "polling with a growing interval is not a retry of a failure",
        ),
        Valid(
            '''
            def doc():
                """time.sleep(2 ** attempt) is wrong"""
            ''',
            "code in a docstring",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(2 ** attempt)
            """,
            line=8,
            message="without jitter",
        ),
        Invalid(
            """
            import time
            def fetch(call):
                delay = 0.5
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(delay)
                        delay *= 2
            """,
            line=9,
        ),
        Invalid(
            """
            import time
            BASE = 0.2
            def fetch(call):
                for attempt in range(8):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(min(30, BASE * 2 ** attempt))
            """,
            line=9,
        ),
        Invalid(
            """
            import asyncio
            async def fetch(call):
                for attempt in range(6):
                    try:
                        return await call()
                    except ConnectionError:
                        await asyncio.sleep(0.1 * (1 << attempt))
            """,
            line=8,
        ),
        Invalid(
            """
            import time
            def fetch(call):
                for delay in [1, 2, 4, 8]:
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(delay)
            """,
            line=8,
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(6):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(2 ** attempt * random.uniform(0.99, 1.01))
            """,
            line=8,
            message="±1 % jitter",
        ),
        Invalid(
            """
            import time
            def fetch(call, retries=4):
                try:
                    return call()
                except ConnectionError:
                    if retries == 0:
                        raise
                    time.sleep(2 ** (4 - retries))
                    return fetch(call, retries - 1)
            """,
            line=9,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        delay = policy.delay
        if not delay.grows_exponentially or _waits(policy) < 2:
            return
        why = lacks_jitter(policy)
        if not why:
            return
        shown = f"`{delay.text}`" if delay.text else "exponential backoff"
        yield self.at(
            policy,
            f"{policy.description} backs off exponentially ({shown}) {why}: clients that failed together "
            f"retry together; {advice(self.code, policy)}",
            policy.delay_location,
        )
