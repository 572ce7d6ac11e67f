"""After ``--fix``: remove the imports that the fixes left unused (``from tenacity import
wait_exponential`` once every call became ``wait_random_exponential``), so a fixed file has no
unused import that the original did not have (pyflakes' F401).

Only module-level imports that were used before the fixes and are used nowhere after them are
removed; a name counts as used when it is read anywhere in the module or listed in ``__all__``
(scopes are not told apart, so in doubt an import stays).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Set, Tuple

from .fix_model import Edit, apply
from .model import Location


def _imports(tree: ast.Module) -> Dict[str, Tuple[ast.stmt, int]]:
    """local name → (module-level import statement, index of its alias)."""
    found: Dict[str, Tuple[ast.stmt, int]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for index, alias in enumerate(statement.names):
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name.split(".")[0]
                found[local] = (statement, index)
    return found


def _used(tree: ast.Module) -> Set[str]:
    used: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used.add(node.id)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            for constant in ast.walk(node.value):
                if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                    used.add(constant.value)
    return used


def remove_newly_unused_imports(before: str, after: str, line_length: int = 88) -> str:
    """``after`` without the imports that ``before`` used and ``after`` no longer uses; a
    ``from m import …`` that was one line in ``before``, that a fix split into parentheses (a
    new name took it past ``line_length``) and that fits on one line again once the old name
    is gone, is one line again (the smallest change, as isort would write it)."""
    try:
        old_tree = ast.parse(before)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return after
    old_imports, old_used = _imports(old_tree), _used(old_tree)
    current = after
    for _ in range(20):  # one name per import statement per pass: positions never go stale
        updated = _one_pass(current, old_imports, old_used)
        if updated == current:
            break
        current = updated
    if current != after:
        current = _rejoined(old_tree, current, line_length)
    return current


def _rejoined(old_tree: ast.Module, text: str, line_length: int) -> str:
    one_line = {(s.module, s.level) for s in old_tree.body
                if isinstance(s, ast.ImportFrom) and s.lineno == s.end_lineno}
    if not one_line:
        return text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    lines = text.splitlines(keepends=True)
    edits: List[Edit] = []
    for statement in tree.body:
        if not isinstance(statement, ast.ImportFrom) or statement.end_lineno in (None, statement.lineno) \
                or (statement.module, statement.level) not in one_line:
            continue
        segment = lines[statement.lineno - 1: statement.end_lineno]
        first, last = segment[0], segment[-1]
        indent = first[: len(first) - len(first.lstrip())]
        body = last.rstrip("\r\n")
        if any("#" in line for line in segment) or statement.col_offset != len(indent.encode("utf-8")) \
                or body.strip() != ")" or "(" not in first:
            continue  # a comment in it, or code before or after it on its lines
        names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in statement.names)
        joined = f"{indent}from {'.' * statement.level}{statement.module or ''} import {names}"
        if len(joined) > line_length:
            continue
        newline = last[len(body):]
        edits.append(Edit(statement.lineno, 1, statement.end_lineno + 1, 1, joined + newline))
    return _applied_if_valid(text, edits)


def _one_pass(text: str, old_imports, old_used: Set[str]) -> str:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    imports, used = _imports(tree), _used(tree)
    lines = text.splitlines(keepends=True)
    edits: List[Edit] = []
    done: Set[int] = set()
    for name, (statement, index) in imports.items():
        if name not in old_imports or name not in old_used or name in used or id(statement) in done:
            continue
        edit = _removal(statement, index, lines)
        if edit is not None:
            edits.append(edit)
            edits.extend(_comment_moved(statement, index, lines, edit, old_imports))
            done.add(id(statement))
    return _applied_if_valid(text, edits)


def _applied_if_valid(text: str, edits: List[Edit]) -> str:
    """``text`` with ``edits`` applied, or unchanged when there are none or the result does not parse."""
    if not edits:
        return text
    fixed, _ = apply(text, edits)
    try:
        ast.parse(fixed)
    except SyntaxError:
        return text
    return fixed


def _column(lines: List[str], line: int, byte_offset: int) -> int:
    """A 1-based character column from ast's UTF-8 byte offset."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1


def _location(node, lines: List[str]) -> Location:
    return Location(node.lineno, _column(lines, node.lineno, node.col_offset),
                    node.end_lineno, _column(lines, node.end_lineno, node.end_col_offset))


def _removal(statement: ast.stmt, index: int, lines: List[str]):
    names = statement.names  # type: ignore[attr-defined]
    where = _location(statement, lines)
    first = lines[where.line - 1]
    last = lines[where.end_line - 1]
    if len(names) == 1:
        alone = not first[: where.column - 1].strip() and not last[where.end_column - 1:].split("#")[0].strip()
        if not alone:
            return None  # ``import a; x = 1``: leave it
        return Edit(where.line, 1, where.end_line + 1, 1, "")
    if any(getattr(alias, "lineno", None) is None for alias in names):
        return None  # Python < 3.10: aliases have no positions
    return _remove_item(lines, [_location(alias, lines) for alias in names], index)


def _remove_item(lines: List[str], items: List[Location], index: int) -> Edit:
    where = items[index]
    line = lines[where.line - 1]
    end_line = lines[where.end_line - 1].rstrip("\r\n")
    after = end_line[where.end_column - 1:]
    alone = not line[: where.column - 1].strip() and not after.replace(",", "", 1).split("#")[0].strip()
    if alone and len(items) > 1:
        return Edit(where.line, 1, where.end_line + 1, 1, "")
    if index + 1 < len(items):
        following = items[index + 1]
        return Edit(where.line, where.column, following.line, following.column, "")
    previous = items[index - 1]
    return Edit(previous.end_line, previous.end_column, where.end_line, where.end_column, "")


def _comment_moved(statement: ast.stmt, index: int, lines: List[str], removal: Edit, old_imports) -> List[Edit]:
    """A removed name alone on its line with a comment (``wait_exponential,  # backoff``), next to
    the name a fix put in its place (``wait_random_exponential,``, on a line of its own with no
    comment): the comment moves to that line instead of being lost."""
    names = statement.names  # type: ignore[attr-defined]
    alias = names[index]
    if getattr(alias, "lineno", None) is None or removal.column != 1 or removal.end_line != removal.line + 1:
        return []  # not a whole line removed
    line = lines[alias.lineno - 1].rstrip("\r\n")
    code, hash_, comment = line.partition("#")
    if not hash_:
        return []
    for other in names:
        local = other.asname or other.name.split(".")[0]
        if other is alias or local in old_imports or getattr(other, "lineno", None) not in (alias.lineno - 1, alias.lineno + 1):
            continue
        text = lines[other.lineno - 1].rstrip("\r\n")
        if "#" in text or any(o is not other and getattr(o, "lineno", None) == other.lineno for o in names):
            continue
        return [Edit(other.lineno, len(text) + 1, other.lineno, len(text) + 1, "  #" + comment)]
    return []
