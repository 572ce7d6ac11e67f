"""The ``--retry-check-report`` terminal summary: one line per fake downstream (and per herd
check) of every test, so a run shows at a glance what each retry policy really did.

Lines travel as the tests' ``user_properties`` (key :data:`PROPERTY`), which pytest-xdist
carries from its workers, so the summary is complete under ``-n``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

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


def herd_line(report: Any) -> str:
    verdict = "passed" if report.passed else "FAILED"
    return f"herd check {verdict}: {report.summary()}"


def terminal_lines(entries: List[Any]) -> List[str]:
    """``entries``: (nodeid, line) pairs in the order the tests ran."""
    lines = []
    for nodeid, line in entries:
        lines.append(f"{nodeid}  {line}")
    return lines
