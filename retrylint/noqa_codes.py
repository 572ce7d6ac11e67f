"""Warnings for ``# noqa`` directives that name no rule: ``# noqa: RTY20`` (a partial code) or
``# noqa: RTY999`` (an unknown one) silence nothing, so they are reported instead of being
silently matched to nothing. Codes of other tools (``E501``, ``BLE001``) are none of our business.

A directive whose colon is followed by no code at all (``# noqa: RTY``, ``# noqa: fixed-delay-retry``,
``# retrylint: noqa: immediate-retry``) is invalid, as in ruff: it silences nothing (never
everything) and is warned about, with the code when it names one of our rules.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import List, Tuple

from .noqa import _CODE, file_directive, invalid, line_directive

#: A cheap first look: only a file with a noqa that names an RTY code is tokenized.
#: (A colon followed by something that is not a code: an invalid directive, whoever it is for.)
_MAYBE = re.compile(rb"noqa\s*:(?:[^\n]*rty|[ \t]*(?![ \t]|[a-z]+[0-9]))", re.IGNORECASE)


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
        match = file_directive(token.string) or line_directive(token.string)
        if match is None:
            continue
        if invalid(match):
            out.append((token.start[0], _invalid_message(token.string[match.start():], match, BY_CODE)))
            continue
        if not match.group("codes"):
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


def _invalid_message(directive: str, match: "re.Match[str]", by_code) -> str:
    kind = "`# retrylint: noqa` directive" if "retrylint" in match.group(0).lower() else "noqa directive"
    shown = directive.split("#", 2)
    shown_text = ("#" + shown[1]).rstrip() if len(shown) > 1 else directive.rstrip()
    message = (f"invalid {kind} `{shown_text}`: expected rule codes (e.g. `# noqa: RTY202, RTY203`); "
               "it suppresses nothing")
    after = directive[match.end():].strip()
    word = re.match(r"[A-Za-z0-9_-]+", after)
    if word:
        text = word.group(0)
        named = [code for code, rule in by_code.items() if rule.name == text.lower()]
        if named:
            message += f"; `{text}` is the name of {named[0]}: write the code"
        elif text.upper() == "RTY" or (text.isalpha() and len(text) <= 3):
            message += f"; `{text}` is a prefix, not a code: write the full codes"
    return message
