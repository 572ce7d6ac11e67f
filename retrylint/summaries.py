"""What the module's own helpers do, read once from the whole file's ``ast``.

A retry loop often hands its failure to a helper: ``self._raise_for(e)`` classifies and
raises, ``if not _is_eintr(e): raise`` handles EINTR. Narrowing blanks the helpers'
definitions before libcst sees the loop, so their facts are read here, from the ``ast``
that the syntax check already built, and handed to the extractors with the module.

Keys are ``name`` for module functions and ``Class.name`` for methods (as
:func:`retrylint.extract.waits.find_sleepers` names them).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import ClassVar, FrozenSet, Iterator, Optional, Sequence, Tuple

#: errno values that mean "interrupted" or "not ready" (as :mod:`retrylint.extract.errors`).
NOT_YET_ERRNO = re.compile(r"\b(EINTR|EAGAIN|EWOULDBLOCK|EINPROGRESS|EALREADY)\b")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Summaries:
    #: Helpers every path of which raises: a handler that calls one gives up.
    raisers: FrozenSet[str] = frozenset()
    #: Helpers that test an "interrupted / not ready" errno.
    errno_tests: FrozenSet[str] = frozenset()
    #: Helpers that count or time the attempts and raise once they are spent
    #: (``self._retries += 1; if self._retries > self.max_retries: raise``).
    limiters: FrozenSet[str] = frozenset()

    EMPTY: ClassVar["Summaries"]

    def raises(self, key: Optional[str]) -> bool:
        return key is not None and key in self.raisers

    def tests_errno(self, key: Optional[str]) -> bool:
        return key is not None and key in self.errno_tests

    def limits(self, key: Optional[str]) -> bool:
        return key is not None and key in self.limiters


Summaries.EMPTY = Summaries()


def summarise(tree: ast.Module) -> Summaries:
    functions = dict(_functions(tree))
    raisers: set = set()
    # A helper that ends by calling another raiser raises too: a few rounds reach a fixpoint.
    for _ in range(4):
        found = {key for key, (owner, func) in functions.items() if _always_raises(func.body, owner, raisers)}
        if found == raisers:
            break
        raisers = found
    errno = {key for key, (_, func) in functions.items() if _tests_errno(func)}
    limiters = {key for key, (_, func) in functions.items() if _raises_when_spent(func)}
    return Summaries(frozenset(raisers), frozenset(errno), frozenset(limiters))


def _functions(tree: ast.Module) -> Iterator[Tuple[str, Tuple[Optional[str], ast.AST]]]:
    for statement in tree.body:
        if isinstance(statement, _FUNCTIONS):
            yield statement.name, (None, statement)
        elif isinstance(statement, ast.ClassDef):
            for member in statement.body:
                if isinstance(member, _FUNCTIONS):
                    yield f"{statement.name}.{member.name}", (statement.name, member)


def call_key(func: ast.expr, owner: Optional[str]) -> Optional[str]:
    """``helper(...)`` -> ``helper``; ``self.helper(...)`` in class ``C`` -> ``C.helper``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return f"{owner}.{func.attr}" if owner else None
    return None


def _always_raises(body: Sequence[ast.stmt], owner: Optional[str], raisers: set) -> bool:
    """Does every path through ``body`` end in ``raise``? (``return`` or falling off: no.)"""
    for statement in body:
        if isinstance(statement, ast.Raise):
            return True
        if isinstance(statement, (ast.Return, ast.Continue, ast.Break)):
            return False
        if isinstance(statement, ast.Expr):
            value = statement.value.value if isinstance(statement.value, ast.Await) else statement.value
            if isinstance(value, ast.Call) and call_key(value.func, owner) in raisers:
                return True
        elif isinstance(statement, ast.If):
            if _always_raises(statement.body, owner, raisers) and _always_raises(statement.orelse, owner, raisers):
                return True
            if _may_leave(statement, owner, raisers):
                return False
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            if _always_raises(statement.body, owner, raisers):
                return True
            if _may_leave(statement, owner, raisers):
                return False
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match) + _try_star()):
            if _may_leave(statement, owner, raisers):
                return False
    return False


def _may_leave(statement: ast.stmt, owner: Optional[str], raisers: set) -> bool:
    """A ``return`` inside (not in a nested function): the helper may return instead."""
    stack = list(ast.iter_child_nodes(statement))
    while stack:
        node = stack.pop()
        if isinstance(node, _FUNCTIONS + (ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _try_star() -> tuple:
    return (ast.TryStar,) if hasattr(ast, "TryStar") else ()


def _raises_when_spent(func: ast.AST) -> bool:
    """Steps a count (``self._retries += 1``) or reads the clock, and raises under an ``if``
    that compares: the attempts end there, after a number we may not know."""
    steps = any(isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Add, ast.Sub)) for n in ast.walk(func))
    clock = any(isinstance(n, ast.Attribute) and n.attr in ("monotonic", "time", "perf_counter") for n in ast.walk(func))
    if not (steps or clock):
        return False
    for node in ast.walk(func):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            if any(isinstance(n, ast.Raise) for s in node.body for n in ast.walk(s)):
                return True
    return False


def _tests_errno(func: ast.AST) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and NOT_YET_ERRNO.fullmatch(node.attr):
            return True
        if isinstance(node, ast.Name) and NOT_YET_ERRNO.fullmatch(node.id):
            return True
    return False


def key_of(func_name: Optional[str], receiver: Optional[str], owner: Optional[str]) -> Optional[str]:
    """The same key from libcst's side: a plain call, or a call on ``self``/``cls``."""
    if func_name is None:
        return None
    if receiver is None:
        return func_name
    if receiver in ("self", "cls") and owner:
        return f"{owner}.{func_name}"
    return None

