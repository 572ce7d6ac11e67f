"""RTY504: jitter added before the cap is clamped away once the backoff reaches the cap."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Optional

from ..model import DelayKind, JitterKind, RetryPolicy, known
from ..schedule import delay_range, format_seconds
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid

#: Jitter of a bounded width: once the low end of the jittered delay passes the cap, the
#: clamp leaves one value. (Full and decorrelated jitter always keep draws below the cap.)
_BOUNDED = (JitterKind.ADDITIVE, JitterKind.EQUAL, JitterKind.PROPORTIONAL)
#: How far to look for the collapse.
_HORIZON = 200

_ADVICE = {
    "stamina": "stamina clamps after adding `wait_jitter`: raise `wait_max` or lower `attempts` so that the cap is never "
               "reached, or use a policy that jitters under the cap (tenacity `wait_random_exponential(max=...)`)",
    "tenacity": "use `wait_random_exponential(multiplier=..., max=...)` (full jitter under the cap) or "
                "`wait_exponential(max=...) + wait_random(0, ...)` (jitter added after the cap)",
    "": "draw the jitter under the cap, `random.uniform(0, min(cap, base * 2 ** attempt))`, or add it after the cap, "
        "`min(cap, base * 2 ** attempt) + random.uniform(0, 1)`",
}


@dataclass(frozen=True)
class Collapse:
    """From retry ``retry`` on (the wait after attempt ``retry``), every delay is exactly ``cap``."""

    retry: int
    cap: float
    #: How many retries the policy makes (None: it never stops, or it stops on a deadline).
    retries: Optional[int]


def collapse(policy: RetryPolicy) -> Optional[Collapse]:
    """Where a jitter-then-cap policy stops dispersing clients, if its bound lets it get there."""
    delay = policy.delay
    if not delay.jitter_then_cap or delay.kind is not DelayKind.EXPONENTIAL or delay.jitter.kind not in _BOUNDED:
        return None
    if not (known(delay.cap) and known(delay.base) and known(delay.factor)) or float(delay.factor) <= 1:  # type: ignore[arg-type]
        return None
    if delay.jitter.kind is not JitterKind.EQUAL and not known(delay.jitter.amount):
        return None
    if known(delay.jitter.amount) and float(delay.jitter.amount) <= 0:  # type: ignore[arg-type]
        return None
    cap = float(delay.cap)  # type: ignore[arg-type]
    free = replace(delay, cap=None, jitter_then_cap=False)
    bound = policy.bound
    if bound.attempts is not None and not known(bound.attempts):
        return None  # a limit we cannot read
    if bound.deadline is not None and not known(bound.deadline):
        return None
    retries = int(bound.retries) if known(bound.retries) else None  # type: ignore[arg-type]
    waited = 0.0
    for k in range(1, _HORIZON + 1):
        if retries is not None and k > retries:
            return None  # the policy stops before its delay reaches the cap
        if known(bound.deadline) and waited >= float(bound.deadline):  # type: ignore[arg-type]
            return None  # the deadline passes first (counted with the expected waits)
        r = delay_range(free, k)
        if not known(r.low):
            return None
        if float(r.low) >= cap:  # type: ignore[arg-type]
            if k == 1:
                return None  # capped from the first retry: a fixed delay (RTY202), not a collapse
            return Collapse(k, cap, retries)
        expected = delay_range(delay, k).expected
        waited += float(expected) if known(expected) else cap  # type: ignore[arg-type]
    return None


class JitterCollapsesAtCap(Rule):
    """
    ## What it does
    Finds backoff that adds its jitter first and clamps to the cap afterwards,
    `min(cap, base * 2 ** n + jitter)`, when the policy's bound lets the delay reach the
    cap. It reports the retry from which every delay is exactly the cap.

    It reads stamina (`min(wait_max, wait_initial * wait_exp_base ** (n - 1) +
    uniform(0, wait_jitter))`: with the defaults every wait from the 7th attempt on is
    exactly 5 s), tenacity `wait_exponential_jitter(...)` with a `max`, and hand-written
    `min(cap, base * 2 ** attempt + random.uniform(...))` (also equal jitter and ±x % bands
    inside the `min`).

    Full jitter under the cap, `random.uniform(0, min(cap, ...))`, jitter added after the
    cap, `min(cap, ...) + random.uniform(0, 1)`, decorrelated jitter and policies whose
    attempt limit or deadline stops them before the cap is reached are fine.

    ## Why is this bad?
    Jitter is there so that clients that failed together do not retry together (RTY203).
    Clamping after adding it throws it away exactly when the outage is long: once
    `base * 2 ** n` alone is over the cap, every client waits the same cap, retry after
    retry, and a herd that formed stays in lock-step at the cap's period — the longest
    outages get no dispersion at all.

    ## Example
    ```python
    time.sleep(min(30, 0.5 * 2 ** attempt + random.uniform(0, 1)))
    ```

    ## Use instead
    ```python
    time.sleep(random.uniform(0, min(30, 0.5 * 2 ** attempt)))  # full jitter under the cap
    ```
    """

    code = "RTY504"
    name = "jitter-collapses-at-cap"
    summary = "Jitter added before the cap: past the cap every client waits the same"

    VALID = [
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(10):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(random.uniform(0, min(30, 0.5 * 2 ** attempt)))
            """,
            "full jitter under the cap",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(10):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(min(30, 0.5 * 2 ** attempt) + random.uniform(0, 1))
            """,
            "jitter added after the cap",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                for attempt in range(5):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(min(30, 0.5 * 2 ** attempt + random.uniform(0, 1)))
            """,
            "5 attempts: the delay never gets near the 30 s cap (at most 4 s + jitter)",
        ),
        Valid(
            """
            import stamina

            @stamina.retry(on=ConnectionError, attempts=5)
            def fetch(url): ...
            """,
            "4 waits of at most 0.8 s + 1 s: stamina's 5 s cap is never reached",
        ),
        Valid(
            """
            import stamina

            @stamina.retry(on=ConnectionError, attempts=10, wait_max=60)
            def fetch(url): ...
            """,
            "the largest delay (0.1 × 2^8 = 25.6 s + jitter) stays under `wait_max=60`",
        ),
        Valid(
            """
            import tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential_jitter(initial=1, jitter=2))
            def fetch(url): ...
            """,
            "no `max`: tenacity's cap is effectively infinite",
        ),
        Valid(
            """
            import tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_random_exponential(multiplier=1, max=10))
            def fetch(url): ...
            """,
            "full jitter under the cap",
        ),
        Valid(
            """
            import tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential(max=10) + tenacity.wait_random(0, 2))
            def fetch(url): ...
            """,
            "the random part is added after `wait_exponential`'s cap",
        ),
        Valid(
            """
            import stamina

            @stamina.retry(on=ConnectionError, attempts=20, timeout=3)
            def fetch(url): ...
            """,
            "the 3 s timeout passes long before the delay reaches the 5 s cap",
        ),
        Valid(
            """
            import random, time
            def fetch(call, cap):
                for attempt in range(10):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(min(cap, 0.5 * 2 ** attempt + random.uniform(0, 1)))
            """,
            "the cap is a parameter: not known",
        ),
        Valid(
            """
            import random, time
            def fetch(call):
                delay = 1.0
                for attempt in range(10):
                    try:
                        return call()
                    except ConnectionError:
                        delay = min(30, random.uniform(1.0, delay * 3))
                        time.sleep(delay)
            """,
            "decorrelated jitter keeps drawing under the cap",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import stamina

            @stamina.retry(on=ConnectionError)
            def fetch(url): ...
            """,
            line=4,
            message="from retry 7 on (the wait after attempt 7) every client waits exactly 5 s",
        ),
        Invalid(
            """
            import stamina

            for attempt in stamina.retry_context(on=ConnectionError, attempts=12, wait_max=2.0):
                with attempt:
                    pass
            """,
            line=4,
            message="from retry 6 on",
        ),
        Invalid(
            """
            import tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential_jitter(initial=1, max=10, jitter=2))
            def fetch(url): ...
            """,
            line=4,
            message="from retry 5 on (the wait after attempt 5) every client waits exactly 10 s",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(10):
                    try:
                        return call()
                    except ConnectionError:
                        time.sleep(min(30, 0.5 * 2 ** attempt + random.uniform(0, 1)))
            """,
            line=8,
            message="exactly 30 s",
        ),
        Invalid(
            """
            import random, time
            def fetch(call):
                for attempt in range(12):
                    try:
                        return call()
                    except ConnectionError:
                        d = 2 ** attempt
                        time.sleep(min(20, d / 2 + random.uniform(0, d / 2)))
            """,
            line=9,
            message="from retry 7 on",
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        found = collapse(policy)
        if found is None:
            return
        cap = format_seconds(found.cap)
        if found.retries is not None:
            collapsed = found.retries - found.retry + 1
            share = f"{collapsed} of its {found.retries} waits have no spread left"
        else:
            share = "every wait after it has no spread left"
        shown = f"`{policy.delay.text}`" if policy.delay.text else "its backoff"
        advice = _ADVICE.get(policy.source, _ADVICE[""])
        yield self.at(
            policy,
            f"{policy.description} adds its jitter before clamping to the {cap} cap ({shown}): from retry {found.retry} on "
            f"(the wait after attempt {found.retry}) every client waits exactly {cap}, so clients that failed together "
            f"stay together; {share}; {advice}",
            policy.delay_location,
        )


__all__ = ["JitterCollapsesAtCap", "Collapse", "collapse"]
