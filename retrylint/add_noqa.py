"""``retrylint check --add-noqa``: silence every current finding with a ``# noqa: RTYxxx`` comment
(ruff's ``--add-noqa``), e.g. to adopt retrylint on an existing code base and fix later.

Each directive goes on the line the finding is reported on, or, when that line ends inside a
string or continues with a backslash, at the end of that run of lines (where ``tokenize`` puts
the NEWLINE/NL token: the one place a comment is legal, and the line flake8's noqa also reads).
An existing ``# noqa: CODES`` comment is merged (its codes first, in their order, no duplicates);
a bare ``# noqa`` already suppresses everything and is left alone. Files with an RTY001 (syntax
error, unreadable, undecodable) are never touched. Encoding, BOM and line endings are kept.
"""

from __future__ import annotations

import argparse
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, TextIO, Tuple

from .config import Config
from .engine import Finding, check_source
from .noqa import _CODE, invalid, line_directive
from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from .resolver import Resolver

_EOL = re.compile(r"(\r\n|\r|\n)\Z")


@dataclass
class NoqaOutcome:
    original: str
    text: str
    #: lines that got a new or extended ``# noqa`` directive
    added: int = 0
    #: findings that a directive could not silence (never expected; reported, not hidden)
    unsilenced: List[Finding] = field(default_factory=list)
    #: the engine's internal error, when it had one
    error: Optional[str] = None


def cmd_add_noqa(args: argparse.Namespace, paths: Sequence[str], settings: Settings, config: Config,
                 err: TextIO, resolver: "Optional[Resolver]" = None) -> int:
    """``retrylint check --add-noqa PATHS``: rewrite the files, print ``Added N noqa directives.``

    With a ``resolver``, each file gets its own (nearest) configuration, as ``check`` gives it."""
    import functools
    import os

    from .budget import run_each
    from .cli import EXIT_CLEAN, EXIT_ERROR, UsageError, budget_of
    from .discovery import PathNotFound, discover
    from .runner import display_path, write_fixed

    if "-" in paths:
        raise UsageError("--add-noqa rewrites files: it cannot read standard input")
    if args.fix or args.diff:
        raise UsageError("--add-noqa cannot be combined with --fix or --diff")
    unreadable: List[Tuple[str, str]] = []
    try:
        candidates = discover(paths, settings, config.root, force_exclude=args.force_exclude,
                              resolver=resolver, errors=unreadable)
    except PathNotFound as exc:
        raise UsageError(f"path does not exist: {exc}") from None
    for path, reason in unreadable:
        err.write(f"retrylint: error: {path}: {reason}\n")
    failed = bool(unreadable)
    if not candidates and not unreadable:
        err.write("retrylint: warning: No Python files found under the given path(s)\n")
    total = 0
    # Each file's directives, worked out within the budget per file (as ``check`` analyses it),
    # with its own configuration: files that share one are done together.
    displays = [display_path(c.path) for c in candidates]
    scopes = [resolver.for_file(c.path) if resolver is not None else None for c in candidates]
    groups: Dict[int, List[int]] = {}
    for index, scope in enumerate(scopes):
        groups.setdefault(id(scope), []).append(index)
    done: List[object] = [None] * len(candidates)
    budget, jobs = budget_of(args), args.jobs or os.cpu_count() or 1
    for indices in groups.values():
        scope = scopes[indices[0]]
        group_settings, root = (scope.settings, scope.root) if scope is not None else (settings, config.root)
        work = [(candidates[i].path, displays[i]) for i in indices]
        for index, item in zip(indices, run_each(work, group_settings, jobs, budget,  # type: ignore[arg-type]
                                                 functools.partial(noqa_path, root=root))):
            done[index] = item
    for candidate, display, item in zip(candidates, displays, done):
        if not isinstance(item, NoqaFile):  # over the budget (its notice) or an internal error
            if getattr(item, "notice", None) and not args.quiet:
                err.write(f"retrylint: warning: {display}: {item.notice}\n")
            if getattr(item, "error", None):
                err.write(f"retrylint: error: {display}: {item.error}\n")
                failed = True
            continue
        outcome = item.outcome
        if outcome is None:
            continue  # an RTY001 file: nothing to add a directive to
        if outcome.error:
            err.write(f"retrylint: error: {display}: {outcome.error}\n")
            failed = True
        for finding in outcome.unsilenced:
            err.write(f"retrylint: warning: {display}:{finding.location.line}: could not add a noqa "
                      f"directive that silences {finding.code}\n")
        if outcome.text != outcome.original:
            try:
                write_fixed(candidate.path, outcome.text, item.encoding, item.bom)
            except OSError as exc:
                err.write(f"retrylint: error: {display}: cannot write the noqa directives: {exc.strerror or exc}\n")
                failed = True
                continue
            total += outcome.added
    if not args.quiet:
        err.write(f"Added {total} noqa directive{'' if total == 1 else 's'}.\n")
    return EXIT_ERROR if failed else EXIT_CLEAN


@dataclass
class NoqaFile:
    """--add-noqa on one file, worked out (not written): the outcome (None: the file cannot be
    read, an RTY001 file) and how to write the file back."""

    outcome: Optional[NoqaOutcome]
    encoding: str = "utf-8"
    bom: bool = False


def noqa_path(path: Path, display: str, settings: Settings, want_policies: bool = False,
              root: Optional[Path] = None) -> object:
    """A file's directives (in a budget worker, or here): a NoqaFile, or a Report with an internal
    error; never an exception, and nothing the main process needs the engine to read."""
    from .records import Record, Report
    from .runner import ignored_codes, read_for_fix

    try:
        text, encoding, bom = read_for_fix(path)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return NoqaFile(None)
    try:
        outcome = add_noqa_to_source(text, display, settings,
                                     ignored_codes(display, settings, root if root is not None else Path.cwd()))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - one file never stops the run
        return Report(display, error=f"internal error: {type(exc).__name__}: {exc}")
    outcome.unsilenced = [Record(f.code, f.name, f.message, f.path, f.location, f.url) for f in outcome.unsilenced]
    return NoqaFile(outcome, encoding, bom)


def add_noqa_to_source(text: str, display: str, settings: Settings, ignored: frozenset = frozenset()) -> NoqaOutcome:
    """``text`` with a ``# noqa`` directive for each finding ``retrylint check`` reports in it."""
    outcome = NoqaOutcome(text, text)
    findings = _reported(check_source(text, display, settings), ignored, outcome)
    if not findings or outcome.error:
        return outcome
    try:
        lines, ends = comment_lines(text)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        outcome.unsilenced = findings
        return outcome
    wanted: Dict[int, Set[str]] = {}
    for finding in findings:
        wanted.setdefault(ends.get(finding.location.line, finding.location.line), set()).add(finding.code)
    outcome.text = _apply(text, lines, wanted)
    # Check the result: whatever a directive does not silence is reported, never hidden.
    outcome.unsilenced = _reported(check_source(outcome.text, display, settings), ignored, outcome)
    outcome.added = sum(1 for old, new in zip(lines, io.StringIO(outcome.text, newline="").readlines()) if old != new)
    return outcome


def _reported(report, ignored: frozenset, outcome: NoqaOutcome) -> List[Finding]:
    if report.error:
        outcome.error = report.error
    if any(f.code == "RTY001" for f in report.findings):
        return []  # never touch a file that does not parse
    return [f for f in report.findings if f.code not in ignored]


def comment_lines(text: str) -> Tuple[List[str], Dict[int, int]]:
    """The physical lines of ``text`` (endings kept) and, for each line, the line where a comment
    for it can go: the line itself, or the last line of the multi-line string / backslash
    continuation it is part of (flake8 reads a noqa for any of those lines from there too)."""
    lines = io.StringIO(text, newline="").readlines()
    ends: Dict[int, int] = {}
    start: Optional[int] = None
    for token in tokenize.generate_tokens(iter(lines).__next__):
        if token.type in (tokenize.ENDMARKER, tokenize.DEDENT, tokenize.INDENT):
            continue
        if start is None:
            start = token.start[0]
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            end = token.start[0]
            for number in range(start, end + 1):
                ends[number] = end
            start = None
    return lines, ends


def _apply(text: str, lines: List[str], wanted: Dict[int, Set[str]]) -> str:
    """``lines`` with the directives in ``wanted`` (line → codes) added or merged."""
    comments = _comments(text)
    out = list(lines)
    for number, codes in wanted.items():
        if not 1 <= number <= len(out):
            continue
        out[number - 1] = _with_directive(out[number - 1], comments.get(number), sorted(codes))
    return "".join(out)


def _comments(text: str) -> Dict[int, Tuple[int, str]]:
    """line → (column, text) of the comment token that ends the line."""
    found: Dict[int, Tuple[int, str]] = {}
    lines = io.StringIO(text, newline="").readlines()
    for token in tokenize.generate_tokens(iter(lines).__next__):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = (token.start[1], token.string)
    return found


def _with_directive(line: str, comment: Optional[Tuple[int, str]], codes: List[str]) -> str:
    match = _EOL.search(line)
    eol = match.group(1) if match else ""
    body = line[: len(line) - len(eol)]
    if comment is not None:
        column, string = comment
        directive = line_directive(string)
        if directive is not None and invalid(directive):
            # ``# noqa: fixed-delay-retry`` suppresses nothing: a valid directive goes after it (as
            # ruff's --add-noqa does), the user's text stays.
            return body.rstrip(" \t") + "  # noqa: " + ", ".join(codes) + eol
        if directive is not None:
            if directive.group("codes") is None:
                return line  # a bare ``# noqa`` already suppresses every code
            existing: List[str] = []
            for code in _CODE.findall(directive.group("codes")):
                if code.upper() not in (c.upper() for c in existing):
                    existing.append(code)
            merged = existing + [c for c in codes if c.upper() not in (e.upper() for e in existing)]
            if merged == existing:
                return line
            start, end = column + directive.start(), column + directive.end()
            return body[:start] + "# noqa: " + ", ".join(merged) + body[end:] + eol
    return body.rstrip(" \t") + "  # noqa: " + ", ".join(codes) + eol
