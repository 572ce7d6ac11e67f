"""What a retry run did: its attempts, the waits between them, and how it ended."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple, Type, Union

from .downstream import CallRecord, FakeDownstream, Outcome
from .timeline import SleepRecord, Timeline, format_schedule, format_seconds

__all__ = ["Attempt", "Trace", "capture_trace"]

OUTCOMES = ("succeeded", "raised", "dead-lettered", "returned", "unknown")


@dataclass(frozen=True)
class Attempt:
    """One call of the downstream, as a retry attempt."""

    number: int
    at: float  # virtual seconds since the clock's origin
    outcome: Outcome
    delay: Optional[float]  # virtual seconds since the previous attempt; None for the first
    retry_after_until: Optional[float] = None  # the previous answer's Retry-After deadline
    #: The downstream's record of the call (request, headers, body, effect), when known.
    call: Optional[CallRecord] = field(default=None, repr=False, compare=False)
    #: The attempt of this trace whose effect this one replayed (same idempotency key), if any.
    replay_of: Optional[int] = None

    @property
    def ok(self) -> bool:
        return self.outcome.is_ok

    @property
    def label(self) -> str:
        """The answer, and what became of the request when it was not applied again."""
        if self.replay_of is not None:
            return f"{self.outcome.label} (same idempotency key as #{self.replay_of}: not applied again)"
        return self.outcome.label


@dataclass(frozen=True)
class Trace:
    """A run of retry code against a fake downstream.

    ``outcome``: "succeeded" (the last attempt succeeded and nothing was raised), "raised",
    "dead-lettered" (something reached the dead-letter capture), "returned" (the code returned
    normally although the downstream never answered successfully: a silent give-up), or
    "unknown" (a trace built without watching how the code ended).
    """

    attempts: Tuple[Attempt, ...]
    sleeps: Tuple[SleepRecord, ...] = ()
    outcome: str = "unknown"
    error: Optional[BaseException] = None
    dead_letters: Tuple[Any, ...] = field(default=())
    #: The test named the error's type (``capture_trace(catch=TypeError)``): not a surprise.
    error_expected: bool = field(default=False, compare=False)
    #: Virtual time (as attempts' ``at``) when the watched run ended; None when not watched.
    ended_at: Optional[float] = field(default=None, compare=False)

    @classmethod
    def from_calls(
        cls,
        calls: Sequence[CallRecord],
        *,
        sleeps: Sequence[SleepRecord] = (),
        outcome: Optional[str] = None,
        error: Optional[BaseException] = None,
        dead_letters: Sequence[Any] = (),
        error_expected: bool = False,
        ended_at: Optional[float] = None,
    ) -> "Trace":
        __tracebackhide__ = True
        attempts: List[Attempt] = []
        previous: Optional[CallRecord] = None
        numbers = {}
        for number, call in enumerate(calls, 1):
            delay = None if previous is None else call.at - previous.at
            until = None if previous is None else previous.retry_after_until
            numbers[call.number] = number
            replay_of = numbers.get(call.replay_of) if call.replay_of is not None else None
            attempts.append(Attempt(number, call.at, call.outcome, delay, until, call, replay_of))
            previous = call
        if outcome is None:
            outcome = "succeeded" if attempts and attempts[-1].ok else "unknown"
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        return cls(tuple(attempts), tuple(sleeps), outcome, error, tuple(dead_letters), error_expected, ended_at)

    # -- numbers ----------------------------------------------------------------------------
    @property
    def attempt_count(self) -> int:
        return len(self.attempts)

    @property
    def delays(self) -> List[float]:
        """Virtual seconds between consecutive attempts."""
        return [a.delay for a in self.attempts if a.delay is not None]

    @property
    def total_wait(self) -> float:
        """Virtual seconds from the first attempt to the end of the run: a successful last
        attempt's answer (its latency included), or, when the run gave up, the moment it ended
        (the last attempt's timeout and any sleep after it included). Without a watched end
        (``downstream.trace()``), to the last attempt's answer."""
        if not self.attempts:
            return 0.0
        return self.end - self.attempts[0].at

    @property
    def end(self) -> float:
        """Virtual time (as attempts' ``at``) the run ended: see :attr:`total_wait`."""
        last = self.attempts[-1]
        latency = last.outcome.latency if last.outcome.latency != float("inf") else 0.0
        answered = last.at + latency
        if self.ended_at is None:
            return answered
        if self.outcome == "succeeded":
            return min(self.ended_at, answered)
        return max(self.ended_at, last.at)

    @property
    def sleeps_after_last_attempt(self) -> float:
        """Virtual seconds slept after the last attempt began (a give-up that waits first)."""
        if not self.attempts or self.outcome == "succeeded":
            return 0.0
        last = self.attempts[-1].at
        return sum(s.seconds for s in self.sleeps if s.at >= last)

    @property
    def succeeded(self) -> bool:
        return self.outcome == "succeeded"

    @property
    def gave_up(self) -> bool:
        return self.outcome in ("raised", "dead-lettered")

    @property
    def permanent_failures(self) -> List[Attempt]:
        return [a for a in self.attempts if a.outcome.is_permanent]

    # -- reading ----------------------------------------------------------------------------
    def describe_outcome(self) -> str:
        text = self.outcome
        if self.error is not None:
            text += f" {type(self.error).__name__}: {self.error}"
        if self.dead_letters:
            text += f" ({len(self.dead_letters)} dead letter(s))"
        return text

    def schedule(self) -> str:
        """A readable table of the attempts (times relative to the first attempt)."""
        lines = [
            f"retry trace: {self.attempt_count} attempt(s), {format_seconds(self.total_wait)} of virtual waiting, "
            f"outcome: {self.describe_outcome()}"
        ]
        if not self.attempts:
            return lines[0] + "\n  (the downstream was never called)\n"
        origin = self.attempts[0].at
        lines.append(f"  {'#':>4}  {'at':>12}  {'waited':>12}  result")
        for attempt in self.attempts:
            waited = "-" if attempt.delay is None else format_seconds(attempt.delay)
            lines.append(f"  {attempt.number:>4}  {'+' + format_seconds(attempt.at - origin):>12}  {waited:>12}  {attempt.label}")
        tail = self.end - self.attempts[-1].at
        if tail > 2e-6:
            lines.append(f"  ended at +{format_seconds(self.end - origin)}, {format_seconds(tail)} after the last attempt")
        return "\n".join(lines) + "\n"

    def sleep_schedule(self) -> str:
        return format_schedule(self.sleeps)

    def __str__(self) -> str:
        return self.schedule()


#: Exceptions a ``capture_trace`` block swallowed in the running test, newest last. The plugin
#: clears it before each test and shows it under any failure of the test: a bug swallowed as
#: "the code gave up by raising" must not stay invisible.
SWALLOWED: List[BaseException] = []
_SWALLOWED_KEPT = 20


def _never_swallowed(exc: BaseException, catch: Any) -> bool:
    """Assertions (the test's own, or a retry check) and pytest outcomes (fail, skip, exit)
    always propagate, unless ``catch`` names an ``AssertionError`` type explicitly; so does the
    retry guard. Also when they come wrapped: inside an exception group (``asyncio.TaskGroup``),
    as the cause or context of another exception (``raise ... from exc``), or as the last
    attempt of a tenacity ``RetryError`` (a polling helper around an assertion)."""
    named = catch if isinstance(catch, tuple) else (catch,)
    assertions_caught = any(isinstance(t, type) and issubclass(t, AssertionError) for t in named)
    return any(_propagates(e, assertions_caught) for e in _wrapped(exc))


def _propagates(exc: BaseException, assertions_caught: bool) -> bool:
    from .timeline import RetryGuardTripped

    if isinstance(exc, RetryGuardTripped) or not isinstance(exc, Exception):
        return True  # pytest's outcomes are BaseExceptions, like KeyboardInterrupt
    return isinstance(exc, AssertionError) and not assertions_caught


_GROUPS = (BaseExceptionGroup,) if sys.version_info >= (3, 11) else ()  # noqa: F821


def _wrapped(exc: BaseException, limit: int = 200) -> List[BaseException]:
    """``exc`` and every exception it carries: group members, causes, contexts, a tenacity
    ``RetryError``'s last attempt (cycles and very long chains are cut)."""
    seen: List[BaseException] = []
    todo = [exc]
    while todo and len(seen) < limit:
        current = todo.pop()
        if not isinstance(current, BaseException) or any(current is s for s in seen):
            continue
        seen.append(current)
        if isinstance(current, _GROUPS):
            todo.extend(current.exceptions)  # type: ignore[attr-defined]
        todo.append(current.__cause__)  # type: ignore[arg-type]
        todo.append(current.__context__)  # type: ignore[arg-type]
        last = getattr(current, "last_attempt", None)
        failed = getattr(last, "failed", False)
        if failed is True:
            try:
                todo.append(last.exception())  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001  (not a future after all)
                pass
    return seen


def _names_type_of(catch: Any, exc: Any) -> bool:
    """``catch`` names a type narrower than ``Exception`` that ``exc`` is an instance of."""
    named = catch if isinstance(catch, tuple) else (catch,)
    return any(isinstance(t, type) and t not in (Exception, BaseException) and isinstance(exc, t) for t in named)


def describe_swallowed(exceptions: Sequence[BaseException]) -> str:
    """Each swallowed exception with its traceback, for a failure report."""
    import traceback

    parts = []
    for number, exc in enumerate(exceptions, 1):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        parts.append(f"#{number}: {text}")
    return "\n".join(parts)


def swallowed_note(shown: Sequence[Any] = ()) -> str:
    """A line for a failure message when a capture_trace swallowed something in this test that
    the message does not already show (``shown``: the errors of the traces it prints)."""
    unseen = [e for e in SWALLOWED if not any(e is s for s in shown)]
    if not unseen:
        return ""
    last = unseen[-1]
    return (
        f"note: capture_trace swallowed {len(unseen)} exception(s) in this test (recorded as the run raising); "
        f"the last: {type(last).__name__}: {last}\n"
    )


class capture_trace:
    """Watch a run of retry code: ``with capture_trace(downstream) as run: client.fetch()``.

    Afterwards ``run.trace`` is the :class:`Trace`. An exception that is an instance of
    ``catch`` (default ``Exception``) is recorded as the outcome "raised" and not re-raised:
    giving up by raising is a legitimate end. Anything else propagates (the trace is still
    set), and so do ``AssertionError`` s (unless ``catch`` names one), pytest's outcomes and the
    retry guard. A swallowed exception is shown, with its traceback, under any later failure
    of the test. ``route``: watch only the calls one route's script answered. ``dead_letters`` (a :class:`~pytest_retry_check.dead_letters.DeadLetters`) lets
    the trace see a give-up into the dead-letter queue.
    """

    def __init__(
        self,
        downstream: FakeDownstream,
        *,
        dead_letters: Any = None,
        catch: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = Exception,
        route: Optional[str] = None,
    ) -> None:
        __tracebackhide__ = True
        if not isinstance(downstream, FakeDownstream):
            raise TypeError(f"capture_trace() watches a FakeDownstream, not {type(downstream).__name__}")
        if dead_letters is not None and not hasattr(dead_letters, "entries"):
            raise TypeError(f"dead_letters must be a DeadLetters capture, not {type(dead_letters).__name__}")
        self.downstream = downstream
        self.dead_letters = dead_letters
        self.catch = catch
        if route is not None:
            downstream.calls_to(route)  # fails now for an unknown route
        self.route = route
        self.trace: Optional[Trace] = None
        self._calls = self._sleeps = self._letters = 0
        self._clock: Optional[Timeline] = None

    def __enter__(self) -> "capture_trace":
        self._calls = len(self.downstream.calls)
        self._clock = self.downstream.clock
        self._sleeps = len(self._clock.sleeps)
        self._letters = len(self.dead_letters.entries) if self.dead_letters is not None else 0
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        calls = self.downstream.calls[self._calls :]
        if self.route is not None:
            calls = [c for c in calls if c.route == self.route]
        clock = self._clock
        sleeps = clock.sleeps[self._sleeps :] if clock is not None else []
        letters = self.dead_letters.entries[self._letters :] if self.dead_letters is not None else []
        caught = exc is not None and isinstance(exc, self.catch) and not _never_swallowed(exc, self.catch)
        if caught:
            SWALLOWED.append(exc)  # type: ignore[arg-type]
            del SWALLOWED[:-_SWALLOWED_KEPT]
        if letters:
            outcome = "dead-lettered"
        elif exc is not None:
            outcome = "raised"
        elif calls and calls[-1].ok:
            outcome = "succeeded"
        else:
            outcome = "returned"
        self.trace = Trace.from_calls(
            calls, sleeps=sleeps, outcome=outcome, error=exc, dead_letters=letters,
            error_expected=caught and _names_type_of(self.catch, exc), ended_at=clock.now() if clock is not None else None,
        )
        return caught
