"""The herd check: clients that failed together must not retry together.

:func:`measure_dispersion` runs the code under test as many independent clients -- a few hundred,
each on its own virtual timeline, all against the same failure scenario (default: the
downstream is down from t=0 to t=30 s) -- and collects every client's attempt times. Nothing is
reseeded: whatever spread there is comes from the code's own jitter.

Then, for each retry number k (the k-th retry of every client that made one):

- **peak share**: the largest share of those retries that land within one window of
  ``window`` x the median delay before retry k (default 10 %). Identical delays put 100 % in one
  window; a uniform draw over the delay's range puts about ``window`` / (its relative width).
- **spread**: the interquartile range of the k-th retry *instants* divided by the median delay.
  No jitter gives 0, ±1 % about 0.01, a ±50 % band 0.5, full jitter 1.0.
- **identical schedules**: the most clients that followed exactly the same schedule.

Retry instants (not delays) are measured, because instants are what the downstream sees: jitter
drawn early keeps clients apart later, and a cap that clips every delay to the same value does
not re-synchronise clients whose instants already differ.

Defaults (see :class:`DispersionLimits`): fail when more than 40 % of a retry lands in one window,
when the spread is below 0.15, or when half the clients follow the same schedule -- each judged
with a 3-sigma allowance for sampling noise (:data:`CONFIDENCE_Z`), so that a retry made by only
20 clients does not fail a well-jittered policy by chance. Full, equal
and decorrelated jitter and a ±50 % band stay well inside those lines (300 clients, worst of 30
runs: peak 24 % at most, spread 0.27 or more); no jitter (100 %, 0) and ±1 % (100 %, ~0.01) are
far beyond them. The plugin's documentation has the table.
"""

from __future__ import annotations

import collections
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .assertions import RetryCheckFailed
from .client_errors import STOP_AFTER, bugs_of, describe_bugs, format_counts, raised_counts
from .clock import FakeClock
from .downstream import FakeDownstream, Scenario
from .population import ASYNC_START, ClientResult, is_async_client, run_async, run_sequential
from .simulation import densest_window
from .timeline import DEFAULT_MAX_VIRTUAL_TIME, SleepRecord, format_seconds
from .trace import Trace, capture_trace

__all__ = [
    "DEFAULT_CLIENTS",
    "DispersionLimits",
    "DispersionReport",
    "HerdCheck",
    "RetryStats",
    "assert_dispersed",
    "dispersion_of",
    "herd_check",
    "herd_scenarios",
    "measure_dispersion",
]

DEFAULT_CLIENTS = 300
#: Seconds over which the herd's load on the downstream is counted (calls per second).
LOAD_WINDOW = 1.0
#: Windows never shrink below this: the virtual clock moves in whole microseconds.
MIN_WINDOW = 2e-6
#: A retry number is judged only when at least this many clients made it ...
MIN_JUDGED_CLIENTS = 10
#: ... and at least this share of the clients that retried at all: a tail of a few clients
#: that happen to retry together says nothing about the herd.
MIN_JUDGED_SHARE = 0.1
#: The check calls a herd only when it is sure: the limits are compared with one-sided
#: 3-sigma bounds (99.87 %) of the measured numbers, not with the numbers themselves. When
#: only 20 clients make some retry, 9 of them landing in one window happens by chance to a
#: well-jittered policy; 20 of 20 does not. (Lock-step herds are 100 % at any count.)
CONFIDENCE_Z = 3.0

FIX = """\
fix: jitter every delay: full jitter `delay = random.uniform(0, min(cap, base * 2 ** attempt))`
  spreads best; equal jitter, decorrelated jitter or at least a ±50 % band also do. In the libraries:
  tenacity: wait=wait_random_exponential(multiplier=..., max=...)
  backoff:  keep the default jitter=backoff.full_jitter (not jitter=None)
  stamina:  wait_jitter is added seconds: make it comparable to wait_max
  urllib3:  Retry(backoff_jitter=...) is added seconds too, and its first retry is always immediate
  redis-py: ExponentialWithJitterBackoff, EqualJitterBackoff or DecorrelatedJitterBackoff"""
FIX_IMMEDIATE = "fix: wait before retrying, a jittered delay that grows (full jitter: `random.uniform(0, min(cap, base * 2 ** attempt))`)."


@dataclass(frozen=True)
class DispersionLimits:
    """What the herd check accepts.

    ``window``: the window, as a fraction of the median delay before that retry, within which
    retries count as "together". ``max_peak_share``: the largest share of one retry number's
    retries allowed in one window. ``min_spread``: the smallest interquartile range of one retry
    number's instants, relative to its median delay. ``max_identical_share``: the largest share
    of clients allowed to follow exactly the same schedule. ``from_retry``: judge retries from
    this number on (urllib3's first retry is always immediate: ``from_retry=2`` accepts that).
    """

    window: float = 0.1
    max_peak_share: float = 0.4
    min_spread: float = 0.15
    max_identical_share: float = 0.5
    from_retry: int = 1

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        for name in ("window", "max_peak_share", "max_identical_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise ValueError(f"{name} must be a fraction in (0, 1], got {value!r}")
        if isinstance(self.min_spread, bool) or not isinstance(self.min_spread, (int, float)) or not 0 <= self.min_spread < math.inf:
            raise ValueError(f"min_spread must be a number >= 0 (0.15 = 15 % of the delay), got {self.min_spread!r}")
        if isinstance(self.from_retry, bool) or not isinstance(self.from_retry, int) or self.from_retry < 1:
            raise ValueError(f"from_retry must be a retry number >= 1, got {self.from_retry!r}")


@dataclass(frozen=True)
class RetryStats:
    """The k-th retries of every client that made one."""

    retry: int
    clients: int
    median_delay: float
    window: float  # seconds
    peak: int  # the most of these retries within one window
    peak_at: float  # where that window starts (seconds after the clients' first attempts)
    spread: float  # interquartile range of the instants / median delay
    low: float  # earliest instant
    high: float  # latest instant
    judged: bool
    #: The lowest peak share and the highest spread that the sample is compatible with
    #: (CONFIDENCE_Z): what the limits are compared with.
    peak_share_low: float = 0.0
    spread_high: float = math.inf

    @property
    def peak_share(self) -> float:
        return self.peak / self.clients

    @property
    def immediate(self) -> bool:
        return self.median_delay <= MIN_WINDOW


@dataclass(frozen=True)
class DispersionReport:
    """What :func:`measure_dispersion` (or :func:`dispersion_of`) found."""

    #: Per client, the virtual times of its attempts, from its first attempt (0.0).
    schedules: Tuple[Tuple[float, ...], ...]
    retries: Tuple[RetryStats, ...]
    #: Clients in the largest group that followed exactly the same schedule (clients that retried).
    identical: int
    limits: DispersionLimits
    problems: Tuple[str, ...]
    #: Per client: "succeeded", "raised", "returned" (gave up silently), "guard" (retried forever).
    outcomes: Tuple[str, ...] = ()
    #: Where the retry sleeps came from (the first client's first sleep), when known.
    where: str = ""
    scenario: str = ""
    #: The identical schedule, when there is one shared by more than one client.
    common_schedule: Tuple[float, ...] = field(default=(), repr=False)
    #: How many clients raised each exception type (giving up by raising, or a bug).
    raised: Tuple[Tuple[str, int], ...] = ()
    #: When clients were broken (raised before calling the downstream, or a programming
    #: error): what they raised, the first with its traceback. Nothing else is judged then.
    client_error: str = field(default="", repr=False)
    #: The problem of a client that never stopped retrying, when one did.
    forever: str = ""

    # -- numbers ----------------------------------------------------------------------------
    @property
    def clients(self) -> int:
        return len(self.schedules)

    @property
    def retrying_clients(self) -> int:
        return sum(1 for s in self.schedules if len(s) > 1)

    @property
    def judged(self) -> Tuple[RetryStats, ...]:
        return tuple(r for r in self.retries if r.judged)

    @property
    def peak(self) -> Optional[RetryStats]:
        """The judged retry number whose retries cluster most."""
        judged = self.judged
        return max(judged, key=lambda r: (r.peak_share, -r.retry)) if judged else None

    @property
    def peak_share(self) -> float:
        peak = self.peak
        return peak.peak_share if peak is not None else math.nan

    @property
    def spread(self) -> float:
        """The smallest spread over the judged retry numbers."""
        judged = self.judged
        return min(r.spread for r in judged) if judged else math.nan

    @property
    def identical_share(self) -> float:
        retrying = self.retrying_clients
        return self.identical / retrying if retrying else math.nan

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def peak_load(self) -> int:
        """The load the downstream sees, as the contention simulation reports it: the most calls
        (first attempts and retries) within one second (LOAD_WINDOW)."""
        return self._load[0]

    @property
    def peak_load_at(self) -> float:
        """Where that one-second window starts (seconds after the clients' first attempts)."""
        return self._load[1]

    @property
    def _load(self) -> Tuple[int, float]:
        cached = self.__dict__.get("_load_cache")
        if cached is None:
            instants = sorted(t for s in self.schedules for t in s)
            cached = densest_window(instants, LOAD_WINDOW) if instants else (0, 0.0)
            object.__setattr__(self, "_load_cache", cached)
        return cached

    # -- reading ----------------------------------------------------------------------------
    def histogram(self, *, rows: int = 24, width: int = 50) -> str:
        """Every client's retry instants, pooled, one row per time slot: a herd is a spike."""
        instants = sorted(t for s in self.schedules for t in s[1:])
        if not instants:
            return "retry instants: none (no client retried)\n"
        span = instants[-1]
        step = _nice_step(span / rows) if span > 0 else 1.0
        count = int(span / step) + 1
        bins = [0] * count
        for t in instants:
            bins[min(int(t / step), count - 1)] += 1
        most = max(bins)
        per_mark = max(1, math.ceil(most / width))
        peak = self.peak
        peak_row = min(int(peak.peak_at / step), count - 1) if peak is not None else -1
        label_width = max(len(_time_label(i * step, step)) for i in range(count))
        lines = [
            f"retry instants of {self.retrying_clients} clients ({len(instants):,} retries), seconds after each "
            f"client's first attempt; a row is {format_seconds(step).replace('.000', '')}, # = {per_mark} retr{'y' if per_mark == 1 else 'ies'}:"
        ]
        for i, n in enumerate(bins):
            bar = "#" * math.ceil(n / per_mark) if n else ""
            line = f"  {_time_label(i * step, step):>{label_width}} |{bar:<{width}} {n:>6}"
            if i == peak_row and peak is not None:
                line += f"  <- peak: retry #{peak.retry} of {peak.peak}/{peak.clients} clients within {format_seconds(peak.window)}"
            lines.append(line.rstrip())
        return "\n".join(lines) + "\n"

    def table(self) -> str:
        """Per retry number: clients, median delay, window, the most in one window, spread."""
        lines = [f"  {'retry':>6}  {'clients':>7}  {'median delay':>12}  {'window':>10}  {'most in one window':>18}  {'spread':>7}  judged"]
        for r in self.retries:
            most = f"{r.peak} ({r.peak_share:.0%})"
            judged = "yes" if r.judged else ("skipped" if r.retry < self.limits.from_retry else "too few")
            lines.append(
                f"  {'#' + str(r.retry):>6}  {r.clients:>7}  {format_seconds(r.median_delay):>12}  {format_seconds(r.window):>10}  "
                f"{most:>18}  {r.spread:>7.3f}  {judged}"
            )
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        limits = self.limits
        if not self.judged:
            return f"{self.clients} clients, {self.retrying_clients} retried; nothing to judge"
        peak = self.peak
        assert peak is not None
        return (
            f"{self.clients} clients, {self.retrying_clients} retried; peak load {self.peak_load:,} calls per second "
            f"(at +{format_seconds(self.peak_load_at)}); peak: retry #{peak.retry}, "
            f"{peak.peak_share:.0%} within {limits.window:.0%} of its delay (limit {limits.max_peak_share:.0%}); "
            f"smallest spread {self.spread:.3f} (limit {limits.min_spread:g}); "
            f"identical schedules {self.identical_share:.0%} (limit {limits.max_identical_share:.0%})"
        )

    def describe(self) -> str:
        if self.client_error:
            return self.client_error + "\n"
        text = self.summary() + "\n"
        if self.scenario:
            text += f"scenario: {self.scenario}\n"
        if self.where:
            text += f"retry sleeps from: {self.where}\n"
        if self.raised:
            text += f"clients that raised: {format_counts(self.raised)}\n"
        return text + self.histogram() + self.table()

    def __str__(self) -> str:
        return self.describe()


def _nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, at least ``raw``."""
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw * (1 - 1e-12):
            return factor * power
    return 10 * power


def _time_label(at: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"+{at:.{decimals}f} s"


# -- the measurements -----------------------------------------------------------------------
def _quartile_range(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def _retry_stats(schedules: Sequence[Tuple[float, ...]], limits: DispersionLimits) -> Tuple[RetryStats, ...]:
    retrying = [s for s in schedules if len(s) > 1]
    needed = max(MIN_JUDGED_CLIENTS, math.ceil(MIN_JUDGED_SHARE * len(retrying)))
    depth = max((len(s) for s in retrying), default=1) - 1
    stats = []
    for k in range(1, depth + 1):
        made = [s for s in retrying if len(s) > k]
        instants = sorted(s[k] for s in made)
        median_delay = statistics.median(s[k] - s[k - 1] for s in made)
        window = max(limits.window * median_delay, MIN_WINDOW)
        peak, peak_at = densest_window(instants, window)
        spread = _relative(_quartile_range(instants), median_delay)
        spread_high = _relative(_quartile_range_high(instants), median_delay)
        judged = k >= limits.from_retry and len(made) >= needed
        stats.append(
            RetryStats(
                k, len(made), median_delay, window, peak, peak_at, spread, instants[0], instants[-1], judged,
                _share_low(peak, len(made)), spread_high,
            )
        )
    return tuple(stats)


def _relative(width: float, median_delay: float) -> float:
    if median_delay > MIN_WINDOW:
        return width / median_delay
    # An immediate retry: dispersed only if the instants themselves differ.
    return 0.0 if width <= MIN_WINDOW else math.inf


def _share_low(count: int, n: int, z: float = CONFIDENCE_Z) -> float:
    """Wilson lower bound of the share ``count / n``: 20 of 20 stays high (0.69), 9 of 20 does not (0.19)."""
    p = count / n
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (p + z * z / (2 * n) - spread) / (1 + z * z / n))


def _quartile_range_high(sorted_values: Sequence[float], z: float = CONFIDENCE_Z) -> float:
    """A distribution-free upper bound of the interquartile range: the quartiles' ranks widened by
    ``z`` standard deviations of a quartile's rank (``sqrt(n * 0.25 * 0.75)``)."""
    n = len(sorted_values)
    if n < 2:
        return 0.0
    half = z * math.sqrt(0.1875 * n)
    low = max(0, math.floor(0.25 * (n - 1) - half))
    high = min(n - 1, math.ceil(0.75 * (n - 1) + half))
    return sorted_values[high] - sorted_values[low]


def _judge(report: DispersionReport, forever: Optional[str]) -> Tuple[str, ...]:
    if report.client_error:
        return (report.client_error.splitlines()[0],)
    limits = report.limits
    problems: List[str] = []
    if forever:
        problems.append(forever)
    if report.clients == 0:
        ran = len(report.outcomes)
        problems.append(
            f"the downstream was never called by any {f'of the {ran} clients' if ran else 'client'}: is the client wired to this fake "
            "(downstream.url, an in-process route, or the object itself), and does it call it?"
        )
        return tuple(problems)
    if report.retrying_clients == 0:
        problems.append(f"no client retried (of {report.clients}): script a failure that every client meets, e.g. outages=[(0, 30)]")
        return tuple(problems)
    if not report.judged:
        problems.append(
            f"no retry number from #{limits.from_retry} on was made by enough clients to judge (at least {MIN_JUDGED_CLIENTS} "
            f"and {MIN_JUDGED_SHARE:.0%} of the {report.retrying_clients} that retried)"
        )
        return tuple(problems)
    if report.identical_share > limits.max_identical_share:
        shown = ", ".join("+" + format_seconds(t) for t in report.common_schedule[1:6])
        more = " ..." if len(report.common_schedule) > 6 else ""
        problems.append(
            f"{report.identical} of {report.retrying_clients} clients followed exactly the same schedule (retries at {shown}{more}): "
            "the delays have no randomness at all"
        )
    peak = max(report.judged, key=lambda r: (r.peak_share_low, -r.retry))
    if peak.peak_share_low > limits.max_peak_share:
        if peak.immediate:
            text = (
                f"retry #{peak.retry}: {peak.peak} of {peak.clients} clients ({peak.peak_share:.0%}) retried at the same "
                f"instant, +{format_seconds(peak.peak_at)}, immediately after failing (no delay at all)"
            )
        else:
            text = (
                f"retry #{peak.retry}: {peak.peak} of {peak.clients} clients ({peak.peak_share:.0%}) retried within "
                f"{format_seconds(peak.window)} of each other at +{format_seconds(peak.peak_at)} "
                f"({limits.window:.0%} of the {format_seconds(peak.median_delay)} median delay)"
            )
        sure = f" (at least {peak.peak_share_low:.0%} with {_CONFIDENCE})" if peak.peak_share_low < peak.peak_share - 0.005 else ""
        problems.append(text + f"; limit {limits.max_peak_share:.0%}{sure}")
    narrow = min(report.judged, key=lambda r: (r.spread_high, r.retry))
    if narrow.spread_high < limits.min_spread and report.identical_share <= limits.max_identical_share:
        spread_text = f"{narrow.spread:.1%} of the {format_seconds(narrow.median_delay)} median delay" if not narrow.immediate else "an immediate retry"
        problems.append(
            f"retry #{narrow.retry}: the middle half of the clients' retry instants spans {format_seconds(narrow.spread * narrow.median_delay)}, "
            f"{spread_text}; limit {limits.min_spread:g}, and at most {narrow.spread_high:.3f} with {_CONFIDENCE} "
            "(the jitter is too small to matter)"
        )
    collapsed = _collapse(report)
    if collapsed:
        problems.append(collapsed)
    return tuple(problems)


#: The waits collapsed when (with CONFIDENCE_Z) more than this share of the clients that made a
#: retry waited exactly the same, longest delay before it. Decorrelated jitter piles about 2/3 of
#: its draws at its cap and must pass; jitter clamped away by the cap puts 100 % there.
COLLAPSE_SHARE = 0.8


def _collapse(report: DispersionReport) -> str:
    """Jitter added before the cap (RTY504): from some retry on, every client waits exactly the
    cap, after delays that were spread. Instants may still differ (earlier jitter), but nothing
    disperses the clients any more."""
    spread_before = False
    longest = max((b - a for s in report.schedules for a, b in zip(s, s[1:])), default=0.0)
    for stats in report.retries:
        k = stats.retry
        delays = collections.Counter(round((s[k] - s[k - 1]) * 1e6) for s in report.schedules if len(s) > k)
        value, count = delays.most_common(1)[0]
        if not stats.judged:
            spread_before = spread_before or len(delays) > 1
            continue
        same = _share_low(count, stats.clients) > COLLAPSE_SHARE and value / 1e6 >= longest - 1e-6 and value / 1e6 > MIN_WINDOW
        if same and spread_before:
            later = [r.retry for r in report.retries if r.retry > k and r.judged]
            span = f"retries #{k}-#{later[-1]}" if later else f"retry #{k}"
            return (
                f"{span}: {count} of {stats.clients} clients waited exactly {format_seconds(value / 1e6)} before retry #{k}: "
                f"the waits collapsed to the cap from retry #{k} (the wait after attempt {k}) on; the jitter is added "
                "before the cap and clamped away, so past the cap every client waits the same. Jitter under the cap "
                "(full jitter `random.uniform(0, min(cap, base * 2 ** attempt))`) or add it after the cap"
            )
        spread_before = spread_before or len(delays) > 1
    return ""


_CONFIDENCE = "99.87 % confidence"  # one-sided, CONFIDENCE_Z = 3


def _build(
    schedules: Sequence[Sequence[float]],
    limits: DispersionLimits,
    *,
    outcomes: Sequence[str] = (),
    forever: Optional[str] = None,
    where: str = "",
    scenario: str = "",
    raised: Tuple[Tuple[str, int], ...] = (),
    client_error: str = "",
) -> DispersionReport:
    relative = tuple(tuple(t - s[0] for t in s) for s in schedules if len(s))
    retrying = [s for s in relative if len(s) > 1]
    groups = collections.Counter(tuple(round(t * 1e6) for t in s) for s in retrying)
    common, identical = groups.most_common(1)[0] if groups else ((), 0)
    report = DispersionReport(
        schedules=relative,
        retries=_retry_stats(relative, limits),
        identical=identical,
        limits=limits,
        problems=(),
        outcomes=tuple(outcomes),
        where=where,
        scenario=scenario,
        common_schedule=tuple(t / 1e6 for t in common) if identical > 1 else (),
        raised=raised,
        client_error=client_error,
        forever=forever or "",
    )
    return replace(report, problems=_judge(report, forever))


# -- entry points ---------------------------------------------------------------------------
def _limits(limits: Optional[DispersionLimits], options: Dict[str, Any]) -> DispersionLimits:
    __tracebackhide__ = True
    names = set(DispersionLimits.__dataclass_fields__)
    given = {k: options.pop(k) for k in list(options) if k in names}
    if limits is not None and not isinstance(limits, DispersionLimits):
        raise TypeError(f"limits must be a DispersionLimits, not {type(limits).__name__}")
    return replace(limits or DispersionLimits(), **given)


def _scenario(scenario: Optional[Scenario], script: Dict[str, Any]) -> Scenario:
    __tracebackhide__ = True
    if scenario is not None and script:
        raise TypeError(f"pass either a Scenario or script keywords, not both (got {sorted(script)})")
    if scenario is not None:
        if not isinstance(scenario, Scenario):
            raise TypeError(f"scenario must be a Scenario, not {type(scenario).__name__}")
        return scenario
    unknown = set(script) - set(Scenario.__dataclass_fields__)
    if unknown:
        known = sorted(set(Scenario.__dataclass_fields__) | set(DispersionLimits.__dataclass_fields__))
        raise TypeError(f"unknown keyword(s) {sorted(unknown)}; known: {known}")
    return Scenario(**script) if script else Scenario(outages=((0.0, 30.0),))


def _describe_scenario(scenario: Scenario) -> str:
    parts = []
    if scenario.outages:
        parts.append("down " + ", ".join(f"{a:g}-{b:g} s" for a, b in scenario.outages))
    if scenario.fail_first:
        parts.append(f"first {scenario.fail_first} calls fail")
    if scenario.outcomes:
        parts.append("then " + ", ".join(o.label for o in scenario.outcomes[:5]) + (" ..." if len(scenario.outcomes) > 5 else ""))
    if scenario.permanent is not None:
        parts.append(f"permanent {scenario.permanent.label}")
    if scenario.capacity is not None:
        parts.append(f"capacity {scenario.capacity}/s")
    parts.append("never recovers" if scenario.never_recovers else "then ok")
    return "; ".join(parts)


class _ClientDownstream(FakeDownstream):
    """One downstream for clients run one after another: each client gets a fresh call record
    (call numbers restart, so ``fail_first``/``outcomes`` scripts apply per client), while an
    HTTP server, once started, serves them all."""

    def next_client(self) -> List[Any]:
        calls, self.calls = self.calls, []
        return calls


def _first_sleep_site(sleeps: Sequence[SleepRecord]) -> str:
    if not sleeps:
        return ""
    first = sleeps[0]
    return first.where if first.where == first.caller else f"{first.where} (sleeping in {first.caller})"


def _forever(results: Sequence[ClientResult], max_attempts: Optional[int] = None) -> Optional[str]:
    for result in results:
        if result.outcome == "guard":
            first = str(result.error).splitlines()[0] if result.error is not None else "the guard tripped"
            first = first.split("; the code under test looks like")[0]
            text = f"client #{result.index} never stopped retrying: {first}"
            if result.swallowed:
                text += " (and the client swallowed the guard's RetryGuardTripped, with a bare except: or except BaseException, and ended as if nothing happened)"
            if max_attempts is not None:
                text += f"; if this many attempts are intended, raise the herd check's limit: herd_check(..., max_attempts=...) (now {max_attempts})"
            return text
    return None


def _outcome(result: ClientResult, calls: Sequence[Any]) -> str:
    if result.outcome == "returned":
        return "succeeded" if calls and calls[-1].ok else "returned"
    return result.outcome


def measure_dispersion(
    client: Callable[[Any], Any],
    *,
    clients: int = DEFAULT_CLIENTS,
    scenario: Optional[Scenario] = None,
    limits: Optional[DispersionLimits] = None,
    max_attempts: int = 1000,
    horizon: float = DEFAULT_MAX_VIRTUAL_TIME,
    **options: Any,
) -> DispersionReport:
    """Alias of ``herd_check.measure(client)``. Run ``client(downstream)`` as ``clients`` independent clients against the same failure
    scenario and measure how their retries cluster. Never raises for a herd: read ``.passed``
    and ``.problems``, or use :func:`assert_dispersed`.

    ``client``: your code making one call through its real retry policy, e.g.
    ``lambda ds: OrdersClient(base_url=ds.url).get_order(42)`` or ``lambda ds: fetch(ds)``; an
    ``async def`` client runs as tasks on a virtual event loop (``await ds.acall()``, or
    ``ds.url`` with an async HTTP client). Sync clients run one after another, each on a fresh
    timeline of one fake clock; async clients run concurrently, all starting at t=0.

    ``scenario`` (or script keywords as for ``fake_downstream``): default ``outages=[(0, 30)]``.
    ``max_attempts``: calls per client after which it counts as retrying forever. Limits:
    ``window``, ``max_peak_share``, ``min_spread``, ``max_identical_share``, ``from_retry``
    as keywords or ``limits=DispersionLimits(...)``.
    """
    __tracebackhide__ = True
    if "max_calls" in options:  # the name the call guard's message uses: the same limit
        max_attempts = options.pop("max_calls")
    limits = _limits(limits, options)
    scenario = _scenario(scenario, options)
    if not callable(client):
        raise TypeError(f"client must be a function taking the downstream, e.g. lambda ds: fetch(ds); got {client!r}")
    if isinstance(clients, bool) or not isinstance(clients, int) or clients < MIN_JUDGED_CLIENTS:
        raise ValueError(f"clients must be a whole number >= {MIN_JUDGED_CLIENTS} (a few hundred measure well), got {clients!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 2:
        raise ValueError(f"max_attempts must be a whole number >= 2, got {max_attempts!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, float)) or not 0 < horizon < math.inf:
        raise ValueError(f"horizon must be a positive number of virtual seconds, got {horizon!r}")
    described = _describe_scenario(scenario)
    from . import report as reporting

    with reporting.quiet():
        if is_async_client(client):
            report = _measure_async(client, clients, scenario, limits, max_attempts, float(horizon), described)
        else:
            report = _measure_sync(client, clients, scenario, limits, max_attempts, float(horizon), described)
    reporting.note(report)
    return report


def _measure_sync(client: Callable[[Any], Any], clients: int, scenario: Scenario, limits: DispersionLimits, max_attempts: int, horizon: float, described: str) -> DispersionReport:
    __tracebackhide__ = True
    # One clock for all clients, reset before each: every client starts at virtual 0 with no
    # sleeps and a fresh guard. max_sleeps is per client for the same reason.
    clock = FakeClock(max_sleeps=max_attempts, max_virtual_time=horizon)
    clock.watch_on_scan = clock.check_swallowed = False
    downstream = _ClientDownstream(scenario, clock=clock, max_calls=max_attempts)
    schedules: List[Tuple[float, ...]] = []
    outcomes: List[str] = []
    where: List[str] = []
    bugs: List[Tuple[int, BaseException, int]] = []

    def downstream_for(index: int) -> FakeDownstream:
        downstream.next_client()
        return downstream

    def after_each(index: int, result: ClientResult) -> bool:
        calls = downstream.calls
        schedules.append(tuple(c.at for c in calls))
        outcomes.append(_outcome(result, calls))
        if not where and result.sleeps:
            where.append(_first_sleep_site(result.sleeps))
        bugs.extend(bugs_of([result], [len(calls)], [bool(calls) and calls[-1].ok]))
        return len(bugs) >= STOP_AFTER

    try:
        with clock:
            results = run_sequential(client, clients, downstream_for, clock=clock, after_each=after_each)
    finally:
        downstream.close()
    if not bugs and not any(len(s) > 1 for s in schedules):
        # Nobody retried and some raised: what they raised is the story, not the scenario.
        bugs = [(r.index, r.error, len(s)) for r, s in zip(results, schedules) if r.outcome == "raised" and r.error is not None]
    client_error = describe_bugs(bugs, len(results), clients, stopped=len(results) < clients and results[-1].outcome != "guard") if bugs else ""
    return _build(
        schedules, limits, outcomes=outcomes, forever=_forever(results, max_attempts), where=where[0] if where else "", scenario=described,
        raised=raised_counts([r.error for r in results if r.outcome == "raised"]), client_error=client_error,
    )


def _measure_async(client: Callable[[Any], Any], clients: int, scenario: Scenario, limits: DispersionLimits, max_attempts: int, horizon: float, described: str) -> DispersionReport:
    __tracebackhide__ = True
    # Concurrent tasks share the clock; each has its own downstream (its own call numbers).
    # The per-client guard is the downstream's max_calls; the clock's is a backstop.
    clock = FakeClock(ASYNC_START, max_sleeps=clients * max_attempts, max_virtual_time=horizon * 2)
    clock.watch_on_scan = clock.check_swallowed = False
    downstreams = [FakeDownstream(scenario, clock=clock, max_calls=max_attempts, name=f"downstream-{i}") for i in range(clients)]
    try:
        results = run_async(client, clients, downstreams.__getitem__, clock=clock, horizon=horizon)
    finally:
        for downstream in downstreams:
            downstream.close()
    schedules = [tuple(c.at for c in d.calls) for d in downstreams]
    outcomes = [_outcome(r, d.calls) for r, d in zip(results, downstreams)]
    unfinished = [r.index for r in results if r.outcome == "unfinished"]
    forever = _forever(results, max_attempts)
    if forever is None and unfinished:
        forever = f"{len(unfinished)} client(s) were still retrying after {format_seconds(horizon)} of virtual time (first: #{unfinished[0]})"
    bugs = bugs_of(results, [len(d.calls) for d in downstreams], [bool(d.calls) and d.calls[-1].ok for d in downstreams])
    if not bugs and not any(len(s) > 1 for s in schedules):
        bugs = [(r.index, r.error, len(d.calls)) for r, d in zip(results, downstreams) if r.outcome == "raised" and r.error is not None]
    return _build(
        schedules, limits, outcomes=outcomes, forever=forever, where=_first_sleep_site(clock.sleeps), scenario=described,
        raised=raised_counts([r.error for r in results if r.outcome == "raised"]),
        client_error=describe_bugs(bugs, clients, clients, stopped=False) if bugs else "",
    )


def dispersion_of(runs: Iterable[Any], *, limits: Optional[DispersionLimits] = None, **options: Any) -> DispersionReport:
    """Alias of ``herd_check.measure(runs)``. Measure runs you collected yourself, without asserting (``herd_check.of(runs)`` asserts): each a ``Trace``, a finished ``capture_trace``, a
    ``FakeDownstream`` (all its calls) or a sequence of attempt times. Each run counts as one
    client; times are taken from each run's first attempt."""
    __tracebackhide__ = True
    limits = _limits(limits, options)
    if options:
        raise TypeError(f"unknown keyword(s) {sorted(options)}; known: {sorted(DispersionLimits.__dataclass_fields__)}")
    schedules = []
    for run in runs:
        if isinstance(run, (Trace, capture_trace, FakeDownstream)):
            from .assertions import trace_of

            schedules.append(tuple(a.at for a in trace_of(run).attempts))
        elif isinstance(run, (str, bytes)) or not isinstance(run, Iterable):
            raise TypeError(f"a run is a Trace, a capture_trace, a FakeDownstream or a sequence of attempt times, not {type(run).__name__}")
        else:
            times = tuple(float(t) for t in run)
            if any(b < a for a, b in zip(times, times[1:])):
                raise ValueError(f"attempt times must not go backwards: {times[:8]}")
            schedules.append(times)
    if len(schedules) < 2:
        raise ValueError(f"dispersion compares clients: pass many runs (a few hundred measure well), got {len(schedules)}")
    report = _build(schedules, limits)
    from . import report as reporting

    reporting.note(report)
    return report


def assert_dispersed(client: Any, **options: Any) -> DispersionReport:
    """Alias of ``herd_check(client)``. Fail (``RetryCheckFailed``, an ``AssertionError``) when clients that failed together
    retry together. ``client`` is your code (see :func:`measure_dispersion`, whose keywords it
    takes) or a :class:`DispersionReport` already measured. The message shows a histogram of the
    retry instants, the peak window and the fix. Returns the report."""
    __tracebackhide__ = True
    if isinstance(client, DispersionReport):
        if options:
            raise TypeError("assert_dispersed(report) takes no keywords: the report was judged when measured")
        report = client
    else:
        report = measure_dispersion(client, **options)
    if not report.passed:
        raise RetryCheckFailed(failure_message(report))
    return report


def failure_message(report: DispersionReport) -> str:
    if report.client_error:
        head = f"scenario: {report.scenario}\n" if report.scenario else ""
        return f"herd check failed: {report.client_error}\n{head}"
    # A herd only when retries were judged and found clustered; "nobody retried" or "retried
    # forever" alone get no jitter advice.
    herd = bool(report.judged) and any(p != report.forever for p in report.problems)
    title = "clients that failed together retry together (a thundering herd)" if herd else "nothing was judged a herd, but"
    lines = [f"herd check failed: {title}"]
    lines += [f"- {p}" for p in report.problems]
    head = report.summary() + "\n"
    if report.scenario:
        head += f"scenario: {report.scenario}\n"
    if report.where:
        head += f"retry sleeps from: {report.where}\n"
    if report.raised:
        head += f"clients that raised: {format_counts(report.raised)}\n"
    body = head + (report.histogram() + report.table() if report.retrying_clients else "")
    if not herd:
        return "\n".join(lines) + "\n" + body
    immediate = [r for r in report.judged if r.immediate and r.peak_share_low > report.limits.max_peak_share]
    fix = FIX_IMMEDIATE if immediate else FIX
    return "\n".join(lines) + "\n" + body + fix + "\n"


def herd_scenarios(*, min_outage: float = 1.0, max_outage: float = 300.0, recovers: bool = True) -> Any:
    """Hypothesis strategy: scenarios in which every client fails at t=0 (an outage from 0 to
    somewhere in ``[min_outage, max_outage]`` seconds), for ``assert_dispersed(..., scenario=...)``
    under ``@given``. Imports hypothesis."""
    from hypothesis import strategies as st

    if not 0 < min_outage <= max_outage < math.inf:
        raise ValueError(f"need 0 < min_outage <= max_outage, got {min_outage!r}, {max_outage!r}")
    ends = st.floats(min_value=min_outage, max_value=max_outage, allow_nan=False, allow_infinity=False)
    if recovers:
        return ends.map(lambda end: Scenario(outages=((0.0, end),)))
    return st.just(Scenario(outages=((0.0, math.inf),)))


class HerdCheck:
    """What the ``herd_check`` fixture gives: :func:`assert_dispersed` with defaults (from
    ``@pytest.mark.herd_check(...)``). ``herd_check(client, **options)`` asserts;
    ``herd_check.measure(client, **options)`` only measures."""

    def __init__(self, **defaults: Any) -> None:
        __tracebackhide__ = True
        unknown = set(defaults) - _OPTION_NAMES
        if unknown:
            raise TypeError(f"unknown herd_check setting(s) {sorted(unknown)}; known: {sorted(_OPTION_NAMES)}")
        self.defaults = defaults
        #: Called with every report measured (the plugin's --retry-check-report listens).
        self.on_report: Optional[Callable[[DispersionReport], None]] = None

    def _options(self, options: Dict[str, Any]) -> Dict[str, Any]:
        merged = dict(self.defaults)
        if "scenario" in options or set(options) & set(Scenario.__dataclass_fields__):
            # A scenario given here replaces the default one entirely, however it was written.
            for name in ["scenario", *Scenario.__dataclass_fields__]:
                merged.pop(name, None)
        merged.update(options)
        return merged

    def __call__(self, client: Any, **options: Any) -> DispersionReport:
        __tracebackhide__ = True
        if isinstance(client, DispersionReport):
            return assert_dispersed(client, **options)
        report = self.measure(client, **options)
        return assert_dispersed(report)

    def measure(self, client: Any, **options: Any) -> DispersionReport:
        """Measure, without asserting: ``client`` (your code), or runs you collected yourself
        (traces, ``capture_trace``s, downstreams, sequences of attempt times)."""
        __tracebackhide__ = True
        if not callable(client) and isinstance(client, Iterable) and not isinstance(client, (str, bytes)):
            return self._of(client, **options)
        report = measure_dispersion(client, **self._options(options))
        if self.on_report is not None:
            self.on_report(report)
        return report

    def of(self, runs: Iterable[Any], **limits: Any) -> DispersionReport:
        """The herd check of runs you collected yourself (see :func:`dispersion_of`): fails
        (``RetryCheckFailed``) when they retry together, like ``herd_check(client)``; returns the
        report. ``herd_check.measure(runs)`` only measures."""
        __tracebackhide__ = True
        return assert_dispersed(self._of(runs, **limits))

    def _of(self, runs: Iterable[Any], **limits: Any) -> DispersionReport:
        __tracebackhide__ = True
        names = set(DispersionLimits.__dataclass_fields__) | {"limits"}
        merged = {k: v for k, v in self.defaults.items() if k in names}
        merged.update(limits)
        report = dispersion_of(runs, **merged)
        if self.on_report is not None:
            self.on_report(report)
        return report


_OPTION_NAMES = (
    {"clients", "scenario", "limits", "max_attempts", "max_calls", "horizon"}
    | set(DispersionLimits.__dataclass_fields__)
    | set(Scenario.__dataclass_fields__)
)

#: The herd check, the one name for it: ``herd_check(client)`` asserts, ``herd_check.measure(client)``
#: measures, ``herd_check.of(runs)`` asserts on runs you collected (``herd_check.measure(runs)`` measures them). The ``herd_check`` fixture is the
#: same with defaults from ``@pytest.mark.herd_check(...)``. ``assert_dispersed``,
#: ``measure_dispersion`` and ``dispersion_of`` are the earlier names, kept as aliases.
herd_check = HerdCheck()
ALIASES = {"assert_dispersed": "herd_check", "measure_dispersion": "herd_check.measure", "dispersion_of": "herd_check.measure"}
