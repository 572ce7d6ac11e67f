"""Words for the model: phrases that findings and ``explain`` share."""

from __future__ import annotations

from typing import Iterable

from .model import Bound, Delay, DelayKind, JitterKind, Num, known
from .schedule import format_seconds


def number(value: Num) -> str:
    if not known(value):
        return "?"
    v = float(value)  # type: ignore[arg-type]
    return str(int(v)) if v == int(v) else f"{v:g}"


def jitter_phrase(delay: Delay) -> str:
    jitter = delay.jitter
    if jitter.kind is JitterKind.NONE:
        return "no jitter"
    if jitter.kind is JitterKind.ADDITIVE and known(jitter.amount):
        return f"up to {format_seconds(jitter.amount)} of added jitter"
    if jitter.kind is JitterKind.PROPORTIONAL and known(jitter.amount):
        return f"±{float(jitter.amount) * 100:.3g} % jitter"  # type: ignore[arg-type]
    if jitter.kind is JitterKind.UNKNOWN:
        return "some jitter"
    return f"{jitter.kind.value} jitter"


def delay_phrase(delay: Delay) -> str:
    """``with a fixed 5 s delay``, ``with no delay``, ``with exponential backoff (1 s ×2, no cap)``."""
    kind = delay.kind
    if kind is DelayKind.NONE:
        return "with no delay"
    if kind is DelayKind.FIXED:
        amount = format_seconds(delay.base) if known(delay.base) else f"`{delay.text}`" if delay.text else "constant"
        suffix = f" ({jitter_phrase(delay)})" if delay.jitter.present else ""
        return f"with a fixed {amount} delay{suffix}"
    if kind is DelayKind.LINEAR:
        return f"with a linear delay ({format_seconds(delay.base)} + {format_seconds(delay.step)} per retry)"
    if kind is DelayKind.EXPONENTIAL:
        parts = []
        if known(delay.base):
            parts.append(format_seconds(delay.base))
        if known(delay.factor):
            parts.append(f"×{number(delay.factor)}")
        if known(delay.offset) and delay.offset:
            offset = float(delay.offset)  # type: ignore[arg-type]
            parts.append(f"{'+' if offset > 0 else '−'}{format_seconds(abs(offset))} each")
        parts.append(f"cap {format_seconds(delay.cap)}" if known(delay.cap) else "capped" if delay.cap is not None else "no cap")
        parts.append(jitter_phrase(delay))
        return f"with exponential backoff ({', '.join(parts)})"
    if kind is DelayKind.STEPS and delay.steps:
        return "with delays " + ", ".join(format_seconds(s) for s in delay.steps)
    return "with a delay of unknown shape"


def bound_phrase(bound: Bound) -> str:
    if bound.unbounded:
        return "forever"
    parts = []
    if known(bound.attempts):
        parts.append(f"at most {number(bound.attempts)} attempts")
    elif bound.attempts is not None:
        parts.append("a limited number of attempts")
    if known(bound.deadline):
        parts.append(f"for at most {format_seconds(bound.deadline)}")
    elif bound.deadline is not None:
        parts.append("until a deadline")
    return " and ".join(parts)


def code_list(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def status_list(statuses: Iterable[int], limit: int = 6) -> str:
    """Compress 400, 401, 402, 403 … into ``400–407, 409, 410–428 …``."""
    values = sorted(set(statuses))
    ranges = []
    for value in values:
        if ranges and value == ranges[-1][1] + 1:
            ranges[-1][1] = value
        else:
            ranges.append([value, value])
    text = [f"{a}" if a == b else f"{a}–{b}" for a, b in ranges]
    if len(text) > limit:
        text = text[:limit] + ["…"]
    return ", ".join(text)
