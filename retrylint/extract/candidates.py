"""Exact structural checks on the standard ``ast``: may this loop or function be a retry?

Narrowing asks them before libcst parses anything (see :mod:`retrylint.narrowing`). Each
is a necessary condition of what the libcst extractor accepts (:mod:`.loops`,
:mod:`.recursion`): it may say yes to code that is no retry, never no to a retry.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from ..narrowing import DEFINITIONS, Source, Words, bodies, last_name, local_nodes, starts_name
from ..syntax import PROCESS_EXITS
from .errors import not_yet_name
from .status import FLAG_ATTRS, RESPONSE_OR_STATUS, STATUS_ATTRS
from .vocabulary import LEFTOVER, RETRY_DECISION, TRIVIAL_CALLS
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
                      "is_redirect", "getcode", "resp")


def mentions_status(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in STATUS_WORDS:
            return True
        if isinstance(node, ast.Name) and ("status" in node.id or node.id in ("code", "http_code")):
            return True
    return False


def loop_may_retry(statement: ast.stmt, source: Source) -> bool:
    """A loop that may go round again after a failure, as ``loops.extract_loop`` decides:
    a ``try`` of its own with a handler that leads back to the loop head, a way out on
    success and a call to retry; or a test of an HTTP status on what the loop assigns."""
    if not isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
        return False
    handles = source.has(statement, "except")
    if not handles and not source.has(statement, "status", "ok", "code", "is_", "resp"):
        return False
    # The statements of the loop's own iteration first: far cheaper than its expressions.
    trys, status_tests = [], []
    for inner in _own_statements(statement.body, DEFINITIONS):
        if isinstance(inner, _TRY):
            trys.append(inner)
        elif isinstance(inner, ast.If) and _may_test_status(inner.test):
            status_tests.append(inner)
    if not (trys and handles) and not status_tests:
        return False
    body = list(local_nodes(statement.body))
    if isinstance(statement, (ast.For, ast.AsyncFor)) and not _for_may_count(statement, body, source):
        return False
    written = _written(body)
    if trys:
        attempts: List[Tuple[ast.stmt, List[ast.stmt], bool]] = []
        _trys_with_rest(statement.body, [], attempts, False, False)
        if any(_try_may_retry(node, rest, secondary, statement, source, written) for node, rest, secondary in attempts):
            return True
    if status_tests:
        return any(_names_in(node.test) & written for node in status_tests)
    return False


_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _trys_with_rest(body: Sequence[ast.stmt], after: List[ast.stmt], out: list, failure: bool, attempt: bool) -> None:
    """Each ``try`` of the loop's own iteration with the statements that run after it up
    to the end of the loop body (``loops._loop_trys`` and ``flow.rest_after``), and
    whether it sits in another one's attempt (``loops._secondary``); a ``try`` inside an
    except handler or a finally block is not an attempt."""
    for index, statement in enumerate(body):
        if isinstance(statement, DEFINITIONS):
            continue
        rest = list(body[index + 1 :]) + after
        if isinstance(statement, _TRY):
            if not failure:
                out.append((statement, rest, attempt))
            _trys_with_rest(statement.body, rest, out, failure, True)
            _trys_with_rest(statement.orelse, rest, out, failure, attempt)
            for handler in statement.handlers:
                _trys_with_rest(handler.body, rest, out, True, attempt)
            _trys_with_rest(statement.finalbody, rest, out, True, attempt)
        else:
            for block in bodies(statement):
                _trys_with_rest(block, rest, out, failure, attempt)


_NOT_YET_ERRNO = frozenset({"EINTR", "EAGAIN", "EWOULDBLOCK", "EINPROGRESS", "EALREADY"})


def _polls(handler: ast.ExceptHandler, source: Source) -> bool:
    """``errors.describe_handler``'s ``polling``, where the names alone decide: every class
    caught is a "not yet" one under its own name (not an ``as`` alias, not a name the file
    assigns, which could hold a tuple), or the handler tests an errno of "not ready"."""
    caught = handler.type
    if caught is None:
        return False  # a bare ``except:`` never polls for the extractor
    parts = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    if parts and all(_not_yet(part, source) for part in parts):
        return True
    # ``errors._retries_only_on_errno`` walks the handler without entering loops or definitions.
    return any(
        isinstance(statement, ast.If) and any(
            isinstance(n, ast.Name) and n.id in _NOT_YET_ERRNO or isinstance(n, ast.Attribute) and n.attr in _NOT_YET_ERRNO
            for n in ast.walk(statement.test)
        )
        for statement in _own_statements(handler.body, DEFINITIONS + LOOPS)
    )


def _own_statements(body: Sequence[ast.stmt], skip: Tuple[type, ...]) -> Iterator[ast.stmt]:
    """The statements of ``body`` and of every block inside them, not entering ``skip``."""
    stack = list(body)
    while stack:
        statement = stack.pop()
        if isinstance(statement, skip):
            continue
        yield statement
        for block in bodies(statement):
            stack.extend(block)


def _not_yet(expr: ast.AST, source: Source) -> bool:
    if isinstance(expr, ast.Attribute):
        return not_yet_name(expr.attr)
    if isinstance(expr, ast.Name):
        return not_yet_name(expr.id) and expr.id not in source.aliases and not source.assigns(expr.id)
    return False


def _try_may_retry(
    node: ast.stmt, rest: List[ast.stmt], secondary: bool, loop: ast.stmt, source: Source, written: Set[str]
) -> bool:
    """``loops._analyse_try`` and the filter in ``extract_loop``, without what needs names
    resolved (polling handlers, guards of the exits, stream reads): a handler that
    continues, or falls through to a rest that goes round; an exit on the success path;
    a call to retry."""
    assert isinstance(node, _TRY)
    loops_back = bool(outcomes(rest) & {FALL, CONTINUE})
    if not any(
        CONTINUE in result or FALL in result and loops_back and not secondary
        for result in (outcomes(handler.body) for handler in node.handlers if not _polls(handler, source))
    ):
        return False
    if not any(
        isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in TRIVIAL_CALLS)
        for n in local_nodes(node.body)
    ):
        return False
    attempt = list(node.body) + list(node.orelse)
    return _success_exit(attempt + rest, written) or (
        # ``loops._success_exit``: a flag set after the try counts when no handler falls through to it.
        isinstance(loop, ast.While)
        and _attempt_sets_test(loop, attempt + (rest if not any(FALL in outcomes(h.body) for h in node.handlers) else []))
    )


def _success_exit(roots: List[ast.stmt], written: Set[str]) -> bool:
    """``loops._success_exit`` through ``flow.exits_in``: a ``return``/``break`` on the
    success path (not in a nested loop or a nested ``try``'s handler), unguarded or under
    an ``if`` whose test may say "it worked" (``is_success_test``)."""
    stack: List[Tuple[ast.stmt, Optional[ast.If], bool, bool]] = [(r, None, True, True) for r in roots]
    while stack:
        statement, guard, positive, root = stack.pop()
        if isinstance(statement, (ast.Return, ast.Break)):
            if guard is None or _may_say_success(guard.test, positive, written):
                return True
            if positive and isinstance(guard.test, (ast.Name, ast.Attribute)) \
                    and CONNECTED_STATE.match(_dotted(guard.test).rsplit(".", 1)[-1]):
                return True  # ``loops._success_exit``: ``if self.connected: break`` after a connect
            if isinstance(statement, ast.Return) and statement.value is not None \
                    and any(isinstance(n, ast.Call) for n in ast.walk(statement.value)) \
                    and not _mentions(guard.test, written):
                return True  # ``if self.run_id is not None: return self.client.Subscribe(...)``
            continue
        if isinstance(statement, DEFINITIONS) or not root and isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            continue
        if isinstance(statement, ast.If):
            stack.extend((s, statement, True, False) for s in statement.body)
            stack.extend((s, statement, False, False) for s in statement.orelse)
            continue
        for block in bodies(statement, handlers=False):  # not the handlers: ``walk_success`` skips them
            stack.extend((s, guard, positive, False) for s in block)
    return False


#: A flag saying a connection is up: ``self.connected``, ``conn.is_open``.
CONNECTED_STATE = re.compile(r"^_*(is_)?(connected|open(ed)?|alive|logged_in|authenticated)$", re.I)


def _may_say_success(test: ast.AST, positive: bool, written: Set[str]) -> bool:
    """``loops.is_success_test``, with status tests and results taken at their widest."""
    while isinstance(test, ast.Await):
        test = test.value
    if isinstance(test, ast.Call) and RETRY_DECISION.search(last_name(test.func) or ""):
        return not positive and _mentions(test, written)
    if not positive and isinstance(test, (ast.Name, ast.Attribute)) and LEFTOVER.search(_dotted(test)):
        return _mentions(test, written)
    if _may_test_status(test):
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _may_say_success(test.operand, not positive, written)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None:
            if isinstance(test.ops[0], (ast.Is, ast.Eq)):
                positive = not positive
            return positive and _mentions(test.left, written)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and positive:
        return any(_may_say_success(value, True, written) for value in test.values)
    return positive and _mentions(test, written)


def _mentions(expr: ast.AST, written: Set[str]) -> bool:
    """``loops._mentions_result``: the test reads something the loop assigns."""
    for node in ast.walk(expr):
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = _dotted(node)
            if name and (name in written or name.split(".")[0] in written):
                return True
    return False


def _written(body: Sequence[ast.AST]) -> Set[str]:
    """Names and dotted attributes the loop's own iteration assigns (``loops._writes``)."""
    return {
        _dotted(node) or "" for node in body if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store)
    }


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _names_in(expr: ast.AST) -> Set[str]:
    return {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}


def _attempt_sets_test(loop: ast.While, attempt: List[ast.stmt]) -> bool:
    """``while result is None: try: result = fetch()``: the attempt assigns what the loop
    tests (``loops._success_exit``)."""
    tested = set()
    for node in ast.walk(loop.test):
        if isinstance(node, ast.Name):
            tested.add(node.id)
        elif isinstance(node, ast.Attribute):
            tested.update((node.attr, _dotted(node)))
    for inner in local_nodes(attempt):
        if isinstance(inner, (ast.Name, ast.Attribute)) and isinstance(inner.ctx, ast.Store):
            if _dotted(inner) in tested:
                return True
    return False


# ``status.status_set`` is not None only for flags (``resp.ok``) and comparisons of a
# status (``status.is_status_expr``), joined by ``not``/``and``/``or``.
_STATUS_NAME = re.compile(r"(http_)?(status|status_code|code|resp_status|response_status|http_code)")


def _may_test_status(test: ast.AST) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _may_test_status(test.operand)
    if isinstance(test, ast.BoolOp):
        # ``status.status_range``: ``attempt < limit and resp.status_code == 503``
        return any(_may_test_status(value) for value in test.values)
    if isinstance(test, ast.Await):
        return _may_test_status(test.value)
    if isinstance(test, ast.Call):
        return may_classify(test)
    if isinstance(test, ast.Attribute):
        return test.attr in FLAG_ATTRS
    if isinstance(test, ast.Compare):
        left, right = test.left, test.comparators[0]
        if _not_a_status_value(left) or _not_a_status_value(right):
            return False  # ``code == b""``: ``status._values`` reads no status in it
        return _may_be_status(left) or _may_be_status(right)
    return False


def may_classify(call: ast.Call) -> bool:
    """A call handed a response or a status (``self._should_retry(response)``): mirror of
    ``status.classified``, which reads the status predicate it calls."""
    values = list(call.args) + [k.value for k in call.keywords]
    return any(RESPONSE_OR_STATUS.search(_dotted(v) or "") for v in values)


def _not_a_status_value(expr: ast.AST) -> bool:
    """A literal that ``status.status_constant`` never reads as a status: a string, bytes,
    None, a bool, a number outside 100-599 or with a fraction."""
    if not isinstance(expr, ast.Constant):
        return False
    value = expr.value
    if type(value) in (int, float):
        return not (100 <= value < 600 and value == int(value))
    return True


def _may_be_status(expr: ast.AST) -> bool:
    while isinstance(expr, ast.Await):
        expr = expr.value
    if isinstance(expr, ast.Call):
        return isinstance(expr.func, ast.Attribute) and expr.func.attr == "getcode"
    if isinstance(expr, ast.Attribute):
        return expr.attr in STATUS_ATTRS
    return isinstance(expr, ast.Name) and bool(_STATUS_NAME.fullmatch(expr.id))


# ---------------------------------------------------------------- how statements end
# ``syntax.outcomes`` on the standard ``ast``.

FALL, CONTINUE, BREAK, RETURN, RAISE = "fall", "continue", "break", "return", "raise"


def outcomes(statements: Sequence[ast.stmt]) -> FrozenSet[str]:
    current = {FALL}
    for statement in statements:
        if FALL not in current:
            break
        current.discard(FALL)
        current |= _statement_outcomes(statement)
    return frozenset(current)


def _statement_outcomes(node: ast.stmt) -> FrozenSet[str]:
    if isinstance(node, ast.Return):
        return frozenset({RETURN})
    if isinstance(node, ast.Raise):
        return frozenset({RAISE})
    if isinstance(node, ast.Break):
        return frozenset({BREAK})
    if isinstance(node, ast.Continue):
        return frozenset({CONTINUE})
    if isinstance(node, ast.Expr):
        value = node.value
        while isinstance(value, ast.Await):
            value = value.value
        if isinstance(value, ast.Call) and _dotted(value.func) in PROCESS_EXITS:
            return frozenset({RAISE})
        return frozenset({FALL})
    if isinstance(node, ast.If):
        return outcomes(node.body) | (outcomes(node.orelse) if node.orelse else {FALL})
    if isinstance(node, _TRY) and not _is_try_star(node):
        body = outcomes(node.body)
        result = set(body - {FALL})
        if FALL in body:
            result |= outcomes(node.orelse) if node.orelse else {FALL}
        for handler in node.handlers:
            result |= outcomes(handler.body)
        if node.finalbody:
            final = outcomes(node.finalbody)
            if FALL not in final:
                return final
        return frozenset(result)
    if _is_try_star(node):
        result = set(outcomes(node.body))  # type: ignore[attr-defined]
        for handler in node.handlers:  # type: ignore[attr-defined]
            result |= outcomes(handler.body)
        return frozenset(result)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return outcomes(node.body)
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        inner = outcomes(node.body)
        result = set(inner & {RETURN, RAISE})
        if not (isinstance(node, ast.While) and _true_literal(node.test)) or BREAK in inner:
            result.add(FALL)
        return frozenset(result)
    if isinstance(node, ast.Match):
        result = {FALL}
        for case in node.cases:
            result |= outcomes(case.body)
        return frozenset(result)
    return frozenset({FALL})


def _is_try_star(node: ast.AST) -> bool:
    return type(node).__name__ == "TryStar"


def _true_literal(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Constant) and expr.value is True:
        return True
    value = _number(expr)
    return value is not None and value != 0


def _number(expr: ast.AST) -> Optional[float]:
    """``syntax.number``: an int or float literal, also signed."""
    if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
        return float(expr.value)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        inner = _number(expr.operand)
        return None if inner is None else -inner if isinstance(expr.op, ast.USub) else inner
    return None


def _for_may_count(loop: ast.stmt, body: list, source: Source) -> bool:
    """Mirror of ``loops._iteration`` for ``for`` loops: attempts counted, delays walked,
    or the same call repeated once per item (the target unused)."""
    assert isinstance(loop, (ast.For, ast.AsyncFor))
    target = loop.target
    if _iterates(target, loop.iter, loop, source):
        return True
    if not isinstance(target, ast.Name):
        return False
    return target.id == "_" or target.id not in {node.id for node in body if isinstance(node, ast.Name)}


def _iterates(target: ast.AST, iterable: ast.AST, loop: ast.stmt, source: Source) -> bool:
    """``loops._for_iteration``: counted (``range``, ``itertools.count``), numbers listed
    (``[1, 2, 4]`` or a name assigned them), or items the loop sleeps on."""
    while isinstance(iterable, ast.Await):
        iterable = iterable.value
    if isinstance(iterable, ast.Call):
        name = last_name(iterable.func)
        if isinstance(iterable.func, ast.Name) and name in source.aliases:
            return True
        if name == "enumerate" and iterable.args and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            first = iterable.args[0]
            return isinstance(first, ast.Starred) or _iterates(target.elts[1], first, loop, source)
        if name in _COUNTING:
            return True
    elif isinstance(iterable, (ast.List, ast.Tuple)):
        elements = list(iterable.elts)
        while elements and isinstance(elements[-1], ast.Constant) and elements[-1].value is None:
            elements.pop()
        if elements and all(_number(e) is not None for e in elements):
            return True
    elif isinstance(iterable, ast.Name) and source.assigns(iterable.id, numbers=True):
        return True
    name = _dotted(target)  # ``for self.delay in …`` too
    if not name:
        return False
    # ``for delay in backoff_delays(): …; time.sleep(delay)``
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and _may_sleep(node.func, source):
            for argument in list(node.args) + [k.value for k in node.keywords]:
                if any(isinstance(n, (ast.Name, ast.Attribute)) and _dotted(n) == name for n in ast.walk(argument)):
                    return True
    return False


def _may_sleep(func: ast.AST, source: Source) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr in _SLEEP_ATTRIBUTES or bool(SLEEP_WRAPPER.match(func.attr))
    if isinstance(func, ast.Name):
        # ``from asyncio import wait_for``: ``wait_for(event.wait(), timeout=delay)``
        return bool(SLEEP_WRAPPER.match(func.id)) or func.id in source.aliases or func.id in _SLEEP_ATTRIBUTES
    return False


def _own_calls(source: Source, statement: ast.stmt, name: str, receiver: Optional[str]) -> int:
    """``name(`` or ``name (`` in the function's text, alone or after ``receiver.``."""
    text = source.text
    start, end = source.span(statement)
    count = 0
    at = text.find(name, start, end)
    while at >= 0:
        after = at + len(name)
        if text.startswith("(", after) or text.startswith(" (", after):
            if starts_name(text, at, after_dot=False):
                count += 1
            elif receiver and text.endswith(receiver + ".", 0, at) and starts_name(text, at - 1 - len(receiver), after_dot=False):
                count += 1
        at = text.find(name, after, end)
    return count


def function_may_recurse(statement: ast.stmt, source: Source) -> bool:
    """A function that calls itself (by name, or ``self.name``) from an except handler or a
    status branch: mirror of ``recursion._self_calls`` and ``_failure_context``."""
    if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    name = statement.name
    arguments = statement.args.posonlyargs + statement.args.args + statement.args.kwonlyargs
    receiver = arguments[0].arg if arguments and arguments[0].arg in ("self", "cls") else None
    # The def and a call: ``name(`` twice, not as another object's method (``d.get(``);
    # a call split as ``name\n(`` is not worth the cost.
    direct = _own_calls(source, statement, name, receiver) >= 2
    wrappers = _wrappers_calling(source).get(name, ())
    if wrappers:
        # a wrapper this function never names cannot be its way back (``return self.get(...)``
        # somewhere makes every ``get`` a candidate otherwise)
        start, end = source.span(statement)
        wrappers = frozenset(w for w in wrappers if source.text.find(w, start, end) >= 0)
    if not direct and not wrappers:
        return False  # neither a call of its own nor a function of the file that calls it back
    stack = [(node, False) for node in statement.body]
    while stack:
        node, guarded = stack.pop()
        if isinstance(node, ast.Call) and guarded:
            func = node.func
            if direct and isinstance(func, ast.Name) and func.id == name:
                return True
            if direct and receiver and isinstance(func, ast.Attribute) and func.attr == name and (
                isinstance(func.value, ast.Name) and func.value.id == receiver
            ):
                return True
            if isinstance(func, ast.Name) and func.id in wrappers:
                return True
            if receiver and isinstance(func, ast.Attribute) and func.attr in wrappers and (
                isinstance(func.value, ast.Name) and func.value.id == receiver
            ):
                return True
        # ``recursion._failure_context``: an except handler, or a branch on an HTTP status
        inner = guarded or isinstance(node, ast.ExceptHandler) or isinstance(node, ast.If) and (
            mentions_status(node.test) or any(isinstance(n, ast.Call) and may_classify(n) for n in ast.walk(node.test))
        )
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append((child, inner))
    return False


def _wrappers_calling(source: Source) -> Dict[str, frozenset]:
    """Name → the functions of the file whose last statement calls it back (``return
    name(...)``, ``return await self.name(...)``): the wrappers of a retry through a sibling
    method (``recursion._calls_back``). Built once per file."""
    index = getattr(source, "_wrappers_calling", None)
    if index is None:
        found: Dict[str, set] = {}
        for node in source.statements:  # every def, nested ones too, without visiting expressions
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                last = node.body[-1]
                value = last.value if isinstance(last, ast.Return) else None
                if isinstance(value, ast.Await):
                    value = value.value
                if isinstance(value, ast.Call):
                    func = value.func
                    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                    if called:
                        found.setdefault(called, set()).add(node.name)
        index = {called: frozenset(names) for called, names in found.items()}
        source._wrappers_calling = index  # type: ignore[attr-defined]
    return index
