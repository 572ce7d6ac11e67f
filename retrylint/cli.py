"""Command line: ``retrylint check``, ``retrylint rule``, ``retrylint explain``.

Exit codes: 0 nothing found, 1 findings, 2 usage error, bad configuration or internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .config import Config, ConfigError, find_config, load_config
from .output import FORMATS, render, statistics, summary, text as text_output
from .runner import RunResult, run_scoped, run_stdin
from .streams import PipeSafeWriter

if TYPE_CHECKING:  # pragma: no cover
    from .resolver import Resolver

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
DEFAULT_CACHE = ".retrylint_cache"


class UsageError(Exception):
    pass


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs needs a whole number, not {value!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be at least 1, not {jobs}")
    return jobs


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a number of seconds, not {value!r}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"needs a number of seconds (0: no limit), not {value!r}")
    return seconds


def _megabytes(value: str) -> int:
    try:
        megabytes = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a whole number of megabytes, not {value!r}") from None
    if megabytes < 0:
        raise argparse.ArgumentTypeError(f"needs a whole number of megabytes (0: no limit), not {value!r}")
    return megabytes


def _codes(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _selectors(value: str) -> List[str]:
    """Rule selectors (codes, prefixes, names); an empty one is an error, as in ruff
    (``--select ''`` would otherwise select nothing and pass every file)."""
    codes = _codes(value)
    if not codes:
        raise argparse.ArgumentTypeError(f"unknown rule selector {value!r}: give a code, a prefix or a rule "
                                         "name (e.g. RTY202, RTY2, fixed-delay-retry)")
    return codes


class _MissingArgument(Exception):
    """A required argument is missing: raised instead of exiting, so that an unknown option that
    took its place (``retrylint --bogus``, ``retrylint explain --bogus``) is named instead."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        if message.startswith("the following arguments are required"):
            raise _MissingArgument(self, message)
        super().error(message)


def _unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> List[str]:
    """The options in ``argv`` that neither the top level nor the subcommand named knows
    (argparse's abbreviations, ``--sel`` for ``--select``, count as known)."""
    subparsers = parser._defaults.get("subparsers", {})  # set by build_parser
    known = [s for action in parser._actions for s in action.option_strings]
    unknown = []
    for token in argv:
        if token == "--":
            break
        if token in subparsers and not unknown:
            known += [s for action in subparsers[token]._actions for s in action.option_strings]
            continue
        if not token.startswith("-") or token == "-" or token.lstrip("-").replace(".", "", 1).isdigit():
            continue
        name = token.split("=", 1)[0]
        if name.startswith("--"):
            if not any(option.startswith(name) for option in known if option.startswith("--")):
                unknown.append(token)
        elif name[:2] not in known:
            unknown.append(token)
    return unknown


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="retrylint",
        description="Find retries that amplify outages: unbounded, immediate, fixed-delay, "
        "jitter-less or cap-less, retrying permanent errors.",
    )
    parser.add_argument("--version", action="version", version=f"retrylint {__version__}",
                        help="print retrylint's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    check = sub.add_parser("check", help="check files and directories (default: .)")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; - reads standard input")
    _common(check)
    check.add_argument("--select", type=_selectors, action="append", metavar="CODES",
                       help="only these codes, prefixes or rule names (comma-separated); replaces the "
                       "configuration's selection, its ignore list included")
    check.add_argument("--ignore", type=_selectors, action="append", default=[], metavar="CODES",
                       help="skip these codes/prefixes (added to the configuration's)")
    check.add_argument("--extend-select", type=_selectors, action="append", default=[], metavar="CODES",
                       help="add codes to the selection")
    check.add_argument("--exclude", type=_codes, action="append", metavar="PATTERNS",
                       help="folders and files to skip (comma-separated globs); replaces the configuration's "
                       "exclude")
    check.add_argument("--extend-exclude", type=_codes, action="append", default=[], metavar="PATTERNS",
                       help="more folders and files to skip, added to exclude")
    check.add_argument("--output-format", choices=FORMATS, default="text",
                       help="how to print findings: text (ruff's), json, sarif (SARIF 2.1.0) or github "
                       "(workflow annotations); default: text")
    check.add_argument("--output-file", "-o", metavar="FILE",
                       help="write the findings to FILE instead of standard output")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings or files over the budget per file")
    check.add_argument("--statistics", action="store_true", help="count findings per rule instead of listing them")
    check.add_argument("--show-settings", action="store_true",
                       help="print the configuration file and resolved settings for the first path, then exit")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="the name of the file read from standard input (its configuration applies)")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude patterns to paths named on the command line too")
    check.add_argument("--fix", action="store_true", help="apply safe fixes (and unsafe ones with --unsafe-fixes)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="also offer and apply fixes that need a chosen number or change the delays")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff instead of writing them (implies --fix)")
    check.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                       help="worker processes (default: the machine's CPU count; 1: no workers)")
    _budget_options(check)
    check.add_argument("--no-cache", action="store_true", help="analyse every file, neither read nor write the cache")
    check.add_argument("--cache-dir", metavar="DIR",
                       help=f"where to keep the results cache (default: {DEFAULT_CACHE} in the project root, "
                       "or $RETRYLINT_CACHE_DIR)")
    check.add_argument("--add-noqa", action="store_true", help="add `# noqa: RTYxxx` directives to every line with a finding")

    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?", help="a code (RTY202) or name (fixed-delay-retry)")
    rule.add_argument("--all", action="store_true", help="list every rule")

    explain = sub.add_parser("explain", help="print each retry site's policy and worst-case schedule")
    explain.add_argument("target", metavar="PATH[:LINE[:COL]]",
                         help="a file (or directory), optionally with a line (and column, as check prints them)")
    _common(explain, quiet="print the sites only: no notices, no \"no retry site found\"")
    explain.add_argument("--output-format", choices=("text", "json"), default="text",
                         help="text (default) or json")
    _budget_options(explain)
    parser.set_defaults(subparsers={"check": check, "rule": rule, "explain": explain})
    return parser


def _common(parser: argparse.ArgumentParser, quiet: str = "print findings only: no summary, no notices") -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="use this pyproject.toml / retrylint.toml for every file (default: the nearest one)")
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet)


def _budget_options(parser: argparse.ArgumentParser) -> None:
    """--file-timeout and --file-memory: the budget per file (``check``, its standard input and
    --add-noqa, ``explain``)."""
    from .budget import DEFAULT_MEMORY_MB, DEFAULT_SECONDS

    parser.add_argument("--file-timeout", type=_seconds, default=DEFAULT_SECONDS, metavar="SECONDS",
                        help=f"a file still being analysed after SECONDS is reported as \"could not be analysed\" (exit 1) "
                        f"(default: {DEFAULT_SECONDS:g}; 0: no limit)")
    parser.add_argument("--file-memory", type=_megabytes, default=DEFAULT_MEMORY_MB, metavar="MB",
                        help=f"a file whose analysis needs more than MB megabytes is reported as \"could not be "
                        f"analysed\" (default: {DEFAULT_MEMORY_MB}; 0: no limit; Linux only)")


def budget_of(args: argparse.Namespace):
    """The budget per file the command line asks for."""
    from .budget import Budget

    return Budget(args.file_timeout, args.file_memory)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args, extra = parser.parse_known_args(arguments)
    except _MissingArgument as missing:
        unknown = _unknown_options(parser, arguments)
        # ``retrylint --bogus``: the unknown option, not the COMMAND it left missing.
        argparse.ArgumentParser.error(missing.parser, f"unrecognized arguments: {' '.join(unknown)}" if unknown
                                      else missing.message)
        raise  # pragma: no cover - error() exits
    if extra:
        # Reported with the subcommand's usage (``retrylint check --bogus``), not the top level's.
        args.subparsers[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    out = PipeSafeWriter(sys.stdout)
    err = PipeSafeWriter(sys.stderr)  # `retrylint check 2>&1 | head -1` closes it too
    try:
        if args.command == "check":
            return cmd_check(args, out, err)
        if args.command == "rule":
            return cmd_rule(args, out, err)
        if args.command == "explain":
            from .explain import cmd_explain

            return cmd_explain(args, out, err)
    except (ConfigError, UsageError) as exc:
        err.write(f"retrylint: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.write("retrylint: interrupted\n")
        return EXIT_ERROR
    parser.error(f"unknown command {args.command!r}")
    return EXIT_ERROR


def load(args: argparse.Namespace, paths: Sequence[str]) -> Config:
    """The configuration for the first of ``paths`` (the nearest one), or ``--config``."""
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise UsageError(f"config file not found: {args.config}")
        return load_config(path)
    starts = [Path(p) for p in paths if p != "-"] or [Path.cwd()]
    first = starts[0] if starts[0].is_dir() else starts[0].parent
    found = find_config(first) or find_config(Path.cwd())
    return load_config(found) if found else Config()


def _flatten(groups: Optional[List[List[str]]]) -> Optional[List[str]]:
    if groups is None:
        return None
    return [code for group in groups for code in group]


def resolver_for(args: argparse.Namespace) -> "Resolver":
    """The configuration of every file: ``--config``, or the nearest one, with the command line on top."""
    from .resolver import Overrides, Resolver

    config_file = None
    if args.config:
        config_file = Path(args.config)
        if not config_file.is_file():
            raise UsageError(f"config file not found: {args.config}")
    overrides = Overrides(
        select=_flatten(args.select),
        ignore=_flatten(args.ignore) or [],
        extend_select=_flatten(args.extend_select) or [],
        exclude=_flatten(getattr(args, "exclude", None)),
        extend_exclude=_flatten(getattr(args, "extend_exclude", None)) or [],
    )
    resolver = Resolver(overrides, config_file)
    resolver.fallback()  # a broken configuration is an error even when no file is found
    return resolver


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    paths = list(args.paths) or ["."]
    resolver = resolver_for(args)
    if args.statistics and args.output_format not in ("text", "json"):
        raise UsageError("--statistics prints text or json, not " + args.output_format)
    if "-" in paths and len(paths) > 1:
        raise UsageError("'-' (standard input) cannot be combined with other paths")
    if args.stdin_filename and "-" not in paths:
        raise UsageError("--stdin-filename needs '-' as the path")
    if args.show_settings:
        from .show_settings import show_settings

        first = args.stdin_filename if paths == ["-"] and args.stdin_filename else paths[0]
        out.write(show_settings(resolver, first))
        return EXIT_CLEAN
    if args.add_noqa:
        from .add_noqa import cmd_add_noqa

        scope = resolver.fallback()
        return cmd_add_noqa(args, paths, scope.settings, scope.config, err, resolver=resolver)
    if args.output_file:
        return _to_output_file(args, paths, resolver, err)
    return _check(args, paths, resolver, out, err)


def _to_output_file(args: argparse.Namespace, paths: List[str], resolver, err: TextIO) -> int:
    try:
        # As ruff: missing folders on the way are created (``--output-file reports/ci/out.json``).
        Path(args.output_file).parent.mkdir(parents=True, exist_ok=True)
        handle = open(args.output_file, "w", encoding="utf-8", newline="")
    except OSError as exc:
        raise UsageError(f"cannot write --output-file {args.output_file}: {exc.strerror or exc}") from None
    with handle:
        return _check(args, paths, resolver, handle, err)


def _check(args: argparse.Namespace, paths: List[str], resolver, out: TextIO, err: TextIO) -> int:
    if paths == ["-"]:
        scope = resolver.for_file(Path(args.stdin_filename)) if args.stdin_filename else resolver.fallback()
        if args.force_exclude and args.stdin_filename and _stdin_excluded(args.stdin_filename, scope):
            # As ruff: an excluded file read from standard input is not checked (and --fix echoes it).
            if args.fix or args.diff:
                data = sys.stdin.buffer.read()
                if not args.diff:
                    out.write(data.decode("utf-8", "surrogateescape"))
            return EXIT_CLEAN
        if args.fix or args.diff:
            return _fix_stdin(args, scope.settings, scope.config, out, err)
        return report(_check_stdin(args, scope.settings, scope.config), args, out, err)
    from .discovery import PathNotFound, discover

    unreadable: List[Tuple[str, str]] = []
    fallback = resolver.fallback()
    try:
        candidates = discover(paths, fallback.settings, fallback.root, force_exclude=args.force_exclude,
                              resolver=resolver, errors=unreadable)
    except PathNotFound as exc:
        raise UsageError(f"path does not exist: {exc}") from None
    if not candidates and not unreadable:
        err.write("retrylint: warning: No Python files found under the given path(s)\n")
    if args.fix or args.diff:
        result = RunResult(errors=list(unreadable))
        code = _fix_files(candidates, args, resolver, out, err, result)
        if code is not None:
            return code
    else:
        result = run_scoped(candidates, resolver, jobs=args.jobs or os.cpu_count() or 1,
                            cache_for=lambda scope: _cache(args, scope.settings, scope.config),
                            budget=budget_of(args))
        result.errors[:0] = unreadable
    return report(result, args, out, err, fixed=result.fixed)


def _stdin_excluded(name: str, scope) -> bool:
    from .discovery import is_excluded

    return is_excluded(Path(name), tuple(scope.settings.exclude) + tuple(scope.settings.extend_exclude), scope.root)


def _cache(args: argparse.Namespace, settings, config: Config):
    if args.no_cache:
        return None
    from .cache import Cache

    directory = args.cache_dir or os.environ.get("RETRYLINT_CACHE_DIR") or config.root / DEFAULT_CACHE
    return Cache.open(Path(directory), settings)


def _fix_files(candidates, args: argparse.Namespace, resolver, out: TextIO, err: TextIO, result: RunResult) -> Optional[int]:
    """--fix / --diff: fix each file, then report what remains (ruff's behaviour).

    Returns the exit code for --diff; None when the caller reports ``result``."""
    import difflib

    from .runner import _collect, check_path, fix_files, note_noqa_codes, write_fixed

    fixed_total = 0
    changed = 0
    budget = budget_of(args)
    def gates_dir(scope) -> Optional[Path]:
        if args.no_cache:
            return None
        return Path(args.cache_dir or os.environ.get("RETRYLINT_CACHE_DIR") or scope.config.root / DEFAULT_CACHE)

    for scope, candidate, display, fix in fix_files(candidates, resolver, args.unsafe_fixes,
                                                    args.jobs or os.cpu_count() or 1, budget, gates_dir):
        settings, root = scope.settings, scope.root
        outcome = fix.outcome
        if outcome is None:  # unreadable, or over the budget: its report says so
            _collect(result, fix.report, settings, root)
            continue
        report_of_file = outcome.report
        if outcome.fixed != outcome.original:
            if args.diff:
                changed += 1
                fixed_total += outcome.applied
                out.writelines(difflib.unified_diff(
                    outcome.original.splitlines(keepends=True), outcome.fixed.splitlines(keepends=True),
                    fromfile=display, tofile=display,
                ))
            else:
                path = candidate.path
                try:
                    write_fixed(path, outcome.fixed, fix.encoding, fix.bom)
                except OSError as exc:
                    # Nothing was fixed: what the file holds is still what it held.
                    result.errors.append((display, f"cannot write the fixed file: {exc.strerror or exc}"))
                    report_of_file = check_path(path, display, settings)
                else:
                    changed += 1
                    fixed_total += outcome.applied
        _collect(result, report_of_file, settings, root)
        note_noqa_codes(result, display, outcome.fixed.encode("utf-8", "surrogatepass"), outcome.fixed)
    if args.diff:
        if not args.quiet:
            err.write(_would_apply(fixed_total, changed))
        if result.errors:
            for path, error in result.errors:
                err.write(f"retrylint: error: {path}: {error}\n")
            return EXIT_ERROR
        return EXIT_FINDINGS if changed else EXIT_CLEAN
    result.fixed = fixed_total
    return None


def _would_apply(fixes: int, files: int) -> str:
    return f"{fixes} fix{'es' if fixes != 1 else ''} would be applied to {files} file{'s' if files != 1 else ''}.\n"


def _fix_stdin(args: argparse.Namespace, settings, config: Config, out: TextIO, err: TextIO) -> int:
    """Fix standard input and print the fixed source (as ruff does); what remains goes to
    standard error, since standard output is the source."""
    from .runner import FixOutcome, _collect, fix_stdin_text, note_noqa_codes

    from .engine import SourceError, decode_source

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    try:
        text = decode_source(data)
    except SourceError as exc:
        err.write(f"retrylint: error: {name}: {exc}\n")
        out.write(data.decode("utf-8", "surrogateescape") if not args.diff else "")
        return EXIT_ERROR
    outcome = fix_stdin_text(text, name, settings, args.unsafe_fixes, budget_of(args))
    if not isinstance(outcome, FixOutcome):
        # Over the budget (its notice), or an internal error: the source goes out as it came in.
        if not args.diff:
            out.write(text)
        from .budget import over_budget

        if outcome.notice and (not args.quiet or over_budget(outcome.notice)):
            err.write(f"retrylint: warning: {name}: {outcome.notice}\n")
        if outcome.error:
            err.write(f"retrylint: error: {name}: {outcome.error}\n")
            return EXIT_ERROR
        return EXIT_FINDINGS if over_budget(outcome.notice) and not args.exit_zero else EXIT_CLEAN
    if args.diff:
        import difflib

        out.writelines(difflib.unified_diff(outcome.original.splitlines(keepends=True),
                                            outcome.fixed.splitlines(keepends=True), fromfile=name, tofile=name))
        changed = outcome.fixed != outcome.original
        if not args.quiet:
            err.write(_would_apply(outcome.applied if changed else 0, int(changed)))
        return EXIT_FINDINGS if changed else EXIT_CLEAN
    out.write(outcome.fixed)
    result = RunResult()
    _collect(result, outcome.report, settings, config.root)
    remaining = result.findings
    unsafe = bool(args.unsafe_fixes)
    err.write(text_output(remaining, unsafe))
    if not args.quiet:
        err.write(summary(remaining, unsafe, outcome.applied if outcome.fixed != outcome.original else 0))
    if not args.quiet:
        note_noqa_codes(result, name, outcome.fixed.encode("utf-8", "surrogatepass"), outcome.fixed)
        for path, warning in result.warnings:
            err.write(f"retrylint: warning: {path}: {warning}\n")
    for path, error in result.errors:
        err.write(f"retrylint: error: {path}: {error}\n")
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if remaining and not args.exit_zero else EXIT_CLEAN


def _check_stdin(args: argparse.Namespace, settings, config: Config) -> RunResult:
    from .engine import Finding, SourceError, decode_source
    from .model import Location
    from .rules import SyntaxErrorRule

    data = sys.stdin.buffer.read()
    name = args.stdin_filename or "-"
    try:
        text = decode_source(data)
    except SourceError as exc:
        result = RunResult()
        result.findings.append(
            Finding(SyntaxErrorRule.code, SyntaxErrorRule.name, str(exc), name, Location(1, 1, 1, 1), SyntaxErrorRule.url())
        )
        return result
    return run_stdin(text, name, settings, config.root, budget=budget_of(args))


def report(result: RunResult, args: argparse.Namespace, out: TextIO, err: TextIO, fixed: int = 0) -> int:
    findings = result.findings
    unsafe = bool(getattr(args, "unsafe_fixes", False))
    if args.statistics:
        out.write(statistics(findings, args.output_format, unsafe))
    else:
        if args.output_format == "json" and any(f.fix is not None for f in findings):
            from .runner import complete_fixes

            # fix.edits as --fix applies them: the import it leaves unused removed, CRLF kept.
            findings = complete_fixes(findings, result.sources)
        out.write(render(findings, args.output_format, unsafe))
    from .budget import over_budget

    # A file over the budget per file (--file-timeout, --file-memory) was never checked: it is
    # named even under -q, and the run exits 1 as for a finding (CI never goes green on it).
    unchecked = [(path, notice) for path, notice in result.notices if over_budget(notice)]
    for path, notice in result.notices:
        if not args.quiet or over_budget(notice):
            err.write(f"retrylint: warning: {path}: {notice}\n")
    if not args.quiet:
        for path, warning in result.warnings:
            err.write(f"retrylint: warning: {path}: {warning}\n")
        if args.output_format == "text" and not args.statistics:
            out.write(summary(findings, unsafe, fixed, len(unchecked), len({p for p, _ in result.errors})))
    for path, error in result.errors:
        err.write(f"retrylint: error: {path}: {error}\n")
    if not args.quiet and result.files:
        err.write(_counts(result))
    if result.errors:
        return EXIT_ERROR
    if (findings or unchecked) and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _counts(result: RunResult) -> str:
    """What happened to every file: a run never skips one silently."""
    unreadable = {f.path for f in result.findings if f.code == "RTY001"}
    with_findings = {f.path for f in result.findings} - unreadable
    plural = "s" if result.files != 1 else ""
    checked = {report.path for report in result.reports}
    failed = {path for path, _ in result.errors if path in checked}
    # What is not one of the files (a folder that cannot be read) is not counted among them.
    elsewhere = {path for path, _ in result.errors} - checked
    more = f" {len(elsewhere)} other path{'s' if len(elsewhere) != 1 else ''} failed." if elsewhere else ""
    return (
        f"Checked {result.files} file{plural}: {len(with_findings)} with findings, "
        f"{len(unreadable)} not parsed (RTY001), {len(result.notices)} could not be analysed, "
        f"{len(failed)} failed.{more}\n"
    )


def cmd_rule(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .rules import BY_CODE, BY_NAME, RULES

    if args.all:
        width = max(len(r.name) for r in RULES)
        for rule in RULES:
            out.write(f"{rule.code}  {rule.name:<{width}}  {rule.summary}\n")
        return EXIT_CLEAN
    if not args.code:
        raise UsageError("give a rule code (e.g. RTY202) or --all")
    rule = BY_CODE.get(args.code.upper()) or BY_NAME.get(args.code)
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}; `retrylint rule --all` lists them")
    out.write(f"# {rule.name} ({rule.code})\n\n{rule.docs()}\n")
    return EXIT_CLEAN
