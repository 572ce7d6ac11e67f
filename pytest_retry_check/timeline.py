"""A virtual timeline: virtual time, recorded sleeps and the forever-retry guard.

Nothing here patches anything, so a timeline is cheap to create; many can exist at once (one per
simulated client). :class:`~pytest_retry_check.clock.FakeClock` is a timeline that is also
wired into ``time``/``asyncio``/``datetime`` through freezegun.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import os
import sys
import sysconfig
import threading
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Union

__all__ = [
    "DEFAULT_MAX_SLEEPS",
    "DEFAULT_MAX_VIRTUAL_TIME",
    "DEFAULT_START",
    "RealSleepDetected",
    "RealClockCaptured",
    "RetryGuardTripped",
    "SleepRecord",
    "Timeline",
    "format_seconds",
    "raised",
]

# Fixed, not "now": the same virtual dates in every run make failures reproducible.
DEFAULT_START = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)
DEFAULT_MAX_SLEEPS = 1000
DEFAULT_MAX_VIRTUAL_TIME = 30 * 24 * 3600.0

SLEEP_GUARD_HINT = (
    "Raise the limit if this much retrying is intended: @pytest.mark.fake_clock(max_sleeps=..., max_virtual_time=...) "
    "on the test, the ini options retry_check_max_sleeps / retry_check_max_virtual_time, or FakeClock(max_sleeps=..., "
    "max_virtual_time=...)."
)
CALL_GUARD_HINT = (
    "Raise the limit if this many calls are intended: @pytest.mark.fake_clock(max_calls=...) on the test, "
    "fake_downstream(..., max_calls=...), the ini option retry_check_max_calls, or FakeDownstream(max_calls=...)."
)

StartLike = Union[None, str, _dt.datetime, _dt.date, float, int]


class _SeesPytestRaises(type):
    """Notices ``pytest.raises(RetryGuardTripped)`` catching a trip, which makes the trip
    expected: pytest checks the type with ``isinstance`` in Python (this hook), whereas an
    ``except`` clause in the code under test matches in C without asking."""

    def __instancecheck__(cls, instance: object) -> bool:
        matched = super().__instancecheck__(instance)
        if matched and _called_from_pytest():
            try:
                instance.expected_by_test = True  # type: ignore[attr-defined]
            except AttributeError:
                pass
            _rearm_clock_of(instance)
        return matched


def _rearm_clock_of(trip: object) -> None:
    """An expected trip (caught by ``pytest.raises``) is over: the clock that tripped gets a
    fresh guard, so the rest of the test is judged afresh (a later trip, swallowed or expected,
    and a bounded client are each seen for what they are). Its records stay."""
    clock_module = sys.modules.get("pytest_retry_check.clock")
    for clock in list(getattr(clock_module, "_active", ())):
        if clock.tripped is trip:
            clock.rearm()


def _called_from_pytest() -> bool:
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return False
        if (frame.f_globals.get("__name__") or "").startswith("_pytest."):
            return True
        frame = frame.f_back
    return False


class RetryGuardTripped(BaseException, metaclass=_SeesPytestRaises):
    """Code under test kept retrying past the guard's limit.

    A ``BaseException`` (like pytest's own ``Failed``) so that a retry loop's
    ``except Exception`` cannot swallow it and go on forever. ``pytest.raises`` of it (or
    ``fake_clock.expect_trip()``) makes the trip expected; anything else that catches it and
    lets the test pass fails the test at teardown.
    """

    expected_by_test = False


_RAISED: dict = {}


def raised(cls: type, message: str) -> RetryGuardTripped:
    """An instance of ``cls`` to raise, of a same-named private subclass: ``isinstance`` asks
    the metaclass only when the type is not the very class asked about."""
    sub = _RAISED.get(cls)
    if sub is None:
        # Pickled as the public class (the private one cannot be found by name).
        reduce = lambda self: (cls, self.args)  # noqa: E731
        sub = _RAISED[cls] = type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__reduce__": reduce})
    return sub(message)


class RealSleepDetected(RetryGuardTripped):
    """The code under test waited for real while the fake clock ran (a sleep function captured
    before the clock started). A ``BaseException`` like the guard, for the same reason."""


class RealClockCaptured(RetryGuardTripped):
    """A real clock or sleep function captured before the fake clock started: found by a fake
    downstream while ``CapturedClockWarning`` is turned into an error
    (``-W error::pytest_retry_check.CapturedClockWarning``), or read by the code under test when
    a guard tripped (a deadline computed from it never came on virtual time). A
    ``BaseException`` so that the retry loop under test cannot swallow it."""


@dataclass(frozen=True)
class SleepRecord:
    """One sleep the code under test asked for."""

    number: int
    seconds: float  # as requested
    at: float  # virtual seconds since the timeline's origin, when the sleep began
    kind: str  # "time.sleep", "asyncio.sleep", "Event.wait", ...
    where: str  # the first frame outside the standard library and installed packages
    caller: str  # the frame that called the sleep function itself
    #: Set when the sleep was cut short (cancelled): what was asked for; ``seconds`` is then
    #: what really elapsed.
    requested: Optional[float] = None

    @property
    def cancelled(self) -> bool:
        return self.requested is not None

    def __str__(self) -> str:
        cut = f", cancelled after {self.seconds:g}" if self.cancelled else ""
        asked = self.requested if self.requested is not None else self.seconds
        return f"#{self.number} at +{format_seconds(self.at)} {self.kind}({asked:g}{cut}) from {self.where}"


def format_seconds(seconds: float) -> str:
    if seconds != seconds or seconds in (math.inf, -math.inf):
        return f"{seconds} s"
    if abs(seconds) >= 100:
        return f"{seconds:,.1f} s"
    return f"{seconds:.3f} s"


def parse_start(start: StartLike) -> _dt.datetime:
    """An aware UTC datetime from what a user may reasonably pass as a start time."""
    __tracebackhide__ = True
    if start is None:
        return DEFAULT_START
    if isinstance(start, bool):
        raise TypeError(f"start must be a datetime, an ISO-8601 string or epoch seconds, not {start!r}")
    if isinstance(start, (int, float)):
        return _dt.datetime.fromtimestamp(start, _dt.timezone.utc)
    if isinstance(start, str):
        text = start.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            start = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"start={start!r} is not an ISO-8601 date/time such as '2026-01-01T00:00:00Z'") from None
    if isinstance(start, _dt.datetime):
        if start.tzinfo is None:
            return start.replace(tzinfo=_dt.timezone.utc)
        return start.astimezone(_dt.timezone.utc)
    if isinstance(start, _dt.date):
        return _dt.datetime(start.year, start.month, start.day, tzinfo=_dt.timezone.utc)
    raise TypeError(f"start must be a datetime, an ISO-8601 string or epoch seconds, not {type(start).__name__}")


def _positive_limit(name: str, value: object, kind: type) -> None:
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if kind is int and not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def validate_sleep(seconds: object) -> float:
    """The checks ``time.sleep`` makes, with the same exception types."""
    __tracebackhide__ = True
    if isinstance(seconds, (str, bytes)):
        raise TypeError(f"sleep length must be a number, not {type(seconds).__name__}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        try:
            seconds = float(seconds)  # type: ignore[arg-type]  # Decimal, Fraction, numpy floats
        except (TypeError, ValueError):
            raise TypeError(f"sleep length must be a number, not {type(seconds).__name__}") from None
    seconds = float(seconds)
    if seconds != seconds:
        raise ValueError("Invalid value NaN (not a number)")
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    if seconds == math.inf:
        raise OverflowError("sleep length is too large")
    return seconds


# Frames in these directories are library code; a sleep's "where" is the first frame outside them.
_LIBRARY_DIRS = tuple(
    {os.path.normcase(os.path.abspath(p)) + os.sep for p in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")) if p}
)
_OWN_DIR = os.path.normcase(os.path.dirname(os.path.abspath(__file__))) + os.sep


@functools.lru_cache(maxsize=4096)
def _is_library(filename: str) -> bool:
    path = os.path.normcase(filename)
    return path.startswith(_OWN_DIR) or path.startswith(_LIBRARY_DIRS) or filename.startswith("<frozen")


def _describe(frame) -> str:
    code = frame.f_code
    return f"{_short_path(code.co_filename)}:{frame.f_lineno} in {code.co_name}"


def _short_path(filename: str) -> str:
    # Cached per working directory (pytester changes it): every sleep describes two frames.
    return _short_path_from(filename, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _short_path_from(filename: str, cwd: str) -> str:
    # An installed library: "tenacity/nap.py" reads better than a long site-packages path, also
    # when the virtualenv lives inside the project (".venv/lib/.../site-packages/...").
    parts = filename.replace("\\", "/").split("/site-packages/")
    if len(parts) > 1:
        return parts[-1]
    try:
        rel = os.path.relpath(filename, cwd)
    except ValueError:  # another drive on Windows
        return filename
    return filename if rel.startswith("..") else rel


def caller_locations(depth: int) -> tuple[str, str]:
    """(first non-library frame, direct caller) seen from ``depth`` frames above the caller."""
    try:
        frame = sys._getframe(depth + 1)
    except ValueError:
        return "<unknown>", "<unknown>"
    direct = _describe(frame)
    probe = frame
    for _ in range(50):
        if probe is None:
            break
        if not _is_library(probe.f_code.co_filename):
            return _describe(probe), direct
        probe = probe.f_back
    return direct, direct


class Timeline:
    """Virtual time in whole microseconds, the sleeps taken on it, and the forever-retry guard.

    ``now()`` is virtual seconds since the origin (0.0 at creation and after ``reset()``).
    """

    def __init__(
        self,
        start: StartLike = None,
        *,
        max_sleeps: int = DEFAULT_MAX_SLEEPS,
        max_virtual_time: float = DEFAULT_MAX_VIRTUAL_TIME,
    ) -> None:
        __tracebackhide__ = True
        _positive_limit("max_sleeps", max_sleeps, int)
        _positive_limit("max_virtual_time", max_virtual_time, float)
        self.start_datetime = parse_start(start)
        self.max_sleeps = max_sleeps
        self.max_virtual_time = float(max_virtual_time)
        self._lock = threading.RLock()
        self._now_us = 0  # since start_datetime; never goes backwards
        self._origin_us = 0  # what now() counts from; moved forward by reset()
        self.sleeps: List[SleepRecord] = []
        self.tripped: Optional[RetryGuardTripped] = None
        #: How many times reset() started afresh (a new herd client, a new hypothesis example).
        self.resets = 0
        # The guard counts sleeps and virtual time from here (moved by rearm() and reset()).
        self._guard_sleeps = 0
        self._guard_us = 0
        #: How to raise the sleep and virtual-time limits, in the guard's message.
        self.hint = SLEEP_GUARD_HINT

    # -- reading the time -------------------------------------------------------------------
    def now(self) -> float:
        """Virtual seconds since the origin."""
        return (self._now_us - self._origin_us) / 1e6

    def utcnow(self) -> _dt.datetime:
        """The virtual wall-clock time (aware, UTC)."""
        return self.start_datetime + _dt.timedelta(microseconds=self._now_us)

    def epoch(self) -> float:
        """What ``time.time()`` returns on this timeline."""
        return self.start_datetime.timestamp() + self._now_us / 1e6

    def at_epoch(self, virtual_seconds: float) -> float:
        """The epoch time of a virtual time given as seconds since the origin."""
        return self.start_datetime.timestamp() + self._origin_us / 1e6 + virtual_seconds

    def virtual_elapsed(self) -> float:
        """Virtual seconds since the timeline was created (``reset()`` does not change it)."""
        return self._now_us / 1e6

    @property
    def total_slept(self) -> float:
        return sum(s.seconds for s in self.sleeps)

    # -- moving it --------------------------------------------------------------------------
    def sleep(self, seconds: object, *, kind: str = "sleep", advance: bool = True, _depth: int = 1, defer: bool = False) -> SleepRecord:
        """Record a sleep and advance virtual time by it; trips the guard past its limits.

        ``advance=False`` only records it: an asyncio loop moves the time when the timer is due.
        ``defer=True`` (with ``advance=False``): a sleep past ``max_virtual_time`` (``math.inf``
        included) is recorded instead of tripping at once; the caller trips when the guard's
        horizon comes (see :meth:`horizon_left`), since a timeout may cancel it first.
        Returns the record.
        """
        __tracebackhide__ = True
        seconds = math.inf if defer and seconds == math.inf else validate_sleep(seconds)
        where, caller = caller_locations(_depth)
        with self._lock:
            if self.tripped is not None:
                raise self._retrip()
            record = SleepRecord(len(self.sleeps) + 1, seconds, self.now(), kind, where, caller)
            count = record.number - self._guard_sleeps
            since = (self._now_us - max(self._origin_us, self._guard_us)) / 1e6
            if count > self.max_sleeps:
                raise self.trip(f"{count} sleeps exceed max_sleeps={self.max_sleeps}", pending=record)
            if since + seconds > self.max_virtual_time and not defer:
                raise self.trip(
                    f"sleeping {format_seconds(seconds)} at +{format_seconds(since)} would pass "
                    f"max_virtual_time={format_seconds(self.max_virtual_time)}",
                    pending=record,
                )
            self.sleeps.append(record)
            if advance:
                self._advance_us(_to_us(seconds))
            if count * 2 >= self.max_sleeps or (since + seconds) * 2 >= self.max_virtual_time:
                self.nearing_guard()
            return record

    def horizon_left(self) -> float:
        """Virtual seconds until the guard's ``max_virtual_time`` (counted as sleeps are)."""
        return self.max_virtual_time - (self._now_us - max(self._origin_us, self._guard_us)) / 1e6

    def trip_at_horizon(self, record: SleepRecord) -> RetryGuardTripped:
        """The guard's exception for a deferred sleep (``defer=True``) still running at the horizon."""
        asked = record.requested if record.requested is not None else record.seconds
        return self.trip(
            f"sleeping {format_seconds(asked)} at +{format_seconds(record.at)} would pass "
            f"max_virtual_time={format_seconds(self.max_virtual_time)}"
        )

    def cut_short(self, record: SleepRecord) -> None:
        """The sleep ``record`` ended now, before its time (cancelled): record what elapsed."""
        with self._lock:
            index = record.number - 1
            if index < len(self.sleeps) and self.sleeps[index] is record:  # not since reset()
                elapsed = min(record.seconds, max(0.0, self.now() - record.at))
                if elapsed < record.seconds:
                    self.sleeps[index] = replace(record, seconds=elapsed, requested=record.seconds)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward without recording a sleep (a timer firing, time passing)."""
        __tracebackhide__ = True
        seconds = validate_sleep(seconds)
        with self._lock:
            self._advance_us(_to_us(seconds))

    def _advance_us(self, delta_us: int) -> None:
        if delta_us:
            self._now_us += delta_us
            self._moved(delta_us)

    def _moved(self, delta_us: int) -> None:
        """Hook for subclasses that mirror the timeline somewhere else (freezegun)."""

    def reset(self) -> None:
        """Start afresh: ``now()`` is 0 again and records and guard are cleared.

        Virtual wall-clock time keeps going forward: clocks, loops and libraries must never see
        time go backwards.
        """
        with self._lock:
            self._origin_us = self._now_us
            self.sleeps = []
            self.tripped = None
            self._guard_sleeps, self._guard_us = 0, self._now_us
            self.resets += 1

    def rearm(self) -> None:
        """A fresh guard after an expected trip: sleeps and virtual time count from now, and
        nothing is tripped. Unlike ``reset()``, ``now()`` and the records stay."""
        with self._lock:
            self.tripped = None
            self._guard_sleeps, self._guard_us = len(self.sleeps), self._now_us

    # -- the guard --------------------------------------------------------------------------
    def nearing_guard(self) -> None:
        """Called once a guard is half way to tripping (sleeps, virtual time, a downstream's
        calls): a :class:`~pytest_retry_check.clock.FakeClock` starts watching for real clock reads."""

    def real_clock_note(self) -> Optional[str]:
        """Why a limit was reached if not for a missing bound (a FakeClock: the code read a real
        clock captured before the clock started, so its deadline never came); None."""
        return None

    def trip(self, reason: str, *, pending: Optional[SleepRecord] = None, extra: str = "", hint: Optional[str] = None) -> RetryGuardTripped:
        """Build (and remember) the guard's exception; the caller raises it. ``hint`` (default
        ``self.hint``) says which knob raises the limit that tripped."""
        records = list(self.sleeps[self._guard_sleeps :]) + ([pending] if pending is not None else [])
        cause = self.real_clock_note()
        if cause is not None:  # raising the limit would not help: say what would
            message = f"retry guard: {reason}, but not for want of a bound: {cause}\n{extra}{format_schedule(records)}"
            self.tripped = raised(RealClockCaptured, message)
            return self.tripped
        message = (
            f"retry guard: {reason}; the code under test looks like it retries forever.\n"
            f"{hint if hint is not None else self.hint}\n"
            f"{extra}{format_schedule(records)}"
        )
        self.tripped = raised(RetryGuardTripped, message)
        return self.tripped

    def _retrip(self) -> RetryGuardTripped:
        # Somebody caught the first one (``except BaseException``) and went on retrying.
        return raised(RetryGuardTripped, f"retry guard already tripped and the code kept going:\n{self.tripped}")

    def schedule(self) -> str:
        return format_schedule(self.sleeps)


def _to_us(seconds: float) -> int:
    # Round up: a sleep never ends before the time asked for (timers fire *after* their due time).
    return int(math.ceil(seconds * 1e6 - 1e-6)) if seconds > 0 else 0


def format_schedule(records: Sequence[SleepRecord], *, head: int = 10, tail: int = 5) -> str:
    """A readable table of sleeps; long ones show the first ``head`` and last ``tail`` rows."""
    if not records:
        return "schedule: no sleeps recorded\n"
    lines = [f"schedule ({len(records)} sleeps, {format_seconds(sum(r.seconds for r in records))} in total):"]
    lines.append(f"  {'#':>5}  {'at (virtual)':>14}  {'sleep':>12}  {'kind':<13}  called from")
    shown: List[Optional[SleepRecord]] = list(records)
    if len(records) > head + tail:
        shown = list(records[:head]) + [None] + list(records[-tail:])
    for record in shown:
        if record is None:
            lines.append(f"  {'...':>5}  ({len(records) - head - tail} more)")
            continue
        cut = f" (cancelled: asked for {format_seconds(record.requested)})" if record.requested is not None else ""
        lines.append(
            f"  {record.number:>5}  {'+' + format_seconds(record.at):>14}  {format_seconds(record.seconds):>12}  "
            f"{record.kind:<13}  {record.where}{cut}"
        )
    return "\n".join(lines) + "\n"
