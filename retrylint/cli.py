"""Command line: ``retrylint check``, ``retrylint rule``, ``retrylint explain``.

Exit codes: 0 nothing found, 1 findings, 2 usage error, bad configuration or internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, TextIO

from . import __version__
from .config import Config, ConfigError, find_config, load_config, resolve
from .discovery import PathNotFound, discover
from .engine import Finding, SourceError, decode_source
from .model import Location
from .output import FORMATS, render, statistics, summary
from .rules import BY_CODE, BY_NAME, RULES, SyntaxErrorRule
from .runner import RunResult, run_files, run_stdin

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


def _codes(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="retrylint",
        description="Find retries that amplify outages: unbounded, immediate, fixed-delay, "
        "jitter-less or cap-less, retrying permanent errors.",
    )
    parser.add_argument("--version", action="version", version=f"retrylint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    check = sub.add_parser("check", help="check files and directories (default: .)")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or directories; - reads standard input")
    _common(check)
    check.add_argument("--select", type=_codes, action="append", metavar="CODES", help="only these codes/prefixes (comma-separated)")
    check.add_argument("--ignore", type=_codes, action="append", default=[], metavar="CODES", help="skip these codes/prefixes")
    check.add_argument("--extend-select", type=_codes, action="append", default=[], metavar="CODES", help="add codes to the selection")
    check.add_argument("--output-format", choices=FORMATS, default="text")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--statistics", action="store_true", help="count findings per rule instead of listing them")
    check.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from standard input")
    check.add_argument("--force-exclude", action="store_true", help="apply exclude patterns to paths named on the command line too")
    check.add_argument("--fix", action="store_true", help="apply safe fixes (and unsafe ones with --unsafe-fixes)")
    check.add_argument("--unsafe-fixes", action="store_true", help="also offer and apply fixes that need a chosen number")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff instead of writing them (implies --fix)")
    check.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                       help="worker processes (default: the machine's CPU count; 1: no workers)")
    check.add_argument("--no-cache", action="store_true", help="analyse every file, neither read nor write the cache")
    check.add_argument("--cache-dir", metavar="DIR",
                       help=f"where to keep the results cache (default: {DEFAULT_CACHE} in the project root, "
                       "or $RETRYLINT_CACHE_DIR)")
    check.add_argument("--add-noqa", action="store_true", help="add `# noqa: RTYxxx` directives to every line with a finding")

    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", nargs="?", help="a code (RTY202) or name (fixed-delay-retry)")
    rule.add_argument("--all", action="store_true", help="list every rule")

    explain = sub.add_parser("explain", help="print each retry site's policy and worst-case schedule")
    explain.add_argument("target", metavar="PATH[:LINE]", help="a file (or directory), optionally with a line")
    _common(explain, quiet="print the sites only: no notices, no \"no retry site found\"")
    explain.add_argument("--output-format", choices=("text", "json"), default="text")
    return parser


def _common(parser: argparse.ArgumentParser, quiet: str = "print findings only: no summary, no notices") -> None:
    parser.add_argument("--config", metavar="FILE", help="use this pyproject.toml / retrylint.toml")
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return cmd_check(args, sys.stdout, sys.stderr)
        if args.command == "rule":
            return cmd_rule(args, sys.stdout, sys.stderr)
        if args.command == "explain":
            from .explain import cmd_explain

            return cmd_explain(args, sys.stdout, sys.stderr)
    except (ConfigError, UsageError) as exc:
        print(f"retrylint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("retrylint: interrupted", file=sys.stderr)
        return EXIT_ERROR
    parser.error(f"unknown command {args.command!r}")
    return EXIT_ERROR


def load(args: argparse.Namespace, paths: Sequence[str]) -> Config:
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


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    paths = list(args.paths) or ["."]
    config = load(args, paths)
    settings = resolve(
        config,
        select=_flatten(args.select),
        ignore=_flatten(args.ignore) or [],
        extend_select=_flatten(args.extend_select) or [],
    )
    if args.add_noqa:
        from .add_noqa import cmd_add_noqa

        return cmd_add_noqa(args, paths, settings, config, err)
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("'-' (standard input) cannot be combined with other paths")
        if args.fix or args.diff:
            return _fix_stdin(args, settings, config, out, err)
        result = _check_stdin(args, settings, config)
    else:
        if args.stdin_filename:
            raise UsageError("--stdin-filename needs '-' as the path")
        try:
            candidates = discover(paths, settings, config.root, force_exclude=args.force_exclude)
        except PathNotFound as exc:
            raise UsageError(f"path does not exist: {exc}") from None
        if args.fix or args.diff:
            return _fix_files(candidates, args, settings, config, out, err)
        result = run_files(candidates, settings, config.root, jobs=args.jobs or os.cpu_count() or 1,
                           cache=_cache(args, settings, config))
    return report(result, args, out, err)


def _cache(args: argparse.Namespace, settings, config: Config):
    if args.no_cache:
        return None
    from .cache import Cache

    directory = args.cache_dir or os.environ.get("RETRYLINT_CACHE_DIR") or config.root / DEFAULT_CACHE
    return Cache.open(Path(directory), settings)


def _fix_files(candidates, args: argparse.Namespace, settings, config: Config, out: TextIO, err: TextIO) -> int:
    """--fix / --diff: fix each file, then report what remains (ruff's behaviour)."""
    import difflib

    from .runner import RunResult, _collect, display_path, fix_source, read_for_fix, write_fixed

    result = RunResult()
    fixed_total = 0
    changed = 0
    for candidate in candidates:
        display = display_path(candidate.path)
        try:
            text, encoding, bom = read_for_fix(candidate.path)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            from .runner import check_path

            _collect(result, check_path(candidate.path, display, settings), settings, config.root)
            continue
        outcome = fix_source(text, display, settings, args.unsafe_fixes)
        if outcome.fixed != outcome.original:
            changed += 1
            fixed_total += outcome.applied
            if args.diff:
                out.writelines(difflib.unified_diff(
                    outcome.original.splitlines(keepends=True), outcome.fixed.splitlines(keepends=True),
                    fromfile=display, tofile=display,
                ))
            else:
                write_fixed(candidate.path, outcome.fixed, encoding, bom)
        _collect(result, outcome.report, settings, config.root)
    if args.diff:
        if not args.quiet:
            err.write(_would_apply(fixed_total, changed))
        return EXIT_FINDINGS if changed else EXIT_CLEAN
    return report(result, args, out, err, fixed=fixed_total)


def _would_apply(fixes: int, files: int) -> str:
    return f"{fixes} fix{'es' if fixes != 1 else ''} would be applied to {files} file{'s' if files != 1 else ''}.\n"


def _fix_stdin(args: argparse.Namespace, settings, config: Config, out: TextIO, err: TextIO) -> int:
    """Fix standard input and print the fixed source (as ruff does)."""
    from .runner import fix_source

    name = args.stdin_filename or "-"
    try:
        text = decode_source(sys.stdin.buffer.read())
    except SourceError as exc:
        err.write(f"retrylint: error: {name}: {exc}\n")
        return EXIT_ERROR
    outcome = fix_source(text, name, settings, args.unsafe_fixes)
    if args.diff:
        import difflib

        out.writelines(difflib.unified_diff(outcome.original.splitlines(keepends=True),
                                            outcome.fixed.splitlines(keepends=True), fromfile=name, tofile=name))
        changed = outcome.fixed != outcome.original
        if not args.quiet:
            err.write(_would_apply(outcome.applied if changed else 0, int(changed)))
        return EXIT_FINDINGS if changed else EXIT_CLEAN
    out.write(outcome.fixed)
    return EXIT_FINDINGS if outcome.report.findings and not args.exit_zero else EXIT_CLEAN


def _check_stdin(args: argparse.Namespace, settings, config: Config) -> RunResult:
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
    return run_stdin(text, name, settings, config.root)


def report(result: RunResult, args: argparse.Namespace, out: TextIO, err: TextIO, fixed: int = 0) -> int:
    findings = result.findings
    unsafe = bool(getattr(args, "unsafe_fixes", False))
    if args.statistics:
        out.write(statistics(findings))
    else:
        out.write(render(findings, args.output_format, unsafe))
    if not args.quiet:
        for path, notice in result.notices:
            err.write(f"retrylint: warning: {path}: {notice}\n")
        if args.output_format == "text" and not args.statistics:
            out.write(summary(findings, unsafe, fixed))
    for path, error in result.errors:
        err.write(f"retrylint: error: {path}: {error}\n")
    if not args.quiet and result.files:
        err.write(_counts(result))
    if result.errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _counts(result: RunResult) -> str:
    """What happened to every file: a run never skips one silently."""
    unreadable = {f.path for f in result.findings if f.code == SyntaxErrorRule.code}
    with_findings = {f.path for f in result.findings} - unreadable
    plural = "s" if result.files != 1 else ""
    return (
        f"Checked {result.files} file{plural}: {len(with_findings)} with findings, "
        f"{len(unreadable)} not parsed (RTY001), {len(result.notices)} could not be analysed, "
        f"{len(result.errors)} failed.\n"
    )


def cmd_rule(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
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
