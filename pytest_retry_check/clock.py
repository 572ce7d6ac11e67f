"""The fake clock: a :class:`~pytest_retry_check.timeline.Timeline` wired into the process.

While a :class:`FakeClock` is active:

- freezegun makes ``time.time/monotonic/perf_counter`` and ``datetime`` read the virtual time;
- ``time.sleep`` (and every module-level alias such as redis-py's ``from time import sleep``)
  advances virtual time instead of blocking, and is recorded;
- ``asyncio.sleep`` is recorded and asyncio loops jump to their next timer when idle
  (see :mod:`pytest_retry_check.asyncio_loop`);
- ``threading.Event.wait(timeout)`` on an unset event is a virtual sleep (the usual
  "interruptible sleep" of a retry loop).

Everything is restored on ``stop()``. Clocks nest; the innermost one is the one that moves.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import random
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar

from .realtime import DEFAULT_MAX_REAL_WAIT
from .timeline import (
    DEFAULT_MAX_SLEEPS,
    DEFAULT_MAX_VIRTUAL_TIME,
    RetryGuardTripped,
    StartLike,
    Timeline,
)

__all__ = ["FakeClock", "current_clock", "real_monotonic", "real_sleep"]

F = TypeVar("F", bound=Callable[..., Any])

# Captured at import, before any patching: our own plumbing must use real time.
real_sleep = time.sleep
real_monotonic = time.monotonic
_real_asyncio_sleep = asyncio.sleep
_real_event_wait = threading.Event.wait

# Callers in these modules keep real time: test runners and hypothesis time themselves
# (hypothesis' deadline reads perf_counter), and xdist's transport must not be fast-forwarded.
IGNORED_MODULES: Tuple[str, ...] = (
    "_pytest",
    "pytest_retry_check",
    "pluggy",
    "execnet",
    "xdist",
    "hypothesis",
    "_hypothesis",
    "threading",
    "queue",
    "concurrent",
    "selectors",
    "socketserver",
    "coverage",
    "pydevd",
)

#: Modules of these packages (``queue`` and ``queue.x``, not a ``queue_worker`` of your own);
#: a few are matched as prefixes because their internals are separate top-level modules.
_IGNORED_NAMES = frozenset(IGNORED_MODULES)
_IGNORED_STARTS = tuple(m + "." for m in IGNORED_MODULES) + ("_hypothesis", "pydevd", "_pydevd")


def ignored_module(name: str) -> bool:
    """True for a module whose calls keep real time (the test runner's, the standard library's
    queues and threads, ...): ``queue`` and ``queue.x``, not a ``queue_worker`` of your own."""
    return name in _IGNORED_NAMES or name.startswith(_IGNORED_STARTS)


_active: List["FakeClock"] = []
_state_lock = threading.RLock()
_patches: Optional["_ProcessPatches"] = None
_local = threading.local()


def current_clock() -> Optional["FakeClock"]:
    """The innermost active fake clock, or None."""
    return _active[-1] if _active else None


def _caller_ignored(depth: int) -> bool:
    """True when the frame ``depth`` levels above the caller must keep real time."""
    if getattr(_local, "real", 0):
        return True
    try:
        name = sys._getframe(depth + 1).f_globals.get("__name__") or ""
    except ValueError:
        return False
    return ignored_module(name)


def _fake_sleep(seconds: float) -> None:
    __tracebackhide__ = True
    clock = current_clock()
    if clock is None or _caller_ignored(1):
        return real_sleep(seconds)
    _one_waiting_thread(clock, "time.sleep", seconds)
    clock.sleep(seconds, kind="time.sleep", _depth=2)


def _one_waiting_thread(clock: "FakeClock", kind: str, seconds: Any) -> None:
    """Fail loudly when a thread the test started waits in virtual time while another thread
    does too: every virtual wait moves the one clock at once, so the waits of two threads add up
    instead of overlapping, and a heartbeat thread (``while not stop.wait(10):
    change_message_visibility(...)``) beats at the wrong times, or not at all, while the handler
    sleeps. The test's own thread and the simulated clients (``run_workers``, the herd and
    incident simulations: one at a time in virtual-time order) are not background threads."""
    __tracebackhide__ = True
    ident = threading.get_ident()
    waiters = clock._waiting_threads
    if ident not in waiters:
        background = ident != clock._owner_thread
        if background:
            from .population import current_client

            background = current_client() < 0
        waiters[ident] = (background, threading.current_thread())
        if background:
            clock._background_waiters += 1
    if not clock._background_waiters or len(waiters) < 2:
        return  # (every sleep of the simulations' clients comes here: keep it cheap)
    for other, (bg, thread) in list(waiters.items()):
        if not thread.is_alive():  # done: its waits are over, not overlapping any more
            del waiters[other]
            clock._background_waiters -= bg
    background = [thread.name for bg, thread in waiters.values() if bg]
    if not background or len(waiters) < 2 or clock.tripped is not None:
        return
    here = waiters[ident][1].name
    message = (
        f"virtual waits on several threads: {here!r} called {kind}({seconds!r}) under the fake clock while "
        f"{', '.join(repr(t.name) for _, t in waiters.values() if t.name != here)} also waits in virtual time; the thread(s) "
        f"{', '.join(repr(n) for n in background)} were started by the test's code. Every virtual wait moves the one "
        "clock at once, so the waits of two threads add up instead of overlapping: a heartbeat thread looping on "
        "Event.wait(10) would not beat every 10 s while the handler sleeps. Heartbeats must be inline: call "
        "change_message_visibility / delivery.heartbeat() / modify_ack_deadline from the handler between its steps "
        "of work (or run the thread's waits for real: `with fake_clock.real_waits():` in that thread)."
    )
    from .timeline import RetryGuardTripped, raised

    clock.tripped = raised(RetryGuardTripped, message)
    raise clock.tripped


def _fake_asyncio_sleep(delay: float, result: Any = None) -> Any:
    __tracebackhide__ = True
    # A plain function returning the real coroutine: the caller's frame is exact, and the
    # virtual loop does the waiting. Zero sleeps are cooperative yields (anyio, httpx), not retries.
    clock = current_clock()
    if clock is not None and not _caller_ignored(1):
        if not isinstance(delay, bool) and isinstance(delay, (int, float)) and delay > 0:
            left = clock.horizon_left()
            if delay > left:  # "sleep until cancelled" (math.inf, 10**9): a timeout may end it first
                record = clock.sleep(delay, kind="asyncio.sleep", advance=False, _depth=2, defer=True)
                if record is not None:
                    return _until_cancelled(_sleep_to_horizon(clock, record, left), clock, record)
            record = clock.sleep(delay, kind="asyncio.sleep", advance=False, _depth=2)
            if record is not None:
                return _until_cancelled(_real_asyncio_sleep(delay, result), clock, record)
    return _real_asyncio_sleep(delay, result)


async def _sleep_to_horizon(clock: "FakeClock", record: Any, left: float) -> Any:
    # Wait (virtually) until the guard's horizon, then trip there, in the sleeping task.
    await _real_asyncio_sleep(max(left, 0.0))
    raise clock.trip_at_horizon(record)


async def _until_cancelled(sleeping: Any, clock: "FakeClock", record: Any) -> Any:
    # A sleep cut short (``wait_for`` timing out, a task cancelled) lasted only until then:
    # count what elapsed, not what was asked for.
    try:
        return await sleeping
    except asyncio.CancelledError:
        clock.cut_short(record)
        raise


def _fake_event_wait(self: threading.Event, timeout: Optional[float] = None) -> bool:
    __tracebackhide__ = True
    clock = current_clock()
    if clock is None or timeout is None or timeout <= 0 or self.is_set() or _caller_ignored(1):
        return _real_event_wait(self, timeout)
    _one_waiting_thread(clock, "Event.wait", timeout)
    clock.sleep(timeout, kind="Event.wait", _depth=2)
    return self.is_set()


_fake_sleep.__wrapped__ = real_sleep  # type: ignore[attr-defined]
_fake_asyncio_sleep.__wrapped__ = _real_asyncio_sleep  # type: ignore[attr-defined]

_FAKES = {id(real_sleep): (real_sleep, _fake_sleep), id(_real_asyncio_sleep): (_real_asyncio_sleep, _fake_asyncio_sleep)}
_REALS_BY_FAKE = {id(fake): real for real, fake in _FAKES.values()}

# module name -> (id(module), len(module dict), names bound to a real sleep): avoids re-reading
# every attribute of ~1,000 modules on each activation.
_alias_cache: Dict[str, Tuple[int, int, Tuple[str, ...]]] = {}


def _module_dicts() -> Iterator[Tuple[str, Dict[str, Any], Any]]:
    for name, module in list(sys.modules.items()):
        if module is None or ignored_module(name):
            continue
        try:
            namespace = vars(module)
        except TypeError:
            continue
        yield name, namespace, module


def _sleep_aliases(name: str, namespace: Dict[str, Any], module: Any) -> Tuple[str, ...]:
    key = (id(module), len(namespace))
    cached = _alias_cache.get(name)
    if cached is not None and cached[:2] == key:
        return cached[2]
    found = tuple(attr for attr, value in list(namespace.items()) if id(value) in _FAKES and _FAKES[id(value)][0] is value)
    _alias_cache[name] = (key[0], key[1], found)
    return found


class _ProcessPatches:
    """The process-wide patches, installed by the outermost clock and undone by it."""

    def __init__(self) -> None:
        __tracebackhide__ = True
        self.undo: List[Tuple[Any, str, Any]] = []
        self.modules_at_start = set(sys.modules)
        self._freezegun_limit: Any = None

    def install(self) -> None:
        import freezegun.api

        # freezegun looks 5 frames up for an ignored module, so anything *called by* hypothesis
        # (the test body!) would read real time. Only the direct caller should decide.
        self._freezegun_limit = freezegun.api.call_stack_inspection_limit
        freezegun.api.call_stack_inspection_limit = 1
        for name, namespace, module in _module_dicts():
            for attr in _sleep_aliases(name, namespace, module):
                value = namespace.get(attr)
                if value is not None and id(value) in _FAKES:
                    namespace[attr] = _FAKES[id(value)][1]
                    self.undo.append((namespace, attr, value))
        self.undo.append((threading.Event, "wait", _real_event_wait))
        threading.Event.wait = _fake_event_wait  # type: ignore[method-assign]
        from . import asyncio_loop

        self.undo.extend(asyncio_loop.install())

    def uninstall(self) -> None:
        import freezegun.api

        for target, attr, original in reversed(self.undo):
            if isinstance(target, dict):
                target[attr] = original
            else:
                setattr(target, attr, original)
        self.undo = []
        # Modules imported while the clock ran bound our fakes (``from time import sleep``).
        for name in set(sys.modules) - self.modules_at_start:
            module = sys.modules.get(name)
            if module is None:
                continue
            try:
                namespace = vars(module)
            except TypeError:
                continue
            for attr, value in list(namespace.items()):
                real = _REALS_BY_FAKE.get(id(value))
                if real is not None:
                    namespace[attr] = real
        freezegun.api.call_stack_inspection_limit = self._freezegun_limit


class ExpectedTrip:
    """What ``FakeClock.expect_trip()`` gives: ``value`` is the guard's exception once it tripped."""

    value: Optional[RetryGuardTripped] = None
    sleeps: List[Any] = []


class FakeClock(Timeline):
    """Virtual time for the whole process while active.

    Use as the ``fake_clock`` fixture, as a context manager (``with FakeClock() as clock:``)
    or as a decorator (``@FakeClock(max_sleeps=50)``; each call gets a fresh clock).

    ``start``: the virtual wall-clock start (datetime, ISO string or epoch seconds; default
    2026-01-01T00:00:00Z). ``max_sleeps``/``max_virtual_time``: the forever-retry guard.
    ``seed``: seed ``random`` while active (restored on exit) for reproducible jitter.
    ``io_grace``: real seconds an idle asyncio loop with open sockets waits for I/O before it
    jumps to its next timer. ``max_real_wait``: real idle seconds between two calls to a fake
    downstream, while virtual time stands still, that fail the test as a real sleep (a sleep
    function captured before the clock started); None turns the check off.
    """

    def __init__(
        self,
        start: StartLike = None,
        *,
        max_sleeps: int = DEFAULT_MAX_SLEEPS,
        max_virtual_time: float = DEFAULT_MAX_VIRTUAL_TIME,
        seed: Optional[int] = None,
        io_grace: float = 0.002,
        io_wait_limit: float = 10.0,
        max_real_wait: Optional[float] = DEFAULT_MAX_REAL_WAIT,
    ) -> None:
        __tracebackhide__ = True
        super().__init__(start, max_sleeps=max_sleeps, max_virtual_time=max_virtual_time)
        if max_real_wait is not None and (isinstance(max_real_wait, bool) or not isinstance(max_real_wait, (int, float)) or not max_real_wait > 0):
            raise ValueError(f"max_real_wait must be a positive number of real seconds or None, got {max_real_wait!r}")
        #: Real idle seconds between two downstream calls, with virtual time still, that count
        #: as a real sleep (a sleep function captured before the clock); None: never check.
        self.max_real_wait = max_real_wait
        #: Counts real_waits() entries: a downstream does not judge a gap in which one was used.
        self.real_wait_entries = 0
        #: Threads that waited in virtual time: ident -> (started by the test's code, the thread).
        self._waiting_threads: Dict[int, Tuple[bool, threading.Thread]] = {}
        self._background_waiters = 0
        self._owner_thread = threading.get_ident()
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int or None, not {seed!r}")
        for name, value in (("io_grace", io_grace), ("io_wait_limit", io_wait_limit)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 3600:
                raise ValueError(f"{name} must be a number of real seconds (0 to 3600), got {value!r}")
        self.seed = seed
        self.io_grace = float(io_grace)
        self.io_wait_limit = float(io_wait_limit)
        self._freezer: Any = None
        self._factory: Any = None
        self._random_state: Any = None
        self._busy_probes: List[Callable[[], bool]] = []
        #: Where captured real clock/sleep functions were already reported (the fixture shares
        #: one set per session); code objects whose frames were already looked at.
        self.captured_reported: set = set()
        self._scanned_code: set = set()
        self._watch: Any = None  # a RealClockWatch once needed
        #: Watch from the start when a scan found a captured real clock (not for the herd check's
        #: clocks: thousands of clients under a profile hook would run several times slower).
        self.watch_on_scan = True
        self._watch_sticky = False  # armed by a scan: reset() keeps it
        #: ``with FakeClock():`` / ``@FakeClock()`` fail when the block ends normally after the
        #: code under test swallowed a guard trip (the herd check's clocks judge that per client).
        self.check_swallowed = True

    # -- activation -------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._freezer is not None

    @classmethod
    def current(cls) -> Optional["FakeClock"]:
        return current_clock()

    def start(self) -> "FakeClock":
        global _patches
        from freezegun import freeze_time

        with _state_lock:
            if self.active:
                raise RuntimeError("this FakeClock is already active")
            outermost = not _active
            if outermost:
                _patches = _ProcessPatches()
            try:
                self._freezer = freeze_time(self.utcnow(), ignore=list(IGNORED_MODULES))
                self._factory = self._freezer.start()
                if outermost:
                    _patches.install()  # type: ignore[union-attr]
            except BaseException:
                self._undo_start(outermost)
                raise
            if self.seed is not None:
                self._random_state = random.getstate()
                random.seed(self.seed)
            _active.append(self)
            self._owner_thread = threading.get_ident()
            self._waiting_threads = {}
            self._background_waiters = 0
        try:
            self._scan_direct_caller()
        except BaseException:  # CapturedClockWarning turned into an error: do not stay active
            self.stop()
            raise
        return self

    # -- real clock functions captured before the clock started ------------------------------
    def scan_captured(self, modules: Any = (), frame: Any = None) -> List[Tuple[str, str]]:
        """(place, description) pairs: where real clock/sleep functions captured before this clock started are held: in the
        globals of ``modules`` (and the project modules and objects they name, one level deep)
        and in the locals of ``frame`` and its callers up to the test runner."""
        from .realtime import CapturedScan

        scan = CapturedScan()
        for module in modules:
            scan.namespace(module)
        if frame is not None:
            scan.frames(frame, self._scanned_code)
        if scan.clock_found and self.watch_on_scan:  # its deadlines would never come: watch for it being read
            self._watch_sticky = True
            self.watch_real_clocks()
        return list(zip(scan.keys, scan.found))

    def watch_real_clocks(self) -> None:
        """From now on, notice the code on this thread reading a real clock function captured
        before the clock started (see :class:`~pytest_retry_check.realtime.RealClockWatch`); a guard
        trip or a failed check then says so. Done by the clock itself when a guard is half way to
        tripping or a scan found a captured clock."""
        if not self.active:
            return
        if self._watch is None:
            from .realtime import RealClockWatch

            self._watch = RealClockWatch(self.virtual_elapsed, IGNORED_MODULES + ("freezegun",))
        self._watch.install()

    def nearing_guard(self) -> None:
        self.watch_real_clocks()

    def real_clock_note(self) -> Optional[str]:
        """When the code read a real clock while virtual time ran far ahead of real time: what it
        read, where, where the function is held and what to change; else None."""
        return None if self._watch is None else self._watch.note()

    def warn_captured(self, found: List[Tuple[str, str]], stacklevel: int = 3) -> None:
        """Warn (``CapturedClockWarning``) about the places in ``found`` not reported yet."""
        new = [text for place, text in found if place not in self.captured_reported]
        if not new:
            return
        self.captured_reported.update(place for place, _ in found)
        import warnings

        from .realtime import CapturedClockWarning, captured_message

        warnings.warn(CapturedClockWarning(captured_message(new)), stacklevel=stacklevel)

    def _scan_direct_caller(self) -> None:
        # ``with FakeClock():`` in a test: look at that function's module and locals. The
        # fixture (called by pytest) scans the test's module itself.
        frame = sys._getframe(2)
        while frame is not None and (frame.f_globals.get("__name__") or "").startswith(("pytest_retry_check", "contextlib", "functools")):
            frame = frame.f_back
        if frame is None or ignored_module(frame.f_globals.get("__name__") or ""):
            return
        module = sys.modules.get(frame.f_globals.get("__name__") or "")
        self.warn_captured(self.scan_captured(modules=[module] if module is not None else [], frame=frame), stacklevel=4)

    def stop(self) -> None:
        with _state_lock:
            if not self.active:
                return
            if _active[-1] is not self:
                raise RuntimeError("fake clocks must be stopped in the reverse order of starting them")
            _active.pop()
            if self._watch is not None:
                self._watch.uninstall()
            if self._random_state is not None:
                random.setstate(self._random_state)
                self._random_state = None
            self._undo_start(outermost=not _active)

    def _undo_start(self, outermost: bool) -> None:
        global _patches
        try:
            if self._freezer is not None and self._factory is not None:
                self._freezer.stop()
        finally:
            self._freezer = self._factory = None
            if outermost and _patches is not None:
                patches, _patches = _patches, None
                patches.uninstall()

    def __enter__(self) -> "FakeClock":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        __tracebackhide__ = True
        self.stop()
        tripped = self.tripped
        if exc_info[0] is None and self.check_swallowed and tripped is not None and not tripped.expected_by_test:
            raise AssertionError(f"the retry guard tripped but the code under test swallowed it:\n{tripped}")

    def clone(self) -> "FakeClock":
        """A new, inactive clock with this one's settings."""
        return FakeClock(
            self.start_datetime,
            max_sleeps=self.max_sleeps,
            max_virtual_time=self.max_virtual_time,
            seed=self.seed,
            io_grace=self.io_grace,
            io_wait_limit=self.io_wait_limit,
            max_real_wait=self.max_real_wait,
        )

    def __call__(self, func: F) -> F:
        """Decorator: run each call of ``func`` under a fresh clone of this clock."""
        if not callable(func):
            raise TypeError(f"FakeClock(...) decorates a function, not {type(func).__name__}")
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.clone():
                    return await func(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    # -- time -------------------------------------------------------------------------------
    def _moved(self, delta_us: int) -> None:
        if self._factory is not None:
            import datetime

            self._factory.tick(datetime.timedelta(microseconds=delta_us))

    def reset(self) -> None:
        super().reset()
        if self._watch is not None:
            # Armed by a guard half way: the next run (the herd check's next client) is not
            # watched until it gets there too.
            self._watch.clear() if self._watch_sticky else self._watch.pause()

    @contextlib.contextmanager
    def real_waits(self) -> Iterator[None]:
        """Inside, ``time.sleep`` and ``Event.wait`` on this thread block for real.

        For a test that waits for another thread: ``with fake_clock.real_waits(): done.wait(5)``.
        """
        _local.real = getattr(_local, "real", 0) + 1
        self.real_wait_entries += 1
        try:
            yield
        finally:
            _local.real -= 1

    @contextlib.contextmanager
    def expect_trip(self) -> Iterator["ExpectedTrip"]:
        """The code inside is expected to trip the guard (a forever-retry test):
        ``with fake_clock.expect_trip() as trip: retry_forever()``. Fails if it does not, or if
        the code swallowed the trip. Afterwards ``trip.value`` is the :class:`RetryGuardTripped`,
        ``trip.sleeps`` the sleeps until then, and the clock is reset (``now()`` from 0, a fresh
        guard) so the test can go on."""
        __tracebackhide__ = True
        box = ExpectedTrip()
        before = self.tripped
        try:
            yield box
        except RetryGuardTripped as exc:
            box.value, box.sleeps = exc, list(self.sleeps)
            self.reset()  # a fresh guard, so the test can go on
            return
        except Exception as exc:
            raise AssertionError(
                f"expected the retry guard to trip, but the code under test stopped on its own: it raised {type(exc).__name__}: {exc}"
            ) from exc
        if self.tripped is not None and self.tripped is not before:
            swallowed, self.tripped = self.tripped, None
            raise AssertionError(f"the retry guard tripped as expected, but the code under test swallowed it:\n{swallowed}")
        raise AssertionError("expected the retry guard to trip, but the code under test stopped on its own")

    # -- asyncio's view ---------------------------------------------------------------------
    def add_busy_probe(self, probe: Callable[[], bool]) -> None:
        """``probe()`` is True while real I/O the code under test waits for is in flight."""
        self._busy_probes.append(probe)

    def remove_busy_probe(self, probe: Callable[[], bool]) -> None:
        with contextlib.suppress(ValueError):
            self._busy_probes.remove(probe)

    def io_busy(self) -> bool:
        return any(probe() for probe in list(self._busy_probes))

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return f"<FakeClock {state} now=+{self.now():.6f}s sleeps={len(self.sleeps)} at {self.utcnow().isoformat()}>"
