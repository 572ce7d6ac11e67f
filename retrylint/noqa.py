"""``# noqa`` comments: on a line (``# noqa``, ``# noqa: RTY202, RTY203``) and per file
(``# retrylint: noqa``, ``# retrylint: noqa: RTY202``, also ``# ruff: noqa``-style placement).

As in ruff, a directive with a colon must name codes: ``# noqa: RTY``, ``# noqa: fixed-delay-retry``
or ``# retrylint: noqa: immediate-retry`` suppress nothing (:mod:`retrylint.noqa_codes` warns
about them), and a code matches only itself (``# noqa: RTY20`` does not silence RTY202)."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Optional

_CODES = r"[A-Z]+[0-9]+(?:\s*,?\s*[A-Z]+[0-9]+)*"
#: ``# noqa``, ``# noqa: RTY202, RTY203``. A colon followed by no code (``# noqa: RTY``,
#: ``# noqa: fixed-delay-retry``) matches with ``colon`` set and ``codes`` None: an *invalid*
#: directive, which suppresses nothing (as in ruff), never a blanket noqa.
_LINE = re.compile(r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>" + _CODES + r")?)?", re.IGNORECASE)
_FILE = re.compile(r"#\s*retrylint\s*:\s*noqa(?P<colon>\s*:\s*(?P<codes>" + _CODES + r")?)?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_ANY = re.compile("noqa", re.IGNORECASE)


def invalid(match: "re.Match[str]") -> bool:
    """A directive with a colon and no code after it: it suppresses nothing."""
    return match.group("colon") is not None and match.group("codes") is None


def line_directive(comment: str) -> "Optional[re.Match[str]]":
    """The comment's ``# noqa`` directive: the first valid one (ruff's ``--add-noqa`` appends
    ``# noqa: CODE`` after an invalid one), else the invalid one, else None."""
    first = None
    for match in _LINE.finditer(comment):
        if not invalid(match):
            return match
        first = first or match
    return first


def file_directive(comment: str) -> "Optional[re.Match[str]]":
    return _FILE.search(comment)


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
        file_match = file_directive(text)
        if file_match:
            if not invalid(file_match):  # ``# retrylint: noqa: fixed-delay-retry`` silences nothing
                codes = _codes(file_match.group("codes"))
                file_codes = None if codes is None or file_codes is None else file_codes | codes
            continue
        match = line_directive(text)
        if match and not invalid(match):
            result.lines[token.start[0]] = _codes(match.group("codes"))
    result.file = file_codes
    return result
