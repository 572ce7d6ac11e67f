"""Skip what cannot hold a retry site, before the expensive libcst metadata.

Scope and qualified-name resolution costs ten to twenty times the parse. Most
files, and most functions in the rest, cannot hold a retry site, so the engine:

1. checks the raw text for the words any site needs (:func:`may_hold_sites`);
2. after parsing, replaces every function and class that cannot hold a site by
   a ``pass`` padded with blank lines to the same height (:func:`narrow`), so
   line numbers are unchanged and imports and module constants stay resolvable.

Both steps are conservative by construction; a test checks that findings with and
without them are identical over a large corpus.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Set

import libcst as cst

from .syntax import DEFERRED, LOOPS, children, walk

#: A hand-written site needs an except handler or an HTTP status test.
_TRIGGERS = re.compile(
    rb"\bexcept\b|status|\.ok\b|is_success|is_error|is_server_error|is_client_error|getcode"
)
_STATUS_WORDS = frozenset({"status_code", "status", "ok", "code", "status_int", "http_status", "getcode",
                           "is_success", "is_error", "is_server_error", "is_client_error"})


def may_hold_sites(data: bytes, extra: Sequence[bytes] = ()) -> bool:
    if _TRIGGERS.search(data):
        return True
    return any(word in data for word in extra)


def narrow(module: cst.Module) -> Optional[cst.Module]:
    """A module with only the definitions that can hold a site; None when there are none."""
    try:
        holders = _holders(module)
    except RecursionError:
        return module  # too deep to scan: keep everything; the engine reports the depth if it must
    if module not in holders:
        return None
    out: List[cst.BaseStatement] = []
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            narrowed = _narrow_definition(module, statement, holders)
            out.append(narrowed if narrowed is not None else _placeholder(module, statement))
        else:
            out.append(statement)
    return module.with_changes(body=out)


def _narrow_definition(module: cst.Module, node: cst.BaseStatement, holders: Set[cst.CSTNode]) -> Optional[cst.BaseStatement]:
    if node not in holders:
        return None
    if isinstance(node, cst.FunctionDef) or not isinstance(node.body, cst.IndentedBlock):  # type: ignore[attr-defined]
        return node
    members: List[cst.BaseStatement] = []
    for member in node.body.body:  # type: ignore[attr-defined]
        if isinstance(member, (cst.FunctionDef, cst.ClassDef)):
            narrowed = _narrow_definition(module, member, holders)
            members.append(narrowed if narrowed is not None else _placeholder(module, member, indented=True))
        else:
            members.append(member)
    return node.with_changes(body=node.body.with_changes(body=members))  # type: ignore[attr-defined]


def _holders(module: cst.Module) -> Set[cst.CSTNode]:
    """The module, classes and functions that contain a candidate site (one pass, bottom-up)."""
    holders: Set[cst.CSTNode] = set()

    def visit(node: cst.CSTNode) -> bool:
        found = False
        for child in children(node):
            if visit(child):
                found = True
        if isinstance(node, LOOPS) and _loop_candidate(node):
            found = True
        elif isinstance(node, cst.FunctionDef) and _recursion_candidate(node):
            found = True
        if found and isinstance(node, (cst.Module, cst.FunctionDef, cst.ClassDef)):
            holders.add(node)
        return found

    visit(module)
    return holders


def _placeholder(module: cst.Module, node: cst.BaseStatement, indented: bool = False) -> cst.BaseStatement:
    """``pass`` on the node's last line, blank lines above: the same height as the node."""
    height = module.code_for_node(node).count("\n")
    blank = [cst.EmptyLine(indent=indented, whitespace=cst.SimpleWhitespace(""))] * max(height - 1, 0)
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=blank)


def _loop_candidate(loop: cst.CSTNode) -> bool:
    for child in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if isinstance(child, cst.Try) and child.handlers:
            return True
        if isinstance(child, cst.If) and _mentions_status(child.test):
            return True
    return False


def _mentions_status(test: cst.CSTNode) -> bool:
    for child in walk(test):
        if isinstance(child, cst.Attribute) and child.attr.value in _STATUS_WORDS:
            return True
        if isinstance(child, cst.Name) and ("status" in child.value or child.value in ("code", "http_code")):
            return True
    return False


def _recursion_candidate(func: cst.FunctionDef) -> bool:
    name = func.name.value
    for child in walk(func.body, skip=DEFERRED):
        if isinstance(child, cst.Call):
            target = child.func
            if isinstance(target, cst.Name) and target.value == name:
                return True
            if isinstance(target, cst.Attribute) and target.attr.value == name:
                return True
    return False
