"""A finding and a file's report (the engine calls them ``Finding`` and ``FileReport``).

They live here, away from the engine, so that a run that needs no analysis (a cached report, a
file with no retry word that compiles) reports without importing the engine or libcst."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from .fix_model import Fix
from .model import Location


@dataclass(frozen=True)
class Record:
    """One finding (``engine.Finding``)."""

    code: str
    name: str
    message: str
    path: str
    location: Location
    url: str
    fix: Optional[Fix] = None


@dataclass
class Report:
    """A file's report (``engine.FileReport``)."""

    path: str
    findings: List[Any] = field(default_factory=list)
    #: The retry sites and dead-letter operations found (``want_policies``).
    policies: List[Any] = field(default_factory=list)
    dead_letters: List[Any] = field(default_factory=list)
    #: Set when the file could not be analysed although it is not the user's mistake
    #: (libcst rejects valid Python, nesting too deep): reported, never a finding.
    notice: Optional[str] = None
    #: An internal error of retrylint itself.
    error: Optional[str] = None
    #: Other files whose facts the result depends on: (absolute path, content digest).
    dependencies: Tuple[Tuple[str, str], ...] = ()


def plain(report: Any) -> Report:
    """An engine report as a Report of Records: what a worker sends back, so that the main
    process can read it without importing the engine (and libcst)."""
    return Report(
        report.path,
        findings=[Record(f.code, f.name, f.message, f.path, f.location, f.url, f.fix) for f in report.findings],
        notice=report.notice,
        error=report.error,
        dependencies=report.dependencies,
    )
