"""What a fix is, as data: text edits and their safety, and how edits are applied to a text.

Kept apart from :mod:`retrylint.fixes` (which builds edits from libcst nodes) so that cached
reports and the post-fix import tidying need no libcst.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

SAFE = "safe"
UNSAFE = "unsafe"


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
