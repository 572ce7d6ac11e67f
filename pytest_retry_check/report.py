"""The ``--retry-check-report`` terminal summary: one line per fake downstream (and per herd
check) of every test, so a run shows at a glance what each retry policy really did.

Lines travel as the tests' ``user_properties`` (key :data:`PROPERTY`), which pytest-xdist
carries from its workers, so the summary is complete under ``-n``.
"""

from __future__ import annotations

import collections
import contextlib
from typing import TYPE_CHECKING, Any, Iterator, List, Optional

from .timeline import format_seconds

if TYPE_CHECKING:
    from .downstream import FakeDownstream

PROPERTY = "retry_check"
TITLE = "retry check report"
_SHOWN_WAITS = 6


def downstream_line(downstream: "FakeDownstream") -> str:
    """``orders: 6 calls in 31.000 s; waits 1.000 2.000 ... s; last 503``"""
    calls = downstream.calls
    if not calls:
        return f"{downstream.name}: never called"
    waits = [b.at - a.at for a, b in zip(calls, calls[1:])]
    shown = " ".join(format_seconds(w).removesuffix(" s") for w in waits[:_SHOWN_WAITS])
    if len(waits) > _SHOWN_WAITS:
        shown += f" ... (+{len(waits) - _SHOWN_WAITS})"
    text = f"{downstream.name}: {len(calls)} call(s) in {format_seconds(calls[-1].at - calls[0].at)}"
    if waits:
        text += f"; waits {shown} s"
    return text + f"; last {calls[-1].outcome.label}"


#: With ``--retry-check-report``: the fake downstreams and herd-check reports made by the running
#: test, in order (whoever made them: a fixture, the test itself, an imported ``herd_check``);
#: None when not reporting.
COLLECTED: Optional[List[Any]] = None
_quiet = [0]


def note(thing: Any) -> None:
    """Record a downstream or a herd report for the running test's report lines."""
    if COLLECTED is not None and not _quiet[0]:
        COLLECTED.append(thing)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The herd check's own downstreams (hundreds of clients) are not lines of their own."""
    _quiet[0] += 1
    try:
        yield
    finally:
        _quiet[0] -= 1


def test_lines(things: List[Any], *, examples: bool = False) -> List[str]:
    """The report lines of one test. ``examples``: a hypothesis test, whose downstreams (one set
    per example) are summed up per name."""
    from .downstream import FakeDownstream

    if not examples:
        return [downstream_line(t) if isinstance(t, FakeDownstream) else herd_line(t) for t in things]
    lines: List[str] = []
    by_name: "collections.OrderedDict[str, List[Any]]" = collections.OrderedDict()
    for thing in things:
        if isinstance(thing, FakeDownstream):
            by_name.setdefault(thing.name, []).append(thing)
        else:
            lines.append(herd_line(thing))
    for name, made in by_name.items():
        counts = [len(d.calls) for d in made]
        last = collections.Counter(d.calls[-1].outcome.label if d.calls else "never called" for d in made)
        shown = ", ".join(f"{label} {n}" for label, n in last.most_common(4))
        lines.insert(0, f"{name}: {len(made)} example(s), {min(counts)}-{max(counts)} call(s) each; last {shown}")
    return lines


def herd_line(report: Any) -> str:
    verdict = "passed" if report.passed else "FAILED"
    raised = getattr(report, "raised", ())
    counts = "; clients that raised: " + ", ".join(f"{n} {name}" for name, n in raised) if raised else ""
    return f"herd check {verdict}: {report.summary()}{counts}"


def terminal_lines(entries: List[Any]) -> List[str]:
    """``entries``: (nodeid, line) pairs in the order the tests ran."""
    lines = []
    for nodeid, line in entries:
        lines.append(f"{nodeid}  {line}")
    return lines
