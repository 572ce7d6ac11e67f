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
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Set

import libcst as cst

from .syntax import children


@dataclass(frozen=True)
class Trigger:
    """What one extractor needs to see before a site of its kind can exist.

    ``text`` is searched in the raw bytes before parsing; ``node`` says whether a
    node of the parsed module can be (part of) a site. Both must be conservative:
    a site the extractor would find always has them.
    """

    text: "re.Pattern[bytes]"
    node: Callable[[cst.CSTNode], bool]


def may_hold_sites(data: bytes, triggers: Sequence[Trigger]) -> bool:
    return any(trigger.text.search(data) for trigger in triggers)


def narrow(module: cst.Module, triggers: Sequence[Trigger]) -> Optional[cst.Module]:
    """A module with only the definitions that can hold a site; None when there are none."""
    try:
        holders = _holders(module, triggers)
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


def _holders(module: cst.Module, triggers: Sequence[Trigger]) -> Set[cst.CSTNode]:
    """The module, classes and functions that contain a candidate site (one pass, bottom-up)."""
    holders: Set[cst.CSTNode] = set()
    tests = [trigger.node for trigger in triggers]
    derived = _derived_classes(module, tests)
    if derived:
        # ``class LoggingRetry(Retry)`` and the calls that build one are sites too.
        tests.append(lambda node: isinstance(node, cst.ClassDef) and node.name.value in derived)
        tests.append(lambda node: isinstance(node, cst.Call) and _last(node.func) in derived)

    def visit(node: cst.CSTNode) -> bool:
        found = False
        for child in children(node):
            if visit(child):
                found = True
        if not found and any(test(node) for test in tests):
            found = True
        if found and isinstance(node, (cst.Module, cst.FunctionDef, cst.ClassDef)):
            holders.add(node)
        return found

    visit(module)
    return holders


def _derived_classes(module: cst.Module, tests: List[Callable[[cst.CSTNode], bool]]) -> Set[str]:
    """Names of classes whose base would be a site if it were called (subclasses of library classes)."""
    classes = [n for n in _walk(module) if isinstance(n, cst.ClassDef) and n.bases]
    if not classes:
        return set()
    derived: Set[str] = set()
    changed = True
    while changed:  # a subclass of a subclass
        changed = False
        for node in classes:
            if node.name.value in derived:
                continue
            for base in node.bases:
                probe = cst.Call(func=base.value)
                if _last(base.value) in derived or any(test(probe) for test in tests):
                    derived.add(node.name.value)
                    changed = True
                    break
    return derived


def _last(expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return ""


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, (cst.BaseSmallStatement, cst.BaseExpression)):
            stack.extend(children(current))


def _placeholder(module: cst.Module, node: cst.BaseStatement, indented: bool = False) -> cst.BaseStatement:
    """``pass`` on the node's last line, blank lines above: the same height as the node."""
    height = module.code_for_node(node).count("\n")
    blank = [cst.EmptyLine(indent=indented, whitespace=cst.SimpleWhitespace(""))] * max(height - 1, 0)
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=blank)
