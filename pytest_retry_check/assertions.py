"""Assertions about a retry run: bounded, backed off, jittered, transient-only. Plain functions: they raise
:class:`RetryCheckFailed` (an ``AssertionError``) with the run's schedule in the message.

Each accepts a :class:`~pytest_retry_check.trace.Trace`, a finished ``capture_trace`` or a
:class:`~pytest_retry_check.downstream.FakeDownstream` (all its calls).
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence

from .downstream import FakeDownstream
from .timeline import format_seconds
from .trace import Trace, capture_trace, swallowed_note

__all__ = [
    "RetryCheckFailed",
    "assert_backs_off",
    "assert_bounded",
    "assert_gives_up",
    "assert_honours_retry_after",
    "assert_jittered",
    "assert_no_retry_on_permanent",
    "assert_succeeded",
    "trace_of",
]

# Virtual time is kept in whole microseconds: comparisons allow that much.
_EPS = 2e-6


class RetryCheckFailed(AssertionError):
    """A retry check failed; the message shows the schedule."""


def trace_of(run: Any) -> Trace:
    __tracebackhide__ = True
    if isinstance(run, Trace):
        return run
    if isinstance(run, capture_trace):
        if run.trace is None:
            raise ValueError("this capture_trace has not finished: check it after its `with` block")
        return run.trace
    if isinstance(run, FakeDownstream):
        return run.trace()
    raise TypeError(f"expected a Trace, a capture_trace or a FakeDownstream, not {type(run).__name__}")


def _fail(check: str, problem: str, traces: Sequence[Trace]) -> RetryCheckFailed:
    body = "".join(t.schedule() for t in traces[:3])
    if len(traces) > 3:
        body += f"(+{len(traces) - 3} more runs)\n"
    return RetryCheckFailed(f"retry check '{check}' failed: {problem}\n{body}{swallowed_note([t.error for t in traces])}{_real_clock_note()}")


def _real_clock_note() -> str:
    # The run may have gone on past a deadline computed from a real clock (it never came).
    from .clock import current_clock

    clock = current_clock()
    note = clock.real_clock_note() if clock is not None else None
    return f"note: {note}\n" if note else ""


NEVER_CALLED = (
    "the downstream was never called (0 attempts), so there is nothing to judge: is the code under test "
    "wired to this fake (its url, or the object itself), and did it run?"
)


def _require_calls(trace: Trace, check: str) -> None:
    """Zero attempts makes every retry check vacuous: fail and say so rather than pass. A run
    that ended by crashing (a programming error) is not a retry policy at work either."""
    __tracebackhide__ = True
    if not trace.attempts:
        raise _fail(check, NEVER_CALLED, [trace])
    _require_no_bug(trace, check)


def _require_no_bug(trace: Trace, check: str) -> None:
    """Fail when the run raised a programming error (TypeError, AttributeError, KeyError,
    IndexError, ZeroDivisionError, ...): a crash in the give-up path is a bug, not giving up.
    Not when the test named the type (``capture_trace(catch=...)``, ``raises=``)."""
    __tracebackhide__ = True
    from .client_errors import programming_error

    bug = None if trace.error_expected else programming_error(trace.error)
    if bug is None:
        return
    import traceback

    where = "".join(traceback.format_exception(type(bug), bug, bug.__traceback__)).rstrip("\n").replace("\n", "\n  ")
    raise _fail(
        check,
        f"the code under test raised {type(bug).__name__}: {bug} -- a bug, not giving up (no retry policy ends by "
        f"raising that); fix the code, or name the type if it is intended (capture_trace(..., catch={type(bug).__name__}) "
        f"or raises={type(bug).__name__}):\n  {where}",
        [trace],
    )


def _limit(name: str, value: Any, *, whole: bool = False) -> None:
    __tracebackhide__ = True
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 or (whole and not isinstance(value, int)):
        kind = "a whole number" if whole else "a number of seconds"
        raise ValueError(f"{name} must be {kind} >= 0, got {value!r}")


def assert_bounded(run: Any, *, max_attempts: Optional[int] = None, max_total_wait: Optional[float] = None, max_delay: Optional[float] = None) -> Trace:
    """At most ``max_attempts`` attempts, ``max_total_wait`` virtual seconds from the first
    attempt to the end of the run (``Trace.total_wait``: the answers' latency, the last attempt's
    timeout and a sleep before giving up count), and no single wait longer than ``max_delay``
    (the cap) -- or than the server's ``Retry-After``, where it asked for longer; a sleep after
    the last attempt counts as a wait."""
    __tracebackhide__ = True
    if max_attempts is None and max_total_wait is None and max_delay is None:
        raise ValueError("assert_bounded() needs at least one of max_attempts, max_total_wait, max_delay")
    _limit("max_attempts", max_attempts, whole=True)
    _limit("max_total_wait", max_total_wait)
    _limit("max_delay", max_delay)
    trace = trace_of(run)
    _require_calls(trace, "bounded")
    problems: List[str] = []
    if max_attempts is not None and trace.attempt_count > max_attempts:
        problems.append(f"{trace.attempt_count} attempts, more than max_attempts={max_attempts}")
    if max_total_wait is not None and trace.total_wait > max_total_wait + _EPS:
        problems.append(f"waited {format_seconds(trace.total_wait)} in total, more than max_total_wait={format_seconds(max_total_wait)}")
    if max_delay is not None:
        for attempt in trace.attempts:
            if attempt.delay is None:
                continue
            # A wait the server asked for (Retry-After) is not the client's backoff outgrowing its cap.
            told = 0.0 if attempt.retry_after_until is None else attempt.retry_after_until - (attempt.at - attempt.delay)
            if attempt.delay > max(max_delay, told) + _EPS:
                problems.append(f"attempt #{attempt.number} came {format_seconds(attempt.delay)} after the previous one, more than max_delay={format_seconds(max_delay)} (no cap?)")
                break
        else:
            tail = trace.sleeps_after_last_attempt
            if tail > max_delay + _EPS:
                problems.append(
                    f"after the last attempt (#{trace.attempt_count}) it slept {format_seconds(tail)} before it ended, "
                    f"more than max_delay={format_seconds(max_delay)}"
                )
    if problems:
        raise _fail("bounded", "; ".join(problems), [trace])
    return trace


def _envelope(traces: Sequence[Trace]) -> List[float]:
    """Per retry number, the largest delay any run used: jitter cannot hide growth from it."""
    envelope: List[float] = []
    for trace in traces:
        for i, delay in enumerate(trace.delays):
            if i == len(envelope):
                envelope.append(delay)
            else:
                envelope[i] = max(envelope[i], delay)
    return envelope


def _traces(runs: Sequence[Any], check: str) -> List[Trace]:
    __tracebackhide__ = True
    if not runs:
        raise TypeError(f"{check}() needs at least one run")
    traces = [trace_of(r) for r in runs]
    name = check.replace("assert_", "").replace("_", " ")
    if not any(t.attempts for t in traces):
        raise _fail(name, NEVER_CALLED, traces)
    idle = [i for i, t in enumerate(traces, 1) if not t.attempts]
    if idle:
        shown = ", ".join(f"#{i}" for i in idle[:5]) + (", ..." if len(idle) > 5 else "")
        raise _fail(
            name,
            f"{len(idle)} of {len(traces)} runs never called the downstream (runs {shown}), so they cannot be compared: "
            "is each run's code wired to its own fake, and did it run?",
            [traces[i - 1] for i in idle[:1]] + [t for t in traces if t.attempts][:1],
        )
    for trace in traces:
        _require_no_bug(trace, name)
    return traces


def assert_backs_off(*runs: Any, min_growth: float = 1.5) -> List[float]:
    """The delays grow: the later half of the delays is on average at least ``min_growth``
    times the earlier half. With several runs (recommended for jittered policies) the
    per-retry maximum over the runs is judged. Returns that envelope."""
    __tracebackhide__ = True
    if isinstance(min_growth, bool) or not isinstance(min_growth, (int, float)) or not min_growth > 1:
        raise ValueError(f"min_growth must be a number > 1, got {min_growth!r}")
    traces = _traces(runs, "assert_backs_off")
    envelope = _envelope(traces)
    if len(envelope) < 2:
        raise _fail("backs off", f"needs at least two waits (three attempts) to see growth; got {len(envelope)}", traces)
    shown = ", ".join(format_seconds(d) for d in envelope)
    if max(envelope) <= _EPS:
        raise _fail("backs off", f"no wait at all between attempts (immediate retries): {shown}", traces)
    half = len(envelope) // 2
    early = sum(envelope[:half]) / half
    late = sum(envelope[len(envelope) - half :]) / half
    growth = math.inf if early <= _EPS else late / early
    if growth < min_growth:
        kind = "a fixed delay" if max(envelope) - min(envelope) <= 0.01 * max(envelope) else "delays that do not grow"
        raise _fail("backs off", f"{kind}: waits {shown}; the later waits are {growth:.2f}x the earlier ones, less than min_growth={min_growth}", traces)
    return envelope


def assert_jittered(*runs: Any, min_spread: float = 0.1) -> None:
    """Runs that failed the same way do not retry in lock-step: at every retry number the
    waits of the runs differ by at least ``min_spread`` of the largest (0.1 = 10 %).
    Use ten or more runs: the check compares them."""
    __tracebackhide__ = True
    if isinstance(min_spread, bool) or not isinstance(min_spread, (int, float)) or not 0 < min_spread <= 1:
        raise ValueError(f"min_spread must be a fraction in (0, 1], got {min_spread!r}")
    traces = _traces(runs, "assert_jittered")
    if len(traces) < 2:
        raise ValueError("assert_jittered() compares runs: pass two or more (ten or more is better)")
    depth = max(len(t.delays) for t in traces)
    compared = 0
    for i in range(depth):
        values = [t.delays[i] for t in traces if len(t.delays) > i]
        if len(values) < 2 or max(values) <= _EPS:
            continue
        compared += 1
        spread = (max(values) - min(values)) / max(values)
        if spread < min_spread:
            shown = ", ".join(format_seconds(v) for v in values[:8]) + (" ..." if len(values) > 8 else "")
            raise _fail(
                "jittered",
                f"wait #{i + 1} was nearly the same in all {len(values)} runs ({shown}; spread {spread:.1%} < {min_spread:.0%}): "
                "clients that fail together will retry together",
                traces,
            )
    if not compared:
        raise _fail("jittered", "no retry number had non-zero waits in two or more runs: nothing to compare", traces)


def assert_honours_retry_after(run: Any, *, tolerance: float = 0.0) -> None:
    """Every retry after an answer with ``Retry-After`` waited at least that long."""
    __tracebackhide__ = True
    _limit("tolerance", tolerance)
    trace = trace_of(run)
    _require_calls(trace, "honours Retry-After")
    checked = [a for a in trace.attempts if a.retry_after_until is not None]
    if not checked:
        problem = "no retry followed an answer carrying Retry-After, so there is nothing to check"
        if any(a.outcome.retry_after is not None for a in trace.attempts):
            problem += " (the code stopped right after one)"
        raise _fail("honours Retry-After", problem, [trace])
    for attempt in checked:
        if attempt.at + tolerance + _EPS < attempt.retry_after_until:  # type: ignore[operator]
            previous = trace.attempts[attempt.number - 2]
            told = attempt.retry_after_until - previous.at  # type: ignore[operator]
            raise _fail(
                "honours Retry-After",
                f"attempt #{attempt.number} came {format_seconds(attempt.delay or 0.0)} after a {previous.outcome.status} "
                f"that said Retry-After {format_seconds(told)}",
                [trace],
            )


def assert_no_retry_on_permanent(run: Any) -> None:
    """A permanent failure (4xx other than 408/429, a validation error) is not retried: the
    attempt that got it is the last one."""
    __tracebackhide__ = True
    trace = trace_of(run)
    _require_calls(trace, "no retry on permanent errors")
    permanent = trace.permanent_failures
    if not permanent:
        raise _fail("no retry on permanent errors", "no attempt got a permanent failure, so there is nothing to check (script one, e.g. permanent=404)", [trace])
    first = permanent[0]
    extra = trace.attempt_count - first.number
    if extra:
        raise _fail(
            "no retry on permanent errors",
            f"attempt #{first.number} got {first.outcome.label}, which cannot heal, and {extra} more attempt(s) followed",
            [trace],
        )


def assert_gives_up(run: Any, *, raises: Any = None) -> None:
    """Against a downstream that never recovers, the code stops and says so: it raises or
    dead-letters, rather than succeeding by accident or returning as if nothing happened.
    ``raises``: the exception type(s) giving up must raise (so a bug's TypeError does not pass)."""
    __tracebackhide__ = True
    trace = trace_of(run)
    if raises is not None and not (trace.error is not None and isinstance(trace.error, raises)):
        raise _fail("gives up", f"expected the run to raise {_names(raises)}, but it ended: {trace.describe_outcome()}", [trace])
    if trace.attempts and raises is None:
        _require_no_bug(trace, "gives up")
    recovered = [a for a in trace.attempts if a.ok]
    if recovered:
        raise _fail("gives up", f"the downstream answered successfully at attempt #{recovered[0].number}: script one that never recovers", [trace])
    if trace.outcome == "unknown":
        raise ValueError("this trace does not know how the code ended: watch the run with capture_trace(...)")
    if not trace.attempts:
        raise _fail("gives up", f"the code ended ({trace.describe_outcome()}) without calling the downstream at all", [trace])
    if not trace.gave_up:
        raise _fail("gives up", "the code returned normally without raising or dead-lettering: the failure was swallowed", [trace])


def _names(types: Any) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(getattr(t, "__name__", repr(t)) for t in types)


def assert_succeeded(run: Any) -> None:
    """The run ended with a successful attempt and nothing raised."""
    __tracebackhide__ = True
    trace = trace_of(run)
    _require_calls(trace, "succeeded")
    if trace.outcome == "unknown" and trace.attempts and trace.attempts[-1].ok:
        return
    if not trace.succeeded:
        raise _fail("succeeded", f"the run did not succeed: {trace.describe_outcome()}", [trace])
