"""Exact structural checks on the standard ``ast``: may this loop or function be a retry?

Narrowing asks them before libcst parses anything (see :mod:`retrylint.narrowing`). Each
is a necessary condition of what the libcst extractor accepts (:mod:`.loops`,
:mod:`.recursion`): it may say yes to code that is no retry, never no to a retry.
"""

from __future__ import annotations

import ast

from ..narrowing import Source, Words, last_name, local_nodes
from .waits import SLEEP_WRAPPER

#: Attributes and names an HTTP-status test reads (``response.status_code >= 500``).
STATUS_WORDS = frozenset({"status_code", "status", "ok", "code", "status_int", "http_status", "getcode",
                          "is_success", "is_error", "is_server_error", "is_client_error", "is_redirect"})
#: Iterables that count attempts (``range(5)``, ``itertools.count()``).
_COUNTING = frozenset({"range", "count", "repeat", "cycle", "enumerate"})
_SLEEP_ATTRIBUTES = frozenset({"sleep", "wait", "wait_for"})

LOOPS = (ast.For, ast.AsyncFor, ast.While)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: The words a file needs for a hand-written retry: an except handler or a status test.
FAILURE_WORDS = Words("except", "status", ".ok", "is_success", "is_error", "is_server_error", "is_client_error",
                      "is_redirect", "getcode")


def mentions_status(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in STATUS_WORDS:
            return True
        if isinstance(node, ast.Name) and ("status" in node.id or node.id in ("code", "http_code")):
            return True
    return False


def loop_may_retry(statement: ast.stmt, source: Source) -> bool:
    """A loop with an except handler or a status test, which goes round as a retry would."""
    if not isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
        return False
    if not source.has(statement, "except", "status", "ok", "code", "is_"):
        return False
    body = list(local_nodes(statement.body))
    # A retried try needs a way out on success (``loops._success_exit``): a return or break,
    # or a ``while`` whose test the attempt can change.
    leaves = any(isinstance(node, (ast.Return, ast.Break)) for node in body) or (
        isinstance(statement, ast.While) and _attempt_sets_test(statement, body)
    )
    if not any(
        leaves and isinstance(node, _TRY) and any(not _always_leaves(h) for h in node.handlers)  # type: ignore[attr-defined]
        or isinstance(node, ast.If) and mentions_status(node.test)
        for node in body
    ):
        return False
    if isinstance(statement, ast.While):
        return True
    return _for_may_count(statement, body, source)


_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _attempt_sets_test(loop: ast.While, body: list) -> bool:
    """``while result is None: try: result = fetch()``: the attempt assigns what the loop
    tests (``loops._success_exit``)."""
    tested = set()
    for node in ast.walk(loop.test):
        if isinstance(node, ast.Name):
            tested.add(node.id)
        elif isinstance(node, ast.Attribute):
            tested.update((node.attr, _dotted(node)))
    for node in body:
        if isinstance(node, _TRY):
            for inner in local_nodes(node.body + node.orelse):  # type: ignore[attr-defined]
                if isinstance(inner, (ast.Name, ast.Attribute)) and isinstance(inner.ctx, ast.Store):
                    if _dotted(inner) in tested:
                        return True
    return False


def _always_leaves(handler: ast.ExceptHandler) -> bool:
    """The handler ends in ``raise``/``return``/``break`` and never says ``continue``: it
    cannot lead back to the loop head, so it retries nothing (``loops._analyse_try``)."""
    if not handler.body or not isinstance(handler.body[-1], (ast.Raise, ast.Return, ast.Break)):
        return False
    return not any(isinstance(node, ast.Continue) for node in local_nodes(handler.body))


def _for_may_count(loop: ast.stmt, body: list, source: Source) -> bool:
    """Mirror of ``loops._iteration`` for ``for`` loops: attempts counted, delays walked,
    or the same call repeated once per item (the target unused)."""
    assert isinstance(loop, (ast.For, ast.AsyncFor))
    iterable = loop.iter
    while isinstance(iterable, ast.Await):
        iterable = iterable.value
    if isinstance(iterable, ast.Call):
        name = last_name(iterable.func)
        if name in _COUNTING or isinstance(iterable.func, ast.Name) and name in source.aliases:
            return True
    elif isinstance(iterable, (ast.List, ast.Tuple)):
        return True
    elif isinstance(iterable, ast.Name) and iterable.id in source.sequence_names:
        return True
    target = loop.target
    if not isinstance(target, ast.Name):
        return False
    if target.id == "_" or target.id not in {node.id for node in body if isinstance(node, ast.Name)}:
        return True
    # ``for delay in backoff_delays(): …; time.sleep(delay)``
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and _may_sleep(node.func, source):
            for argument in list(node.args) + [k.value for k in node.keywords]:
                if any(isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(argument)):
                    return True
    return False


def _may_sleep(func: ast.AST, source: Source) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr in _SLEEP_ATTRIBUTES or bool(SLEEP_WRAPPER.match(func.attr))
    if isinstance(func, ast.Name):
        return bool(SLEEP_WRAPPER.match(func.id)) or func.id in source.aliases
    return False


def function_may_recurse(statement: ast.stmt, source: Source) -> bool:
    """A function that calls itself (by name, or ``self.name``) from an except handler or a
    status branch: mirror of ``recursion._self_calls`` and ``_failure_context``."""
    if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    name = statement.name
    # The def and a call: ``name(`` twice (a call split as ``name\n(`` is not worth the cost).
    if source.count(statement, name + "(") + source.count(statement, name + " (") < 2:
        return False
    arguments = statement.args.posonlyargs + statement.args.args + statement.args.kwonlyargs
    receiver = arguments[0].arg if arguments and arguments[0].arg in ("self", "cls") else None
    stack = [(node, False) for node in statement.body]
    while stack:
        node, guarded = stack.pop()
        if isinstance(node, ast.Call) and guarded:
            func = node.func
            if isinstance(func, ast.Name) and func.id == name:
                return True
            if receiver and isinstance(func, ast.Attribute) and func.attr == name and (
                isinstance(func.value, ast.Name) and func.value.id == receiver
            ):
                return True
        # ``recursion._failure_context``: an except handler, or a branch on an HTTP status
        inner = guarded or isinstance(node, ast.ExceptHandler) or isinstance(node, ast.If) and mentions_status(node.test)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append((child, inner))
    return False
