"""RTY203: exponential backoff that every client computes identically."""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from ..fixes import UNSAFE, Fix, Fixer, first_call
from ..model import JitterKind, RetryPolicy, known
from .library_fixes import call_of, rename, set_argument, tenacity_wait_call
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

    ## Fix safety
    Every fix is unsafe (`--unsafe-fixes`): jitter changes the delays, full jitter halves
    the average one, and some need a number. tenacity `wait_exponential(...)` becomes
    `wait_random_exponential(...)` with the same arguments (the import is extended);
    backoff's `jitter=None` is removed (full jitter is backoff's default); redis
    `ExponentialBackoff(...)` becomes `FullJitterBackoff(...)`; urllib3 gets
    `backoff_jitter=1.0`, retrying `wait_jitter_max=1000`, the retry package
    `jitter=(0, 1)`, and a hand-written `sleep(d)` becomes `sleep(random.uniform(0, d))`
    (adding `import random`).
    """

    code = "RTY203"
    name = "backoff-without-jitter"
    summary = "Exponential backoff without jitter"

    VALID = [
        Valid(
            """
            import random

            def next_delay(attempt, cap=30):
                # A delay strategy with full jitter: clients spread out.
                return random.uniform(0, min(cap, 0.5 * 2 ** attempt))

            def page_size(n):
                return 2 ** n  # grows, but is no delay
            """
        ),
        Valid(
            """
            from urllib3.util import retry

            def make_retry(**options):
                return retry.Retry(total=5, backoff_factor=0.5, **options)
            """,
            "`**options` may carry `backoff_jitter`",
        ),
        Valid(
            """
            import httpx
            from urllib3.util.retry import Retry

            def make_retry(total, backoff_factor):
                return Retry(total=total, backoff_factor=backoff_factor, status_forcelist=[502, 503])

            def make_transport(config):
                return httpx.HTTPTransport(retries=config.max_retries)
            """,
            "a backoff factor or retry count passed in: the shape of the schedule is the caller's",
        ),
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
            MAX_DELAY = 30

            def next_delay(attempt, base=0.5):
                \"\"\"The backoff schedule every client of the package uses.\"\"\"
                return min(MAX_DELAY, base * 2 ** attempt)
            """,
            line=4,
            message="delay strategy `next_delay()` backs off exponentially",
        ),
        Invalid(
            """
            from urllib3.util import retry

            try:
                ANY_METHOD = {"allowed_methods": None}
            except AttributeError:
                ANY_METHOD = {"method_whitelist": None}

            DEFAULT_RETRY = retry.Retry(connect=1, read=1, status=4, backoff_factor=0.5, **ANY_METHOD)
            """,
            line=9,
            message="without jitter",
        ),
        Invalid(
            """
            from pip._vendor import urllib3

            retries = urllib3.Retry(total=5, backoff_factor=0.25, status_forcelist=[500, 502, 503])
            """,
            line=4,
            message="without jitter",
        ),
        Invalid(
            """
            from urllib3.util.retry import Retry

            class LoggingRetry(Retry):
                def increment(self, *args, **kwargs):
                    log.warning("retrying %s", args)
                    return super().increment(*args, **kwargs)

            RETRY = LoggingRetry(total=5, backoff_factor=0.5, status_forcelist=[502, 503])
            """,
            line=9,
            message="without jitter",
        ),
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

    def fix(self, policy: RetryPolicy, fixer: Fixer) -> Optional[Fix]:
        source = policy.source
        if source == "tenacity":
            target = tenacity_wait_call(policy, fixer, ["wait_exponential"])
            if target is not None:
                return rename(fixer, target, "wait_random_exponential", "tenacity",
                              "use `wait_random_exponential` (full jitter) with the same arguments")
        if source == "backoff":
            call = call_of(policy)
            if call is not None and fixer.keyword(call, "jitter") is not None:
                edit = fixer.remove_keyword(call, "jitter")
                return Fix(UNSAFE, "remove `jitter=None` (backoff's default is full jitter)", (edit,)) if edit else None
        if source == "redis":
            target = first_call(call_of(policy), fixer.ctx, {"redis.backoff.ExponentialBackoff"})
            if target is not None:
                return rename(fixer, target, "FullJitterBackoff", "redis.backoff", "use `FullJitterBackoff` (same cap and base)")
        if source == "urllib3":
            return set_argument(policy, fixer, "backoff_jitter", "1.0", "add `backoff_jitter=1.0`")
        if source == "coredis":
            return set_argument(policy, fixer, "jitter", "True", "add `jitter=True`")
        if source == "retrying":
            return set_argument(policy, fixer, "wait_jitter_max", "1000", "add `wait_jitter_max=1000` (ms)")
        if source == "retry":
            return set_argument(policy, fixer, "jitter", "(0, 1)", "add `jitter=(0, 1)`")
        if source in ("loop", "recursion") and isinstance(policy.delay_anchor, cst.Call):
            sleep = policy.delay_anchor
            if len(sleep.args) == 1 and sleep.args[0].keyword is None and not sleep.args[0].star:
                argument = sleep.args[0].value
                random_name = fixer.module_alias(sleep, "random")
                edits = [fixer.replace(argument, f"{random_name or 'random'}.uniform(0, {fixer.render(argument)})")]
                if random_name is None:
                    import_edit = fixer.ensure_module_import("random")
                    if import_edit is not None:
                        edits.append(import_edit)
                return Fix(UNSAFE, "draw the delay with full jitter: `random.uniform(0, delay)`", tuple(edits))
        return None

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
