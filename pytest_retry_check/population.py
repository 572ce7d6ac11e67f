"""Many clients of real retry code on the fake clock.

Three ways, for the herd check and the contention simulation:

- :func:`run_sequential`: sync clients one after another, each on a fresh timeline (the clock is
  reset before each: virtual time back to 0, no sleeps recorded, a fresh guard). Clients that do
  not share anything need nothing more, and a sync client can reach the downstream over HTTP.
- :func:`run_async`: async clients as tasks on one virtual event loop; their sleeps overlap as in
  real time and the loop jumps to the next timer.
- :func:`run_threads`: sync clients that share a downstream, one thread each, run one at a time
  in virtual-time order (a discrete-event scheduler). ``time.sleep`` in a client thread hands
  control back to the scheduler, which wakes whichever client is due first.

None of them touches ``random``: whatever jitter the clients show comes from their own code.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import inspect
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from .clock import FakeClock
from .timeline import RetryGuardTripped, SleepRecord, format_seconds, validate_sleep

__all__ = ["ASYNC_START", "ClientResult", "current_client", "is_async_client", "run_async", "run_sequential", "run_threads"]

#: Where clocks that run an event loop start: epoch 1,000,000 s (1970-01-12). asyncio compares
#: timers with ``now + 1e-9``; at the default start (epoch ~1.77e9, a float step of ~2.4e-7 s)
#: that sum rounds back to ``now``, so a timer less than ~0.1 us away never fires and the loop
#: spins forever (``asyncio.sleep(5e-8)`` hangs under a default FakeClock). Jittered delays of
#: milliseconds, drawn thousands of times, hit that. Near 1e6 the float step is ~1e-10 s.
ASYNC_START = 1_000_000

#: The index of the simulated client whose code is running (tasks and threads each have their own).
_CLIENT: contextvars.ContextVar[int] = contextvars.ContextVar("retry_check_client", default=-1)


def current_client() -> int:
    """Index of the simulated client running now (-1 outside a simulation)."""
    return _CLIENT.get()


@dataclass(frozen=True)
class ClientResult:
    """How one client's run ended."""

    index: int
    #: "returned", "raised", "guard" (the forever-retry guard tripped) or "unfinished"
    #: (still retrying when the simulation's horizon came).
    outcome: str
    error: Optional[BaseException] = None
    finished_at: Optional[float] = None  # virtual seconds
    sleeps: Tuple[SleepRecord, ...] = ()
    #: The guard tripped but the client caught it (``except:``, ``except BaseException``) and
    #: ended as if nothing happened: it retried forever all the same (outcome "guard").
    swallowed: bool = False


def is_async_client(client: Callable[..., Any]) -> bool:
    """An ``async def`` (also behind ``functools.partial`` or as a callable object's ``__call__``)."""
    target = client
    while hasattr(target, "func") and not inspect.isroutine(target):  # functools.partial
        target = target.func  # type: ignore[attr-defined]
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(target, "__call__", None)
    return call is not None and not inspect.isroutine(target) and inspect.iscoroutinefunction(call)


def _check_client(client: Any, clients: Any) -> None:
    __tracebackhide__ = True
    if not callable(client):
        raise TypeError(f"the client must be a function taking the downstream, e.g. lambda ds: fetch(ds); got {client!r}")
    if isinstance(clients, bool) or not isinstance(clients, int) or clients < 1:
        raise ValueError(f"clients must be a whole number >= 1, got {clients!r}")


class AsyncClientGiven(TypeError):
    """A sync run was handed code that returned a coroutine."""


def run_sequential(
    client: Callable[[Any], Any],
    clients: int,
    downstream_for: Callable[[int], Any],
    *,
    clock: FakeClock,
    after_each: Optional[Callable[[int, ClientResult], Optional[bool]]] = None,
) -> List[ClientResult]:
    """Run ``client(downstream_for(i))`` for each client on a fresh timeline of ``clock``.

    Stops at the first client that trips the forever-retry guard, or when ``after_each``
    returns True: the verdict is in.
    """
    __tracebackhide__ = True
    _check_client(client, clients)
    results: List[ClientResult] = []
    for index in range(clients):
        clock.reset()
        downstream = downstream_for(index)
        token = _CLIENT.set(index)
        error: Optional[BaseException] = None
        swallowed = False
        try:
            value = client(downstream)
            if inspect.isawaitable(value):
                _close(value)
                raise AsyncClientGiven("the client returned an awaitable: pass an `async def` client (it runs on a virtual event loop)")
            outcome = "returned"
        except RetryGuardTripped as exc:
            outcome, error = "guard", exc
        except AsyncClientGiven:
            raise
        except Exception as exc:  # giving up by raising is a legitimate end of a retry
            outcome, error = "raised", exc
        finally:
            _CLIENT.reset(token)
        if outcome != "guard" and clock.tripped is not None:  # caught the guard and went on
            outcome, error, swallowed = "guard", clock.tripped, True
        result = ClientResult(index, outcome, error, clock.now(), tuple(clock.sleeps), swallowed)
        results.append(result)
        stop = after_each(index, result) if after_each is not None else False
        if outcome == "guard" or stop:
            break
    return results


def _close(value: Any) -> None:
    close = getattr(value, "close", None)
    if close is not None:
        close()


def run_async(
    client: Callable[[Any], Awaitable[Any]],
    clients: int,
    downstream_for: Callable[[int], Any],
    *,
    clock: FakeClock,
    horizon: float,
) -> List[ClientResult]:
    """All clients as tasks on one virtual event loop under ``clock``; cancelled at ``horizon``
    virtual seconds. Works from inside a running loop too (a fresh loop in a helper thread)."""
    __tracebackhide__ = True
    _check_client(client, clients)

    async def main() -> List[ClientResult]:
        results: Dict[int, ClientResult] = {}

        async def one(index: int) -> None:
            _CLIENT.set(index)  # the task runs in its own copy of the context
            downstream = downstream_for(index)
            error: Optional[BaseException] = None
            swallowed = False
            try:
                await client(downstream)
                outcome = "returned"
            except RetryGuardTripped as exc:
                outcome, error = "guard", exc
            except Exception as exc:
                outcome, error = "raised", exc
            trip = getattr(downstream, "guard_trip", None)  # this client's call guard
            if outcome != "guard" and trip is not None:  # caught the guard and went on
                outcome, error, swallowed = "guard", trip, True
            results[index] = ClientResult(index, outcome, error, clock.now(), (), swallowed)

        tasks = [asyncio.ensure_future(one(i)) for i in range(clients)]
        _, pending = await asyncio.wait(tasks, timeout=horizon)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        return [results.get(i) or ClientResult(i, "unfinished", None, None) for i in range(clients)]

    return run_coroutine(main, clock)


def run_coroutine(make_main: Callable[[], Awaitable[Any]], clock: FakeClock) -> Any:
    """``asyncio.run(make_main())`` under ``clock`` -- in a helper thread when this thread
    already runs a loop (an async test), because loops do not nest."""
    from .asyncio_loop import run

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(make_main(), clock=clock)  # type: ignore[arg-type]
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = run(make_main(), clock=clock)  # type: ignore[arg-type]
        except BaseException as exc:  # handed to the calling thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="retry-check-virtual-loop", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- threads, one at a time, in virtual-time order --------------------------------------------
class _Aborted(BaseException):
    """Raised in a client thread still waiting when the simulation ends (horizon reached)."""


class SchedulerClock(FakeClock):
    """A fake clock whose sleeps in scheduled client threads wait for their turn in virtual time."""

    scheduler: Optional["ThreadScheduler"] = None

    def sleep(self, seconds: object, *, kind: str = "sleep", advance: bool = True, _depth: int = 1, defer: bool = False) -> None:
        __tracebackhide__ = True
        scheduler = self.scheduler
        if scheduler is None or not scheduler.is_client_thread():
            return super().sleep(seconds, kind=kind, advance=advance, _depth=_depth + 1, defer=defer)
        seconds = validate_sleep(seconds)
        scheduler.count_sleep()
        scheduler.wait(seconds)


#: A step of :meth:`ThreadScheduler.wait_through`: returns the next wait and the step after it.
Step = Callable[[], Tuple[float, Optional[Callable[[], Any]]]]


class ThreadScheduler:
    """Runs one client thread at a time: the one whose virtual wake-up time comes first.

    The thread that runs holds the baton: when it sleeps or finishes, it pops the next client
    due, moves the clock there and wakes that client's thread itself (one thread switch per
    event, none when the sleeping client is the next one due). The calling thread only waits
    for the end (or a client that stalls)."""

    def __init__(self, clock: SchedulerClock, *, horizon: float, max_sleeps: int, stall_timeout: float = 60.0) -> None:
        self.clock = clock
        self.horizon = horizon
        self.max_sleeps = max_sleeps
        self.stall_timeout = stall_timeout
        self._local = threading.local()
        self._heap: List[Tuple[float, int, int]] = []
        self._seq = 0
        # Plain locks used as binary semaphores (released by one thread, acquired by another):
        # not Events, whose wait(timeout) is a virtual sleep while a fake clock runs, and not
        # threading.Semaphore, a Condition in Python that costs as much again per switch.
        self._gates: List[Any] = []
        self._done = threading.Lock()
        self._done.acquire()
        self._error: Optional[BaseException] = None
        #: Events taken in turn (wake-ups, steps): how the calling thread sees clients progress.
        self.events = 0
        #: Times a client's thread was woken by another thread (the real thread switches).
        self.wakeups = 0
        self._current = -1  # the client holding the baton
        self._aborted = False
        self._sleeps: List[int] = []
        self._steps_due: Dict[int, Tuple["Step", int]] = {}
        self._failed_steps: Dict[int, BaseException] = {}

    def is_client_thread(self) -> bool:
        return getattr(self._local, "index", None) is not None

    def count_sleep(self) -> None:
        index = self._local.index
        self._sleeps[index] += 1
        if self._sleeps[index] > self.max_sleeps:
            raise RetryGuardTripped(
                f"retry guard: client #{index} slept {self._sleeps[index]} times, more than max_sleeps={self.max_sleeps}; "
                "the code under test looks like it retries forever"
            )

    def wait(self, seconds: float) -> None:
        """In a client thread: come back when virtual time reaches now + seconds."""
        index = self._local.index
        clock = self.clock
        now = clock.now()
        at = now + seconds
        heap = self._heap
        if (not heap or at < heap[0][0]) and at <= self.horizon and not self._aborted:
            # This client is the next one due (an entry pushed now comes after every entry
            # already due at the same time): what the dispatch would do, without a switch.
            self._seq += 1
            self.events += 1
            if at > now:
                clock.advance(at - now)
            return
        self._push(at, index)
        self._dispatch()
        self._gates[index].acquire()
        if self._aborted:
            raise _Aborted()

    def wait_through(self, seconds: float, step: "Step") -> None:
        """In a client thread: wait as a chain of waits whose in-between work needs nothing of
        the client's thread (the fake downstream's network legs and its decision).

        At now + ``seconds`` virtual time, ``step()`` runs in whichever thread holds the baton and
        returns ``(seconds, next_step)``: the next wait, and what runs after it (None: the client
        wakes then). Each wait takes its turn exactly as :meth:`wait` would (same order, same
        time), but the client's thread is woken once, at the end, instead of after every wait."""
        index = self._local.index
        self._push_step(self.clock.now() + seconds, step, index)
        self._dispatch()
        self._gates[index].acquire()
        if self._aborted:
            raise _Aborted()
        failed = self._failed_steps.pop(index, None)
        if failed is not None:
            raise failed

    def _push(self, at: float, index: int) -> None:
        heapq.heappush(self._heap, (at, self._seq, index))
        self._seq += 1

    def _push_step(self, at: float, step: "Step", index: int) -> None:
        self._steps_due[self._seq] = (step, index)
        heapq.heappush(self._heap, (at, self._seq, -1))
        self._seq += 1

    def _run_step(self, seq: int) -> None:
        step, index = self._steps_due.pop(seq)
        token = _CLIENT.set(index)  # the step works for that client
        try:
            seconds, after = step()
        except BaseException as exc:  # noqa: B036 - raised in the client's thread when it wakes
            self._failed_steps[index] = exc
            seconds, after = 0.0, None
        finally:
            _CLIENT.reset(token)
        at = self.clock.now() + seconds
        if after is None:
            self._push(at, index)
        else:
            self._push_step(at, after, index)

    def _dispatch(self) -> None:
        """Hand the baton to the next client due, or tell the calling thread that all is done."""
        if self._aborted:
            return
        try:
            heap = self._heap
            clock = self.clock
            while heap:
                at, seq, index = heapq.heappop(heap)
                if at > self.horizon:
                    break
                now = clock.now()
                if at > now:
                    clock.advance(at - now)
                self.events += 1
                if index < 0:
                    self._run_step(seq)
                    continue
                self._current = index
                if index != getattr(self._local, "index", None):
                    self.wakeups += 1
                self._gates[index].release()
                return
        except BaseException as exc:  # noqa: B036 - raised in the calling thread
            self._error = exc
        _release(self._done)

    def run(self, client: Callable[[Any], Any], clients: int, downstream: Any) -> List[ClientResult]:
        __tracebackhide__ = True
        _check_client(client, clients)
        results: List[Optional[ClientResult]] = [None] * clients
        self._gates = [threading.Lock() for _ in range(clients)]
        for gate in self._gates:
            gate.acquire()
        self._sleeps = [0] * clients

        def body(index: int) -> None:
            self._local.index = index
            _CLIENT.set(index)
            self._gates[index].acquire()
            error: Optional[BaseException] = None
            try:
                if self._aborted:
                    raise _Aborted()
                value = client(downstream)
                if inspect.isawaitable(value):
                    _close(value)
                    raise AsyncClientGiven("the client returned an awaitable: pass an `async def` client")
                outcome = "returned"
            except _Aborted:
                outcome = "unfinished"
            except RetryGuardTripped as exc:
                outcome, error = "guard", exc
            except Exception as exc:
                outcome, error = "raised", exc
            except BaseException as exc:  # noqa: B036 - reported to the caller, never lost in a thread
                outcome, error = "raised", exc
            results[index] = ClientResult(index, outcome, error, None if outcome == "unfinished" else self.clock.now())
            self._local.index = None
            self._dispatch()

        threads = [threading.Thread(target=body, args=(i,), name=f"retry-check-client-{i}", daemon=True) for i in range(clients)]
        for index, thread in enumerate(threads):
            self._push(0.0, index)
            thread.start()
        try:
            self._dispatch()
            self._wait_for_the_end()
        finally:
            self._aborted = True
            for gate in self._gates:
                _release(gate)
            for thread in threads:
                thread.join(self.stall_timeout)
        for result in results:
            if result is not None and isinstance(result.error, AsyncClientGiven):
                raise result.error
        return [r if r is not None else ClientResult(i, "unfinished") for i, r in enumerate(results)]

    def _wait_for_the_end(self) -> None:
        # A client that neither sleeps nor finishes for stall_timeout real seconds is named.
        polls, quiet, seen = 4, 0, -1
        while not self._done.acquire(timeout=self.stall_timeout / polls):
            steps = self.events
            quiet = quiet + 1 if steps == seen else 0
            seen = steps
            if quiet >= polls:
                raise RuntimeError(
                    f"client #{self._current} has not slept or finished for {self.stall_timeout:g} real seconds at virtual "
                    f"+{format_seconds(self.clock.now())}: it waits for something real (a socket, a lock, another thread); "
                    "the simulation of sync code needs the callable downstream it was given"
                )
        if self._error is not None:
            raise self._error


def _release(lock: Any) -> None:
    try:
        lock.release()
    except RuntimeError:  # already released (the end, after an abort)
        pass


def run_threads(
    client: Callable[[Any], Any],
    clients: int,
    downstream: Any,
    *,
    clock: SchedulerClock,
    horizon: float,
    max_sleeps: int = 1000,
    stall_timeout: float = 60.0,
) -> List[ClientResult]:
    """Sync clients sharing ``downstream``, one thread each, scheduled in virtual time.
    ``stall_timeout``: real seconds a client may run without sleeping or finishing."""
    __tracebackhide__ = True
    scheduler = ThreadScheduler(clock, horizon=horizon, max_sleeps=max_sleeps, stall_timeout=stall_timeout)
    clock.scheduler = scheduler
    try:
        return scheduler.run(client, clients, downstream)
    finally:
        clock.scheduler = None
