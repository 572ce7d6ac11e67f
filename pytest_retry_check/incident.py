"""The incident, as a test: 2,000 messages fail together, the downstream is down for a while, and
then it takes a limited number of connection attempts per second.

The consumer of the real incident retried "immediately, up to 100 times, every 100 ms": all 2,000
retried together, nearly 20,000 connection attempts a second, and the database that had just come
back was knocked over again. :func:`replay_incident` runs a policy or a consumer's real code
through that scenario on the contention simulation (:func:`~pytest_retry_check.simulation.simulate`
with a :class:`~pytest_retry_check.simulation.CapacityModel`) and reports the peak connection
attempts per second, so a team can write ``assert report.peak < 5000`` for its own consumer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

from .backoffs import Backoff
from .simulation import CapacityModel, Network, SimulationResult, _CapacityState, densest_window, simulate
from .timeline import format_seconds

__all__ = ["INCIDENT_POLICY", "Incident", "IncidentCheckFailed", "IncidentReport", "replay_incident"]

#: The policy of the incident: "immediately, up to 100 times, every 100 ms".
INCIDENT_POLICY = Backoff("exponential", base=0.1, cap=0.1, factor=1, max_attempts=100, label="immediately, every 100 ms, up to 100 tries")


class IncidentCheckFailed(AssertionError):
    """The policy under test made more connection attempts per second than allowed."""


class _RecordingState(_CapacityState):
    """The capacity model's state, also noting the failures while the downstream was up (over
    its capacity: the retries knocked it over)."""

    __slots__ = ("overloaded", "first_ok_after", "back")

    def __init__(self, capacity: int, window: float, outages: Tuple[Tuple[float, float], ...]) -> None:
        super().__init__(capacity, window, outages)
        self.overloaded: List[float] = []
        self.first_ok_after: Optional[float] = None
        self.back = outages[-1][1]  # the incident has one outage, from 0

    def commit(self, at: float, read_at: float) -> bool:
        ok = _CapacityState.commit(self, at, read_at)
        if at >= self.back:
            if not ok:
                self.overloaded.append(at)
            elif self.first_ok_after is None:
                self.first_ok_after = at
        return ok


@dataclass(frozen=True)
class _IncidentModel(CapacityModel):
    states: List[_RecordingState] = field(default_factory=list, compare=False, repr=False)

    def new_state(self) -> _RecordingState:  # type: ignore[override]
        state = _RecordingState(self.capacity, float(self.window), self.outages)
        self.states.append(state)
        return state


@dataclass(frozen=True)
class Incident:
    """The scenario: ``messages`` consumers start at t=0 and fail together; the downstream is down
    from 0 to ``outage`` seconds, then takes ``capacity`` connection attempts per second (more
    fail: an overloaded database refuses connections); each attempt costs a network leg each way
    (``network``: a refused connection answers in about a millisecond)."""

    messages: int = 2000
    outage: float = 5.0
    capacity: int = 2000
    network: Network = field(default_factory=lambda: Network(0.001, 0.0002))
    horizon: float = 3600.0

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        if isinstance(self.messages, bool) or not isinstance(self.messages, int) or self.messages < 1:
            raise ValueError(f"messages must be a whole number >= 1, got {self.messages!r}")
        if isinstance(self.outage, bool) or not isinstance(self.outage, (int, float)) or not 0 < self.outage < self.horizon:
            raise ValueError(f"outage must be a positive number of seconds below the horizon, got {self.outage!r}")

    def model(self) -> _IncidentModel:
        return _IncidentModel(self.capacity, 1.0, ((0.0, float(self.outage)),), self.network)

    def describe(self) -> str:
        return (
            f"{self.messages:,} messages failing together; the downstream down 0-{self.outage:g} s, then taking "
            f"{self.capacity:,} connection attempts per second"
        )


@dataclass(frozen=True)
class IncidentReport:
    """What the policy did in the incident (one run)."""

    policy: str
    incident: Incident
    result: SimulationResult = field(repr=False)
    peak: int  # connection attempts within one second, at most
    peak_at: float  # where that second starts (virtual seconds)
    overloaded: Tuple[float, ...] = field(repr=False)  # failed attempts while the downstream was up
    back_at: Optional[float]  # the first successful attempt after the outage

    @property
    def calls(self) -> int:
        return self.result.runs[0].calls

    @property
    def succeeded(self) -> int:
        return self.result.runs[0].succeeded

    @property
    def gave_up(self) -> int:
        return self.result.runs[0].gave_up

    @property
    def unfinished(self) -> int:
        return self.result.runs[0].unfinished

    @property
    def completion(self) -> float:
        return self.result.runs[0].completion

    @property
    def knocked_over(self) -> bool:
        """The downstream was back but failed attempts over its capacity."""
        return bool(self.overloaded)

    def per_second(self) -> List[int]:
        """Connection attempts in each second from t=0."""
        return self.result.runs[0].load_series(1.0)

    def histogram(self, *, rows: int = 16, width: int = 50) -> str:
        series = self.per_second()
        top = max(series) if series else 0
        lines = ["connection attempts per second (# = " + (f"{max(1, math.ceil(top / width)):,}" if top else "1") + "):"]
        shown = series if len(series) <= rows else series[: rows - 1]
        overloaded = set(int(at) for at in self.overloaded)
        for second, count in enumerate(shown):
            bar = "#" * (math.ceil(count * width / top) if top and count else 0)
            mark = "  <- over capacity, downstream up" if second in overloaded else ("  <- down" if second < self.incident.outage else "")
            lines.append(f"  +{second:>4} s |{bar:<{width}} {count:>7,}{mark}")
        if len(series) > len(shown):
            rest = series[len(shown) :]
            lines.append(f"  ... {len(rest)} more second(s), at most {max(rest):,} attempts per second")
        return "\n".join(lines)

    def summary(self) -> str:
        text = (
            f"peak {self.peak:,} connection attempts per second (at +{format_seconds(self.peak_at)}); {self.calls:,} attempts; "
            f"{self.succeeded:,} of {self.incident.messages:,} messages succeeded, {self.gave_up:,} gave up"
        )
        if self.unfinished:
            text += f", {self.unfinished:,} still retrying at the horizon"
        return text + f"; all done after {format_seconds(self.completion)}"

    def describe(self) -> str:
        lines = [f"policy: {self.policy}", f"the incident: {self.incident.describe()}", self.summary()]
        if self.overloaded:
            lines.append(
                f"- the downstream was back at +{format_seconds(self.incident.outage)} and was knocked over again: {len(self.overloaded):,} "
                f"attempts failed over its capacity between +{format_seconds(self.overloaded[0])} and +{format_seconds(self.overloaded[-1])}"
            )
        else:
            lines.append(f"- the downstream was back at +{format_seconds(self.incident.outage)} and stayed up: no attempt failed over its capacity")
        lines.append(self.histogram())
        return "\n".join(lines)

    def check(self, *, max_peak: Optional[float] = None, recovers: bool = False) -> "IncidentReport":
        """Raise :class:`IncidentCheckFailed` when the peak is above ``max_peak`` or (with
        ``recovers=True``) when the retries knocked the recovered downstream over."""
        __tracebackhide__ = True
        problems = []
        if not self.calls:
            raise IncidentCheckFailed(
                "incident check failed: the consumer never called the downstream (0 attempts), so there is nothing to judge: "
                "is it wired to the downstream it is given (`def consumer(downstream)` calling `downstream()`), and did it run?\n"
                + self.summary()
            )
        if max_peak is not None and self.peak > max_peak:
            problems.append(f"peak {self.peak:,} connection attempts per second (at +{format_seconds(self.peak_at)}), more than max_peak={max_peak:,}")
        if recovers and self.overloaded:
            problems.append(f"the retries knocked the recovered downstream over: {len(self.overloaded):,} attempts failed over its capacity after the outage")
        if problems:
            fix = (
                "fix: back off exponentially with full jitter (`delay = random.uniform(0, min(cap, base * 2 ** attempt))`, "
                "base ~1 s, cap ~20 s) and bound the attempts, so that 2,000 failures do not retry in the same instant"
            )
            raise IncidentCheckFailed("incident check failed: " + "; ".join(problems) + "\n" + self.describe() + "\n" + fix)
        return self

    def __str__(self) -> str:
        return self.summary()


def replay_incident(
    policy: Any = INCIDENT_POLICY,
    *,
    incident: Optional[Incident] = None,
    max_peak: Optional[float] = None,
    recovers: bool = False,
    seed: Optional[int] = 0,
    label: str = "",
    **scenario: Any,
) -> IncidentReport:
    """Run ``policy`` through the incident and return the report; with ``max_peak`` (attempts per
    second) or ``recovers=True``, fail (:class:`IncidentCheckFailed`) when it is not met.

    ``policy`` is what :func:`~pytest_retry_check.simulation.simulate` takes: a built-in
    strategy or :class:`~pytest_retry_check.backoffs.Backoff`, a ``retrylint`` policy or
    ``"path.py:LINE"``, or real code, ``def consumer(downstream)`` handling one message whose
    every connection attempt is ``downstream()`` (it raises ``DownstreamUnavailable``, a
    ``ConnectionError``, when the attempt fails). ``scenario``: :class:`Incident` fields
    (``messages``, ``outage``, ``capacity``, ``network``, ``horizon``) instead of ``incident``.
    """
    __tracebackhide__ = True
    if incident is None:
        incident = Incident(**scenario)
    elif scenario:
        raise TypeError(f"pass either incident= or its fields, not both (got {sorted(scenario)})")
    model = incident.model()
    result = simulate(policy, clients=incident.messages, model=model, runs=1, seed=seed, horizon=incident.horizon, label=label)
    state = model.states[-1]
    peak, peak_at = densest_window(result.runs[0].call_times, 1.0)
    report = IncidentReport(result.label, incident, result, peak, peak_at, tuple(state.overloaded), state.first_ok_after)
    if max_peak is not None or recovers:
        report.check(max_peak=max_peak, recovers=recovers)
    return report


def peaks(policies: Sequence[Any], **options: Any) -> List[IncidentReport]:
    """:func:`replay_incident` for several policies (for a table)."""
    return [replay_incident(policy, **options) for policy in policies]
