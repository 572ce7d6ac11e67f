"""Check one source: read it, parse it with libcst, extract retry policies, judge them."""

from __future__ import annotations

import ast
import io
import re
import os
import stat
import symtable
import tokenize
import warnings
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Type

import libcst as cst

from .extract import extract_around, extract_dead_letters, extract_policies, triggers
from .extract.context import ModuleContext
from .extract.waits import find_sleepers
from .fixes import Fix, Fixer
from .model import Location, RetryPolicy
from .narrowing import Source, Trigger, active_triggers, narrow_source
from .noqa import parse_suppressions
from .rules import RULES, SyntaxErrorRule
from .rules.base import Rule
from .settings import Settings
from .program import Program
from .summaries import Summaries, summarise
from .records import Record, Report


# One definition of a finding and a file's report: the light ones in :mod:`retrylint.records`,
# which runs that never need libcst read without importing the engine.
Finding = Record
FileReport = Report


TRIGGERS = triggers()

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+", re.MULTILINE)


class SourceError(Exception):
    """The file cannot be turned into text (unreadable, binary, wrong encoding)."""


def decode_source(data: bytes) -> str:
    if b"\0" in data[:8192]:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise SourceError(f"contains a NUL byte (line {line}): Python cannot read it")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if not _COOKIE.search(b"\n".join(data.splitlines()[:2])):
            # No declaration: the file is simply not UTF-8; say where it breaks.
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                raise SourceError(f"cannot decode as utf-8: {bad.reason} at byte {bad.start}") from None
        raise SourceError(f"bad encoding declaration: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise SourceError(f"cannot decode as {encoding}: {reason}") from None


def check_path(path: Path, display: str, settings: Settings, want_policies: bool = False, narrowing: bool = True) -> FileReport:
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            # A FIFO would block the read forever, a device (``/dev/zero``) never end.
            return _unreadable(display, "not a regular file (a pipe, socket or device)")
        data = path.read_bytes()
    except IsADirectoryError:
        return _unreadable(display, "is a directory")
    except OSError as exc:
        return _unreadable(display, f"cannot read file: {exc.strerror or exc}")
    try:
        text = decode_source(data)
    except SourceError as exc:
        return _unreadable(display, str(exc))
    return check_source(text, display, settings, want_policies=want_policies, narrowing=narrowing, data=data, path=path)


def check_source(
    text: str,
    display: str,
    settings: Settings,
    want_policies: bool = False,
    rules: Optional[Sequence[Type[Rule]]] = None,
    narrowing: bool = True,
    data: Optional[bytes] = None,
    path: Optional[Path] = None,
) -> FileReport:
    """``path``: the file on disk, when there is one: other modules of its tree may then be
    read for values the file imports (standard input and the flake8 plugin see one file)."""
    report = FileReport(display)
    code: Optional[str] = text
    active = None
    tree: Optional[ast.Module] = None
    if narrowing:
        active = active_triggers(data if data is not None else text.encode("utf-8", "surrogatepass"), TRIGGERS)
        code, tree = _narrowed(text, active, report)
        if code is None:
            return report
    parsed = parse(code, display)
    if not isinstance(parsed, cst.Module) and code is not text:
        parsed = parse(text, display)  # never let narrowing be the reason a file fails
    if isinstance(parsed, Finding):
        report.findings.append(parsed)
        return report
    if isinstance(parsed, str):
        report.notice = parsed
        return report
    tree = tree if tree is not None else _whole_tree(text)
    program = Program(tree, display, path)
    try:
        ctx = ModuleContext(parsed, display, settings, sleepers=find_sleepers(parsed), summaries=_summaries(tree),
                            program=program)
        policies = extract_policies(ctx, active)
        policies = _with_origins(policies, ctx)
        dead_letters = extract_dead_letters(ctx, active)
        around = extract_around(ctx, policies, active)
    except RecursionError:
        report.notice = "could not analyse: the code is nested too deeply for the analysis"
        return report
    except Exception as exc:  # noqa: BLE001 - reported, the run goes on
        report.error = f"internal error: {type(exc).__name__}: {exc}"
        return report
    if want_policies:
        report.policies = policies
        report.dead_letters = dead_letters
    suppressions = parse_suppressions(text)
    enabled = settings.enabled
    fixer = Fixer(ctx)
    for rule_class in rules if rules is not None else RULES:
        if rule_class.code not in enabled or rule_class is SyntaxErrorRule:
            continue
        rule = rule_class()
        diagnostics = []
        for policy in policies:
            if policy.bound.never_retries:
                continue
            fix = None
            if policy.delay_strategy and rule_class.code in _STRATEGY_CODES:
                continue  # the schedule is judged where it is written (retrylint.extract.strategies)
            if policy.judged_at and rule_class.code != "RTY501":
                continue  # one policy built in one place: reported there once (extract.libraries.built)
            for index, diagnostic in enumerate(rule.check(policy, settings)):
                if index == 0:
                    fix = _fix(rule, policy, fixer)
                diagnostics.append((diagnostic, fix if index == 0 else None))
        diagnostics += [(d, None) for operation in dead_letters for d in rule.check_dead_letter(operation, settings)]
        diagnostics += [(d, None) for site in around for d in rule.check_around(site, settings)]
        for diagnostic, fix in diagnostics:
            if suppressions.suppresses(rule_class.code, diagnostic.noqa_lines):
                continue
            report.findings.append(
                Finding(rule_class.code, rule_class.name, diagnostic.message, display, diagnostic.location,
                        rule_class.url(), fix)
            )
    report.findings.sort(key=lambda f: (f.location.line, f.location.column, f.code))
    report.dependencies = tuple(sorted(program.dependencies.items()))
    return report


#: Judgments of a delay schedule: a retry using another module's strategy inherits them.
_STRATEGY_CODES = frozenset({"RTY203", "RTY204", "RTY504"})


def _with_origins(policies: List[RetryPolicy], ctx: ModuleContext) -> List[RetryPolicy]:
    """Each site, with the values it read from elsewhere in the program (for ``explain``)."""
    if not ctx.outside_values and not ctx.strategy_calls:
        return policies
    out = []
    for policy in policies:
        anchor = policy.anchor
        origins = tuple(dict.fromkeys(
            (f"`{ctx.code(use)}`: {value.shown}, {value.path}:{value.line}" if value.shown else
             f"`{ctx.code(use)}` = {value.text}: {value.origin}, {value.path}:{value.line}")
            for use, value in ctx.outside_values
            if anchor is not None and (ctx.home(use) is anchor or ctx.is_inside(ctx.home(use), anchor))
        ))
        strategy = next((where for call, where in ctx.strategy_calls.items()
                         if anchor is not None and ctx.is_inside(call, anchor)), "")
        if strategy and policy.delay.grows_exponentially:
            policy = policy.with_(delay_strategy=strategy)
        out.append(policy.with_(origins=origins) if origins else policy)
    return out


def _whole_tree(text: str) -> Optional[ast.Module]:
    try:
        return _ast_parse(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None


def _summaries(tree: Optional[ast.Module]) -> Summaries:
    """Facts about the module's functions, from the whole file (narrowing blanks helpers)."""
    if tree is None:
        return Summaries.EMPTY
    try:
        return summarise(tree)
    except RecursionError:
        return Summaries.EMPTY


def _narrowed(text: str, active: List[Trigger], report: FileReport) -> Tuple[Optional[str], Optional[ast.Module]]:
    """The code libcst must see (see :mod:`retrylint.narrowing`), and the file's ``ast``;
    no code when the file is done.

    The standard ``ast`` is the syntax check of every file. When it refuses the file, libcst
    decides (it reads 3.12+ syntax on older Pythons) on the whole text.
    """
    if not active and _compiles(text):
        return None, None  # nothing to analyse, and the syntax is sound
    try:
        tree = _ast_parse(text)
    except SyntaxError as error:
        if "too many nested" in (error.msg or ""):
            # Past CPython's own limit; libcst's native parser would overflow the C stack.
            report.findings.append(_syntax_error(report.path, error))
            return None, None
        if active:
            return text, None
        parsed = parse(text, report.path)
        if isinstance(parsed, Finding):
            report.findings.append(parsed)
        elif isinstance(parsed, str):
            report.notice = parsed
        return None, None
    except (RecursionError, MemoryError) as exc:
        # Python itself cannot compile it (and libcst would take minutes to fail the same way).
        report.notice = f"could not analyse: the file is nested too deeply for Python's parser ({type(exc).__name__})"
        return None, None
    if not active:
        return None, None
    try:
        return narrow_source(Source(text, tree), active), tree
    except RecursionError:
        return text, tree  # too deep to narrow (a long elif chain): libcst reads it all, or says why


def _fix(rule: Rule, policy: RetryPolicy, fixer: Fixer) -> Optional[Fix]:
    """A rule's fix; a fix that fails to build is dropped, never a crash."""
    try:
        return rule.fix(policy, fixer)
    except Exception:  # noqa: BLE001 - a missing fix is better than a failed run
        return None


def parse(text: str, display: str):
    """A libcst Module; an RTY001 Finding for a real syntax error; a notice string otherwise."""
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        libcst_reason = exc.message
        error: Optional[SyntaxError] = None
        try:
            _ast_parse(text)
        except SyntaxError as syntax:
            error = syntax
        except (RecursionError, MemoryError, ValueError):
            pass
        if error is None:
            # The reference parser accepts it: a limit of libcst, not the user's mistake.
            return f"could not analyse: libcst cannot parse this file ({libcst_reason.strip()}, line {exc.raw_line})"
        if error.lineno:
            return _syntax_error(display, error)
        line, column = exc.raw_line or 1, exc.raw_column + 1
        return _rty001(display, f"SyntaxError: {error.msg}", Location(line, column, line, column))
    except RecursionError:
        return "could not analyse: the file is nested too deeply for libcst (RecursionError)"


def _ast_parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings are the compiler's business, not ours
        return ast.parse(text)


def _compiles(text: str) -> bool:
    """The syntax check alone: CPython's parser and symbol table without building the
    ``ast`` objects (a third cheaper). On any failure the caller asks ``ast`` again, so
    what counts as an error, and its message, stay those of ``ast.parse``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, "<file>", "exec")
        return True
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError: ast decides
        return False


def _syntax_error(display: str, error: SyntaxError) -> Finding:
    line, column = error.lineno or 1, error.offset or 1
    return _rty001(display, f"SyntaxError: {error.msg}", Location(line, column, line, column))


def _unreadable(display: str, message: str) -> FileReport:
    return FileReport(display, findings=[_rty001(display, message, Location(1, 1, 1, 1))])


def _rty001(display: str, message: str, location: Location) -> Finding:
    return Finding(SyntaxErrorRule.code, SyntaxErrorRule.name, message, display, location, SyntaxErrorRule.url())


def settings_with(codes: Tuple[str, ...], base: Optional[Settings] = None) -> Settings:
    """Settings that enable exactly ``codes`` (for tests and rule examples)."""
    from dataclasses import replace

    return replace(base or Settings(), enabled=frozenset(codes))
