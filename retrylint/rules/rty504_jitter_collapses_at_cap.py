"""RTY504: jitter added before the cap is clamped away once the backoff reaches the cap."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Optional

from ..model import DelayKind, JitterKind, RetryPolicy, known
from ..schedule import delay_range, format_seconds
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid

#: Jitter of a bounded width: once the low end of the jittered delay passes the cap, the
#: clamp leaves one value. (Full and decorrelated jitter drawn under the cap keep their spread.)
_BOUNDED = (JitterKind.ADDITIVE, JitterKind.EQUAL, JitterKind.PROPORTIONAL)
#: Full jitter drawn over the uncapped delay and clamped afterwards, ``min(cap, random() * d)``
#: (redis-py ``ExponentialWithJitterBackoff``): the share of clients at exactly the cap grows as
#: ``1 - cap / d`` but never reaches all of them; reported from the retry where most clients
#: (at least this share) wait exactly the cap.
_MOST = 0.5
#: How far to look for the collapse.
_HORIZON = 200

_ADVICE = {
    "stamina": "stamina clamps after adding `wait_jitter`: raise `wait_max` or lower `attempts` so that the cap is never "
               "reached, or use a policy that jitters under the cap (tenacity `wait_random_exponential(max=...)`)",
    "tenacity": "use `wait_random_exponential(multiplier=..., max=...)` (full jitter under the cap) or "
                "`wait_exponential(max=...) + wait_random(0, ...)` (jitter added after the cap)",
    "urllib3": "urllib3's `Retry.get_backoff_time` adds `backoff_jitter` before clamping to `backoff_max`: "
               "lower `total` to {keep} so that the cap is never reached, raise `backoff_max`, or override "
               "`get_backoff_time` to draw under the cap (`random.uniform(0, min(backoff_max, ...))`)",
    "redis": "`ExponentialWithJitterBackoff` draws over `base * 2 ** n` and clamps afterwards: use "
             "`FullJitterBackoff(cap=..., base=...)` or `EqualJitterBackoff(...)`, which draw under the cap",
    "": "draw the jitter under the cap, `random.uniform(0, min(cap, base * 2 ** attempt))`, or add it after the cap, "
        "`min(cap, base * 2 ** attempt) + random.uniform(0, 1)`",
}


@dataclass(frozen=True)
class Collapse:
    """From retry ``retry`` on (the wait after attempt ``retry``), every delay is exactly ``cap``
    (``share`` 1.0), or, for full jitter clamped after the draw, ``share`` of the delays are."""

    retry: int
    cap: float
    #: How many retries the policy makes (None: it never stops, or it stops on a deadline).
    retries: Optional[int]
    #: The share of clients whose wait after attempt ``retry`` is exactly the cap (1.0: all).
    share: float = 1.0
    #: The retry reached last (the policy's last, or the last before its deadline; None: it
    #: never stops) and the share of clients at exactly the cap there.
    last: Optional[int] = None
    last_share: float = 1.0

    @property
    def partial(self) -> bool:
        """Some clients keep a spread at every retry (full jitter drawn before the clamp)."""
        return self.share < 1.0


def collapse(policy: RetryPolicy) -> Optional[Collapse]:
    """Where a jitter-then-cap policy stops dispersing clients, if its bound lets it get there."""
    delay = policy.delay
    if not delay.jitter_then_cap or delay.kind is not DelayKind.EXPONENTIAL:
        return None
    full = delay.jitter.kind is JitterKind.FULL
    if not full and delay.jitter.kind not in _BOUNDED:
        return None
    if not (known(delay.cap) and known(delay.base) and known(delay.factor)) or float(delay.factor) <= 1:  # type: ignore[arg-type]
        return None
    if delay.jitter.kind in (JitterKind.ADDITIVE, JitterKind.PROPORTIONAL) and not known(delay.jitter.amount):
        return None
    if known(delay.jitter.amount) and float(delay.jitter.amount) <= 0:  # type: ignore[arg-type]
        return None
    cap = float(delay.cap)  # type: ignore[arg-type]
    if cap <= 0:
        return None
    free = replace(delay, cap=None, jitter_then_cap=False)
    bound = policy.bound
    if bound.attempts is not None and not known(bound.attempts):
        return None  # a limit we cannot read
    if bound.deadline is not None and not known(bound.deadline):
        return None
    retries = int(bound.retries) if known(bound.retries) else None  # type: ignore[arg-type]
    # The first retry that waits at all (urllib3 retries once at once, then backs off).
    first = 2 if delay.first_immediate else 1
    found: Optional[Collapse] = None
    waited = 0.0
    for k in range(1, _HORIZON + 1):
        if retries is not None and k > retries:
            break  # the policy stops here
        if known(bound.deadline) and waited >= float(bound.deadline):  # type: ignore[arg-type]
            break  # the deadline passes first (counted with the expected waits)
        r = delay_range(free, k)
        if not (known(r.low) and known(r.high)):
            return None
        low, high = float(r.low), float(r.high)  # type: ignore[arg-type]
        share = _share_at_cap(low, high, cap, full)
        if k == first and share > 0:
            return None  # at the cap from the first wait on: a fixed delay (RTY202), not a collapse
        if found is None and share >= (_MOST if full else 1.0):
            found = Collapse(k, cap, retries, share)
        if found is not None:
            found = replace(found, last=k, last_share=share)
            if not full:
                break  # every later wait is the cap as well
        expected = delay_range(delay, k).expected
        waited += float(expected) if known(expected) else cap  # type: ignore[arg-type]
    if found is None:
        return None
    if retries is None and not known(bound.deadline):
        found = replace(found, last=None, last_share=1.0)  # it never stops: all of them, in the end
    elif not found.partial:
        found = replace(found, last=retries, last_share=1.0)
    return found


def _share_at_cap(low: float, high: float, cap: float, full: bool) -> float:
    """The share of uniform draws over ``low``–``high`` that the clamp turns into the cap."""
    if low >= cap:
        return 1.0
    if not full or high <= cap or high <= low:
        return 0.0
    return (high - cap) / (high - low)


def _percent(share: float) -> str:
    return f"{min(round(share * 100), 99)} %" if share < 1.0 else "100 %"


class JitterCollapsesAtCap(Rule):
    """
    ## What it does
    Finds backoff that adds its jitter first and clamps to the cap afterwards,
    `min(cap, base * 2 ** n + jitter)`, when the policy's bound lets the delay reach the
    cap. It reports the retry from which every delay is exactly the cap.

    It reads stamina (`min(wait_max, wait_initial * wait_exp_base ** (n - 1) +
    uniform(0, wait_jitter))`: with the defaults every wait from the 7th attempt on is
    exactly 5 s), tenacity `wait_exponential_jitter(...)` with a `max`, urllib3's
    `Retry(backoff_jitter=..., backoff_max=...)` (`get_backoff_time` adds the jitter, then
    clamps to `backoff_max`), and hand-written `min(cap, base * 2 ** attempt +
    random.uniform(...))` (also equal jitter and ±x % bands inside the `min`).

    redis-py's `ExponentialWithJitterBackoff` draws full jitter over the uncapped delay and
    clamps afterwards, `min(cap, random() * base * 2 ** n)`: a share `1 - cap / (base *
    2 ** n)` of the clients waits exactly the cap. It is reported from the retry where most
    of them (at least half) do, with the share there and at the last retry.

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
    VALID += [
        Valid(
            """
            from urllib3.util.retry import Retry

            RETRY = Retry(total=5, backoff_factor=1, backoff_jitter=1.0, backoff_max=20)
            """,
            "urllib3: 5 retries wait 0, 2–3, 4–5, 8–9, 16–17 s: `backoff_max=20` is never reached",
        ),
        Valid(
            """
            from urllib3.util.retry import Retry

            RETRY = Retry(total=10, backoff_factor=30, backoff_jitter=1.0, backoff_max=20)
            """,
            "urllib3: at the cap from the first wait on: a fixed delay (RTY202), not a collapse",
        ),
        Valid(
            """
            import redis
            from redis.retry import Retry
            from redis.backoff import FullJitterBackoff

            cache = redis.Redis(retry=Retry(FullJitterBackoff(cap=10, base=1), 10))
            """,
            "redis `FullJitterBackoff` draws under the cap: `uniform(0, min(cap, base * 2 ** n))`",
        ),
        Valid(
            """
            import redis
            from redis.retry import Retry
            from redis.backoff import ExponentialWithJitterBackoff

            cache = redis.Redis(retry=Retry(ExponentialWithJitterBackoff(cap=10, base=1), 3))
            """,
            "3 retries draw over 2, 4 and 8 s: the 10 s cap clamps none of them",
        ),
    ]
    INVALID = [
        Invalid(
            """
            from urllib3.util.retry import Retry

            RETRY = Retry(total=10, backoff_factor=1, backoff_jitter=1.0, backoff_max=20)
            """,
            line=4,
            message="from retry 6 on (the wait after attempt 6) every client waits exactly 20 s",
        ),
        Invalid(
            """
            import redis
            from redis.retry import Retry
            from redis.backoff import ExponentialWithJitterBackoff

            cache = redis.Redis(retry=Retry(ExponentialWithJitterBackoff(cap=10, base=1), 10))
            """,
            line=6,
            message="from retry 5 on (the wait after attempt 5) most clients wait exactly 10 s: 69 % of them at retry 5, 99 % by retry 10",
        ),
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
        shown = f"`{policy.delay.text}`" if policy.delay.text else "its backoff"
        advice = _ADVICE.get(policy.source, _ADVICE[""])
        if policy.source == "urllib3":
            advice = advice.format(keep=f"`total={found.retry - 1}`")
        if found.partial:
            if found.last is None:
                later = ", more with every retry after it (it never stops)"
            elif found.last > found.retry:
                later = f", {_percent(found.last_share)} by retry {found.last}, its last"
            else:
                later = " (its last retry)"
            yield self.at(
                policy,
                f"{policy.description} draws its jitter before clamping to the {cap} cap ({shown}): from retry {found.retry} "
                f"on (the wait after attempt {found.retry}) most clients wait exactly {cap}: {_percent(found.share)} of them "
                f"at retry {found.retry}{later}, so clients that failed together stay together; {advice}",
                policy.delay_location,
            )
            return
        if found.retries is not None:
            collapsed = found.retries - found.retry + 1
            share = f"{collapsed} of its {found.retries} waits have no spread left"
        else:
            share = "every wait after it has no spread left"
        yield self.at(
            policy,
            f"{policy.description} adds its jitter before clamping to the {cap} cap ({shown}): from retry {found.retry} on "
            f"(the wait after attempt {found.retry}) every client waits exactly {cap}, so clients that failed together "
            f"stay together; {share}; {advice}",
            policy.delay_location,
        )


__all__ = ["JitterCollapsesAtCap", "Collapse", "collapse"]
