"""Hand-written retry loops.

A loop is a retry site when an operation in it fails and the failure path leads
back to the loop head, while success leaves the loop:

* an ``except`` handler that continues or falls through to the next iteration,
  around a ``try`` whose normal completion exits (``break``/``return``, a
  success test such as ``if resp.ok: return resp``, or the flag the ``while``
  tests); or
* a test on an HTTP status that exits for some statuses (a success) and goes
  round again for others.

Loops over items (consumers, servers), polling loops without failure handling,
loops whose handlers only catch "not yet" exceptions, and interactive re-prompt
loops are not retries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..model import (
    NO_DELAY,
    UNKNOWN,
    Bound,
    Delay,
    DelayKind,
    GiveUp,
    Location,
    Num,
    RetriedError,
    RetriedStatuses,
    RetryPolicy,
    known,
)
from ..syntax import (
    BREAK,
    CONTINUE,
    DEFERRED,
    EXITS,
    FALL,
    LOOPS,
    RAISE,
    RETURN,
    call_args,
    dotted_name,
    if_branches,
    last_name,
    outcomes,
    statement_outcomes,
    statements,
    unwrap_await,
    walk,
    walk_local,
)
from .bounds import CounterInfo, GuardEnv, classify_guard, find_counters
from .context import Binding, ModuleContext
from .delays import DelayEnv, Sleep, classify, literal_steps, sleep_of
from .errors import Handler, describe_handler, retried_error
from .status import ALL_STATUSES, status_set

_PROMPTS = frozenset({"input", "getpass.getpass", "click.prompt", "click.confirm", "typer.prompt", "rich.prompt.Prompt.ask"})
_TRIVIAL_CALLS = frozenset({"int", "float", "str", "bool", "len", "dict", "list", "tuple", "set", "repr", "print", "isinstance"})
_GIVE_UP_DLQ = ("dead", "dlq", "poison", "quarantine")


@dataclass
class Iteration:
    infinite: bool = False
    attempts: Num = None
    counters: Dict[str, CounterInfo] = field(default_factory=dict)
    step_targets: Dict[str, Tuple[float, ...]] = field(default_factory=dict)
    opaque_targets: Tuple[str, ...] = ()
    text: str = ""


@dataclass
class TryAnalysis:
    node: cst.Try
    handlers: List[Handler]
    retrying: List[Handler]
    exiting: List[Handler]
    rest: List[cst.CSTNode]
    success_exit: bool
    operation: Optional[cst.Call]


def extract_loops(ctx: ModuleContext) -> List[RetryPolicy]:
    policies = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, LOOPS):
            policy = extract_loop(node, ctx)
            if policy is not None:
                policies.append(policy)
    return policies


def extract_loop(loop: cst.CSTNode, ctx: ModuleContext) -> Optional[RetryPolicy]:
    assert isinstance(loop, (cst.For, cst.While))
    sleeps = [s for s in (_sleep(n, ctx) for n in walk_local(loop.body)) if s is not None]
    iteration = _iteration(loop, ctx, sleeps)
    if iteration is None:
        return None
    writes = _writes(loop, ctx)
    result_names = frozenset(writes) - frozenset(iteration.counters)
    trys = [_analyse_try(t, loop, ctx, result_names) for t in _loop_trys(loop, ctx)]
    retry_trys = [t for t in trys if t.retrying and t.success_exit and t.operation is not None]
    status = _status_site(loop, ctx, writes)
    if not retry_trys and status is None:
        return None
    operations = [t.operation for t in retry_trys if t.operation is not None]
    if any(ctx.call_name(op) & _PROMPTS for op in operations):
        return None  # re-prompting a user is not retrying a failure

    counters = dict(iteration.counters)
    counters.update(find_counters(writes, ctx, loop))
    bound, give_up_node = _bound(loop, ctx, iteration, counters, writes, retry_trys)
    not_between_attempts = _not_between_attempts(retry_trys)
    delay, delay_location = _delay(loop, ctx, iteration, counters, writes, sleeps, not_between_attempts, retry_trys)
    errors = _errors(retry_trys, ctx)
    statuses = _statuses(status, retry_trys, ctx)

    header_end = loop.iter if isinstance(loop, cst.For) else loop.test
    location = ctx.location(loop, end=header_end)
    operation = operations[0] if operations else (status[1] if status else None)
    return RetryPolicy(
        source="loop",
        bound=bound,
        delay=delay,
        location=location,
        errors=errors,
        statuses=statuses,
        give_up=_give_up(loop, ctx, bound, give_up_node),
        header_lines=tuple(location.lines),
        delay_location=delay_location,
        extent=ctx.location(loop),
        description=_describe(loop, ctx, iteration),
        operation=ctx.code(operation.func) if isinstance(operation, cst.Call) else "",
        is_async=any(isinstance(n, cst.Await) for n in walk_local(loop.body))
        or bool(isinstance(loop, cst.For) and loop.asynchronous),
    )


# ---------------------------------------------------------------- iteration


def _sleep(node: cst.CSTNode, ctx: ModuleContext) -> Optional[Sleep]:
    return sleep_of(node, ctx) if isinstance(node, cst.Call) else None


def _iteration(loop: cst.CSTNode, ctx: ModuleContext, sleeps: List[Sleep]) -> Optional[Iteration]:
    if isinstance(loop, cst.While):
        test = loop.test
        infinite = isinstance(test, cst.Name) and test.value == "True" or (
            isinstance(test, cst.Integer) and test.evaluated_value != 0
        )
        return Iteration(infinite=infinite, text="while " + ctx.code(test))
    assert isinstance(loop, cst.For)
    text = f"for {ctx.code(loop.target)} in {ctx.code(loop.iter)}"
    iteration = _for_iteration(loop.target, unwrap_await(loop.iter), ctx, sleeps)
    if iteration is not None:
        iteration.text = text
    return iteration


def _for_iteration(
    target: cst.BaseExpression, iterable: cst.BaseExpression, ctx: ModuleContext, sleeps: List[Sleep]
) -> Optional[Iteration]:
    env = DelayEnv(ctx)
    target_name = dotted_name(target)
    if isinstance(iterable, cst.Call):
        names = ctx.call_name(iterable)
        positional, keywords = call_args(iterable)
        if "range" in names:
            return _range_iteration(target_name, positional, env)
        if names & {"itertools.count"}:
            start = _const(positional[0] if positional else keywords.get("start"), env, default=0.0)
            step = _const(positional[1] if len(positional) > 1 else keywords.get("step"), env, default=1.0)
            counters = {target_name: CounterInfo(start, step)} if target_name else {}
            return Iteration(infinite=True, counters=counters)
        if names & {"itertools.repeat"}:
            times = positional[1] if len(positional) > 1 else keywords.get("times")
            if times is None:
                return Iteration(infinite=True)
            return Iteration(attempts=_const(times, env))
        if names & {"itertools.cycle"}:
            return Iteration(infinite=True)
        if "enumerate" in names and positional and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            start = _const(positional[1] if len(positional) > 1 else keywords.get("start"), env, default=0.0)
            index_name = dotted_name(target.elements[0].value)
            inner = _for_iteration(target.elements[1].value, unwrap_await(positional[0]), ctx, sleeps)
            if inner is None:
                return None
            if index_name:
                inner.counters[index_name] = CounterInfo(start, 1.0)
            return inner
    steps = literal_steps(iterable, env)
    if steps is not None:
        step_targets = {target_name: steps} if target_name else {}
        return Iteration(attempts=len(steps), step_targets=step_targets)
    # An unknown iterable drives a retry only when the loop sleeps on its items
    # (``for delay in backoff_delays():``); otherwise the loop walks over items.
    if target_name and any(s.delay is not None and target_name in _names(s.delay) for s in sleeps):
        return Iteration(attempts=UNKNOWN, opaque_targets=(target_name,))
    return None


def _range_iteration(target_name: Optional[str], args: Sequence[cst.BaseExpression], env: DelayEnv) -> Iteration:
    values = [_const(a, env) for a in args]
    if len(values) == 1:
        start, stop, step = 0.0, values[0], 1.0
    elif len(values) == 2:
        start, stop, step = values[0], values[1], 1.0
    elif len(values) == 3:
        start, stop, step = values
    else:
        return Iteration(attempts=UNKNOWN)
    attempts: Num = UNKNOWN
    if known(start) and known(stop) and known(step) and step != 0:
        attempts = len(range(int(start), int(stop), int(step)))  # type: ignore[arg-type]
    counters = {target_name: CounterInfo(start, step)} if target_name else {}
    return Iteration(attempts=attempts, counters=counters)


def _const(expr: Optional[cst.BaseExpression], env: DelayEnv, default: Num = UNKNOWN) -> Num:
    if expr is None:
        return default
    from .delays import shape_of

    shape = shape_of(expr, env)
    return shape.value if shape.kind == "const" else UNKNOWN


def _names(node: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(node) if isinstance(n, (cst.Name, cst.Attribute))]


def _writes(loop: cst.CSTNode, ctx: ModuleContext) -> Dict[str, List[Binding]]:
    writes: Dict[str, List[Binding]] = {}
    for statement in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(statement, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            for name, bindings in ctx.writes_in(statement).items():
                writes.setdefault(name, []).extend(bindings)
    return writes


# ---------------------------------------------------------------- try statements


def _loop_trys(loop: cst.CSTNode, ctx: ModuleContext) -> List[cst.Try]:
    """Try statements of this loop's own iteration, not nested in handlers or finally blocks."""
    found = []
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Try):
            nested_in_failure = False
            for ancestor in ctx.ancestors(node):
                if ancestor is loop:
                    break
                if isinstance(ancestor, (cst.ExceptHandler, cst.Finally)):
                    nested_in_failure = True
                    break
            if not nested_in_failure:
                found.append(node)
    return found


def rest_after(node: cst.CSTNode, stop: cst.CSTNode, ctx: ModuleContext) -> List[cst.CSTNode]:
    """Statements that run after ``node`` finishes normally, up to the end of ``stop``'s body."""
    out: List[cst.CSTNode] = []
    current = node
    while current is not stop:
        parent = ctx.parent(current)
        if parent is None:
            break
        if isinstance(parent, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module)):
            members = statements(parent.body if isinstance(parent, cst.Module) else parent)
            anchor = current
            if isinstance(current, cst.SimpleStatementLine):
                anchor = current.body[-1]
            for index, member in enumerate(members):
                if member is anchor:
                    out.extend(members[index + 1 :])
                    break
        elif isinstance(parent, cst.SimpleStatementLine):
            members = list(parent.body)
            for index, member in enumerate(members):
                if member is current:
                    out.extend(members[index + 1 :])
                    break
            grand = ctx.parent(parent)
            if isinstance(grand, cst.IndentedBlock):
                block = statements(grand)
                last = parent.body[-1]
                for index, member in enumerate(block):
                    if member is last:
                        out.extend(block[index + 1 :])
                        break
                current = grand
                continue
        current = parent
    return out


def _analyse_try(node: cst.Try, loop: cst.CSTNode, ctx: ModuleContext, result_names: FrozenSet[str]) -> TryAnalysis:
    handlers = [describe_handler(h, ctx) for h in node.handlers]
    rest = rest_after(node, loop, ctx)
    rest_out = outcomes(rest)
    loops_back = bool(rest_out & {FALL, CONTINUE})
    retrying, exiting = [], []
    for handler in handlers:
        result = outcomes(statements(handler.node.body))
        if handler.polling:
            continue
        if CONTINUE in result or (FALL in result and loops_back):
            retrying.append(handler)
        elif result & EXITS:
            exiting.append(handler)
    success_path = statements(node.body) + statements(node.orelse) + rest
    return TryAnalysis(
        node=node,
        handlers=handlers,
        retrying=retrying,
        exiting=exiting,
        rest=rest,
        success_exit=_success_exit(success_path, loop, ctx, result_names),
        operation=_operation(node, ctx),
    )


def _operation(node: cst.Try, ctx: ModuleContext) -> Optional[cst.Call]:
    for n in walk_local(node.body):
        if isinstance(n, cst.Call) and sleep_of(n, ctx) is None:
            if not (ctx.call_name(n) & _TRIVIAL_CALLS):
                return n
    return None


def _success_exit(stmts: List[cst.CSTNode], loop: cst.CSTNode, ctx: ModuleContext, result_names: FrozenSet[str]) -> bool:
    """Does the normal completion of the attempt leave the loop?"""
    roots = set(map(id, stmts))
    for root in stmts:
        for node in _walk_success(root):
            if not isinstance(node, (cst.Return, cst.Break)):
                continue
            guard, positive = _innermost_guard(node, roots, ctx)
            if guard is None or _is_success_test(guard.test, positive, ctx, result_names):
                return True
    if isinstance(loop, cst.While):
        tested = set(_names(loop.test))
        for root in stmts:
            for node in _walk_success(root):
                if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = node.targets if isinstance(node, cst.Assign) else [node]
                    for target in targets:
                        if dotted_name(target.target) in tested:
                            return True
    return False


def _walk_success(root: cst.CSTNode):
    """Walk a success path: no nested defs or loops, no except handlers of nested trys."""
    return walk(root, skip=DEFERRED + LOOPS + (cst.ExceptHandler,))


def _innermost_guard(node: cst.CSTNode, roots: Set[int], ctx: ModuleContext) -> Tuple[Optional[cst.If], bool]:
    child = node
    for ancestor in ctx.ancestors(node):
        if id(child) in roots:
            return None, True
        if isinstance(ancestor, cst.If):
            in_body = ctx.is_inside(node, ancestor.body) or ancestor.body is child
            return ancestor, in_body
        child = ancestor
    return None, True


def _is_success_test(test: cst.BaseExpression, positive: bool, ctx: ModuleContext, result_names: FrozenSet[str]) -> bool:
    statuses = status_set(test, ctx)
    if statuses is not None:
        taken = statuses if positive else ALL_STATUSES - statuses
        return any(200 <= s < 300 for s in taken)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_success_test(test.expression, not positive, ctx, result_names)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0].operator
        right = test.comparisons[0].comparator
        if isinstance(right, cst.Name) and right.value == "None":
            if isinstance(op, (cst.Is, cst.Equal)):
                positive = not positive
            return positive and _mentions_result(test.left, result_names)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and positive:
        return _is_success_test(test.left, True, ctx, result_names) or _is_success_test(test.right, True, ctx, result_names)
    return positive and _mentions_result(test, result_names)


def _mentions_result(node: cst.CSTNode, result_names: FrozenSet[str]) -> bool:
    return any(n.split(".")[0] in result_names or n in result_names for n in _names(node))


# ---------------------------------------------------------------- HTTP status loops


def _status_site(
    loop: cst.CSTNode, ctx: ModuleContext, writes: Dict[str, List[Binding]]
) -> Optional[Tuple[FrozenSet[int], Optional[cst.Call], cst.If]]:
    """A loop that goes round again on some HTTP statuses and exits on success."""
    body = statements(loop.body)  # type: ignore[attr-defined]
    first: Optional[cst.If] = None
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.If) and status_set(node.test, ctx) is not None:
            if any(isinstance(a, cst.ExceptHandler) for a in _ancestors_until(node, loop, ctx)):
                continue
            roots = {n.split(".")[0] for n in _names(node.test)}
            if roots & set(writes):
                first = node
                break
    if first is None:
        return None
    start = next((i for i, s in enumerate(body) if s is first or ctx.is_inside(first, s)), None)
    if start is None:
        return None
    tail = body[start:]
    retried, exits_on_success = set(), False
    for status in ALL_STATUSES:
        result = status_outcomes(tail, status, ctx)
        if result & {FALL, CONTINUE}:
            retried.add(status)
        elif 200 <= status < 300 and result <= EXITS:
            exits_on_success = True
    if not retried or not exits_on_success:
        return None
    response = _response_call(first, writes, ctx)
    return frozenset(retried), response, first


def _ancestors_until(node: cst.CSTNode, stop: cst.CSTNode, ctx: ModuleContext):
    for ancestor in ctx.ancestors(node):
        if ancestor is stop:
            return
        yield ancestor


def status_outcomes(stmts: Sequence[cst.CSTNode], status: int, ctx: ModuleContext) -> FrozenSet[str]:
    """Like :func:`outcomes`, but every status test is decided for ``status``."""
    current = {FALL}
    for statement in stmts:
        if FALL not in current:
            break
        current.discard(FALL)
        current |= _status_statement(statement, status, ctx)
    return frozenset(current)


def _status_statement(node: cst.CSTNode, status: int, ctx: ModuleContext) -> FrozenSet[str]:
    if isinstance(node, cst.If):
        body, orelse = if_branches(node)
        tested = status_set(node.test, ctx)
        if tested is not None:
            branch = body if status in tested else orelse
            return status_outcomes(branch, status, ctx) if branch is not None else frozenset({FALL})
        result = set(status_outcomes(body, status, ctx))
        result |= status_outcomes(orelse, status, ctx) if orelse is not None else {FALL}
        return frozenset(result)
    if isinstance(node, cst.Expr):
        value = unwrap_await(node.value)
        if isinstance(value, cst.Call) and last_name(value.func) == "raise_for_status" and status >= 400:
            return frozenset({RAISE})
    if isinstance(node, cst.Try):
        body = status_outcomes(statements(node.body), status, ctx)
        result = set(body - {FALL})
        if FALL in body:
            result |= status_outcomes(statements(node.orelse), status, ctx) if node.orelse else {FALL}
        if RAISE in body:
            for handler in node.handlers:
                result |= outcomes(statements(handler.body))
        return frozenset(result)
    if isinstance(node, cst.With):
        return status_outcomes(statements(node.body), status, ctx)
    return statement_outcomes(node)


def _response_call(test_if: cst.If, writes: Dict[str, List[Binding]], ctx: ModuleContext) -> Optional[cst.Call]:
    for name in _names(test_if.test):
        for binding in writes.get(name.split(".")[0], []):
            value = unwrap_await(binding.value) if binding.value is not None else None
            if isinstance(value, cst.Call):
                return value
    return None


# ---------------------------------------------------------------- bounds


def _bound(
    loop: cst.CSTNode,
    ctx: ModuleContext,
    iteration: Iteration,
    counters: Dict[str, CounterInfo],
    writes: Dict[str, List[Binding]],
    retry_trys: List[TryAnalysis],
) -> Tuple[Bound, Optional[cst.CSTNode]]:
    failure_names = frozenset(
        h.variable for t in retry_trys for h in t.handlers if h.variable
    )
    attempt_line = min((ctx.location(t.node).line for t in retry_trys), default=0)
    env = GuardEnv(ctx, counters=counters, loop_writes=writes, failure_names=failure_names,
                   attempt_line=attempt_line, appended=_appended(loop))
    attempts: Num = iteration.attempts
    deadline: Num = None
    texts: List[str] = []
    give_up: Optional[cst.CSTNode] = None
    possible = False
    if iteration.attempts is not None:
        texts.append(iteration.text)
    if isinstance(loop, cst.While) and not iteration.infinite:
        guard = classify_guard(loop.test, env, ctx.location(loop).line, at_loop_head=True)
        attempts, deadline, possible = _apply_guard(guard, attempts, deadline, possible)
        if guard.kind in ("counter", "deadline"):
            texts.append(iteration.text)
    success_regions = [t.node.body for t in retry_trys] + [t.node.orelse for t in retry_trys if t.node.orelse]
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if not isinstance(node, cst.If):
            continue
        body, orelse = if_branches(node)
        exiting = [b for b in (body, orelse) if b is not None and outcomes(b) & EXITS]
        if not exiting:
            continue
        guard = classify_guard(node.test, env, ctx.location(node).line)
        if guard.kind == "unknown" and any(ctx.is_inside(node, region) for region in success_regions):
            continue
        before = (attempts, deadline)
        attempts, deadline, possible = _apply_guard(guard, attempts, deadline, possible)
        if guard.kind in ("counter", "deadline"):
            texts.append("if " + ctx.code(node.test))
            if (attempts, deadline) != before or give_up is None:
                give_up = node
    if attempts is None and deadline is None and possible:
        attempts = UNKNOWN
    return Bound(attempts=attempts, deadline=deadline, text="; ".join(texts)), give_up


def _apply_guard(guard, attempts: Num, deadline: Num, possible: bool) -> Tuple[Num, Num, bool]:
    if guard.kind == "counter":
        attempts = _tighter(attempts, guard.attempts)
    elif guard.kind == "deadline":
        deadline = _tighter(deadline, guard.deadline)
    elif guard.kind == "unknown":
        possible = True
    return attempts, deadline, possible


def _tighter(a: Num, b: Num) -> Num:
    if a is None:
        return b
    if b is None:
        return a
    if known(a) and known(b):
        return min(a, b)  # type: ignore[type-var]
    return a if known(a) else b if known(b) else UNKNOWN


def _appended(loop: cst.CSTNode) -> FrozenSet[str]:
    out = set()
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "add"):
            name = dotted_name(node.func.value)
            if name:
                out.add(name)
    return frozenset(out)


# ---------------------------------------------------------------- delays


def _not_between_attempts(retry_trys: List[TryAnalysis]) -> List[cst.CSTNode]:
    """Subtrees whose sleeps are not waits between attempts (else clauses, exiting handlers)."""
    excluded: List[cst.CSTNode] = []
    for analysis in retry_trys:
        if analysis.node.orelse is not None:
            excluded.append(analysis.node.orelse)
        excluded.extend(h.node for h in analysis.handlers if h not in analysis.retrying)
    return excluded


def _delay(
    loop: cst.CSTNode,
    ctx: ModuleContext,
    iteration: Iteration,
    counters: Dict[str, CounterInfo],
    writes: Dict[str, List[Binding]],
    sleeps: List[Sleep],
    excluded: List[cst.CSTNode],
    retry_trys: List[TryAnalysis],
) -> Tuple[Delay, Optional[Location]]:
    chosen: List[Sleep] = []
    for sleep in sleeps:
        if any(ctx.is_inside(sleep.call, region) for region in excluded):
            continue
        inside_attempt = [t for t in retry_trys if ctx.is_inside(sleep.call, t.node.body)]
        if inside_attempt:
            # A sleep inside the attempt counts only before the operation runs.
            operation = inside_attempt[0].operation
            if operation is None or ctx.location(sleep.call).line >= ctx.location(operation).line:
                continue
        if _in_exit_branch(sleep.call, loop, ctx):
            continue
        chosen.append(sleep)
    if not chosen:
        return NO_DELAY, None
    delays = []
    for sleep in chosen:
        env = DelayEnv(
            ctx,
            counters=counters,
            loop_writes=writes,
            step_targets=iteration.step_targets,
            opaque_targets=iteration.opaque_targets,
            sleep_line=ctx.location(sleep.call).line,
        )
        delays.append((classify(sleep.delay, env), sleep))
    return combine_delays(delays, ctx)


def _in_exit_branch(node: cst.CSTNode, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A sleep in a branch that always leaves the loop is not between attempts."""
    child = node
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            return False
        if isinstance(ancestor, (cst.IndentedBlock,)) and isinstance(ctx.parent(ancestor), (cst.If, cst.Else)):
            stmts = statements(ancestor)
            result = outcomes(stmts)
            if result and result <= EXITS:
                return True
        child = ancestor
    return False


def combine_delays(delays: List[Tuple[Delay, Sleep]], ctx: ModuleContext) -> Tuple[Delay, Optional[Location]]:
    """One delay for the site: the schedule, with server-chosen waits (Retry-After) set aside."""
    scheduled = [(d, s) for d, s in delays if not d.honours_retry_after]
    honours = len(scheduled) < len(delays)
    if not scheduled:
        delay, sleep = delays[0]
        return Delay(DelayKind.UNKNOWN, honours_retry_after=True, text=delay.text), ctx.location(sleep.call)
    first, sleep = scheduled[0]
    same = all(_same_schedule(d, first) for d, _ in scheduled[1:])
    if not same:
        return Delay(DelayKind.UNKNOWN, honours_retry_after=honours, text=first.text), None
    from dataclasses import replace

    return replace(first, honours_retry_after=honours or first.honours_retry_after), ctx.location(sleep.call)


def _same_schedule(a: Delay, b: Delay) -> bool:
    return (a.kind, a.base, a.factor, a.step, a.cap, a.steps, a.jitter) == (b.kind, b.base, b.factor, b.step, b.cap, b.steps, b.jitter)


# ---------------------------------------------------------------- errors and statuses


def _errors(retry_trys: List[TryAnalysis], ctx: ModuleContext) -> Tuple[RetriedError, ...]:
    out = []
    for analysis in retry_trys:
        raises_for_status = any(
            isinstance(n, cst.Call) and last_name(n.func) == "raise_for_status" for n in walk_local(analysis.node.body)
        )
        for handler in analysis.retrying:
            index = analysis.handlers.index(handler)
            earlier_exit = any(h in analysis.exiting for h in analysis.handlers[:index])
            out.append(retried_error(handler, ctx, earlier_exit, raises_for_status))
    return tuple(out)


def _statuses(
    status: Optional[Tuple[FrozenSet[int], Optional[cst.Call], cst.If]],
    retry_trys: List[TryAnalysis],
    ctx: ModuleContext,
) -> Optional[RetriedStatuses]:
    retried: Set[int] = set()
    where: Optional[cst.CSTNode] = None
    if status is not None:
        retried |= status[0]
        where = status[2].test
    for analysis in retry_trys:
        for handler in analysis.retrying:
            tests = [n for n in walk_local(handler.node.body) if isinstance(n, cst.If) and status_set(n.test, ctx) is not None]
            if not tests:
                continue
            path = statements(handler.node.body) + analysis.rest
            for code in range(400, 600):
                if status_outcomes(path, code, ctx) & {FALL, CONTINUE}:
                    retried.add(code)
            where = where or tests[0].test
    if not retried or where is None:
        return None
    return RetriedStatuses(tuple(sorted(retried)), ctx.location(where), ctx.code(where))


# ---------------------------------------------------------------- give-up and text


def _give_up(loop: cst.CSTNode, ctx: ModuleContext, bound: Bound, guard: Optional[cst.CSTNode]) -> GiveUp:
    if bound.unbounded:
        return GiveUp.NEVER
    candidates: List[cst.CSTNode] = []
    if isinstance(guard, cst.If):
        body, orelse = if_branches(guard)
        candidates.extend(body if outcomes(body) & EXITS else orelse or [])
    after = rest_after(loop, ctx.module, ctx)[:2]
    if isinstance(loop, cst.For) and loop.orelse is not None:
        after = statements(loop.orelse) + after
    candidates.extend(after)
    for statement in candidates:
        text = ctx.code(statement).lower()
        if any(word in text for word in _GIVE_UP_DLQ):
            return GiveUp.DEAD_LETTER
        if isinstance(statement, cst.Raise):
            return GiveUp.RAISE
        if isinstance(statement, cst.Return):
            return GiveUp.RETURN
    return GiveUp.UNKNOWN


def _describe(loop: cst.CSTNode, ctx: ModuleContext, iteration: Iteration) -> str:
    if isinstance(loop, cst.While):
        return f"`while {ctx.code(loop.test)}` retry loop"
    return f"`for … in {ctx.code(loop.iter)}` retry loop"  # type: ignore[attr-defined]
