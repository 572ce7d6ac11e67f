"""Run the engine over many files: per-file ignores, notices, the run's counts."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

from .discovery import Candidate
from .engine import FileReport, Finding, SourceError, check_path, check_source
from .settings import Settings


@dataclass
class RunResult:
    findings: List[Finding] = field(default_factory=list)
    reports: List[FileReport] = field(default_factory=list)
    #: "could not analyse" notices, one per file: (path, reason)
    notices: List[tuple] = field(default_factory=list)
    #: internal errors, one per file: (path, reason)
    errors: List[tuple] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len(self.reports)


def display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def ignored_codes(path: str, settings: Settings, root: Path) -> frozenset:
    if not settings.per_file_ignores:
        return frozenset()
    absolute = Path(path).absolute()
    try:
        relative = absolute.relative_to(root).as_posix()
    except ValueError:
        relative = absolute.as_posix()
    out: set = set()
    for pattern, codes in settings.per_file_ignores:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(absolute.name, pattern):
            out |= codes
    return frozenset(out)


def _collect(result: RunResult, report: FileReport, settings: Settings, root: Path) -> None:
    result.reports.append(report)
    ignored = ignored_codes(report.path, settings, root)
    result.findings.extend(f for f in report.findings if f.code not in ignored or f.code == "RTY001")
    if report.notice:
        result.notices.append((report.path, report.notice))
    if report.error:
        result.errors.append((report.path, report.error))


def run_files(
    candidates: Sequence[Candidate], settings: Settings, root: Path, want_policies: bool = False
) -> RunResult:
    result = RunResult()
    for candidate in candidates:
        report = check_path(candidate.path, display_path(candidate.path), settings, want_policies=want_policies)
        _collect(result, report, settings, root)
    return result


def run_stdin(text: str, filename: Optional[str], settings: Settings, root: Path, want_policies: bool = False) -> RunResult:
    result = RunResult()
    report = check_source(text, filename or "-", settings, want_policies=want_policies)
    _collect(result, report, settings, root)
    return result


# ---------------------------------------------------------------- fixing

#: Fixes can enable or disable each other (a cap after a jitter fix): go round a few times.
MAX_FIX_ROUNDS = 10


@dataclass
class FixOutcome:
    original: str
    fixed: str
    applied: int
    report: FileReport


def applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.safety == "safe" or unsafe)


def fix_source(text: str, display: str, settings: Settings, unsafe: bool) -> FixOutcome:
    """Apply fixes until none applies; the report is the check of the fixed text."""
    from .fixes import apply

    current = text
    applied = 0
    for _ in range(MAX_FIX_ROUNDS):
        report = check_source(current, display, settings)
        edits = [edit for f in report.findings if applicable(f, unsafe) for edit in f.fix.edits]  # type: ignore[union-attr]
        if not edits:
            return FixOutcome(text, current, applied, report)
        updated, count = apply(current, edits)
        if updated == current or not _parses(updated):
            # A fix must never break the file: keep the last text that parsed.
            return FixOutcome(text, current, applied, report)
        current = updated
        applied += len([f for f in report.findings if applicable(f, unsafe)])
    return FixOutcome(text, current, applied, check_source(current, display, settings))


def _parses(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def read_for_fix(path: Path):
    """Text plus what is needed to write it back the same way: (text, encoding, bom)."""
    import codecs
    import io
    import tokenize

    data = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = data.startswith(codecs.BOM_UTF8)
    text = data.decode("utf-8-sig" if bom else encoding)
    return text, ("utf-8" if encoding == "utf-8-sig" else encoding), bom


def write_fixed(path: Path, text: str, encoding: str, bom: bool) -> None:
    import codecs

    data = text.encode(encoding)
    path.write_bytes((codecs.BOM_UTF8 if bom else b"") + data)
