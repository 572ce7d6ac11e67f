"""Bounds of hand-written retries: attempt counters, deadlines, and what is not a bound."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional

import libcst as cst

from ..model import UNKNOWN, Num, known
from ..program import DEFAULT, UNREAD
from ..syntax import dotted_name, last_name, number, unwrap_await, walk
from .context import Binding, ModuleContext
from .delays import CounterInfo, DelayEnv, shape_of
from .status import status_set

TIME_FUNCTIONS = frozenset(
    {
        "time.time",
        "time.monotonic",
        "time.perf_counter",
        "time.time_ns",
        "time.monotonic_ns",
        "time.perf_counter_ns",
        "time.process_time",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "timeit.default_timer",
        "trio.current_time",
        "anyio.current_time",
        "django.utils.timezone.now",
        "arrow.utcnow",
        "arrow.now",
        "pendulum.now",
    }
)

_COMPARE: Dict[type, Callable[[float, float], bool]] = {
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
}
_MIRROR = {
    cst.LessThan: cst.GreaterThan,
    cst.LessThanEqual: cst.GreaterThanEqual,
    cst.GreaterThan: cst.LessThan,
    cst.GreaterThanEqual: cst.LessThanEqual,
    cst.Equal: cst.Equal,
    cst.NotEqual: cst.NotEqual,
}
_DEADLINE_WORDS = re.compile(r"(expired|deadline|timed_?out|time_?left|time_?remaining|remaining_?time|elapsed)", re.I)
_FLAG_METHODS = frozenset({"is_set", "is_closed", "closed", "is_alive", "done", "cancelled", "is_running", "is_connected"})


@dataclass
class Guard:
    kind: str  # counter | deadline | failure | status | flag | result | unknown
    attempts: Num = None
    deadline: Num = None


@dataclass
class GuardEnv:
    ctx: ModuleContext
    counters: Dict[str, CounterInfo] = field(default_factory=dict)
    loop_writes: Dict[str, List[Binding]] = field(default_factory=dict)
    #: Exception variables of the handlers the guard sits in.
    failure_names: FrozenSet[str] = frozenset()
    #: Line of the first attempt in the iteration (guards above it run before the attempt).
    attempt_line: int = 0
    #: Collections the loop appends to (``errors.append(e)``): their length counts attempts.
    appended: FrozenSet[str] = frozenset()
    #: Read limits as their parameters' defaults (see ``DelayEnv.defaults``).
    defaults: bool = False


def find_counters(writes: Dict[str, List[Binding]], ctx: ModuleContext, loop: cst.CSTNode) -> Dict[str, CounterInfo]:
    """Names stepped by a constant (``+= 1``, ``x = x - 1``); a reset to a constant is allowed."""
    counters: Dict[str, CounterInfo] = {}
    for name, bindings in writes.items():
        steps = []
        stepping = []
        for binding in bindings:
            step = _step_of(name, binding, ctx)
            if step is None:
                if _is_reset(binding):
                    continue
                steps = []
                break
            steps.append(step)
            stepping.append(binding)
        if not steps:
            continue
        if len({s for s in steps if known(s)}) > 1:
            steps = [UNKNOWN]
        counters[name] = CounterInfo(
            init=_initial(name, loop, ctx, bindings),
            step=steps[0],
            update_line=ctx.location(stepping[0].node).line,
        )
    return counters


def _is_reset(binding: Binding) -> bool:
    return binding.kind == "assign" and binding.value is not None and number(binding.value) is not None


def _step_of(name: str, binding: Binding, ctx: ModuleContext) -> Optional[Num]:
    """+c / -c for ``x += c``, ``x -= c``, ``x = x + c``; None when it is not a counter step."""
    env = DelayEnv(ctx, callers=False)
    if binding.kind == "augassign" and binding.value is not None:
        amount = shape_of(binding.value, env)
        if amount.kind != "const":
            return None
        if isinstance(binding.operator, cst.AddAssign):
            return amount.value
        if isinstance(binding.operator, cst.SubtractAssign):
            return -float(amount.value) if known(amount.value) else UNKNOWN  # type: ignore[arg-type]
        return None
    value = binding.value
    if binding.kind == "assign" and isinstance(value, cst.BinaryOperation):
        if isinstance(value.operator, (cst.Add, cst.Subtract)):
            left, right = dotted_name(value.left), dotted_name(value.right)
            other = value.right if left == name else value.left if right == name and isinstance(value.operator, cst.Add) else None
            if other is None:
                return None
            amount = shape_of(other, env)
            if amount.kind != "const":
                return None
            if isinstance(value.operator, cst.Subtract):
                return -float(amount.value) if known(amount.value) else UNKNOWN  # type: ignore[arg-type]
            return amount.value
    return None


def _initial(name: str, loop: cst.CSTNode, ctx: ModuleContext, loop_bindings: List[Binding]) -> Num:
    if "." in name:
        return UNKNOWN
    # Any Name node inside the loop gives us the right scope to look the name up.
    probe = next((n for n in walk(loop) if isinstance(n, cst.Name) and n.value == name), None)
    if probe is None:
        return UNKNOWN
    inside = {id(b.node) for b in loop_bindings}
    outside = [b for b in ctx.bindings(probe) if id(b.node) not in inside and b.kind in ("assign", "annassign", "param")]
    if len(outside) != 1 or outside[0].kind == "param" or outside[0].value is None:
        return UNKNOWN
    shape = shape_of(outside[0].value, DelayEnv(ctx, callers=False))
    return shape.value if shape.kind == "const" else UNKNOWN


def initial_as_shipped(name: str, loop: cst.CSTNode, ctx: ModuleContext, loop_bindings: List[Binding]) -> Num:
    """A counter started from a parameter that defaults to None and is filled in before the
    loop (``retry_count=None`` then ``if retry_count is None: retry_count =
    self.default_retry_count``), as the package calls it: the value filled in, with defaults read
    as shipped (a class default of 0 that no caller changes: the retry never happens)."""
    probe = next((n for n in walk(loop) if isinstance(n, cst.Name) and n.value == name), None)
    if probe is None or "." in name:
        return UNKNOWN
    inside = {id(b.node) for b in loop_bindings}
    outside = [b for b in ctx.bindings(probe) if id(b.node) not in inside and b.kind in ("assign", "annassign", "param")]
    params = [b for b in outside if b.kind == "param"]
    filled = [b for b in outside if b.kind != "param"]
    if len(params) != 1 or len(filled) != 1 or filled[0].value is None or dotted_name(params[0].value) != "None":
        return UNKNOWN
    if isinstance(filled[0].value, cst.BooleanOperation) and isinstance(filled[0].value.operator, cst.Or) \
            and dotted_name(filled[0].value.left) == name:
        # ``retries = retries or 0`` (internetarchive's upload_file): None as shipped becomes the right side
        shape = shape_of(filled[0].value, DelayEnv(ctx, callers=False, defaults=True))
        return shape.value if shape.kind == "const" else UNKNOWN
    guard = next((a for a in ctx.ancestors(filled[0].node) if isinstance(a, cst.If)), None)
    test = guard.test if guard is not None else None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Is)
            and dotted_name(test.left) == name and dotted_name(test.comparisons[0].comparator) == "None"):
        return UNKNOWN
    if not ctx.parameter_as_shipped(params[0].node):  # type: ignore[arg-type]
        return UNKNOWN
    shape = shape_of(filled[0].value, DelayEnv(ctx, callers=False, defaults=True))
    return shape.value if shape.kind == "const" else UNKNOWN


def is_time_call(node: cst.CSTNode, ctx: ModuleContext) -> bool:
    if not isinstance(node, cst.Call):
        return False
    if ctx.call_name(node) & TIME_FUNCTIONS:
        return True
    func = node.func
    # loop.time(), asyncio.get_running_loop().time()
    if isinstance(func, cst.Attribute) and func.attr.value == "time":
        receiver = func.value
        name = dotted_name(receiver) or ""
        if name.endswith("loop") or isinstance(receiver, cst.Call) and (last_name(receiver.func) or "").endswith("loop"):
            return True
    return False


def mentions_time(node: cst.CSTNode, ctx: ModuleContext, depth: int = 0) -> bool:
    """A time call in ``node``, or a name computed from one (``elapsed``, ``deadline``)."""
    for n in walk(node):
        if is_time_call(n, ctx):
            return True
        if isinstance(n, cst.Name) and depth < 2:
            for binding in ctx.bindings(n):
                if binding.value is not None and binding.kind in ("assign", "annassign", "augassign"):
                    if mentions_time(binding.value, ctx, depth + 1):
                        return True
    return False


def classify_guard(test: cst.BaseExpression, env: GuardEnv, guard_line: int, at_loop_head: bool = False,
                   negated: bool = False) -> Guard:
    """What a loop-exit test checks. ``negated``: the loop is left when the test is *false*
    (``if tries <= 3: sleep(); continue`` then ``raise``)."""
    test = unwrap_await(test)
    names = _names(test)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) and not negated and (
                _never_holds(test.left, env) or _never_holds(test.right, env)):
            # ``if max_retries is not None and retries >= max_retries: raise`` with no limit
            # given: the test is never true as the code is called here, no bound.
            return Guard("never")
        left = classify_guard(test.left, env, guard_line, at_loop_head, negated)
        right = classify_guard(test.right, env, guard_line, at_loop_head, negated)
        # not (a and b) exits when either fails: De Morgan turns the operator over.
        if isinstance(test.operator, cst.Or) != negated:
            # Either test exits: the tighter of the two bounds holds.
            return _tighter(left, right)
        # Both must hold to exit: ``if max_retries is not None and retries >= max_retries``
        # is still an attempt limit, of a value we cannot read.
        if left.kind in ("counter", "deadline") and right.kind in ("counter", "deadline"):
            return _looser(left, right)
        if "counter" in (left.kind, right.kind):
            return Guard("counter", attempts=UNKNOWN)
        if "deadline" in (left.kind, right.kind):
            return Guard("deadline", deadline=UNKNOWN)
        if "failure" in (left.kind, right.kind):
            return Guard("failure")
        return Guard("unknown") if "unknown" in (left.kind, right.kind) else Guard("flag")
    counter_names = [n for n in names if n in env.counters]
    # A test on the counter is a bound even when it also looks at the failure
    # (``if self._should_retry(response, error, num_retries): …``).
    if counter_names and (isinstance(test, cst.Comparison) or any(
        isinstance(n, cst.Call) and _call_mentions_counter(n, env) for n in walk(test)
    )):
        if isinstance(test, cst.Comparison):
            return Guard("counter", attempts=_attempts(test, env, guard_line, at_loop_head, negated))
        return Guard("counter", attempts=UNKNOWN)
    if env.failure_names and any(n.split(".")[0] in env.failure_names for n in names):
        return Guard("failure")
    if status_set(test, env.ctx) is not None:
        return Guard("status")
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = dotted_name(test.expression)
        if inner in env.counters:  # ``if not retries_left: raise``
            return Guard("counter", attempts=_truthiness_attempts(inner, env, guard_line, at_loop_head,
                                                                  exit_when_zero=not negated))
    if dotted_name(test) in env.counters:  # ``while retries:``, ``if retries_left: continue``
        return Guard("counter", attempts=_truthiness_attempts(dotted_name(test), env, guard_line, at_loop_head,
                                                              exit_when_zero=negated))
    if mentions_time(test, env.ctx):
        return Guard("deadline", deadline=_deadline_value(test, env))
    if any(_DEADLINE_WORDS.search(n.rsplit(".", 1)[-1]) for n in names):
        return Guard("deadline", deadline=UNKNOWN)  # ``if timer.expired:``, ``if time_left <= 0:``
    if any(isinstance(n, cst.Call) and _call_mentions_counter(n, env) for n in walk(test)):
        return Guard("counter", attempts=UNKNOWN)
    if _len_of_growing(test, env):
        return Guard("counter", attempts=UNKNOWN)
    if _is_flag(test):
        return Guard("flag")
    return Guard("unknown")


def _tighter(a: Guard, b: Guard) -> Guard:
    bounds = [g for g in (a, b) if g.kind in ("counter", "deadline")]
    if not bounds:
        return Guard("unknown") if "unknown" in (a.kind, b.kind) else a
    if len(bounds) == 1:
        return bounds[0]
    return Guard(
        "counter" if "counter" in (a.kind, b.kind) else "deadline",
        attempts=_min_num(a.attempts, b.attempts),
        deadline=_min_num(a.deadline, b.deadline),
    )


def _looser(a: Guard, b: Guard) -> Guard:
    return Guard("counter", attempts=UNKNOWN) if a.kind != b.kind else Guard(a.kind, attempts=UNKNOWN, deadline=UNKNOWN if a.kind == "deadline" else None)


def _min_num(a: Num, b: Num) -> Num:
    if a is None:
        return b
    if b is None:
        return a
    if known(a) and known(b):
        return min(a, b)  # type: ignore[type-var]
    return UNKNOWN


def _names(node: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(node) if isinstance(n, (cst.Name, cst.Attribute))]


def _call_mentions_counter(call: cst.Call, env: GuardEnv) -> bool:
    return any(name in env.counters for arg in call.args for name in _names(arg.value))


def _len_of_growing(test: cst.BaseExpression, env: GuardEnv) -> bool:
    """``len(errors) >= 5`` where the loop appends to ``errors``."""
    for n in walk(test):
        if isinstance(n, cst.Call) and dotted_name(n.func) == "len" and n.args:
            target = dotted_name(n.args[0].value)
            if target and target in env.appended:
                return True
    return False


def _never_holds(test: cst.BaseExpression, env: GuardEnv) -> bool:
    """``limit is not None`` (or ``limit`` alone) where ``limit`` is None as this module uses
    it: a module constant ``MAX_RETRIES = None``, or a parameter whose default is None and
    that a caller here leaves out (``conn.ensure_connection()``: judge what callers use)."""
    name: Optional[cst.Name] = None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        target = test.comparisons[0]
        if isinstance(target.operator, cst.IsNot) and _is_none(target.comparator):
            name = test.left
    elif isinstance(test, cst.Name):
        name = test
    if name is None:
        return False
    off = (None,) if isinstance(test, cst.Comparison) else (None, 0, False)
    ctx = env.ctx
    bindings = [b for b in ctx.bindings(name) if b.kind != "import"]
    # (``_NOT_LITERAL`` is in no ``off``: an expression we cannot read never switches a test off)
    if not bindings:
        constant = ctx.module_constant(name.value, name)
        return constant is not None and _literal(constant) in off
    if len(bindings) == 1 and bindings[0].kind in ("assign", "annassign") and bindings[0].value is not None \
            and not any(isinstance(a, (cst.FunctionDef, cst.ClassDef)) for a in ctx.ancestors(bindings[0].node)):
        return _literal(bindings[0].value) in off  # ``MAX_RETRIES = None``, bound once, at module level
    if len(bindings) != 1 or bindings[0].kind != "param" or bindings[0].value is None:
        return False
    if _literal(bindings[0].value) not in off:
        return False
    values = ctx.parameter_values(bindings[0].node)  # type: ignore[arg-type]
    if not values:
        return False
    if DEFAULT in values:
        ctx.note_default_used(bindings[0].node, name, _literal(bindings[0].value))
        return True
    return any(v is not UNREAD and not isinstance(v, (str, float, tuple)) and v in off for v in values)


_NOT_LITERAL = object()


def _literal(expr: cst.BaseExpression) -> object:
    if _is_none(expr):
        return None
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    return _NOT_LITERAL


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _is_flag(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_flag(test.expression)
    if isinstance(test, (cst.Name, cst.Attribute)):
        return True
    if isinstance(test, cst.Call) and last_name(test.func) in _FLAG_METHODS and not test.args:
        return True
    if isinstance(test, cst.Call) and last_name(test.func) == "wait" and isinstance(test.func, cst.Attribute):
        return True  # ``while not self._stop.wait(5)``: a stop event (the wait is a delay)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0].operator
        right = test.comparisons[0].comparator
        if isinstance(op, (cst.Is, cst.IsNot)) and isinstance(right, cst.Name) and right.value in ("None", "True", "False"):
            return True
    return False


def _const(expr: cst.BaseExpression, env: GuardEnv) -> Num:
    shape = shape_of(expr, DelayEnv(env.ctx, callers=False, defaults=env.defaults))
    return shape.value if shape.kind == "const" else UNKNOWN


def _attempts(test: cst.Comparison, env: GuardEnv, guard_line: int, at_loop_head: bool, negated: bool = False) -> Num:
    if len(test.comparisons) != 1:
        return UNKNOWN
    left, target = test.left, test.comparisons[0]
    op_type = type(target.operator)
    right = target.comparator
    name = dotted_name(left)
    if name in env.counters:
        limit = _const(right, env)
    else:
        name = dotted_name(right)
        if name not in env.counters:
            return UNKNOWN
        limit = _const(left, env)
        op_type = _MIRROR.get(op_type, op_type)
    compare = _COMPARE.get(op_type)
    counter = env.counters[name]  # type: ignore[index]
    if not known(limit) and known(counter.step) and float(counter.step) > 0:  # type: ignore[arg-type]
        # a counter counting up against ``min(opts.get("number_retries", 2), 6)``: at most 6
        limit = _at_most(right if name == dotted_name(left) else left, env)
    if compare is None or not (known(limit) and known(counter.init) and known(counter.step)):
        return UNKNOWN
    return _simulate(
        lambda v: compare(v, float(limit)) != negated,  # type: ignore[arg-type]
        counter,
        guard_line,
        at_loop_head,
        env,
    )


def _at_most(expr: cst.BaseExpression, env: GuardEnv) -> Num:
    """The largest value a limit can have when it is ``min(…, 6)`` (directly, or as the last
    plain assignment of a local before the loop, hubspot3's ``num_retries = min(num_retries, 6)``):
    the smallest literal among its arguments; UNKNOWN otherwise."""
    value: Optional[cst.BaseExpression] = expr
    if isinstance(expr, cst.Name):
        value = _last_plain_assignment(expr, env.ctx)
    if not (isinstance(value, cst.Call) and dotted_name(value.func) == "min" and len(value.args) >= 2):
        return UNKNOWN
    known_values = [_const(a.value, env) for a in value.args if a.star == ""]
    bounds = [float(v) for v in known_values if known(v)]  # type: ignore[arg-type]
    return min(bounds) if bounds else UNKNOWN


def _last_plain_assignment(name: cst.Name, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """The value of the last binding of ``name`` before its use when that binding is a plain
    statement of the function body itself (no branch can skip it, no loop writes it again)."""
    line = ctx.location(name).line
    bindings = [b for b in ctx.bindings(name) if b.kind != "import"]
    before = [b for b in bindings if ctx.location(b.node).line < line]
    if not before or len(before) != len(bindings):
        return None
    last = max(before, key=lambda b: ctx.location(b.node).line)
    if last.kind != "assign" or last.value is None:
        return None
    statement = ctx.parent(last.node)
    block = ctx.parent(statement) if statement is not None else None
    if not isinstance(block, cst.IndentedBlock) or not isinstance(ctx.parent(block), cst.FunctionDef):
        return None
    return last.value


def _truthiness_attempts(name: Optional[str], env: GuardEnv, guard_line: int, at_loop_head: bool, exit_when_zero: bool) -> Num:
    counter = env.counters.get(name or "")
    if counter is None or not (known(counter.init) and known(counter.step)):
        return UNKNOWN
    if at_loop_head:
        # ``while retries:`` keeps going while the counter is non-zero.
        return _simulate(lambda v: v != 0, counter, guard_line, True, env)
    return _simulate(lambda v: v == 0, counter, guard_line, False, env)


def _simulate(condition: Callable[[float], bool], counter: CounterInfo, guard_line: int, at_loop_head: bool, env: GuardEnv) -> Num:
    """Count the attempts a counter test allows, stepping the counter as the loop does."""
    init, step = float(counter.init), float(counter.step)  # type: ignore[arg-type]
    if at_loop_head:
        # while <condition>: the body (one attempt) runs while the condition holds.
        value, runs = init, 0
        while condition(value):
            runs += 1
            value += step
            if runs > 100_000:
                return UNKNOWN
        return runs
    before = counter.update_line and counter.update_line < guard_line
    guard_before_attempt = env.attempt_line and guard_line < env.attempt_line
    for k in range(1, 100_001):
        value = init + step * (k if before else k - 1)
        if condition(value):
            return k - 1 if guard_before_attempt else k
    return UNKNOWN


def _budget(side: cst.BaseExpression, env: GuardEnv) -> Num:
    """``timeout - (time.time() - start)`` (or a name bound to it once) → ``timeout``'s value."""
    value: Optional[cst.BaseExpression] = side
    if isinstance(side, cst.Name):
        bound = [b.value for b in env.ctx.bindings(side) if b.value is not None]
        value = bound[0] if len(bound) == 1 else None
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract) \
            and not mentions_time(value.left, env.ctx):
        return _const(value.left, env)
    return UNKNOWN


def _deadline_value(test: cst.BaseExpression, env: GuardEnv) -> Num:
    """``time.monotonic() - start > 30`` → 30; ``time.monotonic() < deadline`` with
    ``deadline = time.monotonic() + 30`` → 30; anything else is unknown."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return UNKNOWN
    sides = [test.left, test.comparisons[0].comparator]
    for side in sides:
        if not mentions_time(side, env.ctx):
            value = _const(side, env)
            if known(value) and float(value) <= 0:  # type: ignore[arg-type]
                # ``remaining = timeout - (now - start); if remaining <= 0``: the budget is the
                # deadline, not the zero it is compared with
                return _budget(sides[1] if side is sides[0] else sides[0], env)
            if known(value):
                return value
            if isinstance(side, (cst.Name, cst.Attribute)):
                return UNKNOWN
    for side in sides:
        if isinstance(side, cst.Name):
            for binding in env.ctx.bindings(side):
                value = binding.value
                if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
                    for part in (value.left, value.right):
                        if not mentions_time(part, env.ctx):
                            amount = _const(part, env)
                            if known(amount):
                                return amount
    return UNKNOWN
