"""Run the engine over many files: per-file ignores, notices, the run's counts."""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .discovery import Candidate
from .records import Report
from .settings import Settings

if TYPE_CHECKING:
    from .budget import Budget
    from .cache import Cache
    from .engine import FileReport, Finding
    from .resolver import Resolver, Scope


def check_path(path: Path, display: str, settings: Settings, **kwargs) -> "FileReport":
    """The engine's check of one file (imported on first use: start-up stays light)."""
    from .engine import check_path as engine_check_path

    return engine_check_path(path, display, settings, **kwargs)


def check_source(text: str, display: str, settings: Settings, **kwargs) -> "FileReport":
    from .engine import check_source as engine_check_source

    return engine_check_source(text, display, settings, **kwargs)


@dataclass
class RunResult:
    findings: List["Finding"] = field(default_factory=list)
    reports: List["FileReport"] = field(default_factory=list)
    #: "could not analyse" notices, one per file: (path, reason)
    notices: List[tuple] = field(default_factory=list)
    #: internal errors, one per file, and what could not be read or written: (path, reason)
    errors: List[tuple] = field(default_factory=list)
    #: warnings that change nothing found (a noqa naming an unknown code): (path, text)
    warnings: List[tuple] = field(default_factory=list)
    #: fixes written by --fix
    fixed: int = 0
    #: the text of what was not read from a file (standard input), by its displayed name
    sources: Dict[str, str] = field(default_factory=dict)

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
    candidates: Sequence[Candidate],
    settings: Settings,
    root: Path,
    want_policies: bool = False,
    jobs: int = 1,
    cache: Optional["Cache"] = None,
    budget: Optional["Budget"] = None,
) -> RunResult:
    """Check every candidate with one settings: cached reports first, the rest in ``jobs`` workers
    (within ``budget`` per file, when it has a limit)."""
    result = RunResult()
    for report in _reports(candidates, settings, want_policies, jobs, cache, budget):
        _collect(result, report, settings, root)
    return result


def run_scoped(
    candidates: Sequence[Candidate],
    resolver: "Resolver",
    jobs: int = 1,
    cache_for: Optional[Callable[["Scope"], Optional["Cache"]]] = None,
    budget: Optional["Budget"] = None,
) -> RunResult:
    """Check every candidate with the settings of its own (nearest) configuration; the result
    lists files in the candidates' order whatever configuration each one has."""
    scopes = [resolver.for_file(c.path) for c in candidates]
    groups: Dict[int, List[int]] = {}
    for index, scope in enumerate(scopes):
        groups.setdefault(id(scope), []).append(index)
    reports: List[Optional[FileReport]] = [None] * len(candidates)
    for indices in groups.values():
        scope = scopes[indices[0]]
        cache = cache_for(scope) if cache_for is not None else None
        for index, report in zip(indices, _reports([candidates[i] for i in indices], scope.settings, False, jobs, cache, budget)):
            reports[index] = report
    result = RunResult()
    for candidate, report, scope in zip(candidates, reports, scopes):
        assert report is not None
        _collect(result, report, scope.settings, scope.root)
        note_noqa_codes(result, report.path, _read_regular(candidate.path))
    return result


def _read_regular(path: Path) -> bytes:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return b""
        return path.read_bytes()
    except OSError:
        return b""


def note_noqa_codes(result: RunResult, display: str, data: bytes, text: Optional[str] = None) -> None:
    """Warn about noqa directives naming a code no rule has (they silence nothing)."""
    from .noqa_codes import noqa_code_warnings

    for line, message in noqa_code_warnings(data, text):
        result.warnings.append((f"{display}:{line}", message))


def _reports(
    candidates: Sequence[Candidate],
    settings: Settings,
    want_policies: bool,
    jobs: int,
    cache: Optional["Cache"],
    budget: Optional["Budget"] = None,
) -> List[FileReport]:
    from .cache import digest

    reports: List[Optional[FileReport]] = [None] * len(candidates)
    todo: List[int] = []
    digests: Dict[int, str] = {}
    gates = None
    if cache is not None and not want_policies:
        from .quick import load_gates

        gates = load_gates(cache.root)
    for index, candidate in enumerate(candidates):
        if cache is not None:
            try:
                if not stat.S_ISREG(os.stat(candidate.path).st_mode):
                    raise OSError("not a regular file")  # a FIFO would block the read: check_path reports it
                data = candidate.path.read_bytes()
                content = digests[index] = digest(data)
            except OSError:
                pass  # check_path reports it
            else:
                hit = cache.get(candidate.path, content)
                if hit is not None:
                    reports[index] = _displayed(hit, display_path(candidate.path))
                    continue
                if gates is not None:
                    from .quick import is_clean

                    if is_clean(data, gates):
                        # What the engine would say, without importing it (see retrylint.quick).
                        reports[index] = Report(display_path(candidate.path))
                        cache.put(candidate.path, content, reports[index])
                        continue
        todo.append(index)
    work = [(candidates[i].path, display_path(candidates[i].path)) for i in todo]
    for index, report in zip(todo, _check_all(work, settings, want_policies, jobs, budget)):
        reports[index] = report
        if cache is not None and index in digests:
            cache.put(candidates[index].path, digests[index], report)
    if cache is not None:
        cache.save()
        if todo and gates is None:
            from .quick import save_gates

            save_gates(cache.root)
    return [r for r in reports if r is not None]


#: Below this many files to analyse, starting worker processes costs more than it saves.
_PARALLEL_MINIMUM = 16


def _check_all(work: List[Tuple[Path, str]], settings: Settings, want_policies: bool, jobs: int,
               budget: Optional["Budget"] = None) -> Iterator[FileReport]:
    if budget is not None and budget.enabled and work:
        from .budget import check_within_budget

        check = _check_one_with_policies if want_policies else _check_one_plain
        yield from check_within_budget(work, settings, max(1, jobs), budget, check)  # type: ignore[misc]
        return
    if jobs <= 1 or want_policies or len(work) < _PARALLEL_MINIMUM:
        for path, display in work:
            yield _check_one(path, display, settings, want_policies)
        return
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Biggest files first, in small chunks: the workers finish together.
    order = sorted(range(len(work)), key=lambda i: -_size(work[i][0]))
    reports: Dict[int, FileReport] = {}
    try:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(settings,)) as pool:
            chunk = max(1, min(8, len(work) // (jobs * 16)))
            for index, report in zip(order, pool.map(_worker_check, [work[i] for i in order], chunksize=chunk)):
                reports[index] = report
    except BrokenProcessPool:
        pass  # a worker died (out of memory, killed): finish in this process rather than fail
    for index, (path, display) in enumerate(work):
        yield reports[index] if index in reports else _check_one(path, display, settings, want_policies)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


_WORKER_SETTINGS: Optional[Settings] = None


def _start_worker(settings: Settings) -> None:
    global _WORKER_SETTINGS
    _WORKER_SETTINGS = settings


def _worker_check(item: Tuple[Path, str]) -> FileReport:
    assert _WORKER_SETTINGS is not None
    return _check_one(item[0], item[1], _WORKER_SETTINGS, False)


def _check_one(path: Path, display: str, settings: Settings, want_policies: bool) -> FileReport:
    try:
        return check_path(path, display, settings, want_policies=want_policies)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - one file never stops the run
        return Report(display, error=f"internal error: {type(exc).__name__}: {exc}")


def _check_one_plain(path: Path, display: str, settings: Settings, want_policies: bool) -> Report:
    """In a budget worker: the report as plain records (the main process need not import the engine)."""
    from .records import plain

    return plain(_check_one(path, display, settings, want_policies))


def _check_one_with_policies(path: Path, display: str, settings: Settings, want_policies: bool = True) -> Report:
    """In a budget worker, for ``explain``: the plain report with the retry sites (without their
    syntax nodes, which only ``--fix`` needs)."""
    full = _check_one(path, display, settings, True)
    return replace(_plain_report(full), policies=_plain_policies(full.policies))


def _plain_report(report: "FileReport") -> Report:
    from .records import plain

    return plain(report)


def _plain_policies(policies: Sequence) -> list:
    return [replace(p, anchor=None, delay_anchor=None) for p in policies]


def _check_text_plain(text: str, display: str, settings: Settings, want_policies: bool = False) -> Report:
    """Source text (standard input) checked, in a budget worker: a plain report, never an exception."""
    try:
        return _plain_report(check_source(text, display, settings))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - reported, as for a file
        return Report(display, error=f"internal error: {type(exc).__name__}: {exc}")


def _displayed(report: FileReport, display: str) -> FileReport:
    """A cached report under the path as shown from the current directory."""
    if report.path == display:
        return report
    return replace(report, path=display, findings=[replace(f, path=display) for f in report.findings])


def run_stdin(text: str, filename: Optional[str], settings: Settings, root: Path, want_policies: bool = False,
              budget: Optional["Budget"] = None) -> RunResult:
    """Check source read from standard input, within ``budget`` as a file is (a worker process)."""
    result = RunResult()
    if want_policies:
        report = check_source(text, filename or "-", settings, want_policies=True)
    else:
        from .budget import run_each

        [report] = run_each([(text, filename or "-")], settings, 1, budget, _check_text_plain)  # type: ignore[list-item]
    _collect(result, report, settings, root)
    result.sources[filename or "-"] = text
    note_noqa_codes(result, filename or "-", text.encode("utf-8", "surrogatepass"), text)
    return result


def complete_fixes(findings: Sequence["Finding"], sources: Dict[str, str]) -> List["Finding"]:
    """Each finding with its fix as ``--fix`` applies it (see :func:`retrylint.fix_model.complete_fix`):
    the file's line endings, and the import the fix leaves unused removed. For
    ``--output-format json``, whose ``fix.edits`` a tool may apply itself."""
    from .fix_model import complete_fix, line_length_for

    texts: Dict[str, Optional[str]] = dict(sources)
    out = []
    for finding in findings:
        if finding.fix is not None and finding.fix.edits:
            if finding.path not in texts:
                try:
                    texts[finding.path] = read_for_fix(Path(finding.path))[0]
                except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                    texts[finding.path] = None
            text = texts[finding.path]
            if text is not None:
                try:
                    finding = replace(finding, fix=complete_fix(text, finding.fix, line_length_for(finding.path)))
                except Exception:  # noqa: BLE001 - the edits as the rule wrote them, rather than none
                    pass
        out.append(finding)
    return out


# ---------------------------------------------------------------- fixing


@dataclass
class FileFix:
    """--fix on one file: the fixed text and how to write it back, or only a report (a file that
    cannot be read, or that was over the budget)."""

    report: "FileReport"
    outcome: Optional["FixOutcome"] = None
    encoding: str = "utf-8"
    bom: bool = False


def fix_path(path: Path, display: str, settings: Settings, want_policies: bool = False, unsafe: bool = False,
             plain: bool = False) -> FileFix:
    """``plain``: reports as plain records (in a budget worker: see :func:`retrylint.records.plain`)."""
    fix = _fix_path(path, display, settings, unsafe)
    if plain:
        from .records import plain as to_plain

        fix.report = to_plain(fix.report)
        if fix.outcome is not None:
            fix.outcome.report = fix.report
    return fix


def fix_text(text: str, display: str, settings: Settings, want_policies: bool = False, unsafe: bool = False):
    """--fix on source text (standard input), in a budget worker: the FixOutcome with a plain
    report, or a Report with the internal error (never an exception)."""
    try:
        outcome = fix_source(text, display, settings, unsafe)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - reported, as for a file
        return Report(display, error=f"internal error: {type(exc).__name__}: {exc}")
    outcome.report = _plain_report(outcome.report)
    return outcome


def fix_stdin_text(text: str, display: str, settings: Settings, unsafe: bool, budget: Optional["Budget"] = None):
    """``fix_text`` within ``budget``: a FixOutcome, or a Report (over the budget: its notice)."""
    import functools

    from .budget import run_each

    return run_each([(text, display)], settings, 1, budget, functools.partial(fix_text, unsafe=unsafe))[0]


def _fix_path(path: Path, display: str, settings: Settings, unsafe: bool) -> FileFix:
    try:
        text, encoding, bom = read_for_fix(path)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return FileFix(check_path(path, display, settings))
    try:
        outcome = fix_source(text, display, settings, unsafe)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - one file never stops the run
        return FileFix(Report(display, error=f"internal error: {type(exc).__name__}: {exc}"))
    return FileFix(outcome.report, outcome, encoding, bom)


def fix_files(candidates: Sequence[Candidate], resolver: "Resolver", unsafe: bool, jobs: int = 1,
              budget: Optional["Budget"] = None,
              gates_dir: Optional[Callable[["Scope"], Optional[Path]]] = None) -> List[Tuple["Scope", Candidate, str, FileFix]]:
    """Each candidate fixed (not written) with its own configuration, within the budget per file:
    (scope, candidate, displayed path, result), in the candidates' order. ``gates_dir``: where a
    scope's saved narrowing gates are (its cache directory): a file they show to be clean has
    nothing to fix and is not analysed (see :mod:`retrylint.quick`)."""
    import functools

    scopes = [resolver.for_file(c.path) for c in candidates]
    displays = [display_path(c.path) for c in candidates]
    fixes: List[Optional[FileFix]] = [None] * len(candidates)
    groups: Dict[int, List[int]] = {}
    for index, scope in enumerate(scopes):
        groups.setdefault(id(scope), []).append(index)
    for indices in list(groups.values()):
        directory = gates_dir(scopes[indices[0]]) if gates_dir is not None else None
        if directory is None:
            continue
        from .quick import is_clean, load_gates, save_gates

        gates = load_gates(directory)
        if gates is None:
            save_gates(directory)  # for the next run (this one imports the engine anyway)
            continue
        for index in indices:
            data = _read_regular(candidates[index].path)
            if data and is_clean(data, gates):
                fixes[index] = FileFix(Report(displays[index]))
        groups[id(scopes[indices[0]])] = [i for i in indices if fixes[i] is None]
    for indices in groups.values():
        if not indices:
            continue
        settings = scopes[indices[0]].settings
        if budget is not None and budget.enabled:
            from .budget import check_within_budget

            done = check_within_budget([(candidates[i].path, displays[i]) for i in indices], settings, max(1, jobs),
                                       budget, functools.partial(fix_path, unsafe=unsafe, plain=True))
            for index, item in zip(indices, done):
                fixes[index] = item if isinstance(item, FileFix) else FileFix(item)  # type: ignore[arg-type]
        else:
            for index in indices:
                fixes[index] = fix_path(candidates[index].path, displays[index], settings, unsafe=unsafe)
    return [(scope, candidate, display, fix)
            for scope, candidate, display, fix in zip(scopes, candidates, displays, fixes) if fix is not None]

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

    from .fix_imports import remove_newly_unused_imports

    current = text
    applied = 0
    report = None
    for _ in range(MAX_FIX_ROUNDS):
        report = check_source(current, display, settings)
        edits = [edit for f in report.findings if applicable(f, unsafe) for edit in f.fix.edits]  # type: ignore[union-attr]
        if not edits:
            break
        updated, count = apply(current, edits)
        if updated == current or not _parses(updated):
            # A fix must never break the file: keep the last text that parsed.
            break
        current = updated
        applied += len([f for f in report.findings if applicable(f, unsafe)])
        report = None
    if current != text:
        # What the fixes left unused (an old name they replaced) goes too.
        from .fix_model import line_length_for

        tidy = remove_newly_unused_imports(text, current, line_length_for(display))
        if tidy != current:
            current, report = tidy, None
    if report is None:
        report = check_source(current, display, settings)
    return FixOutcome(text, current, applied, report)


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
