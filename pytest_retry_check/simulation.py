"""Contention simulation: what a herd of retrying clients does to the downstream they share.

A discrete-event simulation in virtual time. N clients call one downstream; each failed call is
retried by the client's policy, given as

- a :class:`~pytest_retry_check.backoffs.Strategy` (built-in, or your own), a
  :class:`retrylint.model.RetryPolicy`, or a retry site ``"path.py:LINE"`` that retrylint
  reads: run by a fast event loop (no code of yours runs; 10,000 clients take well under 1 s);
- real async code (``async def client(downstream)``), as tasks on the virtual event loop;
- real sync code (``def client(downstream)``), one thread per client run one at a time in
  virtual-time order.

The downstream is a model:

- :class:`ConflictModel` (default): optimistic concurrency on one row, the model of the AWS
  "Exponential Backoff And Jitter" post. A call reads the row's version, and writes two network
  legs later; the write fails if another write succeeded since the read.
- :class:`CapacityModel`: at most ``capacity`` calls per ``window`` seconds, counting the calls
  that fail (an overloaded server fails everything past its capacity), plus outage windows.

Every network leg takes ``|N(mean, sd)|`` seconds (:class:`Network`). Reported, per run and as a
mean over runs: server calls (work), peak load, and the time until every client succeeded or gave
up (completion).
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import random
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .backoffs import AWS_STRATEGIES, Strategy, as_strategy, builtin
from .downstream import DownstreamUnavailable
from .population import ASYNC_START, ClientResult, SchedulerClock, current_client, is_async_client, run_async, run_threads
from .timeline import format_seconds

__all__ = [
    "AWS_REFERENCE",
    "CapacityModel",
    "ConflictModel",
    "Network",
    "RunResult",
    "SimulatedDownstream",
    "SimulationResult",
    "aws_comparison",
    "compare",
    "format_comparison",
    "simulate",
]

DEFAULT_HORIZON = 3600.0
#: A CapacityModel capacity this large is shown as "no capacity limit" (only its outages fail calls).
UNLIMITED = 10**9
DEFAULT_MAX_CALLS = 1_000_000

#: The AWS simulator's model reimplemented (the project's design notes), 100 runs; clients -> strategy ->
#: (server calls, completion in ms). What :func:`aws_comparison` is measured against.
AWS_REFERENCE: Dict[int, Dict[str, Tuple[float, float]]] = {
    50: {"none": (687, 1133), "exponential": (620, 36012), "equal": (347, 4159), "full": (333, 2924), "decorrelated": (374, 2175)},
    100: {"none": (2420, 2021), "exponential": (1860, 63637), "equal": (811, 6620), "full": (797, 4924), "decorrelated": (999, 4585)},
}


# -- the downstream models ------------------------------------------------------------------
@dataclass(frozen=True)
class Network:
    """Each network leg takes ``|N(mean, sd)|`` seconds (the AWS model: 10 ms, 2 ms)."""

    mean: float = 0.010
    sd: float = 0.002

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        for name in ("mean", "sd"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"Network {name} must be a non-negative number of seconds, got {value!r}")

    def __str__(self) -> str:
        return f"|N({self.mean * 1000:g} ms, {self.sd * 1000:g} ms)|" if self.sd else f"{self.mean * 1000:g} ms"


class _ConflictState:
    __slots__ = ("last_success",)

    def __init__(self) -> None:
        self.last_success = -math.inf

    def commit(self, at: float, read_at: float) -> bool:
        # The write succeeds when the version it read is still current: no write succeeded
        # since the read. (Events arrive in time order, so every earlier success is known.)
        if self.last_success < read_at:
            self.last_success = at
            return True
        return False


@dataclass(frozen=True)
class ConflictModel:
    """Optimistic concurrency on one row (the AWS post's model): each client wants one
    successful write. A call is read (one leg out, one back), write (one leg out), answer (one
    leg back); the write fails when another write succeeded after the read. ``calls`` counts
    writes, as the AWS simulator does."""

    network: Network = field(default_factory=Network)
    load_window: float = 0.1

    read_phase = True

    @property
    def name(self) -> str:
        return f"optimistic concurrency on one row, network {self.network}"

    def new_state(self) -> _ConflictState:
        return _ConflictState()


class _CapacityState:
    __slots__ = ("recent", "capacity", "window", "outages")

    def __init__(self, capacity: int, window: float, outages: Tuple[Tuple[float, float], ...]) -> None:
        self.recent: collections.deque = collections.deque()
        self.capacity = capacity
        self.window = window
        self.outages = outages

    def commit(self, at: float, read_at: float) -> bool:
        recent = self.recent
        cutoff = at - self.window
        while recent and recent[0] <= cutoff:
            recent.popleft()
        recent.append(at)
        for start, end in self.outages:
            if start <= at < end:
                return False
        return len(recent) <= self.capacity


@dataclass(frozen=True)
class CapacityModel:
    """A downstream that serves at most ``capacity`` calls per ``window`` virtual seconds: a call
    fails when more than that many calls (failed ones included: an overloaded server spends
    effort on what it rejects) arrived in the last window -- the semantics of the fake
    downstream's ``capacity=``. Calls in an ``outages`` window ``(start, end)`` fail too."""

    capacity: int
    window: float = 1.0
    outages: Tuple[Tuple[float, float], ...] = ()
    network: Network = field(default_factory=Network)

    read_phase = False

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1:
            raise ValueError(f"capacity must be a whole number of calls >= 1, got {self.capacity!r}")
        if isinstance(self.window, bool) or not isinstance(self.window, (int, float)) or not 0 < self.window < math.inf:
            raise ValueError(f"window must be a positive number of seconds, got {self.window!r}")
        windows = []
        for window in self.outages:
            try:
                start, end = (float(x) for x in window)
            except (TypeError, ValueError):
                raise ValueError(f"each outage is a (start, end) pair of virtual seconds, got {window!r}") from None
            if not 0 <= start < end:
                raise ValueError(f"an outage window needs 0 <= start < end, got {window!r}")
            windows.append((start, end))
        object.__setattr__(self, "outages", tuple(sorted(windows)))

    @property
    def load_window(self) -> float:
        return self.window

    @property
    def name(self) -> str:
        text = f"capacity {self.capacity} calls per {self.window:g} s" if self.capacity < UNLIMITED else "no capacity limit"
        if self.outages:
            text += ", down " + ", ".join(f"{a:g}-{b:g} s" for a, b in self.outages)
        return f"{text}, network {self.network}"

    def new_state(self) -> _CapacityState:
        return _CapacityState(self.capacity, float(self.window), self.outages)


Model = Union[ConflictModel, CapacityModel]


# -- results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunResult:
    """One simulated run."""

    clients: int
    calls: int  # server calls: the work the herd made the downstream do
    succeeded: int
    gave_up: int
    unfinished: int  # still retrying at the horizon
    completion: float  # virtual seconds until the last client succeeded or gave up
    call_times: Tuple[float, ...] = field(repr=False, default=())  # every counted call, in time order
    failed_calls: int = 0
    #: Clients that made a first attempt (the requests); every other call was a retry.
    requests: int = 0
    #: Retries a retry budget refused (the simulation's token bucket, or the one the code used).
    throttled: int = 0
    #: Calls made by each client (its first attempt and its retries).
    attempts: Tuple[int, ...] = field(repr=False, default=())

    @property
    def retries(self) -> int:
        return self.calls - self.requests

    def peak_load(self, window: float) -> int:
        """The most calls that arrived within any ``window`` seconds."""
        return peak_count(self.call_times, window)

    def load_series(self, bucket: float, until: Optional[float] = None) -> List[int]:
        """Calls per ``bucket`` seconds, from 0 to ``until`` (default: the last call)."""
        end = until if until is not None else (self.call_times[-1] if self.call_times else 0.0)
        counts = [0] * (int(end / bucket) + 1)
        for at in self.call_times:
            index = int(at / bucket)
            if index < len(counts):
                counts[index] += 1
        return counts


def densest_window(times: Sequence[float], window: float) -> Tuple[int, float]:
    """The most of the sorted ``times`` within ``window`` of each other (a sliding window), and
    where that window starts."""
    best, best_at, start = 0, (times[0] if times else 0.0), 0
    for end, at in enumerate(times):
        while at - times[start] > window:
            start += 1
        if end - start + 1 > best:
            best, best_at = end - start + 1, times[start]
    return best, best_at


def peak_count(times: Sequence[float], window: float) -> int:
    """Largest number of sorted ``times`` within ``window`` of each other."""
    return densest_window(times, window)[0]


@dataclass(frozen=True)
class SimulationResult:
    """Runs of one strategy against one model; the properties are means over the runs."""

    label: str
    model: str
    clients: int
    load_window: float
    runs: Tuple[RunResult, ...] = field(repr=False)

    @property
    def calls(self) -> float:
        return statistics.fmean(r.calls for r in self.runs)

    @property
    def completion(self) -> float:
        return statistics.fmean(r.completion for r in self.runs)

    @property
    def peak_load(self) -> float:
        return statistics.fmean(r.peak_load(self.load_window) for r in self.runs)

    @property
    def succeeded(self) -> float:
        return statistics.fmean(r.succeeded for r in self.runs)

    @property
    def gave_up(self) -> float:
        return statistics.fmean(r.gave_up for r in self.runs)

    @property
    def unfinished(self) -> int:
        return sum(r.unfinished for r in self.runs)

    @property
    def requests(self) -> float:
        """First attempts (mean per run)."""
        return statistics.fmean(r.requests for r in self.runs)

    @property
    def retries(self) -> float:
        """Retries sent: every call after a client's first (mean per run)."""
        return statistics.fmean(r.retries for r in self.runs)

    @property
    def retry_ratio(self) -> float:
        """Retries per request: the extra load the retries add (0.1 = 10 %)."""
        requests = sum(r.requests for r in self.runs)
        return sum(r.retries for r in self.runs) / requests if requests else math.nan

    @property
    def throttled(self) -> float:
        """Retries a budget refused (mean per run)."""
        return statistics.fmean(r.throttled for r in self.runs)

    @property
    def finished(self) -> bool:
        return self.unfinished == 0

    def summary(self) -> str:
        runs = len(self.runs)
        text = (
            f"{self.label}: {self.clients} clients, {runs} run{'s' if runs != 1 else ''} ({self.model}): "
            f"{self.calls:,.0f} calls, peak {self.peak_load:,.0f} calls per {format_seconds(self.load_window)}, "
            f"all done after {format_seconds(self.completion)}; {self.succeeded:,.1f} succeeded, {self.gave_up:,.1f} gave up"
        )
        if self.unfinished:
            text += f"; {self.unfinished} client-run(s) still retrying at the horizon"
        return text

    def __str__(self) -> str:
        return self.summary()


# -- the fast engine: strategies, no user code ----------------------------------------------
def network_legs(network: Network, rng: random.Random) -> Callable[[], float]:
    """A fast source of network leg times: ``|N(mean, sd)|`` drawn by Box-Muller in blocks
    (twice as fast as ``random.normalvariate`` one at a time; the legs are most of the cost)."""
    mean, sd = network.mean, network.sd
    if not sd:
        return itertools.repeat(float(mean)).__next__

    def blocks() -> Iterator[List[float]]:
        uniform, log, cos, sin, sqrt, tau = rng.random, math.log, math.cos, math.sin, math.sqrt, math.tau
        while True:
            block: List[float] = []
            add = block.append
            for _ in range(1024):
                radius = sd * sqrt(-2.0 * log(1.0 - uniform()))
                angle = tau * uniform()
                add(abs(mean + radius * cos(angle)))
                add(abs(mean + radius * sin(angle)))
            yield block

    return itertools.chain.from_iterable(blocks()).__next__


def _run_strategy(
    strategy: Strategy, model: Model, clients: int, rng: random.Random, leg: Callable[[], float], horizon: float, max_calls: int,
    budget: Any = None,
) -> RunResult:
    # One heap event per attempt: the write (or the call). The read's only effect is the
    # version it sees, and "no success since the read" is known when the write is processed.
    read_phase = model.read_phase
    commit = model.new_state().commit
    max_attempts = strategy.max_attempts or 0  # 0: no limit
    deadline = strategy.deadline if strategy.deadline is not None else math.inf
    shared = strategy.sampler(rng) if strategy.stateless else None
    samplers: List[Optional[Callable[[int], float]]] = [shared] * clients
    attempts = [1] * clients
    heap: List[Tuple[float, int, float]] = []
    for client in range(clients):
        read_at = leg()
        heap.append((read_at + leg() + leg() if read_phase else read_at, client, read_at))
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    call_times: List[float] = []
    record = call_times.append
    succeeded = gave_up = failed = throttled = 0
    completion = 0.0
    # A retry budget shared by every client (one service's calls to the downstream): each
    # answer feeds it, and a failure it refuses to retry is final.
    budget_failure = budget.record_failure if budget is not None else None
    budget_success = budget.record_success if budget is not None else None
    while heap:
        at, client, read_at = pop(heap)
        if at > horizon or len(call_times) >= max_calls:
            push(heap, (at, client, read_at))
            break
        ok = commit(at, read_at)
        record(at)
        answered = at + leg()
        if ok:
            succeeded += 1
            if budget_success is not None:
                budget_success()
            if answered > completion:
                completion = answered
            continue
        failed += 1
        n = attempts[client]
        final = n == max_attempts or answered >= deadline
        if budget_failure is not None and not budget_failure() and not final:
            throttled += 1
            final = True
        if final:
            gave_up += 1
            if answered > completion:
                completion = answered
            continue
        attempts[client] = n + 1
        sampler = samplers[client]
        if sampler is None:
            sampler = samplers[client] = strategy.sampler(rng)
        read_at = answered + sampler(n) + leg()
        push(heap, (read_at + leg() + leg() if read_phase else read_at, client, read_at))
    unfinished = len(heap)
    if unfinished:
        completion = max(completion, min(horizon, heap[0][0]))
        for _, client, _ in heap:  # scheduled, never made
            attempts[client] -= 1
    requests = sum(1 for n in attempts if n)
    return RunResult(
        clients, len(call_times), succeeded, gave_up, unfinished, completion, tuple(call_times), failed,
        requests=requests, throttled=throttled, attempts=tuple(attempts),
    )


# -- real code: a downstream the clients share -----------------------------------------------
class SimulatedDownstream:
    """The model as a downstream real code can call: ``downstream()`` from sync code run by the
    thread scheduler, ``await downstream.acall()`` from async code on the virtual loop. Each call
    spends the model's network legs in virtual time and raises
    :class:`~pytest_retry_check.downstream.DownstreamUnavailable` (a ``ConnectionError``) when
    the model says it failed."""

    def __init__(self, model: Model, rng: random.Random, clock: Any, name: str = "simulated downstream") -> None:
        self.model = model
        self.name = name
        self.__name__ = self.__qualname__ = name  # retry decorators log the wrapped function's name
        self._commit = model.new_state().commit
        self._leg = network_legs(model.network, rng)
        self._clock = clock
        #: (virtual time, client index, succeeded) of every counted call.
        self.calls: List[Tuple[float, int, bool]] = []

    def _decide(self, read_at: float) -> bool:
        at = self._clock.now()
        ok = self._commit(at, read_at)
        self.calls.append((at, current_client(), ok))
        return ok

    def _answer(self, ok: bool) -> str:
        if ok:
            return "ok"
        reason = "write conflict" if self.model.read_phase else "overloaded"
        raise DownstreamUnavailable(f"{self.name} call at +{format_seconds(self._clock.now())}: 503 {reason}", status=503)

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        __tracebackhide__ = True
        scheduler = getattr(self._clock, "scheduler", None)
        if scheduler is None or not scheduler.is_client_thread():
            raise RuntimeError(f"{self.name} is called from sync code only inside simulate(); async code awaits downstream.acall()")
        # The legs out, (the read phase,) the decision and the leg back, each in its turn in
        # virtual time as if the client's thread waited for each; its thread wakes once, at
        # the end. The legs are drawn in the same order as they would be by waiting in turn.
        leg, clock = self._leg, self._clock
        answer: List[bool] = []

        def decide(read_at: float) -> Tuple[float, None]:
            answer.append(self._decide(read_at))
            return leg(), None

        def arrived() -> Tuple[float, Any]:
            read_at = clock.now()
            if self.model.read_phase:
                return leg() + leg(), lambda: decide(read_at)
            return decide(read_at)

        scheduler.wait_through(leg(), arrived)
        return self._answer(answer[0])

    call = __call__

    async def acall(self, *args: Any, **kwargs: Any) -> str:
        __tracebackhide__ = True
        import asyncio

        await asyncio.sleep(self._leg())
        read_at = self._clock.now()
        if self.model.read_phase:
            await asyncio.sleep(self._leg() + self._leg())
        ok = self._decide(read_at)
        await asyncio.sleep(self._leg())
        return self._answer(ok)

    @property
    def call_count(self) -> int:
        return len(self.calls)


def _run_code(client: Callable[..., Any], model: Model, clients: int, rng: random.Random, horizon: float, max_sleeps: int, budget: Any = None) -> RunResult:
    __tracebackhide__ = True
    if budget is not None:
        budget.reset()  # the bucket the code uses starts full in every run
    asynchronous = is_async_client(client)
    clock = SchedulerClock(ASYNC_START, max_sleeps=max(1, clients * max_sleeps), max_virtual_time=horizon * 2 + 1)
    clock.check_swallowed = False  # clients are judged one by one
    downstream = SimulatedDownstream(model, rng, clock)
    results: List[ClientResult]
    if asynchronous:
        results = run_async(client, clients, lambda i: downstream, clock=clock, horizon=horizon)
    else:
        with clock:
            results = run_threads(client, clients, downstream, clock=clock, horizon=horizon, max_sleeps=max_sleeps)
    last_ok: Dict[int, bool] = {}
    for _, index, ok in downstream.calls:
        last_ok[index] = ok
    succeeded = sum(1 for r in results if r.outcome == "returned" and last_ok.get(r.index))
    unfinished = sum(1 for r in results if r.outcome in ("unfinished", "guard"))
    guard = next((r.error for r in results if r.outcome == "guard"), None)
    if guard is not None and unfinished == clients:
        raise guard
    finished = [r.finished_at for r in results if r.finished_at is not None]
    completion = max(finished) if finished else 0.0
    if unfinished:
        completion = max(completion, horizon)
    times = tuple(at for at, _, _ in downstream.calls)
    failed = sum(1 for _, _, ok in downstream.calls if not ok)
    made = [0] * clients
    for _, index, _ in downstream.calls:
        if 0 <= index < clients:
            made[index] += 1
    return RunResult(
        clients, len(times), succeeded, clients - succeeded - unfinished, unfinished, completion, times, failed,
        requests=sum(1 for n in made if n), throttled=budget.refused if budget is not None else 0, attempts=tuple(made),
    )


# -- the public entry points ----------------------------------------------------------------
def simulate(
    policy: Any,
    *,
    clients: int = 100,
    model: Optional[Model] = None,
    runs: int = 1,
    seed: Optional[int] = None,
    horizon: float = DEFAULT_HORIZON,
    max_calls: int = DEFAULT_MAX_CALLS,
    max_sleeps: int = 1000,
    label: str = "",
    budget: Any = None,
) -> SimulationResult:
    """Simulate ``clients`` clients retrying against one shared downstream ``model`` (default:
    :class:`ConflictModel`), ``runs`` times.

    ``policy``: a :class:`~pytest_retry_check.backoffs.Strategy`, a built-in name (``"full"``,
    ``"exponential"``, ...), a ``retrylint`` ``RetryPolicy``, a retry site ``"path.py:LINE"``, or
    real code: ``def client(downstream)`` / ``async def client(downstream)`` that makes one call
    through its retry policy (``downstream()`` / ``await downstream.acall()``).

    ``seed`` seeds the simulation's own randomness (network, built-in strategies); real code
    keeps using ``random`` as it always does. ``horizon``: virtual seconds after which clients
    still retrying are counted as unfinished; ``max_calls``: a cap on calls per run for policies
    that never stop; ``max_sleeps``: the forever-retry guard per client of real code.

    ``budget``: a :class:`~pytest_retry_check.budgets.TokenBucket`. A policy without code gets a
    fresh copy per run, shared by all its clients (one service's calls), and a failure it refuses
    to retry is final (its label says "+ token bucket MAX/RATIO"). Real code applies its own
    bucket (``bucket.guard``): pass that bucket to have it reset before each run and its refusals
    counted.
    """
    __tracebackhide__ = True
    if isinstance(clients, bool) or not isinstance(clients, int) or clients < 1:
        raise ValueError(f"clients must be a whole number >= 1, got {clients!r}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a whole number >= 1, got {runs!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, float)) or not 0 < horizon < math.inf:
        raise ValueError(f"horizon must be a positive number of virtual seconds, got {horizon!r}")
    if isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1:
        raise ValueError(f"max_calls must be a whole number >= 1, got {max_calls!r}")
    if model is None:
        model = ConflictModel()
    elif not isinstance(model, (ConflictModel, CapacityModel)):
        raise TypeError(f"model must be a ConflictModel or a CapacityModel, not {type(model).__name__}")
    if budget is not None:
        from .budgets import TokenBucket

        if not isinstance(budget, TokenBucket):
            raise TypeError(f"budget must be a TokenBucket, not {type(budget).__name__}")
    rng = random.Random(seed)
    is_code = callable(policy) and not isinstance(policy, Strategy)
    results = []
    if is_code:
        name = label or getattr(policy, "__qualname__", None) or getattr(policy, "__name__", None) or repr(policy)
        for _ in range(runs):
            results.append(_run_code(policy, model, clients, rng, float(horizon), max_sleeps, budget))
    else:
        strategy = as_strategy(policy)
        name = label or strategy.name + (f" + token bucket {budget.label}" if budget is not None else "")
        leg = network_legs(model.network, rng)  # one stream for all runs: blocks are not wasted per run
        for _ in range(runs):
            bucket = budget.fresh() if budget is not None else None
            results.append(_run_strategy(strategy, model, clients, rng, leg, float(horizon), max_calls, bucket))
    return SimulationResult(name, model.name, clients, float(model.load_window), tuple(results))


def compare(
    policies: Sequence[Any],
    *,
    clients: Sequence[int] = (50, 100),
    runs: int = 100,
    model: Optional[Model] = None,
    seed: Optional[int] = None,
    **options: Any,
) -> List[SimulationResult]:
    """:func:`simulate` every policy at every client count (results by client count, then
    policy). One seed drives the whole comparison."""
    __tracebackhide__ = True
    if not policies:
        raise ValueError("compare() needs at least one policy")
    rng = random.Random(seed)
    return [
        simulate(policy, clients=count, runs=runs, model=model, seed=rng.getrandbits(64), **options)
        for count in clients
        for policy in policies
    ]


def aws_comparison(*, runs: int = 100, clients: Sequence[int] = (50, 100), seed: Optional[int] = None, extra: Sequence[Any] = ()) -> List[SimulationResult]:
    """The AWS "Exponential Backoff And Jitter" comparison: the five built-in strategies (base
    5 ms, cap 2 s) on the optimistic-concurrency model, network |N(10 ms, 2 ms)|; ``extra``
    policies are run in the same conditions."""
    __tracebackhide__ = True
    policies: List[Any] = [builtin(kind) for kind in AWS_STRATEGIES] + list(extra)
    return compare(policies, clients=clients, runs=runs, model=ConflictModel(), seed=seed)


def result_grid(results: Sequence[SimulationResult]) -> Tuple[List[int], List[str], Dict[Tuple[str, int], SimulationResult]]:
    """The client counts, the policy labels (in first-seen order) and the results by (label, count)."""
    labels: List[str] = []
    for r in results:
        if r.label not in labels:
            labels.append(r.label)
    return sorted({r.clients for r in results}), labels, {(r.label, r.clients): r for r in results}


def format_comparison(results: Sequence[SimulationResult], *, reference: Optional[Dict[int, Dict[str, Tuple[float, float]]]] = None) -> str:
    """A table: one row per policy, per client count "calls / completion" (and the reference)."""
    counts, labels, by_key = result_grid(results)
    kinds = {builtin(kind).name: kind for kind in AWS_STRATEGIES}
    width = max(len("strategy"), *(len(label) for label in labels))
    runs = max(len(r.runs) for r in results)
    head = f"{'strategy':<{width}}"
    for count in counts:
        head += f"  {f'{count} clients: calls / ms':>36}"
    lines = [
        f"{results[0].model}; {runs} run(s), means per run",
        "calls = server calls (work); ms = virtual time until every client succeeded or gave up",
    ]
    if reference:
        lines.append("(ref) = the AWS \"Exponential Backoff And Jitter\" simulator's model reimplemented, means of 100 runs")
    lines += ["", head]
    for label in labels:
        row = f"{label:<{width}}"
        for count in counts:
            r = by_key.get((label, count))
            cell = "-" if r is None else f"{r.calls:,.0f} / {r.completion * 1000:,.0f}"
            ref = (reference or {}).get(count, {}).get(kinds.get(label, ""))
            if ref is not None:
                cell += f" (ref {ref[0]:,.0f} / {ref[1]:,.0f})"
            if r is not None and r.gave_up:
                cell += f" [{r.gave_up:,.{0 if r.gave_up >= 10 else 1}f} gave up]"
            if r is not None and r.unfinished:
                cell += f" [{r.unfinished:,} unfinished]"
            row += f"  {cell:>36}"
        lines.append(row)
    return "\n".join(lines) + "\n"
