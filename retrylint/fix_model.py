"""What a fix is, as data: text edits and their safety, and how edits are applied to a text.

Kept apart from :mod:`retrylint.fixes` (which builds edits from libcst nodes) so that cached
reports and the post-fix import tidying need no libcst.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence, Tuple

SAFE = "safe"
UNSAFE = "unsafe"

#: ruff format's default line length: a fix that would make a line longer splits the call as
#: ruff format would, so that a formatted file stays formatted. A project's own ``line-length``
#: (``[tool.ruff]`` of the nearest ``pyproject.toml``, or ``ruff.toml`` / ``.ruff.toml``, found
#: as ruff finds it) takes its place: :func:`line_length_for`.
LINE_LENGTH = 88


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, column) to (end_line, end_column) — 1-based, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True)
class Fix:
    safety: str
    message: str
    edits: Tuple[Edit, ...]


def newline_of(text: str) -> str:
    """The file's line ending (its first one): what inserted lines must use (CRLF stays CRLF)."""
    for index, char in enumerate(text):
        if char == "\r":
            return "\r\n" if text[index + 1:index + 2] == "\n" else "\r"
        if char == "\n":
            return "\n"
    return "\n"


def apply(text: str, edits: Sequence[Edit]) -> Tuple[str, int]:
    """Apply non-overlapping edits (later ones that overlap an earlier one are skipped). Line
    breaks in an edit's content are written as the file's own (``\r\n`` in a CRLF file)."""
    newline = newline_of(text)
    if newline != "\n":
        edits = [replace_content(e, e.content.replace("\n", newline)) for e in edits]
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        if line - 1 >= len(lines):
            return len(text)
        return starts[line - 1] + column - 1

    spans = []
    for edit in edits:
        spans.append((offset(edit.line, edit.column), offset(edit.end_line, edit.end_column), edit.content))
    spans.sort(key=lambda s: (s[0], s[1]))
    kept = []
    last_end = -1
    for start, end, content in spans:
        if start < last_end:
            continue
        kept.append((start, end, content))
        last_end = max(end, start + 1 if start == end else end)
    out = text
    for start, end, content in reversed(kept):
        out = out[:start] + content + out[end:]
    return out, len(kept)


def replace_content(edit: Edit, content: str) -> Edit:
    return Edit(edit.line, edit.column, edit.end_line, edit.end_column, content)


def text_edits(before: str, after: str) -> Tuple[Edit, ...]:
    """Edits, in ``before``'s coordinates, that turn ``before`` into ``after``: one per changed
    run of lines, trimmed to what differs (a changed argument stays a small edit)."""
    import difflib

    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old = "".join(old_lines[i1:i2])
        new = "".join(new_lines[j1:j2])
        prefix = 0
        while prefix < len(old) and prefix < len(new) and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while (suffix < len(old) - prefix and suffix < len(new) - prefix
               and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]):
            suffix += 1
        start = _position(old_lines, i1, prefix)
        end = _position(old_lines, i1, len(old) - suffix)
        edits.append(Edit(start[0], start[1], end[0], end[1], new[prefix:len(new) - suffix]))
    return tuple(edits)


def _position(lines: Sequence[str], first: int, offset: int) -> Tuple[int, int]:
    """(line, column), 1-based, of ``offset`` characters into the text from line ``first`` (0-based)."""
    index = first
    while index < len(lines) and offset >= len(lines[index]):
        offset -= len(lines[index])
        index += 1
        if offset == 0:
            return index + 1, 1
    return index + 1, offset + 1


def complete_fix(text: str, fix: Fix, line_length: int = LINE_LENGTH) -> Fix:
    """The fix as ``--fix`` applies it to ``text`` on its own: its edits with the file's line
    endings, plus the removal of an import it leaves unused (``wait_exponential`` once the call
    is ``wait_random_exponential``), all in ``text``'s coordinates, for ``--output-format json``."""
    from .fix_imports import remove_newly_unused_imports

    fixed, _ = apply(text, fix.edits)
    if fixed == text:
        return fix
    tidy = remove_newly_unused_imports(text, fixed, line_length)
    return Fix(fix.safety, fix.message, text_edits(text, tidy))


def line_length_for(display: str) -> int:
    """ruff's ``line-length`` for the file shown as ``display`` (relative to the current
    directory, as the CLI shows it; standard input: the current directory): from the nearest
    ``.ruff.toml``, ``ruff.toml``, or ``pyproject.toml`` with a ``[tool.ruff]`` table, as ruff
    finds its configuration; 88 when there is none or it sets no length."""
    import os

    if display in ("-", "stdin", "<stdin>", ""):
        directory = os.getcwd()
    else:
        directory = os.path.dirname(os.path.abspath(display))
    return _line_length_in(directory)


@functools.lru_cache(maxsize=256)
def _line_length_in(directory: str) -> int:
    from pathlib import Path

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    folder = Path(directory)
    for candidate in (folder, *folder.parents):
        for name in (".ruff.toml", "ruff.toml", "pyproject.toml"):
            path = candidate / name
            try:
                if not path.is_file():
                    continue
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # ruff reports a broken configuration; the fix keeps the default
            table = data.get("tool", {}).get("ruff") if name == "pyproject.toml" else data
            if not isinstance(table, dict):
                continue  # a pyproject.toml without [tool.ruff] is not ruff's configuration
            value = table.get("line-length")
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 320:
                return value
            return LINE_LENGTH
    return LINE_LENGTH
