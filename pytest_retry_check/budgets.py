"""Retry budgets: retry traffic that stays within a budget while the downstream is down.

Two ways to say how much retrying is too much:

- the **retry ratio** (Google SRE practice: a client's retries should add at most ~10 % to its
  load): retries sent / requests (first attempts), measured by :func:`budget_check` on the
  contention simulation under an outage;
- a **token bucket**, gRPC's ``retryThrottling`` (proposal A6), implemented as grpc-core does it
  (``RetryThrottler``): the bucket holds ``max_tokens`` and starts full; every failed attempt
  takes 1 token, every success gives back ``token_ratio``; a retry is allowed only while the
  tokens left after recording the failure are more than ``max_tokens / 2``. Counted in
  thousandths of a token, clamped to ``[0, max_tokens]``.

:class:`TokenBucket` is also what you apply to your own client: ``bucket.guard(call)`` wraps the
function that makes one attempt, feeds the bucket with its outcome, and turns a failure the
bucket refuses to retry into :class:`RetryBudgetExhausted` -- an exception your retry filter
does not retry (it is not a ``ConnectionError``), so the retry stops there, whatever library
drives it.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type, Union

__all__ = ["BudgetReport", "RetryBudgetExhausted", "TokenBucket", "budget_check"]


class RetryBudgetExhausted(Exception):
    """A failure the retry budget refused to retry. Deliberately *not* a ``ConnectionError``
    (nor an ``OSError``): retry filters on transient errors let it through, and the retry
    stops. ``__cause__`` is the failure itself."""

    def __init__(self, message: str, *, bucket: "TokenBucket") -> None:
        super().__init__(message)
        self.bucket = bucket


class TokenBucket:
    """gRPC's retry throttling: ``TokenBucket(max_tokens=10, token_ratio=0.1)`` (the values of
    gRPC's documentation). ``max_tokens`` in (0, 1000], ``token_ratio`` > 0, both with at most
    three decimals (gRPC keeps thousandths).

    - ``record_failure()`` takes a token and returns whether a retry is allowed;
    - ``record_success()`` gives back ``token_ratio``;
    - ``guard(fn)`` (also as a decorator, ``@bucket.guard``) does both around one attempt;
    - ``tokens``, ``allows_retry``, counters ``failures``, ``successes``, ``refused``;
      ``reset()`` fills it again; ``fresh()`` is a new full bucket with the same settings.

    One bucket per downstream per process, as gRPC keeps one per server name: share it between
    the calls of your service, not one per call.
    """

    def __init__(self, max_tokens: float = 10, token_ratio: float = 0.1) -> None:
        __tracebackhide__ = True
        self.max_milli = _milli("max_tokens", max_tokens, low=0, high=1000)
        self.ratio_milli = _milli("token_ratio", token_ratio, low=0, high=math.inf)
        self._lock = threading.Lock()
        self.reset()

    @property
    def max_tokens(self) -> float:
        return self.max_milli / 1000

    @property
    def token_ratio(self) -> float:
        return self.ratio_milli / 1000

    @property
    def threshold(self) -> float:
        """Retries are allowed while the tokens are above this (``max_tokens / 2``)."""
        return (self.max_milli // 2) / 1000

    @property
    def tokens(self) -> float:
        return self.milli_tokens / 1000

    @property
    def allows_retry(self) -> bool:
        """Whether a failure recorded now would leave enough tokens for a retry."""
        return max(0, self.milli_tokens - 1000) > self.max_milli // 2

    def reset(self) -> None:
        """Full again, counters cleared."""
        with self._lock:
            self.milli_tokens = self.max_milli
            self.failures = self.successes = self.refused = 0

    def fresh(self) -> "TokenBucket":
        return TokenBucket(self.max_tokens, self.token_ratio)

    def record_failure(self) -> bool:
        """One failed attempt: take a token; True when a retry is still allowed."""
        with self._lock:
            self.milli_tokens = max(0, self.milli_tokens - 1000)
            self.failures += 1
            allowed = self.milli_tokens > self.max_milli // 2
            if not allowed:
                self.refused += 1
            return allowed

    def record_success(self) -> None:
        """One successful attempt: give back ``token_ratio`` (up to ``max_tokens``)."""
        with self._lock:
            self.milli_tokens = min(self.max_milli, self.milli_tokens + self.ratio_milli)
            self.successes += 1

    def _refusal(self, exc: BaseException) -> RetryBudgetExhausted:
        return RetryBudgetExhausted(
            f"retry budget exhausted: {self.tokens:g} of {self.max_tokens:g} tokens left, a retry needs more than "
            f"{self.threshold:g} (token bucket {self.label}; {self.failures} failures, {self.successes} successes so far); "
            f"not retrying {type(exc).__name__}: {exc}",
            bucket=self,
        )

    def guard(self, fn: Optional[Callable[..., Any]] = None, *, failures: Union[Type[BaseException], Tuple[Type[BaseException], ...]] = Exception) -> Any:
        """Wrap the function that makes *one attempt* (inside your retry): its successes and
        its failures (exceptions of ``failures``) feed the bucket, and a failure after which
        the bucket allows no retry is raised as :class:`RetryBudgetExhausted` (from the
        failure). Sync and ``async def`` functions; ``@bucket.guard`` or
        ``@bucket.guard(failures=(ConnectionError, TimeoutError))``."""
        if fn is None:
            return lambda f: self.guard(f, failures=failures)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    result = await fn(*args, **kwargs)
                except failures as exc:
                    if not self.record_failure():
                        raise self._refusal(exc) from exc
                    raise
                self.record_success()
                return result

            return guarded_async

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except failures as exc:
                if not self.record_failure():
                    raise self._refusal(exc) from exc
                raise
            self.record_success()
            return result

        return guarded

    @property
    def label(self) -> str:
        return f"{self.max_tokens:g}/{self.token_ratio:g}"

    def __repr__(self) -> str:
        return f"<TokenBucket max_tokens={self.max_tokens:g} token_ratio={self.token_ratio:g} tokens={self.tokens:g}>"


def _milli(name: str, value: Any, *, low: float, high: float) -> int:
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (low < value <= high) or value != value:
        bound = f" and at most {high:g}" if high != math.inf else ""
        raise ValueError(f"{name} must be a number above {low:g}{bound}, got {value!r}")
    milli = round(value * 1000)
    if abs(milli - value * 1000) > 1e-6:
        raise ValueError(f"{name} has at most three decimals (gRPC keeps thousandths of a token), got {value!r}")
    if milli < 1:
        raise ValueError(f"{name} must be at least 0.001, got {value!r}")
    return milli


# -- the check ------------------------------------------------------------------------------------
DEFAULT_OUTAGE = ((0.0, 30.0),)


@dataclass(frozen=True)
class BudgetReport:
    """What :func:`budget_check` measured (means over the runs)."""

    label: str
    model: str
    clients: int
    runs: int
    requests: float  # first attempts
    retries: float  # every later attempt
    peak_load: float  # calls in the busiest load window
    load_window: float
    completion: float
    succeeded: float
    gave_up: float
    throttled: float  # retries a budget refused (the simulation's, or the bucket's you passed)
    max_retry_ratio: Optional[float]
    max_peak: Optional[float]
    #: Per retry number k (1, 2, ...), how many retries #k were sent (mean per run).
    retries_by_number: Tuple[float, ...] = ()
    problems: Tuple[str, ...] = ()
    result: Any = field(default=None, repr=False, compare=False)

    @property
    def retry_ratio(self) -> float:
        return self.retries / self.requests if self.requests else math.nan

    @property
    def passed(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        text = (
            f"{self.label}: {self.clients:,} clients, {self.runs} run{'s' if self.runs != 1 else ''} ({self.model}): "
            f"{self.requests:,.0f} requests, {self.retries:,.0f} retries sent (retry ratio {self.retry_ratio:.2f}, "
            f"{self.retry_ratio:.0%} extra load); peak load {self.peak_load:,.0f} calls per {self.load_window:g} s; "
            f"all done after {_secs(self.completion)}; {self.succeeded:,.0f} succeeded, {self.gave_up:,.0f} gave up"
        )
        if self.throttled:
            text += f" ({self.throttled:,.0f} failures the budget refused to retry)"
        return text

    def describe(self) -> str:
        lines = [self.summary()]
        if self.retries_by_number:
            shown = ", ".join(f"#{k} {n:,.0f}" for k, n in enumerate(self.retries_by_number[:12], 1))
            more = f", ... (+{len(self.retries_by_number) - 12} more retry numbers)" if len(self.retries_by_number) > 12 else ""
            lines.append(f"retries sent, by retry number: {shown}{more}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.describe()


def _secs(seconds: float) -> str:
    from .timeline import format_seconds

    return format_seconds(seconds)


FIX = """\
fix: bound the retry traffic, not only each call's retries:
  - a token bucket shared by the calls to this downstream (gRPC retryThrottling):
      bucket = TokenBucket(max_tokens=10, token_ratio=0.1)   # pytest_retry_check.budgets
      wrap the function that makes one attempt with bucket.guard; RetryBudgetExhausted is not retried
  - or a retry ratio (retry only while retries < 10 % of requests), or fewer attempts per call;
    each of these turns a long outage into failed requests (dead letters), not into extra load"""


NEVER_CALLED = "no client called the downstream, so there is nothing to judge: is the client wired to the downstream it is given, and did it run?"


def _judge(report: BudgetReport) -> Tuple[str, ...]:
    problems: List[str] = []
    if report.requests == 0:
        return (NEVER_CALLED,)
    ratio = report.retry_ratio
    if report.max_retry_ratio is not None and ratio > report.max_retry_ratio + 1e-12:
        problems.append(
            f"retries added {ratio:.0%} to the load: {report.retries:,.0f} retries on {report.requests:,.0f} requests is a "
            f"retry ratio of {ratio:.2f}, more than max_retry_ratio={report.max_retry_ratio:g} "
            f"({report.max_retry_ratio:.0%} extra load)"
        )
    if report.max_peak is not None and report.peak_load > report.max_peak:
        problems.append(
            f"peak load {report.peak_load:,.0f} calls per {report.load_window:g} s, more than max_peak={report.max_peak:,g}"
        )
    return tuple(problems)


def _model(model: Any, capacity: Optional[int], outages: Optional[Sequence[Tuple[float, float]]], window: float) -> Any:
    __tracebackhide__ = True
    from .simulation import CapacityModel, ConflictModel

    if model is not None:
        if capacity is not None or outages is not None:
            raise TypeError("pass either model= or capacity=/outages=, not both")
        if not isinstance(model, (ConflictModel, CapacityModel)):
            raise TypeError(f"model must be a CapacityModel or a ConflictModel, not {type(model).__name__}")
        return model
    # Without a capacity the downstream serves everything outside its outages: what is measured
    # is the retry traffic the outage causes.
    return CapacityModel(capacity if capacity is not None else 10**9, window=window, outages=tuple(outages if outages is not None else DEFAULT_OUTAGE))


def _measure(
    client: Any,
    *,
    clients: int = 300,
    model: Any = None,
    capacity: Optional[int] = None,
    outages: Optional[Sequence[Tuple[float, float]]] = None,
    window: float = 1.0,
    budget: Optional[TokenBucket] = None,
    max_retry_ratio: Optional[float] = 0.1,
    max_peak: Optional[float] = None,
    runs: int = 1,
    seed: Optional[int] = None,
    horizon: float = 3600.0,
    max_sleeps: int = 1000,
    label: str = "",
) -> BudgetReport:
    __tracebackhide__ = True
    from .simulation import simulate

    if max_retry_ratio is not None and (isinstance(max_retry_ratio, bool) or not isinstance(max_retry_ratio, (int, float)) or max_retry_ratio < 0):
        raise ValueError(f"max_retry_ratio must be a number >= 0 (0.1: retries add at most 10 % to the load), got {max_retry_ratio!r}")
    if max_peak is not None and (isinstance(max_peak, bool) or not isinstance(max_peak, (int, float)) or max_peak < 0):
        raise ValueError(f"max_peak must be a number of calls per window >= 0, got {max_peak!r}")
    if max_retry_ratio is None and max_peak is None:
        raise ValueError("budget_check() needs a limit: max_retry_ratio (default 0.1) and/or max_peak")
    if budget is not None and not isinstance(budget, TokenBucket):
        raise TypeError(f"budget must be a TokenBucket, not {type(budget).__name__}")
    chosen = _model(model, capacity, outages, window)
    result = simulate(client, clients=clients, model=chosen, runs=runs, seed=seed, horizon=horizon, max_sleeps=max_sleeps, label=label, budget=budget)
    by_number = _mean_by_number([r.attempts for r in result.runs])
    report = BudgetReport(
        label=result.label,
        model=result.model,
        clients=clients,
        runs=len(result.runs),
        requests=result.requests,
        retries=result.retries,
        peak_load=result.peak_load,
        load_window=result.load_window,
        completion=result.completion,
        succeeded=result.succeeded,
        gave_up=result.gave_up,
        throttled=result.throttled,
        max_retry_ratio=max_retry_ratio,
        max_peak=max_peak,
        retries_by_number=by_number,
        result=result,
    )
    from dataclasses import replace

    return replace(report, problems=_judge(report))


def _mean_by_number(per_run: Sequence[Tuple[int, ...]]) -> Tuple[float, ...]:
    """Mean count of retry #k per run, from each run's attempts per client."""
    totals: Dict[int, int] = {}
    for attempts in per_run:
        for count in attempts:
            for k in range(1, count):
                totals[k] = totals.get(k, 0) + 1
    runs = max(1, len(per_run))
    return tuple(totals[k] / runs for k in range(1, max(totals, default=0) + 1))


class BudgetCheck:
    """``budget_check(client, **options)`` asserts, ``budget_check.measure(client, **options)``
    measures. ``client`` is your code making one call through its retry policy (``def
    client(downstream)`` calling ``downstream()``, or ``async def`` awaiting ``downstream.acall()``),
    or a policy the simulation runs without code (a built-in name, a ``Backoff``, a retry site
    ``"path.py:LINE"``).

    Options: ``clients=300``; the downstream: ``outages=[(0, 30)]`` (default) and ``capacity=``
    (calls per ``window`` seconds; default unlimited), or ``model=``; limits:
    ``max_retry_ratio=0.1`` (retries / requests) and ``max_peak=`` (calls per window);
    ``budget=``: a :class:`TokenBucket` -- the one your code uses (reset before each run), or,
    for a policy without code, the budget the simulation applies to it; ``runs``, ``seed``,
    ``horizon``, ``max_sleeps``, ``label``.
    """

    def __call__(self, client: Any, **options: Any) -> BudgetReport:
        __tracebackhide__ = True
        report = client if isinstance(client, BudgetReport) else self.measure(client, **options)
        if not report.passed:
            from .assertions import RetryCheckFailed

            raise RetryCheckFailed(failure_message(report))
        return report

    def measure(self, client: Any, **options: Any) -> BudgetReport:
        __tracebackhide__ = True
        return _measure(client, **options)


def failure_message(report: BudgetReport) -> str:
    if report.problems == (NEVER_CALLED,):
        return f"retry budget check failed: {NEVER_CALLED}\n{report.label}: {report.clients:,} clients, 0 calls\n"
    lines = ["retry budget check failed: the retries exceed the budget"]
    lines += [f"- {p}" for p in report.problems]
    return "\n".join(lines) + "\n" + report.describe() + FIX + "\n"


#: The retry budget check: ``budget_check(client)`` asserts, ``budget_check.measure(client)`` measures.
budget_check = BudgetCheck()
