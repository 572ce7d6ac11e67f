"""Fixes: text edits computed from libcst nodes, applied to the original source.

A fix is *safe* when it keeps the program's intent and needs no number the code
does not already have (``wait_exponential(...)`` → ``wait_random_exponential(...)``
with the same arguments); *unsafe* when it needs a number we choose (a cap, an
attempt limit) or changes the average delay. ``--fix`` applies safe fixes,
``--unsafe-fixes`` adds the others. Narrowing keeps line numbers and columns,
so node positions are positions in the original text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from .extract.context import ModuleContext
from .model import Location
from .syntax import call_args, dotted_name

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


def apply(text: str, edits: Sequence[Edit]) -> Tuple[str, int]:
    """Apply non-overlapping edits (later ones that overlap an earlier one are skipped)."""
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


class Fixer:
    """Builds edits for one module; given to the rules' ``fix`` methods."""

    def __init__(self, ctx: ModuleContext) -> None:
        self.ctx = ctx

    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        where: Location = self.ctx.location(node)
        return Edit(where.line, where.column, where.end_line, where.end_column, content)

    def render(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)

    # ------------------------------------------------------------ calls

    def keyword(self, call: cst.Call, name: str) -> Optional[cst.Arg]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    def add_keyword(self, call: cst.Call, name: str, value: str) -> Edit:
        """``f(a)`` → ``f(a, name=value)``, keeping the call's layout."""
        new_arg = cst.Arg(
            value=cst.parse_expression(value),
            keyword=cst.Name(name),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        )
        args = list(call.args)
        if args:
            last = args[-1]
            trailing = last.comma
            if trailing is cst.MaybeSentinel.DEFAULT:
                args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                args.append(new_arg)
            else:
                args.append(new_arg.with_changes(comma=trailing))
                args[-2] = last.with_changes(comma=_comma_like(trailing))
        else:
            args.append(new_arg)
        return self.replace(call, self.render(call.with_changes(args=args)))

    def remove_keyword(self, call: cst.Call, name: str) -> Optional[Edit]:
        args = list(call.args)
        index = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == name), None)
        if index is None:
            return None
        removed = args.pop(index)
        if index == len(args) and args:
            # The removed one was last: the one before takes its trailing comma (or none).
            args[-1] = args[-1].with_changes(comma=removed.comma)
        return self.replace(call, self.render(call.with_changes(args=args)))

    def set_keyword(self, call: cst.Call, name: str, value: str) -> Edit:
        arg = self.keyword(call, name)
        if arg is None:
            return self.add_keyword(call, name, value)
        return self.replace(arg.value, value)

    # ------------------------------------------------------------ names and imports

    def rename_callee(self, call: cst.Call, new_name: str, module: str) -> Optional[List[Edit]]:
        """Call ``module.new_name`` instead, importing it next to the old name when needed.

        ``tenacity.wait_exponential(...)`` → ``tenacity.wait_random_exponential(...)``;
        ``wait_exponential(...)`` imported ``from tenacity import wait_exponential`` →
        ``wait_random_exponential(...)`` and the import extended. None when the name is
        aliased or imported in a way we do not rewrite.
        """
        func = call.func
        if isinstance(func, cst.Attribute):
            return [self.replace(func.attr, new_name)]
        if not isinstance(func, cst.Name):
            return None
        edits = [self.replace(func, new_name)]
        import_edit = self.import_name(func, module, new_name)
        if import_edit is False:
            return None
        if isinstance(import_edit, Edit):
            edits.append(import_edit)
        return edits

    def import_name(self, beside: cst.Name, module: str, new_name: str):
        """Make ``new_name`` importable where ``beside`` is imported from ``module``.

        Returns an Edit, None when nothing is needed, False when it cannot be done safely.
        """
        existing = [b for b in self.ctx.bindings(beside, new_name) if b.kind == "import"]
        if existing:
            return None
        for binding in self.ctx.bindings(beside):
            node = binding.node
            if isinstance(node, cst.ImportFrom) and node.module is not None:
                if not (dotted_name(node.module) or "").startswith(module):
                    return False
                if isinstance(node.names, cst.ImportStar):
                    return None
                names = list(node.names)
                for alias in names:
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if alias.asname is not None and isinstance(local, cst.Name) and local.value == beside.value:
                        return False  # ``wait_exponential as expo``: leave aliases alone
                last = names[-1]
                if last.comma is cst.MaybeSentinel.DEFAULT:
                    names[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    names.append(cst.ImportAlias(name=cst.Name(new_name)))
                else:
                    names.append(cst.ImportAlias(name=cst.Name(new_name), comma=last.comma))
                    names[-2] = last.with_changes(comma=_comma_like(last.comma))
                return self.replace(node, self.render(node.with_changes(names=names)))
        return False

    def module_alias(self, near: cst.CSTNode, module: str) -> Optional[str]:
        """The local name of ``import module`` (``tenacity`` or ``t`` for ``import tenacity as t``)."""
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            if dotted_name(alias.name) == module:
                                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                                    return alias.asname.name.value
                                return module
        return None

    def ensure_module_import(self, module: str) -> Optional[Edit]:
        """``import random`` after the module's top imports (or its docstring) unless present."""
        if self.module_alias(self.ctx.module, module) == module:
            return None
        after = None
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) or _is_docstring(s) for s in statement.body
            ):
                after = statement
                continue
            break
        line = self.ctx.location(after).end_line + 1 if after is not None else 1
        return Edit(line, 1, line, 1, f"import {module}\n")


def _comma_like(comma) -> cst.Comma:
    if isinstance(comma, cst.Comma):
        return comma
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _is_docstring(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.Expr) and isinstance(statement.value, (cst.SimpleString, cst.ConcatenatedString))


def only_literal_args(call: cst.Call) -> bool:
    positional, keywords = call_args(call)
    return not any(a.star for a in call.args)


def first_call(node: Optional[cst.CSTNode], ctx: ModuleContext, names: Iterable[str]) -> Optional[cst.Call]:
    """The first call in ``node`` to one of ``names`` (qualified)."""
    from .syntax import walk

    if node is None:
        return None
    wanted = frozenset(names)
    for child in walk(node):
        if isinstance(child, cst.Call) and ctx.call_name(child) & wanted:
            return child
    return None
