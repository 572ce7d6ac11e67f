"""Library policies that poll: a retry decorator used to wait for a state, not to retry a failure.

``@retry(retry=retry_if_result(lambda s: s != "DONE"), wait=wait_fixed(5))`` on ``get_state(job)``,
or ``@backoff.on_exception(backoff.constant, QueryNotFinished)`` on a function that raises
``QueryNotFinished`` when the query it reads is still ``RUNNING``: the call succeeded, the resource
is not there yet, and the decorator asks again at the poll's pace. That is the library spelling of
a wait-for-state loop (``polls``), and no retry rule speaks about it, as none speaks about the
hand-written one: a fixed pace is what a poll should have, and its end is the state it waits for.

Precision first: every condition the policy retries on must be such a state (a result predicate
that tests a state name or asks ``done()``, or an exception the decorated function raises only
under such a test). ``retry_if_result(lambda r: r.status_code == 429)`` retries a failed call, and
a policy that also retries ``ConnectionError`` retries failures as well: both stay retries. A
function named for waiting (``wait_for_job``) whose policy keeps a fixed pace is a poll too, as
the loop in such a function is.
"""

from __future__ import annotations

import re
from typing import FrozenSet, List, Optional, Tuple

import libcst as cst

from ..model import DelayKind, RetryPolicy
from ..syntax import DEFERRED, dotted_name, walk
from .context import ModuleContext
from .errors import not_yet_name
from .libraries.common import Args, decorated, names_of, resolve
from .polls import _WAITS, _state_test

#: A condition a policy retries on: ("result", predicate) or ("raise", exception names).
Condition = Tuple[str, object]

_RESULT_PREDICATES = frozenset({"retry_if_result", "retry_if_not_result"})


def waits_for_a_state(policy: RetryPolicy, ctx: ModuleContext) -> bool:
    call = policy.anchor
    if not isinstance(call, cst.Call):
        return False
    function = decorated(call, ctx)
    if function is None:
        # ``Retrying(wait=wait_fixed(c), retry=retry_if_exception_type(BigQueryJobStillRunning))``
        # called on a helper (feast): every condition is an exception that says "not yet"
        conditions = _conditions(policy.source, call, ctx)
        return bool(conditions) and all(kind == "raise" and all(not_yet_name(n.rsplit(".", 1)[-1]) for n in value)
                                         for kind, value in conditions)  # type: ignore[union-attr]
    if _WAITS.match(function.name.value) and policy.delay.kind is DelayKind.FIXED:
        return True  # ``@retry(wait=wait_fixed(10))`` on ``wait_for_cluster``: the pace of a poll
    conditions = _conditions(policy.source, call, ctx)
    if not conditions:
        return False
    results = _result_names(function, ctx)
    return all(_is_state(condition, function, results, ctx) for condition in conditions)


def _conditions(source: str, call: cst.Call, ctx: ModuleContext) -> Optional[List[Condition]]:
    """What the policy retries on; None when a part cannot be read."""
    args = Args.of(call)
    if source == "tenacity":
        retry = args.get("retry")
        return _tenacity_conditions(retry, ctx) if retry is not None else None
    if source == "backoff":
        name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
        if name == "on_predicate":
            predicate = args.get("predicate", 1)
            return [("result", predicate)] if predicate is not None else None
        names = names_of(args.get("exception", 1), ctx)
        return [("raise", names)] if names else None
    return None


def _tenacity_conditions(expr: cst.BaseExpression, ctx: ModuleContext) -> Optional[List[Condition]]:
    expr = resolve(expr, ctx) or expr
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        left, right = _tenacity_conditions(expr.left, ctx), _tenacity_conditions(expr.right, ctx)
        return left + right if left is not None and right is not None else None
    if not isinstance(expr, cst.Call) or not expr.args:
        return None
    name = next((q.rsplit(".", 1)[-1] for q in ctx.qualified_names(expr.func) if q.startswith("tenacity.")), "")
    if name in _RESULT_PREDICATES:
        return [("result", expr.args[0].value)]
    if name == "retry_if_exception_type":
        names = names_of(expr.args[0].value, ctx)
        return [("raise", names)] if names else None
    if name == "retry_any":
        out: List[Condition] = []
        for arg in expr.args:
            part = _tenacity_conditions(arg.value, ctx)
            if part is None:
                return None
            out.extend(part)
        return out
    return None


def _is_state(condition: Condition, function: cst.FunctionDef, results: FrozenSet[str], ctx: ModuleContext) -> bool:
    kind, value = condition
    if kind == "result":
        return _predicate_tests_state(value, ctx)  # type: ignore[arg-type]
    return _raised_only_for_a_state(value, function, results, ctx)  # type: ignore[arg-type]


def _predicate_tests_state(predicate: cst.BaseExpression, ctx: ModuleContext) -> bool:
    """``lambda s: s not in ("DONE", "FAILED")``, ``lambda job: not job.done()``, or a module
    function of one ``return`` doing the same."""
    if isinstance(predicate, cst.Lambda):
        params = frozenset(p.name.value for p in predicate.params.params)
        return _tests_state(predicate.body, params)
    if isinstance(predicate, cst.Name):
        for statement in ctx.module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == predicate.value:
                params = frozenset(p.name.value for p in statement.params.params)
                returns = [n for n in walk(statement.body, skip=DEFERRED) if isinstance(n, cst.Return)]
                return bool(returns) and all(r.value is not None and _tests_state(r.value, params) for r in returns)
    return False


def _raised_only_for_a_state(names: Tuple[str, ...], function: cst.FunctionDef, results: FrozenSet[str],
                             ctx: ModuleContext) -> bool:
    """Every exception named is raised in the decorated function, and only under a test of the
    state the function read (``if state in ("RUNNING", "QUEUED"): raise NotDone(qid)``)."""
    wanted = {n.rsplit(".", 1)[-1] for n in names}
    found = set()
    for node in walk(function.body, skip=DEFERRED):
        if not isinstance(node, cst.Raise) or node.exc is None:
            continue
        raised = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
        name = (dotted_name(raised) or "").rsplit(".", 1)[-1]
        if name not in wanted:
            continue
        guard = ctx.parent(ctx.parent(node))  # Raise -> SimpleStatementLine -> block
        guard = ctx.parent(guard) if isinstance(guard, (cst.IndentedBlock, cst.SimpleStatementSuite)) else guard
        if not isinstance(guard, cst.If) or not _tests_state(guard.test, results):
            return False
        found.add(name)
    return found == wanted


def _tests_state(test: cst.BaseExpression, results: FrozenSet[str]) -> bool:
    """A state test whose strings are state names (``"RUNNING"``, ``"in_progress"``), not words of
    a message: ``"already in progress" in message`` reads an error's text (a conflict), not a state."""
    strings = [n.evaluated_value for n in walk(test) if isinstance(n, cst.SimpleString)]
    if any(not isinstance(text, str) or not _STATE_WORD.match(text) for text in strings):
        return False
    return _state_test(test, results)


_STATE_WORD = re.compile(r"^[A-Za-z][\w.:-]*$")


def _result_names(function: cst.FunctionDef, ctx: ModuleContext) -> FrozenSet[str]:
    """Names the function assigns from a call: what it read from the resource."""
    out = set()
    for name, bindings in ctx.writes_in(function.body).items():
        if any(b.value is not None and any(isinstance(n, cst.Call) for n in walk(b.value)) for b in bindings):
            out.add(name)
    return frozenset(out)
