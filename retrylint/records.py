"""Light stand-ins for the engine's ``FileReport`` and ``Finding``, with the same fields: what a
run reports for a file it did not need to analyse (a cached report, a file with no retry word
that compiles). Using them keeps the engine, and libcst, unimported when no file needs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from .fix_model import Fix
from .model import Location


@dataclass(frozen=True)
class Record:
    """A finding, as ``engine.Finding`` has it."""

    code: str
    name: str
    message: str
    path: str
    location: Location
    url: str
    fix: Optional[Fix] = None


@dataclass
class Report:
    """A file's report, as ``engine.FileReport`` has it."""

    path: str
    findings: List[Any] = field(default_factory=list)
    policies: List[Any] = field(default_factory=list)
    dead_letters: List[Any] = field(default_factory=list)
    notice: Optional[str] = None
    error: Optional[str] = None


def plain(report: Any) -> Report:
    """An engine report as a Report of Records: what a worker sends back, so that the main
    process can read it without importing the engine (and libcst)."""
    return Report(
        report.path,
        findings=[Record(f.code, f.name, f.message, f.path, f.location, f.url, f.fix) for f in report.findings],
        notice=report.notice,
        error=report.error,
    )
