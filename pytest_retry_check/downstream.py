"""A fake downstream that fails on a script, on the fake clock.

Call it directly (``downstream()``, ``await downstream.acall()``) or over HTTP
(``downstream.url``, a real server on 127.0.0.1). Every call is recorded with its virtual time.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .clock import FakeClock, current_clock
from .routes import match_route
from .slow_answers import await_answer, wait_for_answer
from .timeline import CALL_GUARD_HINT, RealClockCaptured, RealSleepDetected, RetryGuardTripped, Timeline, format_seconds, raised

__all__ = [
    "CallRecord",
    "DownstreamError",
    "DownstreamConnectionDropped",
    "DownstreamPermanentError",
    "DownstreamRateLimited",
    "DownstreamTimeout",
    "DownstreamUnavailable",
    "FakeDownstream",
    "Outcome",
    "Scenario",
    "after_commit",
    "drop",
    "error_after_commit",
    "hang",
    "ok",
    "permanent",
    "rate_limited",
    "raises",
    "reset_after_commit",
    "slow",
    "timeout_after_commit",
    "transient",
]

DEFAULT_MAX_CALLS = 10_000


# -- what a failing call raises in callable mode --------------------------------------------
class DownstreamError(Exception):
    """A scripted failure of the fake downstream."""

    def __init__(self, message: str, *, status: Optional[int] = None, retry_after: Optional[float] = None) -> None:
        __tracebackhide__ = True
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class DownstreamUnavailable(DownstreamError, ConnectionError):
    """Transient: 5xx, 408, an outage, overload. A ``ConnectionError`` so ordinary retry filters match."""


class DownstreamRateLimited(DownstreamError):
    """429 Too Many Requests; ``retry_after`` is in seconds (None when the server gave none)."""


class DownstreamPermanentError(DownstreamError):
    """A failure that cannot heal (400, 401, 403, 404, ...): retrying it is a bug."""


class DownstreamConnectionDropped(DownstreamError, ConnectionResetError):
    """The connection dropped without an answer."""


class DownstreamTimeout(DownstreamError, TimeoutError):
    """The answer did not come within the ``timeout=`` the callable was called with (virtual)."""


# -- outcomes -------------------------------------------------------------------------------
_KINDS = ("ok", "transient", "rate_limited", "permanent", "drop", "error", "hang")


@dataclass(frozen=True)
class Outcome:
    """What one call gets. Build with :func:`ok`, :func:`transient`, :func:`rate_limited`,
    :func:`permanent`, :func:`drop` or :func:`raises`."""

    kind: str
    status: int = 200
    retry_after: Optional[float] = None  # seconds after the call
    retry_after_as_date: bool = False  # HTTP: send an HTTP-date instead of delta-seconds
    error: Any = None  # callable mode: the exception (instance or class) to raise
    body: Any = None
    reason: str = ""
    #: Virtual seconds the answer takes (math.inf: it never comes, see :func:`hang`). A client
    #: timeout shorter than this fires first, on the virtual clock.
    latency: float = 0.0
    #: The request took effect before the answer failed (:func:`after_commit`): an ambiguous
    #: failure, after which a retry applies the operation a second time unless it is idempotent.
    after_commit: bool = False

    @property
    def is_ok(self) -> bool:
        return self.kind == "ok"

    @property
    def is_permanent(self) -> bool:
        return self.kind == "permanent"

    @property
    def applies(self) -> bool:
        """The request takes effect: a success, or a failure that came after the commit."""
        return self.kind == "ok" or self.after_commit

    @property
    def label(self) -> str:
        if self.after_commit:
            return f"applied, then {replace(self, after_commit=False).label}"
        if self.kind == "hang":
            return "hang (no answer)"
        if self.latency:
            return f"{replace(self, latency=0.0).label} after {format_seconds(self.latency)}"
        if self.kind == "ok":
            return "ok"
        if self.kind == "drop":
            return "dropped connection"
        if self.kind == "error" or (self.error is not None and self.kind != "rate_limited"):
            err = self.error
            return err.__name__ if isinstance(err, type) else type(err).__name__
        text = str(self.status)
        if self.reason:
            text += f" {self.reason}"
        if self.retry_after is not None:
            text += f" Retry-After {self.retry_after:g}s" + (" (date)" if self.retry_after_as_date else "")
        return text

    def __repr__(self) -> str:  # short, because hypothesis prints scenarios made of these
        return f"<{self.kind} {self.label}>" if self.label != self.kind else f"<{self.kind}>"


def ok(body: Any = None) -> Outcome:
    """A success (HTTP 200; callable mode returns ``body``, default ``"ok"``)."""
    return Outcome("ok", 200, body=body)


def transient(status: int = 503, *, error: Any = None, retry_after: Optional[float] = None, reason: str = "") -> Outcome:
    """A failure that heals with time: 5xx or 408 (callable mode raises ``error`` or
    :class:`DownstreamUnavailable`)."""
    __tracebackhide__ = True
    _check_status(status, "transient", lambda s: s == 408 or 500 <= s <= 599, "408 or 5xx")
    return Outcome("transient", status, retry_after=_check_retry_after(retry_after), error=_check_error(error), reason=reason)


def rate_limited(retry_after: Optional[float] = None, *, as_date: bool = False, status: int = 429) -> Outcome:
    """429 with ``Retry-After`` seconds (or an HTTP-date when ``as_date``)."""
    __tracebackhide__ = True
    _check_status(status, "rate_limited", lambda s: s in (429, 503), "429 or 503")
    if as_date and retry_after is None:
        raise ValueError("rate_limited(as_date=True) needs retry_after seconds to turn into a date")
    return Outcome("rate_limited", status, retry_after=_check_retry_after(retry_after), retry_after_as_date=bool(as_date))


def permanent(status: int = 404, *, error: Any = None, reason: str = "") -> Outcome:
    """A failure that never heals: 4xx other than 408/429 (callable mode raises ``error`` or
    :class:`DownstreamPermanentError`)."""
    __tracebackhide__ = True
    _check_status(status, "permanent", lambda s: 400 <= s <= 499 and s not in (408, 429), "a 4xx other than 408/429")
    return Outcome("permanent", status, error=_check_error(error), reason=reason)


def drop() -> Outcome:
    """The connection closes without an answer (callable mode: :class:`DownstreamConnectionDropped`)."""
    return Outcome("drop", 0)


def slow(latency: float, outcome: Any = "ok") -> Outcome:
    """``outcome`` (default ok), answered ``latency`` virtual seconds after the call: a client
    timeout shorter than that fires first (``httpx.ReadTimeout``, ``asyncio.TimeoutError``, or
    :class:`DownstreamTimeout` for a callable called with ``timeout=``)."""
    __tracebackhide__ = True
    if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not 0 <= latency < math.inf:
        raise ValueError(f"slow() latency must be a number of virtual seconds >= 0, got {latency!r} (a call that never answers is hang())")
    base = as_outcome(outcome)
    if base.kind == "hang":
        raise ValueError("slow(..., hang()) is just hang()")
    return replace(base, latency=float(latency))


def hang() -> Outcome:
    """The call never answers: only a client timeout ends it (virtual). Without one the guard
    trips and says so."""
    return Outcome("hang", 0, latency=math.inf)


def after_commit(outcome: Any = 502) -> Outcome:
    """An ambiguous failure: the request takes effect (the payment is made, the row written),
    then the answer fails with ``outcome`` -- a 5xx (502 from a proxy whose upstream applied
    it), :func:`drop` (connection reset after the write), :func:`hang` or :func:`slow` (a client
    timeout after the commit), or an exception. The client cannot tell it from a failure before
    the commit; a retry applies the operation again unless it is idempotent
    (:func:`~pytest_retry_check.effects.assert_idempotent`)."""
    __tracebackhide__ = True
    base = as_outcome(outcome)
    if base.kind == "ok" and not base.latency:
        raise ValueError("after_commit() needs a failing answer (502, drop(), hang(), slow(30), an exception); a plain success is ok()")
    if base.kind in ("permanent", "rate_limited"):
        raise ValueError(f"after_commit() is a failure after the write (5xx, drop(), hang(), slow()); {base.label} is refused before it")
    return replace(base, after_commit=True)


def timeout_after_commit(latency: Optional[float] = None) -> Outcome:
    """Applied, then no answer: :func:`hang` (or the success only ``latency`` virtual seconds
    later), so the client's own timeout fires after the operation took effect."""
    __tracebackhide__ = True
    return after_commit(hang() if latency is None else slow(latency))


def reset_after_commit() -> Outcome:
    """Applied, then the connection is reset before the answer (:func:`drop`)."""
    return after_commit(drop())


def error_after_commit(status: int = 502) -> Outcome:
    """Applied, then a 5xx (default 502: a gateway whose upstream applied the request)."""
    __tracebackhide__ = True
    return after_commit(transient(status))


def raises(error: Any) -> Outcome:
    """Callable mode raises ``error`` (an exception instance or class); HTTP answers 500."""
    __tracebackhide__ = True
    if error is None:
        raise TypeError("raises() needs an exception instance or class")
    return Outcome("error", 500, error=_check_error(error))


def _check_status(status: Any, name: str, allowed: Any, what: str) -> None:
    __tracebackhide__ = True
    if isinstance(status, bool) or not isinstance(status, int) or not allowed(status):
        raise ValueError(f"{name}() status must be {what}, got {status!r}")


def _check_retry_after(value: Any) -> Optional[float]:
    __tracebackhide__ = True
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < math.inf):
        raise ValueError(f"retry_after must be a non-negative number of seconds, got {value!r}")
    return float(value)


def _check_error(error: Any) -> Any:
    __tracebackhide__ = True
    if error is None or isinstance(error, BaseException) or (isinstance(error, type) and issubclass(error, BaseException)):
        return error
    raise TypeError(f"error must be an exception instance or class, not {error!r}")


OutcomeLike = Union[Outcome, int, str, BaseException, type]


def as_outcome(value: OutcomeLike) -> Outcome:
    """Shorthands: ``"ok"``, an HTTP status (``503``, ``429``, ``404``), an exception."""
    __tracebackhide__ = True
    if isinstance(value, Outcome):
        return value
    if isinstance(value, str):
        named = {"ok": ok, "transient": transient, "rate_limited": rate_limited, "permanent": permanent, "drop": drop, "hang": hang}
        if value in named:
            return named[value]()
        raise ValueError(f"unknown outcome {value!r}: use one of {sorted(named)}, an HTTP status or an exception")
    if isinstance(value, bool):
        raise TypeError(f"an outcome cannot be a bool ({value!r})")
    if isinstance(value, int):
        if 200 <= value <= 299:
            return Outcome("ok", value)
        if value == 429:
            return rate_limited()
        if value == 408 or 500 <= value <= 599:
            return transient(value)
        if 400 <= value <= 499:
            return permanent(value)
        raise ValueError(f"HTTP status {value} is not an outcome the fake downstream can script (2xx, 4xx or 5xx)")
    if isinstance(value, BaseException) or (isinstance(value, type) and issubclass(value, BaseException)):
        return raises(value)
    raise TypeError(f"cannot use {value!r} as an outcome: use ok()/transient()/rate_limited()/permanent()/drop()/raises(), an HTTP status or an exception")


# -- the script -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Scenario:
    """How the downstream behaves. Rules, first match wins, for call number n at virtual time t:

    1. ``capacity``: more than K calls in the last virtual second -> ``overload`` (503);
    2. ``permanent``: every call fails with this permanent outcome;
    3. ``outages``: t within a ``(t0, t1)`` window (seconds since the clock's origin, t0 <= t < t1)
       -> ``outage`` (503);
    4. the n-th entry of ``outcomes`` (``fail_first`` transient failures come first);
    5. ``then`` (default: ok).
    """

    outcomes: Tuple[Outcome, ...] = ()
    then: Outcome = field(default_factory=ok)
    fail_first: int = 0
    outages: Tuple[Tuple[float, float], ...] = ()
    permanent: Optional[Outcome] = None
    capacity: Optional[int] = None
    outage: Outcome = field(default_factory=lambda: transient(503, reason="outage"))
    overload: Outcome = field(default_factory=lambda: transient(503, reason="overloaded"))

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        object.__setattr__(self, "outcomes", tuple(as_outcome(o) for o in _iterable("outcomes", self.outcomes)))
        for name in ("then", "outage", "overload"):
            object.__setattr__(self, name, as_outcome(getattr(self, name)))
        if isinstance(self.fail_first, bool) or not isinstance(self.fail_first, int) or self.fail_first < 0:
            raise ValueError(f"fail_first must be a whole number >= 0, got {self.fail_first!r}")
        windows = []
        for window in _iterable("outages", self.outages):
            try:
                t0, t1 = (float(x) for x in window)
            except (TypeError, ValueError):
                raise ValueError(f"each outage is a (start, end) pair of virtual seconds, got {window!r}") from None
            if not (0 <= t0 < t1):
                raise ValueError(f"an outage window needs 0 <= start < end, got {window!r}")
            windows.append((t0, t1))
        object.__setattr__(self, "outages", tuple(sorted(windows)))
        if self.permanent is not None:
            outcome = as_outcome(self.permanent)
            if not outcome.is_permanent:
                raise ValueError(f"permanent= needs a permanent outcome (a 4xx other than 408/429), got {outcome.label}")
            object.__setattr__(self, "permanent", outcome)
        if self.capacity is not None and (isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1):
            raise ValueError(f"capacity must be a whole number of calls per virtual second >= 1, got {self.capacity!r}")

    @property
    def never_recovers(self) -> bool:
        return self.permanent is not None or not self.then.is_ok or any(end == math.inf for _, end in self.outages)

    def outcome_for(self, number: int, at: float, recent: int) -> Outcome:
        """The outcome of call ``number`` (from 1) at virtual time ``at``; ``recent`` counts the
        calls in the virtual second up to and including this one."""
        if self.capacity is not None and recent > self.capacity:
            return self.overload
        if self.permanent is not None:
            return self.permanent
        for t0, t1 in self.outages:
            if t0 <= at < t1:
                return self.outage
        index = number - 1
        if index < self.fail_first:
            return transient()
        index -= self.fail_first
        if index < len(self.outcomes):
            return self.outcomes[index]
        return self.then


def _iterable(name: str, value: Any) -> Iterable[Any]:
    __tracebackhide__ = True
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence, got {value!r}")
    return value


# -- calls ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CallRecord:
    """One call the downstream received."""

    number: int
    at: float  # virtual seconds since the clock's origin
    outcome: Outcome
    transport: str  # "call", "acall", "http" or "in-process"
    retry_after_until: Optional[float] = None  # virtual time before which a retry disobeys Retry-After
    method: str = ""
    path: str = ""
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)
    route: str = ""  # the key of the route whose script answered ("" for the downstream's own)
    headers: Dict[str, str] = field(default_factory=dict)  # HTTP request headers (also a callable's headers=)
    body: bytes = b""  # HTTP request body
    #: The request took effect (a success or an ambiguous failure, not deduplicated; safe
    #: methods GET/HEAD/OPTIONS never do).
    applied: bool = False
    #: The idempotency key the request carried (header or ``idempotency_key=``), if any.
    idempotency_key: Optional[str] = None
    #: The call whose effect this one replayed: same idempotency key, not applied again.
    replay_of: Optional[int] = None

    @property
    def ok(self) -> bool:
        return self.outcome.is_ok

    def header(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """A request header, case-insensitively."""
        lower = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lower:
                return value
        return default

    @property
    def json(self) -> Any:
        """The request body parsed as JSON (None when there is none or it is not JSON)."""
        import json

        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            return None

    @property
    def request(self) -> str:
        """``POST /payments`` or ``call('/orders/42', order_id=42)``, for messages."""
        if self.method:
            return f"{self.method} {self.path}"
        shown = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.transport}({', '.join(shown)})"


class FakeDownstream:
    """A scripted, failing downstream on the fake clock.

    ``FakeDownstream(fail_first=3)``, ``FakeDownstream(outcomes=[503, 429, "ok"])``,
    ``FakeDownstream(outages=[(0, 30)])``, ``FakeDownstream(permanent=404)``,
    ``FakeDownstream(capacity=5)``, or ``FakeDownstream(scenario)`` with a :class:`Scenario`.

    ``max_calls`` is a guard like the clock's: a retry loop with no sleep at all that calls
    more often than that fails fast instead of hanging. Default: the test's setting
    (``@pytest.mark.fake_clock(max_calls=...)``, the ini option ``retry_check_max_calls``) when
    built under the ``fake_clock`` fixture, else 10,000.
    """

    def __init__(
        self,
        scenario: Optional[Scenario] = None,
        *,
        clock: Optional[Timeline] = None,
        name: str = "downstream",
        max_calls: Optional[int] = None,
        routes: Optional[Dict[str, Any]] = None,
        key: Any = None,
        idempotency: Optional[str] = "Idempotency-Key",
        **script: Any,
    ) -> None:
        __tracebackhide__ = True
        from .routes import parse_routes

        self.routes = parse_routes(routes)
        if scenario is not None and script:
            raise TypeError(f"pass either a Scenario or script keywords, not both (got {sorted(script)})")
        if scenario is None:
            unknown = set(script) - set(Scenario.__dataclass_fields__)
            if unknown:
                raise TypeError(f"unknown downstream script keyword(s) {sorted(unknown)}; known: {sorted(Scenario.__dataclass_fields__)}")
            scenario = Scenario(**script)
        elif not isinstance(scenario, Scenario):
            raise TypeError(f"scenario must be a Scenario, not {type(scenario).__name__}")
        if max_calls is None:  # the test's setting (@pytest.mark.fake_clock(max_calls=...), the ini option)
            max_calls = getattr(clock if clock is not None else current_clock(), "default_max_calls", None) or DEFAULT_MAX_CALLS
        if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
            raise ValueError(f"max_calls must be a whole number >= 1, got {max_calls!r}")
        self.scenario = scenario
        self.name = name
        #: How a call names its business operation (see pytest_retry_check.effects): None (the
        #: request itself), a field name, or a function of the CallRecord.
        self.key = key
        if idempotency is not None and not (isinstance(idempotency, str) and idempotency.strip()):
            raise TypeError(f"idempotency must be the name of the idempotency-key header (or None: ignore it), got {idempotency!r}")
        #: The idempotency-key header the fake honours (None: it ignores them, as a server without
        #: support does): a request repeating an applied request's key is not applied again.
        self.idempotency = idempotency
        self._applied_keys: Dict[str, int] = {}
        self.__name__ = self.__qualname__ = name  # retry decorators log the wrapped function's name
        self.max_calls = max_calls
        self.calls: List[CallRecord] = []
        self._clock = clock
        self._lock = threading.Lock()
        self._server: Any = None
        self._closed = False
        self._real_mark: Optional[Tuple[float, int, float]] = None  # (real idle, real_waits entries, virtual time) at the last call
        # Real seconds of consecutive gaps that each idled at least REAL_GAP while virtual time
        # stood still, and the call they started after: sub-second real sleeps add up.
        self._real_debt: Tuple[float, int] = (0.0, 0)
        #: The call guard's exception once this downstream's max_calls was passed.
        self.guard_trip: Optional[RetryGuardTripped] = None
        from . import report

        report.note(self)  # a line in --retry-check-report

    # -- the clock --------------------------------------------------------------------------
    @property
    def clock(self) -> Timeline:
        __tracebackhide__ = True
        clock = self._clock if self._clock is not None else current_clock()
        if clock is None:
            raise RuntimeError(
                f"{self.name} needs a fake clock: use the fake_clock fixture, `with FakeClock():`, or FakeDownstream(clock=...)"
            )
        return clock

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Sync call: returns the success body or raises the scripted failure. A ``timeout=``
        keyword is honoured against a slow or hanging answer (virtual seconds)."""
        __tracebackhide__ = True
        record = self.record("call", args=args, kwargs=kwargs, path=_path_of(args))
        wait_for_answer(self, record, kwargs.get("timeout"))
        return self._callable_result(record)

    call = __call__

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        """Async call: the same, awaitable; a slow answer is an asyncio timer (virtual), so
        ``asyncio.wait_for(ds.acall(), timeout)`` times out as it would for real."""
        __tracebackhide__ = True
        record = self.record("acall", args=args, kwargs=kwargs, path=_path_of(args))
        await await_answer(self, record)
        return self._callable_result(record)

    def record(
        self,
        transport: str,
        *,
        method: str = "",
        path: str = "",
        args: Tuple[Any, ...] = (),
        kwargs: Optional[Dict[str, Any]] = None,
        headers: Optional[Dict[str, str]] = None,
        body: bytes = b"",
    ) -> CallRecord:
        """Decide and record the outcome of one call (used by every transport)."""
        __tracebackhide__ = True
        clock = self.clock
        if not self.calls and getattr(clock, "active", False):
            self._scan_callers(clock)
        with self._lock:
            number = len(self.calls) + 1
            at = clock.now()
            if number > self.max_calls:
                self.guard_trip = self._trip(clock, number)
                raise self.guard_trip
            if number * 2 >= self.max_calls:
                clock.nearing_guard()
            self._check_real_time(clock, number, at)
            route = match_route(self.routes, method or "GET", path) if self.routes and path else None
            if route is None:
                scenario, key, scripted = self.scenario, "", number
                if self.routes:
                    scripted = 1 + sum(1 for c in self.calls if not c.route)
            else:
                scenario, key = route.scenario, route.key
                scripted = 1 + sum(1 for c in self.calls if c.route == key)
            recent = 1
            if scenario.capacity is not None:
                for c in reversed(self.calls):
                    if c.at <= at - 1.0:
                        break
                    recent += c.route == key
            outcome = scenario.outcome_for(scripted, at, recent)
            until = _retry_after_until(outcome, at, transport, clock)
            kwargs = dict(kwargs or {})
            headers = dict(headers) if headers else _callable_headers(kwargs)
            applied, idem, replay_of = self._effect(outcome, method, headers, kwargs, number)
            record = CallRecord(
                number, at, outcome, transport, until, method, path, tuple(args), kwargs, key,
                headers, body or b"", applied, idem, replay_of,
            )
            self.calls.append(record)
            return record

    def _effect(self, outcome: Outcome, method: str, headers: Dict[str, str], kwargs: Dict[str, Any], number: int) -> Tuple[bool, Optional[str], Optional[int]]:
        """(applied, idempotency key, the call it replays): a request that takes effect is
        applied unless it repeats the idempotency key of one already applied."""
        # Read (for the record) even from a server that ignores it: messages say what was sent.
        lower = (self.idempotency or "Idempotency-Key").lower()
        idem = next((str(v) for k, v in headers.items() if k.lower() == lower), None)
        if idem is None and kwargs.get("idempotency_key") is not None:
            idem = str(kwargs["idempotency_key"])
        if not outcome.applies or method.upper() in _SAFE_METHODS:
            return False, idem, None
        if idem is not None and self.idempotency is not None:
            first = self._applied_keys.get(idem)
            if first is not None:
                return False, idem, first
            self._applied_keys[idem] = number
        return True, idem, None

    def effects(self, key: Any = None) -> Dict[Any, List[CallRecord]]:
        """The calls that took effect, by business key (``key``: as for
        :func:`~pytest_retry_check.effects.assert_idempotent`; default this downstream's)."""
        from .effects import effects_by_key

        return effects_by_key(self.calls, self.key if key is None else key)

    def _scan_callers(self, clock: Any) -> None:
        """At the first call: real clock/sleep functions captured before the clock started and
        held by the objects under test (the callers' locals: ``self``, a client built by a
        fixture, a dataclass instance) are reported as a ``CapturedClockWarning``."""
        __tracebackhide__ = True
        found = clock.scan_captured(frame=sys._getframe(2))
        if not found:
            return
        from .realtime import CapturedClockWarning

        try:
            clock.warn_captured(found, stacklevel=4)
        except CapturedClockWarning as exc:  # -W error::...: fail where the retry loop cannot swallow it
            clock.tripped = raised(RealClockCaptured, str(exc))
            raise clock.tripped from None

    def _check_real_time(self, clock: Timeline, number: int, at: float) -> None:
        """Fail when real time passed since the previous call while virtual time did not."""
        __tracebackhide__ = True
        limit = getattr(clock, "max_real_wait", None)
        if limit is None:
            return
        from . import realtime

        idle, entries = realtime.idle_seconds(), getattr(clock, "real_wait_entries", 0)
        # A reset of the timeline (the herd check's next client) starts a new run: no gap to judge.
        entries += 1_000_003 * getattr(clock, "resets", 0)
        previous, self._real_mark = self._real_mark, (idle, entries, at)
        if previous is None or not self.calls or previous[1] != entries:
            self._real_debt = (0.0, 0)
            return
        real, virtual = idle - previous[0], at - previous[2]
        if real > limit and virtual < real / 2:
            message = realtime.real_sleep_message(self.name, number - 1, number, real, virtual)
            clock.tripped = raised(RealSleepDetected, message)
            raise clock.tripped
        if real < realtime.REAL_GAP or virtual >= real / 2:
            self._real_debt = (0.0, 0)
            return
        debt, since = self._real_debt
        debt, since = debt + real, since or number - 1
        self._real_debt = (debt, since)
        if debt > limit:
            message = realtime.real_sleep_message(self.name, since, number, debt, 0.0, gaps=number - since)
            clock.tripped = raised(RealSleepDetected, message)
            raise clock.tripped

    def _trip(self, clock: Timeline, number: int) -> RetryGuardTripped:
        calls = self.calls
        shown = calls if len(calls) <= 15 else calls[:10] + calls[-5:]
        extra = f"calls to {self.name} ({len(calls)}, first and last shown):\n{describe_calls(shown)}\n"
        return clock.trip(f"{number} calls to {self.name} exceed max_calls={self.max_calls}", extra=extra, hint=CALL_GUARD_HINT)

    def _callable_result(self, record: CallRecord) -> Any:
        outcome = record.outcome
        if outcome.is_ok:
            return "ok" if outcome.body is None else outcome.body
        if outcome.error is not None:
            error = outcome.error
            raise (error(f"{self.name} call #{record.number}: scripted {error.__name__}") if isinstance(error, type) else error)
        message = f"{self.name} call #{record.number} at +{format_seconds(record.at)}: {outcome.label}"
        if outcome.kind == "rate_limited":
            raise DownstreamRateLimited(message, status=outcome.status, retry_after=outcome.retry_after)
        if outcome.kind == "permanent":
            raise DownstreamPermanentError(message, status=outcome.status)
        if outcome.kind == "drop":
            raise DownstreamConnectionDropped(message)
        raise DownstreamUnavailable(message, status=outcome.status, retry_after=outcome.retry_after)

    # -- HTTP -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL of a real HTTP server on 127.0.0.1 playing this script (started on first use)."""
        if self._closed:
            raise RuntimeError(f"{self.name} is closed")
        if self._server is None:
            from .http_downstream import DownstreamHTTPServer

            self._server = DownstreamHTTPServer(self)
            clock = self._clock if self._clock is not None else current_clock()
            if isinstance(clock, FakeClock):
                clock.add_busy_probe(self._server.busy)
                self._server.probe_clock = clock
        return self._server.url

    # -- in-process HTTP routes (no socket) --------------------------------------------------
    def httpx_transport(self) -> Any:
        """An ``httpx.MockTransport`` playing this script: ``httpx.Client(transport=...)`` or
        ``httpx.AsyncClient(transport=...)``; the request's timeout meets slow answers virtually."""
        from .in_process import httpx_transport

        return httpx_transport(self)

    def httpx_handler(self, request: Any) -> Any:
        """For respx: ``respx.get(url).mock(side_effect=downstream.httpx_handler)``."""
        __tracebackhide__ = True
        from .in_process import httpx_handler

        return httpx_handler(self, request)

    def responses_callback(self, request: Any) -> Any:
        """For responses: ``responses.add_callback(responses.GET, url, callback=downstream.responses_callback)``."""
        __tracebackhide__ = True
        from .in_process import responses_callback

        return responses_callback(self, request)

    def close(self) -> None:
        self._closed = True
        server, self._server = self._server, None
        if server is not None:
            clock = getattr(server, "probe_clock", None)
            if clock is not None:
                clock.remove_busy_probe(server.busy)
            server.close()

    def __enter__(self) -> "FakeDownstream":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- reading the record -----------------------------------------------------------------
    @property
    def call_count(self) -> int:
        return len(self.calls)

    @property
    def call_times(self) -> List[float]:
        return [c.at for c in self.calls]

    def calls_to(self, route: str) -> List[CallRecord]:
        """The calls one route's script answered (its key, as given in ``routes``)."""
        if route not in {r.key for r in self.routes}:
            raise KeyError(f"no route {route!r}; routes: {[r.key for r in self.routes]}")
        return [c for c in self.calls if c.route == route]

    def trace(self, *, route: Optional[str] = None, **kwargs: Any) -> Any:
        """A :class:`~pytest_retry_check.trace.Trace` of every call so far (of one route's, with ``route=``)."""
        from .trace import Trace

        return Trace.from_calls(self.calls if route is None else self.calls_to(route), **kwargs)

    def with_script(self, **changes: Any) -> "FakeDownstream":
        """A new downstream with this one's script changed by ``changes``."""
        routes = {r.key: r.scenario for r in self.routes} or None
        return FakeDownstream(
            replace(self.scenario, **changes), clock=self._clock, name=self.name, max_calls=self.max_calls, routes=routes,
            key=self.key, idempotency=self.idempotency,
        )

    def __repr__(self) -> str:
        return f"<FakeDownstream {self.name!r} calls={len(self.calls)} {self.scenario!r}>"


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _callable_headers(kwargs: Dict[str, Any]) -> Dict[str, str]:
    """A callable called with ``headers={...}`` (as HTTP client wrappers pass them)."""
    headers = kwargs.get("headers")
    if isinstance(headers, Mapping):
        return {str(k): str(v) for k, v in headers.items()}
    return {}


def _path_of(args: Tuple[Any, ...]) -> str:
    """A callable called with a path first (``orders("/orders/42")``) is routed by it."""
    return args[0] if args and isinstance(args[0], str) and args[0].startswith("/") else ""


def _retry_after_until(outcome: Outcome, at: float, transport: str, clock: Timeline) -> Optional[float]:
    """Virtual time before which a retry disobeys the ``Retry-After`` the client was given.

    Over HTTP the header is whole seconds (rounded up), or a date with one-second resolution
    (rounded down): judge "honoured" against what was really sent.
    """
    if outcome.retry_after is None:
        return None
    if transport not in ("http", "in-process"):
        return at + outcome.retry_after
    if outcome.retry_after_as_date:
        epoch_at = clock.at_epoch(at)
        return at + (math.floor(epoch_at + outcome.retry_after) - epoch_at)
    return at + math.ceil(outcome.retry_after)


def retry_after_header(record: CallRecord, clock: Timeline) -> Optional[str]:
    """The ``Retry-After`` header value that goes with ``record``."""
    if record.retry_after_until is None:
        return None
    if record.outcome.retry_after_as_date:
        from email.utils import formatdate

        return formatdate(round(clock.at_epoch(record.retry_after_until)), usegmt=True)
    return str(round(record.retry_after_until - record.at))


def response_parts(record: CallRecord, clock: Timeline) -> Tuple[Dict[str, str], Any]:
    """The headers and body an HTTP answer to ``record`` carries, whatever carries it (the
    local HTTP server or an in-process transport)."""
    headers: Dict[str, str] = {}
    retry_after = retry_after_header(record, clock)
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    outcome = record.outcome
    if outcome.is_ok:
        body = outcome.body if outcome.body is not None else {"ok": True, "call": record.number}
    else:
        body = {"error": outcome.label, "call": record.number}
    return headers, body


def describe_calls(calls: Sequence[CallRecord]) -> str:
    return "\n".join(f"  #{c.number} at +{format_seconds(c.at)}: {c.outcome.label}" for c in calls)
