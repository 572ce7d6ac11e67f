"""Warnings for ``# noqa`` directives that name no rule: ``# noqa: RTY20`` (a partial code) or
``# noqa: RTY999`` (an unknown one) silence nothing, so they are reported instead of being
silently matched to nothing. Codes of other tools (``E501``, ``BLE001``) are none of our business.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import List, Tuple

from .noqa import _CODE, _FILE, _LINE

#: A cheap first look: only a file with a noqa that names an RTY code is tokenized.
_MAYBE = re.compile(rb"noqa\s*:[^\n]*rty", re.IGNORECASE)


def noqa_code_warnings(data: bytes, text: "str | None" = None) -> List[Tuple[int, str]]:
    """(line, message) for each RTY code in a noqa directive that is not a rule's code."""
    if not _MAYBE.search(data):
        return []
    from .rules import BY_CODE

    if text is None:
        try:
            from .engine import decode_source

            text = decode_source(data)
        except Exception:  # noqa: BLE001 - an undecodable file is RTY001's business
            return []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    out: List[Tuple[int, str]] = []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _FILE.search(token.string) or _LINE.search(token.string)
        if match is None or not match.group("codes"):
            continue
        for code in _CODE.findall(match.group("codes")):
            code = code.upper()
            if not code.startswith("RTY") or code in BY_CODE:
                continue
            completions = sorted(c for c in BY_CODE if c.startswith(code))
            if completions:
                hint = f"a partial code matches nothing; write the full code ({', '.join(completions)})"
            else:
                hint = "no rule has this code (`retrylint rule --all` lists them)"
            out.append((token.start[0], f"noqa directive names unknown code {code}: {hint}"))
    return out
