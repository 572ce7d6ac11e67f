"""Numbers from the model: each retry's delay range, the largest delay, total waits.

Shared by the rules (RTY204 needs the largest reachable delay), by
``retrylint explain`` and by the plugin's simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from .model import UNKNOWN, Delay, DelayKind, JitterKind, Num, RetryPolicy, known

INF = math.inf

#: How many retries explain shows for a policy that never stops.
UNBOUNDED_PREVIEW = 10


def nominal_delay(delay: Delay, k: int) -> Num:
    """The delay before retry ``k`` (1-based) before jitter, cap applied."""
    if delay.kind is DelayKind.NONE:
        return 0.0
    if delay.first_immediate:
        if k == 1:
            return 0.0
        k -= 1
    if delay.kind is DelayKind.STEPS and delay.steps:
        return float(delay.steps[min(k - 1, len(delay.steps) - 1)])
    if not known(delay.base):
        return UNKNOWN
    base = float(delay.base)  # type: ignore[arg-type]
    if delay.kind is DelayKind.FIXED:
        value = base
    elif delay.kind is DelayKind.LINEAR:
        if not known(delay.step):
            return UNKNOWN
        value = base + (k - 1) * float(delay.step)  # type: ignore[arg-type]
    elif delay.kind is DelayKind.EXPONENTIAL:
        if not known(delay.factor):
            return UNKNOWN
        if not known(delay.offset):
            return UNKNOWN
        value = _power(base, float(delay.factor), k - 1) + float(delay.offset or 0.0)  # type: ignore[arg-type]
    else:
        return UNKNOWN
    if known(delay.cap):
        value = min(value, float(delay.cap))  # type: ignore[arg-type]
    return max(value, 0.0)


def _power(base: float, factor: float, exponent: int) -> float:
    try:
        return base * factor**exponent
    except OverflowError:
        return INF


@dataclass(frozen=True)
class DelayRange:
    low: Num
    high: Num
    expected: Num


def delay_range(delay: Delay, k: int, previous: Optional[DelayRange] = None) -> DelayRange:
    """The range of the delay before retry ``k``, jitter included."""
    jitter = delay.jitter
    if jitter.kind is JitterKind.DECORRELATED and known(delay.base):
        base = float(delay.base)  # type: ignore[arg-type]
        cap = float(delay.cap) if known(delay.cap) else INF  # type: ignore[arg-type]
        if previous is None or not known(previous.high):
            high, expected = base, base
        else:
            high = min(cap, 3 * float(previous.high))  # type: ignore[arg-type]
            expected = min(cap, (base + 3 * float(previous.expected)) / 2)  # type: ignore[arg-type]
        return DelayRange(min(base, high), high, expected)
    d = nominal_delay(delay, k)
    if not known(d):
        return DelayRange(UNKNOWN, UNKNOWN, UNKNOWN)
    d = float(d)  # type: ignore[arg-type]
    if delay.first_immediate and k == 1:
        return DelayRange(0.0, 0.0, 0.0)
    kind = jitter.kind
    if delay.jitter_then_cap and known(delay.cap) and kind in (JitterKind.ADDITIVE, JitterKind.EQUAL, JitterKind.PROPORTIONAL,
                                                               JitterKind.FULL):
        # min(cap, d + jitter), min(cap, uniform(0, d)): the range of the uncapped jittered delay, clamped.
        free = delay_range(replace(delay, cap=None, jitter_then_cap=False), k, previous)
        return clamped(free, float(delay.cap))  # type: ignore[arg-type]
    if kind is JitterKind.NONE:
        return DelayRange(d, d, d)
    if kind is JitterKind.FULL:
        return DelayRange(0.0, d, d / 2)
    if kind is JitterKind.EQUAL:
        return DelayRange(d / 2, d, 3 * d / 4)
    if kind is JitterKind.ADDITIVE and known(jitter.amount):
        amount = float(jitter.amount)  # type: ignore[arg-type]
        return DelayRange(d, d + amount, d + amount / 2)
    if kind is JitterKind.PROPORTIONAL and known(jitter.amount):
        p = float(jitter.amount)  # type: ignore[arg-type]
        return DelayRange(max(d * (1 - p), 0.0), d * (1 + p), d)
    return DelayRange(UNKNOWN, UNKNOWN, UNKNOWN)


def clamped(r: DelayRange, cap: float) -> DelayRange:
    """A uniform draw over ``r`` clamped to ``cap``: above it, every draw is exactly the cap."""
    if not (known(r.low) and known(r.high)):
        return DelayRange(UNKNOWN, UNKNOWN, UNKNOWN)
    low, high = float(r.low), float(r.high)  # type: ignore[arg-type]
    if high <= cap:
        return r
    if low >= cap:
        return DelayRange(cap, cap, cap)
    below = cap - low
    expected = (below * (low + cap) / 2 + (high - cap) * cap) / (high - low)
    return DelayRange(low, cap, expected)


@dataclass(frozen=True)
class Schedule:
    """The worst-case schedule of a policy."""

    ranges: Tuple[DelayRange, ...]
    #: False when the policy never stops and ``ranges`` is only a preview.
    complete: bool
    #: The attempt limit that produced ``ranges`` (None: unbounded or unknown).
    retries: Optional[int]
    largest: Num
    total_worst: Num
    total_expected: Num


def retries_for_schedule(policy: RetryPolicy) -> Tuple[Optional[int], bool]:
    """How many retries to lay out, and whether that is all of them."""
    retries = policy.bound.retries
    if known(retries):
        return int(retries), True  # type: ignore[arg-type]
    return None, False


def schedule(policy: RetryPolicy, preview: int = UNBOUNDED_PREVIEW) -> Schedule:
    """Lay out every retry's delay; stop at a known deadline; preview an unbounded one.

    Under a deadline, retries are counted with the expected delays (full jitter can draw
    delays near zero, but not on average), and the total wait is at most the deadline.
    """
    retries, complete = retries_for_schedule(policy)
    deadline = policy.bound.deadline
    ranges: List[DelayRange] = []
    waited = 0.0
    waited_low = 0.0  # the least the earlier delays can have taken
    previous: Optional[DelayRange] = None
    k = 0
    while True:
        k += 1
        if retries is not None and k > retries:
            break
        if known(deadline) and waited >= float(deadline):  # type: ignore[arg-type]
            complete = True
            break
        if retries is None and not known(deadline) and k > preview:
            break
        if k > 10_000:
            break
        r = delay_range(policy.delay, k, previous)
        if policy.bound.clips_to_deadline and known(deadline):
            r = _clipped(r, float(deadline), waited_low, waited)  # type: ignore[arg-type]
        ranges.append(r)
        if known(r.low):
            waited_low += float(r.low)  # type: ignore[arg-type]
        previous = r
        step = r.expected if known(r.expected) else r.low
        if not known(step):
            if known(deadline):
                break  # cannot tell how many retries fit
            continue
        if known(deadline) and float(step) <= 0 and k > 1000:  # type: ignore[arg-type]
            break
        waited += float(step)  # type: ignore[arg-type]
    total_worst = _sum(r.high for r in ranges) if complete else (INF if policy.bound.unbounded else UNKNOWN)
    if complete and known(deadline) and known(total_worst):
        total_worst = min(float(total_worst), float(deadline))  # type: ignore[arg-type]
    total_expected = _sum(r.expected for r in ranges) if complete else (INF if policy.bound.unbounded else UNKNOWN)
    if complete and known(deadline) and known(total_expected):
        total_expected = min(float(total_expected), float(deadline))  # type: ignore[arg-type]
    return Schedule(
        ranges=tuple(ranges),
        complete=complete,
        retries=retries,
        largest=_max(r.high for r in ranges) if ranges else 0.0,
        total_worst=total_worst,
        total_expected=total_expected,
    )


def _clipped(r: DelayRange, deadline: float, waited_low: float, waited_expected: float) -> DelayRange:
    """A delay cut to what is left of the deadline: at worst after the shortest earlier
    delays, on average after the expected ones."""
    high = min(float(r.high), deadline - waited_low) if known(r.high) else r.high  # type: ignore[arg-type]
    expected = min(float(r.expected), deadline - waited_expected) if known(r.expected) else r.expected  # type: ignore[arg-type]
    low = min(float(r.low), float(high)) if known(r.low) and known(high) else r.low  # type: ignore[arg-type]
    return DelayRange(low, high, expected)


def _sum(values) -> Num:
    total = 0.0
    for v in values:
        if not known(v):
            return UNKNOWN
        total += float(v)
    return total


def _max(values) -> Num:
    best = 0.0
    for v in values:
        if not known(v):
            return UNKNOWN
        best = max(best, float(v))
    return best


def largest_reachable_delay(policy: RetryPolicy) -> Num:
    """The largest single delay the policy can reach (INF when it never stops growing).

    Attempt limits bound it directly; a deadline bounds it because a delay only
    starts while the deadline has not passed.  UNKNOWN when the bound is a value
    we cannot read.
    """
    delay = policy.delay
    bound = policy.bound
    candidates: List[float] = []
    if known(bound.attempts):
        retries = int(bound.retries)  # type: ignore[arg-type]
        if retries <= 0:
            return 0.0
        value = delay_range(delay, retries, _previous_for(delay, retries)).high
        if not known(value):
            return UNKNOWN
        candidates.append(float(value))  # type: ignore[arg-type]
    elif bound.attempts is UNKNOWN:
        return UNKNOWN
    if known(bound.deadline):
        value = _largest_before_deadline(delay, float(bound.deadline), bound.clips_to_deadline)  # type: ignore[arg-type]
        if not known(value):
            return UNKNOWN if not candidates else candidates[0]
        candidates.append(float(value))  # type: ignore[arg-type]
    elif bound.deadline is UNKNOWN and not candidates:
        return UNKNOWN
    if not candidates:
        return INF  # no attempt limit, no deadline: the delay keeps growing
    return min(candidates)


def _previous_for(delay: Delay, k: int) -> Optional[DelayRange]:
    if delay.jitter.kind is not JitterKind.DECORRELATED:
        return None
    previous = None
    for i in range(1, k):
        previous = delay_range(delay, i, previous)
    return previous


def _largest_before_deadline(delay: Delay, deadline: float, clips: bool = False) -> Num:
    """The largest delay that still starts before ``deadline`` seconds of waiting have passed.

    ``clips``: the wait itself is cut to what is left of the deadline.
    """
    waited = 0.0
    largest = 0.0
    for k in range(1, 10_001):
        if waited >= deadline:
            return largest
        d = nominal_delay(delay, k)
        if not known(d):
            return UNKNOWN
        d = float(d)  # type: ignore[arg-type]
        if clips:
            d = min(d, deadline - waited)
        if d == INF:
            return INF
        largest = max(largest, d)
        waited += d
    return largest


def format_seconds(value: Num) -> str:
    """Human units: 0.5 s, 51 s, 4.3 min, 2.8 h, 194 days."""
    if value is None:
        return "none"
    if not known(value):
        return "unknown"
    v = float(value)  # type: ignore[arg-type]
    if v == INF:
        return "forever"
    if v < 60:
        return f"{_trim(v)} s"
    if v < 3600:
        return f"{_trim(v / 60)} min"
    if v < 86400 * 2:
        return f"{_trim(v / 3600)} h"
    if v < 86400 * 365 * 2:
        return f"{_trim(v / 86400)} days"
    return f"{_trim(v / (86400 * 365))} years"


def _trim(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:.3g}"
