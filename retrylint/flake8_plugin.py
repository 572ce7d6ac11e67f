"""A flake8 plugin: ``flake8 --select RTY`` reports retrylint's findings.

Registered as the ``RTY`` ``flake8.extension`` entry point. flake8 stays optional: this module
imports nothing from flake8. The plugin runs retrylint's own engine on the file's text, with the
settings that ``retrylint check`` would use for that file (the nearest ``[tool.retrylint]``,
``retrylint.toml`` …, else the defaults), ``per-file-ignores`` included.

``# noqa``: the engine drops findings that retrylint's own comments suppress (also a comment on a
loop's header, and ``# retrylint: noqa`` for a whole file), exactly as ``retrylint check`` does;
flake8's own inline ``# noqa`` is not applied again to RTY findings, because flake8 matches codes
by prefix (``# noqa: RTY20`` would silence RTY202) and reads ``# noqa: RTY`` or
``# noqa: fixed-delay-retry`` as a blanket noqa, where retrylint (as ruff) warns and silences
nothing. ``# flake8: noqa`` (the whole file) is flake8's and still applies. Under flake8's
``--disable-noqa`` the engine sees the file with its noqa comments blanked out, so nothing is
hidden.

RTY001: flake8 runs tree plugins only on files that parse, and reports a syntax error itself as
E999, so RTY001 syntax errors are never yielded here.
"""

from __future__ import annotations

import argparse
import io
import sys
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, List, Sequence, Tuple

from . import __version__
from .engine import check_source
from .noqa import _FILE, _LINE
from .noqa_codes import noqa_code_warnings
from .settings import Settings

Result = Tuple[int, int, str, type]

#: flake8 names the file read from standard input so (unless --stdin-display-name says otherwise).
_STDIN_NAMES = ("stdin", "-")


class RetrylintChecker:
    """flake8 tree plugin: yields ``(line, column0, "RTYxxx message", type)``."""

    name = "retrylint"
    version = __version__

    #: flake8's --disable-noqa (set by parse_options).
    disable_noqa = False

    def __init__(self, tree: Any, filename: str, lines: Sequence[str]) -> None:
        # ``tree`` makes this a tree plugin (run once per file that parses); the engine parses
        # the text itself, with libcst.
        self.filename = filename
        self.lines = lines
        # Loaded here, not in run(): flake8 turns an exception raised while building the plugin
        # into a clean 'failed during execution due to ConfigError(...)' message (exit 1).
        directory = None if filename in _STDIN_NAMES else str(Path(filename).absolute().parent)
        self.settings, self.root = _settings_for(directory, str(Path.cwd()))

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        _leave_rty_noqa_to_the_engine()

    def run(self) -> Iterator[Result]:
        text = "".join(self.lines)
        if not self.disable_noqa:
            for line, message in noqa_code_warnings(text.encode("utf-8", "surrogatepass"), text):
                sys.stderr.write(f"retrylint: warning: {self.filename}:{line}: {message}\n")
        if self.disable_noqa:
            text = blank_noqa_comments(text)
        report = check_source(text, self.filename, self.settings)
        for problem in (report.notice, report.error):
            if problem:
                sys.stderr.write(f"retrylint: warning: {self.filename}: {problem}\n")
        ignored = _ignored_codes(self.filename, self.settings, self.root)
        for finding in report.findings:
            if finding.code == "RTY001" or finding.code in ignored:
                continue
            yield (finding.location.line, max(finding.location.column - 1, 0),
                   f"{finding.code} {finding.message}", type(self))


def _is_rty(code: str) -> bool:
    return code.startswith("RTY") and code[3:].isdigit()


def _leave_rty_noqa_to_the_engine() -> None:
    """flake8 decides inline ``# noqa`` in its main process (``Violation.is_inline_ignored``), by
    prefix and with ``# noqa: RTY`` as a blanket: for RTY codes the engine has already applied
    retrylint's own reading (exact codes; an invalid directive silences nothing), so flake8's is
    skipped for them, and ``# noqa: RTY20`` gives the same result under both front-ends. Every
    other plugin's codes keep flake8's behaviour."""
    try:
        from flake8.violation import Violation
    except ImportError:  # pragma: no cover - another flake8 layout: flake8's noqa applies
        return
    original = Violation.is_inline_ignored
    if getattr(original, "_retrylint", False):
        return

    def is_inline_ignored(self: Any, disable_noqa: bool) -> bool:
        if _is_rty(getattr(self, "code", "")):
            return False
        return original(self, disable_noqa)

    is_inline_ignored._retrylint = True  # type: ignore[attr-defined]
    Violation.is_inline_ignored = is_inline_ignored  # type: ignore[method-assign]


@lru_cache(maxsize=None)
def _settings_for(directory: "str | None", cwd: str) -> Tuple[Settings, Path]:
    """The settings ``retrylint check FILE`` uses for a file in ``directory`` (run from ``cwd``),
    and the project root that per-file-ignores are relative to. Cached per directory: flake8
    calls the plugin once per file. A broken configuration is an error, never ignored."""
    from .cli import load
    from .config import resolve

    config = load(argparse.Namespace(config=None), [directory] if directory else [])
    return resolve(config), config.root


def _ignored_codes(filename: str, settings: Settings, root: Path) -> frozenset:
    from .runner import ignored_codes

    return ignored_codes(filename, settings, root)


def blank_noqa_comments(text: str) -> str:
    """``text`` with every retrylint noqa comment (``# noqa…``, ``# retrylint: noqa…``) replaced
    by a comment of blanks of the same length: positions and the syntax tree stay the same."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    lines: List[str] = io.StringIO(text).readlines()
    for token in tokens:
        if token.type != tokenize.COMMENT or not (_LINE.search(token.string) or _FILE.search(token.string)):
            continue
        row, start = token.start
        line = lines[row - 1]
        end = start + len(token.string)
        lines[row - 1] = line[:start] + "#" + " " * (len(token.string) - 1) + line[end:]
    return "".join(lines)
