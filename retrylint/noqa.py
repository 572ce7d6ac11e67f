"""``# noqa`` comments: on a line (``# noqa``, ``# noqa: RTY202, RTY203``) and per file
(``# retrylint: noqa``, ``# retrylint: noqa: RTY202``, also ``# ruff: noqa``-style placement)."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional

_LINE = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE = re.compile(
    r"#\s*retrylint\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_ANY = re.compile("noqa", re.IGNORECASE)

#: ``None`` in a set position means "every code".
ALL = None


@dataclass
class Suppressions:
    #: line → codes suppressed there (None: all codes)
    lines: Dict[int, Optional[FrozenSet[str]]] = field(default_factory=dict)
    #: codes suppressed in the whole file (None: all codes); empty set: none
    file: Optional[FrozenSet[str]] = frozenset()

    def suppresses(self, code: str, lines) -> bool:
        if self.file is None or code in (self.file or ()):
            return True
        for line in lines:
            if line in self.lines:
                codes = self.lines[line]
                if codes is None or code in codes:
                    return True
        return False


def _codes(text: Optional[str]) -> Optional[FrozenSet[str]]:
    if not text:
        return None
    return frozenset(c.upper() for c in _CODE.findall(text))


def parse_suppressions(source: str) -> Suppressions:
    """Read noqa comments from real comment tokens (a ``# noqa`` inside a string does not count).

    A line that ends inside a multi-line string or continues with a backslash cannot hold a
    comment: the comment at the end of that run of lines counts for each of its lines (as in
    flake8 and ruff, so that one ``# noqa`` works for retrylint and for its flake8 plugin)."""
    result = Suppressions()
    if not _ANY.search(source):
        return result  # no comment to read: tokenizing the file is most of the cost
    file_codes: Optional[FrozenSet[str]] = frozenset()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = []
    run_start: Optional[int] = None
    for token in tokens:
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            end = token.start[0]
            if run_start is not None and end in result.lines:
                for line in range(run_start, end):
                    result.lines.setdefault(line, result.lines[end])
            run_start = None
            continue
        if run_start is None and token.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            run_start = token.start[0]
        if token.type != tokenize.COMMENT:
            continue
        text = token.string
        file_match = _FILE.search(text)
        if file_match:
            codes = _codes(file_match.group("codes"))
            file_codes = None if codes is None or file_codes is None else file_codes | codes
            continue
        match = _LINE.search(text)
        if match:
            result.lines[token.start[0]] = _codes(match.group("codes"))
    result.file = file_codes
    return result
