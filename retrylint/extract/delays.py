"""Recognise sleeps and classify delay expressions: none, fixed, linear, exponential, jittered.

A delay expression is evaluated symbolically as a function of the retry number:
counters (``attempt``) are linear, ``2 ** attempt`` and ``delay *= 2`` are
exponential, ``min(cap, …)`` caps, ``random.*`` adds jitter.  Names are followed
through simple local assignments and module constants; anything else is
*unknown* and no rule judges it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

import libcst as cst

from ..model import (
    NO_JITTER,
    UNKNOWN,
    Delay,
    DelayKind,
    Jitter,
    JitterKind,
    Num,
    known,
)
from ..program import DEFAULT, UNREAD
from ..syntax import call_args, dotted_name, last_name, number, unwrap_await, walk
from .context import NO_LITERAL, Binding, ModuleContext
from .vocabulary import CLOCK_READS

_RANDOM_FUNCTIONS = {
    "random.random": "unit",
    "random.uniform": "range",
    "random.randint": "range",
    "random.randrange": "randrange",
    "random.triangular": "range",
    "secrets.randbelow": "below",
    "numpy.random.random": "unit",
    "numpy.random.rand": "unit",
    "numpy.random.random_sample": "unit",
    "numpy.random.uniform": "range",
    "numpy.random.randint": "randrange",
}
_RANDOM_UNKNOWN_SHAPE = frozenset(
    {
        "random.gauss",
        "random.normalvariate",
        "random.expovariate",
        "random.choice",
        "random.betavariate",
        "random.lognormvariate",
        "numpy.random.normal",
        "numpy.random.exponential",
        "numpy.random.choice",
    }
)
_RANDOM_METHODS = {
    "random": "unit",
    "random_sample": "unit",
    "uniform": "range",
    "randint": "range",
    "integers": "randrange",
    "randrange": "randrange",
    "triangular": "range",
}
_RNG_CONSTRUCTORS = frozenset(
    {
        "random.Random",
        "random.SystemRandom",
        "secrets.SystemRandom",
        "numpy.random.default_rng",
        "numpy.random.RandomState",
        "numpy.random.Generator",
    }
)
_PASSTHROUGH = frozenset({"float", "int", "round", "abs", "math.ceil", "math.floor", "datetime.timedelta"})


# ---------------------------------------------------------------- shapes


#: A delay the server chose: ``Retry-After``, a rate-limit reset time.
SERVER_CHOSEN = re.compile(r"(retry[-_ ]?after|rate_?limit|reset_in)", re.I)


@dataclass(frozen=True)
class Shape:
    """A delay as a function of the retry number k = 1, 2, 3 …"""

    kind: str  # const | linear | exp | steps | random | unknown
    value: Num = UNKNOWN  # at the first retry
    slope: Num = None  # linear
    factor: Num = None  # exp
    cap: Num = None
    steps: Optional[Tuple[float, ...]] = None
    jitter: Jitter = NO_JITTER
    low: Optional["Shape"] = None  # random: bounds of the range
    high: Optional["Shape"] = None
    decorrelated: bool = False
    #: ``min(cap, d + jitter)``: the cap clamps the jittered delay (RTY504).
    jitter_then_cap: bool = False
    #: exp: a constant added to ``value * factor ** (k - 1)`` (``0.1 * (2 ** n - 1)``).
    offset: Num = 0.0

    @property
    def grows(self) -> bool:
        return self.kind in ("linear", "exp", "steps", "unknown")


CONST_UNKNOWN = Shape("const")
UNKNOWN_SHAPE = Shape("unknown")


def const(value: Num) -> Shape:
    return Shape("const", value=value)


@dataclass
class CounterInfo:
    """A name the loop steps on each attempt (``attempt += 1``, ``retries -= 1``, a range target)."""

    init: Num
    step: Num
    #: The line where the loop changes it (0 for a for-loop target: it changes at the loop head).
    update_line: int = 0


@dataclass
class DelayEnv:
    """What the delay classifier knows about the loop or function around a sleep."""

    ctx: ModuleContext
    counters: Dict[str, CounterInfo] = field(default_factory=dict)
    #: Names written inside the loop (own iteration), with their bindings.
    loop_writes: Dict[str, List[Binding]] = field(default_factory=dict)
    #: Values of ``for x in [1, 2, 4]`` loop targets.
    step_targets: Dict[str, Tuple[float, ...]] = field(default_factory=dict)
    #: Loop targets over an unknown iterable of delays.
    opaque_targets: Tuple[str, ...] = ()
    #: The line of the sleep being classified (updates before it count for the first retry).
    sleep_line: int = 0
    #: The sleep call itself, when there is one.
    sleep_node: Optional[cst.CSTNode] = None
    depth: int = 0
    #: Objects whose methods the loop calls (``attempt.update_delay(now)``): their attributes
    #: change from pass to pass even though no assignment in the loop names them.
    mutated: FrozenSet[str] = frozenset()
    #: Read a parameter as this module's callers pass it (delays: yes). A *bound* is not read
    #: that way: callers elsewhere may pass another limit, and a small one known here would
    #: hide the retry from rules that spare two attempts (only a None limit is judged).
    callers: bool = True
    #: Read a parameter that no caller in this module passes as its default: only to ask
    #: whether a retry is off by default (``def fetch(url, retries=0)``), never for a verdict.
    defaults: bool = False


def classify(expr: Optional[cst.BaseExpression], env: DelayEnv) -> Delay:
    """The model delay of one sleep's argument."""
    if expr is None:
        return Delay(DelayKind.UNKNOWN)
    text = env.ctx.code(_written_as(expr, env))
    shape = shape_of(expr, env)
    delay = to_delay(shape)
    # ``retry_after = 60`` is our own constant, whatever its name says.
    server = not (shape.kind == "const" and known(shape.value)) and _mentions_retry_after(expr, text, env)
    if not server and delay.kind is not DelayKind.NONE and _told_by_failure(expr, env):
        # ``except FloodWait as e: sleep(e.value)``: the failure says how long to wait (the
        # server's flood wait, a rate limit's reset); no schedule of ours, fixed or not.
        return Delay(DelayKind.UNKNOWN, text=text, honours_retry_after=True)
    return replace(delay, text=text, honours_retry_after=server)


def _told_by_failure(expr: cst.BaseExpression, env: DelayEnv) -> bool:
    """The delay reads the exception the enclosing handler caught (``e.value``,
    ``int(exc.args[0])``), directly or through a name the loop sets from it."""
    if env.sleep_node is None:
        return False
    caught = None
    for ancestor in env.ctx.ancestors(env.sleep_node):
        if isinstance(ancestor, cst.ExceptHandler):
            if ancestor.name is not None and isinstance(ancestor.name.name, cst.Name):
                caught = ancestor.name.name.value
            break
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            break
    if caught is None:
        return False
    names = set(_names_in(expr))
    for name in list(names):
        for binding in env.loop_writes.get(name, ()):
            if binding.value is not None:
                names.update(_names_in(binding.value))
    return any(n == caught or n.startswith(caught + ".") for n in names)


def _written_as(expr: cst.BaseExpression, env: DelayEnv) -> cst.BaseExpression:
    """What a message shows for the delay: ``sleep = self._backoff_fn(n)`` then
    ``time.sleep(sleep)`` shows ``self._backoff_fn(n)``, the one value the loop gives the name."""
    if isinstance(expr, cst.Name):
        writes = env.loop_writes.get(expr.value) or []
        if len(writes) == 1 and writes[0].kind == "assign" and writes[0].value is not None:
            value = writes[0].value
            if isinstance(value, cst.Call) and not _mentions(value, expr.value) and len(env.ctx.code(value)) <= 40 \
                    and "\n" not in env.ctx.code(value):
                return value  # short enough to read in a message; a long one keeps its name
    return expr


def _mentions_retry_after(expr: cst.BaseExpression, text: str, env: DelayEnv) -> bool:
    """The delay comes from the server (``Retry-After``), directly or through a local name."""
    values = [b.value for b in env.loop_writes.get(expr.value, ())] if isinstance(expr, cst.Name) else []
    if values and all(v is not None for v in values):
        # A local name says nothing by itself: ``retry_after = min(30 + n * 10, 1800)`` is ours.
        texts = [env.ctx.code(v) for v in values]  # type: ignore[arg-type]
    else:
        texts = [text]
        for name in _names_in(expr):
            for binding in env.loop_writes.get(name, ()):
                if binding.value is not None:
                    texts.append(env.ctx.code(binding.value))
    return any(SERVER_CHOSEN.search(t) for t in texts)


def to_delay(shape: Shape) -> Delay:
    if shape.kind == "const":
        if known(shape.value) and float(shape.value) <= 0:  # type: ignore[arg-type]
            return Delay(DelayKind.NONE)
        return Delay(DelayKind.FIXED, base=shape.value, cap=shape.cap)
    if shape.kind == "random":
        low = shape.low.value if shape.low and shape.low.kind == "const" else UNKNOWN
        high = shape.high.value if shape.high and shape.high.kind == "const" else UNKNOWN
        if known(low) and known(high):
            if float(low) == 0:  # type: ignore[arg-type]
                return Delay(DelayKind.FIXED, base=high, jitter=Jitter(JitterKind.FULL))
            return Delay(DelayKind.FIXED, base=low, jitter=Jitter(JitterKind.ADDITIVE, float(high) - float(low)))  # type: ignore[arg-type]
        if shape.low and shape.high and not shape.low.grows and not shape.high.grows:
            return Delay(DelayKind.FIXED, base=UNKNOWN, jitter=Jitter(JitterKind.UNKNOWN))
        return Delay(DelayKind.UNKNOWN, jitter=Jitter(JitterKind.UNKNOWN))
    if shape.kind == "linear":
        if known(shape.slope) and float(shape.slope) == 0:  # type: ignore[arg-type]
            return Delay(DelayKind.FIXED, base=shape.value, cap=shape.cap, jitter=shape.jitter)
        if known(shape.slope) and float(shape.slope) < 0:  # type: ignore[arg-type]
            return Delay(DelayKind.UNKNOWN, jitter=shape.jitter)
        return Delay(DelayKind.LINEAR, base=shape.value, step=shape.slope, cap=shape.cap, jitter=shape.jitter)
    if shape.kind == "exp":
        if known(shape.factor) and float(shape.factor) <= 1:  # type: ignore[arg-type]
            if float(shape.factor) == 1:  # type: ignore[arg-type]
                return Delay(DelayKind.FIXED, base=shape.value, cap=shape.cap, jitter=shape.jitter)
            return Delay(DelayKind.UNKNOWN, jitter=shape.jitter)
        jitter = shape.jitter
        if shape.decorrelated:
            jitter = Jitter(JitterKind.DECORRELATED)
        return Delay(DelayKind.EXPONENTIAL, base=shape.value, factor=shape.factor, cap=shape.cap, jitter=jitter,
                     jitter_then_cap=shape.jitter_then_cap, offset=shape.offset)
    if shape.kind == "steps" and shape.steps:
        return Delay(DelayKind.STEPS, steps=shape.steps, base=shape.steps[0], jitter=shape.jitter)
    return Delay(DelayKind.UNKNOWN, jitter=shape.jitter)


def shape_of(expr: cst.BaseExpression, env: DelayEnv) -> Shape:
    if env.depth > 12:
        return UNKNOWN_SHAPE
    expr = unwrap_await(expr)
    value = number(expr)
    if value is not None:
        return const(value)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        return _shape_of_name(expr, env)
    if isinstance(expr, cst.BinaryOperation):
        return _binary(expr, env)
    if isinstance(expr, cst.Call):
        return _call(expr, env)
    if isinstance(expr, cst.Subscript):
        return _subscript(expr, env)
    if isinstance(expr, cst.IfExp):
        if env.defaults:
            unset = _fails_as_shipped(expr.test, env)
            if unset is not None:
                # ``opts.get("max_retries", 0) if opts is not None else 0`` with ``opts=None`` as shipped
                return _sub(expr.orelse if unset else expr.body, env)
        a, b = _sub(expr.body, env), _sub(expr.orelse, env)
        if a.kind == b.kind == "const":
            return CONST_UNKNOWN if a.value != b.value else a
        return UNKNOWN_SHAPE
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return UNKNOWN_SHAPE
    if env.defaults and isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or) \
            and _fails_as_shipped(expr.left, env):
        return _sub(expr.right, env)  # ``retries = retries or 0`` with ``retries=None`` as shipped
    return UNKNOWN_SHAPE


def _fails_as_shipped(test: cst.BaseExpression, env: DelayEnv) -> Optional[bool]:
    """With the package's defaults, is this test false because a parameter left at its ``None``
    default is unset? ``opts`` and ``opts is not None`` → True (the test fails), ``opts is None``
    → False (it holds); None when the test is not about such a parameter."""
    negated = False
    name = test
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot)) \
            and dotted_name(test.comparisons[0].comparator) == "None":
        name, negated = test.left, isinstance(test.comparisons[0].operator, cst.Is)
    if not isinstance(name, cst.Name):
        return None
    bindings = [b for b in env.ctx.bindings(name) if b.kind != "import"]
    line = env.ctx.location(name).line
    # ``retries = retries or 0``: the later bindings do not hold yet where the parameter is read
    bindings = [b for b in bindings if b.kind == "param" or env.ctx.location(b.node).line < line]
    if len(bindings) != 1 or bindings[0].kind != "param" or bindings[0].value is None \
            or dotted_name(bindings[0].value) != "None" or not env.ctx.parameter_as_shipped(bindings[0].node):  # type: ignore[arg-type]
        return None
    return not negated


def _sub(expr: cst.BaseExpression, env: DelayEnv) -> Shape:
    env.depth += 1
    try:
        return shape_of(expr, env)
    finally:
        env.depth -= 1


# ---------------------------------------------------------------- names


def _shape_of_name(expr: cst.BaseExpression, env: DelayEnv) -> Shape:
    argument = env.ctx.substitution(expr)
    if argument is not None:
        return _sub(argument, env)  # a helper's parameter: what the call passed
    name = dotted_name(expr)
    if name is None:
        return UNKNOWN_SHAPE
    counter = env.counters.get(name)
    if counter is not None:
        # Its value at the first retry's sleep: stepped once already if the update comes first.
        stepped = counter.update_line and env.sleep_line and counter.update_line < env.sleep_line
        start = _add_num(counter.init, counter.step) if stepped else counter.init
        return Shape("linear", value=start, slope=counter.step)
    if name in env.step_targets:
        return Shape("steps", steps=env.step_targets[name], value=env.step_targets[name][0])
    if name in env.opaque_targets:
        return UNKNOWN_SHAPE
    writes = env.loop_writes.get(name)
    if writes:
        return _written_in_loop(name, expr, writes, env)
    if isinstance(expr, cst.Attribute) and name.split(".", 1)[0] in env.mutated:
        return UNKNOWN_SHAPE  # ``sleep(attempt.delay)`` after ``attempt.update_delay(now)``
    return _loop_invariant(expr, env)


def _unless_none(expr: cst.Name, bindings: List[Binding], env: DelayEnv) -> List[Binding]:
    """``def download(..., num_max_attempts=1)`` then ``if num_max_attempts is None:
    num_max_attempts = 3``: with a default that is not None, the replacement never runs, and the
    parameter's default is the value as shipped."""
    params = [b for b in bindings if b.kind == "param"]
    if len(params) != 1 or params[0].value is None or dotted_name(params[0].value) == "None":
        return bindings
    for binding in bindings:
        if binding.kind == "param":
            continue
        guard = next((a for a in env.ctx.ancestors(binding.node) if isinstance(a, cst.If)), None)
        test = guard.test if guard is not None else None
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Is)
                and dotted_name(test.left) == expr.value and dotted_name(test.comparisons[0].comparator) == "None"):
            return bindings
    return params


def _loop_invariant(expr: cst.BaseExpression, env: DelayEnv) -> Shape:
    """A value the loop does not change: constant, maybe of unknown value."""
    if isinstance(expr, cst.Name):
        bindings = [b for b in env.ctx.bindings(expr) if b.kind != "import"]
        values = [b for b in bindings if b.kind in ("assign", "annassign") and b.value is not None]
        if len(bindings) == 1 and len(values) == 1:
            inner = _sub(values[0].value, env)  # type: ignore[arg-type]
            if inner.kind == "const":
                return inner
            if inner.kind == "random":
                return inner  # drawn once, outside the loop: still the same delay every time
            return CONST_UNKNOWN
        if not bindings:
            constant = env.ctx.module_constant(expr.value, expr)
            if constant is not None:
                inner = _sub(constant, env)
                return inner if inner.kind == "const" else CONST_UNKNOWN
        if env.defaults and len(bindings) > 1:
            bindings = _unless_none(expr, bindings, env)
        if env.defaults and len(bindings) == 1 and bindings[0].kind == "param" and bindings[0].value is not None \
                and env.ctx.parameter_as_shipped(bindings[0].node):  # type: ignore[arg-type]
            inner = _sub(bindings[0].value, env)
            return inner if inner.kind == "const" else CONST_UNKNOWN
        if env.callers and len(bindings) == 1 and bindings[0].kind == "param":
            used = parameter_value(expr, bindings[0], env.ctx)
            if used is not None:
                inner = _sub(used, env)
                return inner if inner.kind == "const" else CONST_UNKNOWN
    elif isinstance(expr, cst.Attribute):
        outside_value = env.ctx.outside_value(expr)
        if outside_value is None and env.defaults:
            outside_value = env.ctx.off_default(expr)  # ``range(self.retries + 1)`` with ``retries=1``
        if outside_value is not None:
            inner = _sub(outside_value, env)
            return inner if inner.kind == "const" else CONST_UNKNOWN
    return CONST_UNKNOWN


def _written_in_loop(name: str, expr: cst.BaseExpression, writes: List[Binding], env: DelayEnv) -> Shape:
    folded = _fold_iteration(name, writes, env)
    if folded is not None:
        return folded
    target = name
    recurrences = [w for w in writes if w.value is not None and _mentions(w.value, target) or w.kind == "augassign"]
    plain = [w for w in writes if w not in recurrences]
    # The same step written once per retry path (pymilvus: ``back_off = min(back_off * m, cap)``
    # in two handlers) is one recurrence.
    seen_steps: Dict[str, Binding] = {}
    for write in recurrences:
        seen_steps.setdefault(env.ctx.code(write.node), write)
    recurrences = list(seen_steps.values())
    if not recurrences:
        # ``actual_sleep = retry_after`` in one branch, the backoff in the other: the
        # server-chosen branch does not make the schedule.
        scheduled = [w for w in plain if w.value is None or not SERVER_CHOSEN.search(env.ctx.code(w.value))]
        if scheduled and len(scheduled) < len(plain):
            plain = scheduled
        if len(plain) == 1 and plain[0].value is not None:
            return _sub(plain[0].value, env)
        reaching = _reaching_write(plain, expr, env)
        if reaching is not None and reaching.value is not None:
            return _sub(reaching.value, env)
        shapes = [_sub(w.value, env) for w in plain if w.value is not None]
        if shapes and len(shapes) == len(plain) and all(s == shapes[0] for s in shapes):
            return shapes[0]
        return UNKNOWN_SHAPE
    initial = _initial_value(expr, env)
    if initial is None:
        initial = CONST_UNKNOWN
    shape: Optional[Shape] = None
    cap: Num = None
    for write in recurrences:
        step = _recurrence(name, write, initial, env)
        if step is None:
            return UNKNOWN_SHAPE
        if step.kind == "cap":
            cap = step.value
            continue
        if shape is not None:
            return UNKNOWN_SHAPE
        shape = step
        if _before_sleep(write.node, env):
            shape = _advance(shape)
    # A plain reset inside the loop (``delay = cap`` under ``if delay > cap``) is a cap.
    for write in plain:
        capped = _cap_assignment(name, write, env)
        if capped is None:
            return UNKNOWN_SHAPE
        cap = capped
    if shape is None:
        return UNKNOWN_SHAPE
    if cap is not None:
        shape = replace(shape, cap=cap)
    return shape


def _reaching_write(writes: List[Binding], expr: cst.BaseExpression, env: DelayEnv) -> Optional[Binding]:
    """The write that every path to ``expr`` goes through last: ``retry_after = 60`` just above
    ``self.retry(countdown=retry_after)``, in a block around the use, with no other write between."""
    ctx = env.ctx
    try:
        use_line = ctx.location(expr).line
    except KeyError:
        return None
    blocks = {a for a in ctx.ancestors(expr) if isinstance(a, (cst.IndentedBlock, cst.Module))}
    before = sorted((w for w in writes if 0 < _line(w, env) < use_line), key=lambda w: _line(w, env))
    if not before:
        return None
    last = before[-1]
    statement = next((a for a in ctx.ancestors(last.node) if isinstance(a, cst.SimpleStatementLine)), None)
    if statement is not None and ctx.parent(statement) in blocks:
        return last
    return None


def _line(binding: Binding, env: DelayEnv) -> int:
    try:
        return env.ctx.location(binding.node).line
    except KeyError:
        return 0


def _fold_iteration(name: str, writes: List[Binding], env: DelayEnv) -> Optional[Shape]:
    """``delay = base * 2 ** attempt; delay = min(delay, cap)``: computed afresh each iteration.

    When the first write before the sleep does not read the old value, the delay is that
    value adjusted by the writes after it (caps, scaling); None when this is not the case.
    """
    if not env.sleep_line:
        return None
    before = sorted((w for w in writes if 0 < _line(w, env) < env.sleep_line), key=lambda w: _line(w, env))
    if not before or not _dominates(before[0], env):
        return None
    first = before[0]
    if first.kind not in ("assign", "annassign") or first.value is None or _mentions(first.value, name):
        return None
    shape = _sub(first.value, env)
    for write in before[1:]:
        adjusted = _adjust(name, write, shape, env)
        if adjusted is None:
            return UNKNOWN_SHAPE
        shape = adjusted
    return shape


def _dominates(write: Binding, env: DelayEnv) -> bool:
    """The write runs on the way to the sleep: its block holds the sleep (not a sibling branch)."""
    if env.sleep_node is None:
        return True
    block = env.ctx.parent(env.ctx.statement_of(write.node))
    if isinstance(block, cst.SimpleStatementLine):
        block = env.ctx.parent(block)
    return block is not None and env.ctx.is_inside(env.sleep_node, block)


def _adjust(name: str, write: Binding, shape: Shape, env: DelayEnv) -> Optional[Shape]:
    value = unwrap_await(write.value) if write.value is not None else None
    if value is None:
        return None
    if write.kind == "augassign":
        amount = _sub(value, env)
        if amount.kind == "random" and isinstance(write.operator, cst.MultiplyAssign):
            return _multiply(shape, amount)  # ``delay *= 1 + random.random() * 0.5``
        if amount.kind != "const":
            return None
        if isinstance(write.operator, cst.MultiplyAssign):
            return _scale(shape, amount.value)
        if isinstance(write.operator, (cst.AddAssign, cst.SubtractAssign)):
            delta = amount.value if isinstance(write.operator, cst.AddAssign) else _neg(amount.value)
            return _shift(shape, delta)
        return None
    if not _mentions(value, name):
        # Replaced again within the iteration: the same value (``min(interval, remaining)``
        # after ``interval``) or a second one.
        return shape if _sub(value, env) == shape else None
    if isinstance(value, cst.Call) and env.ctx.call_name(value) & {"min"}:
        positional, _ = call_args(value)
        others = [a for a in positional if not _is_bare(a, name)]
        if len(others) == len(positional) - 1 and len(others) == 1:
            cap = _sub(others[0], env)
            cap_value = cap.value if cap.kind == "const" else UNKNOWN
            if known(shape.cap) and known(cap_value):
                cap_value = min(float(shape.cap), float(cap_value))  # type: ignore[arg-type]
            return replace(shape, cap=cap_value)
        return None
    if isinstance(value, cst.Call) and env.ctx.call_name(value) & {"max"}:
        return shape  # a floor does not change the shape
    if isinstance(value, cst.BinaryOperation) and _is_bare(value.left, name):
        other = _sub(value.right, env)
        if other.kind == "const" and isinstance(value.operator, cst.Multiply):
            return _scale(shape, other.value)
        if other.kind == "const" and isinstance(value.operator, (cst.Divide, cst.FloorDivide)) and known(other.value) and other.value:
            return _scale(shape, 1.0 / float(other.value))  # type: ignore[arg-type]
        if other.kind == "random" and isinstance(value.operator, cst.Multiply):
            return _multiply(shape, other)
        if other.kind == "random" and isinstance(value.operator, cst.Add):
            return _add(shape, other)
    return None


def _advance(shape: Shape) -> Shape:
    """The shape one retry later (the update runs before the first sleep)."""
    if not known(shape.value):
        return shape
    if shape.kind == "exp" and known(shape.factor):
        return replace(shape, value=float(shape.value) * float(shape.factor))  # type: ignore[arg-type]
    if shape.kind == "linear" and known(shape.slope):
        return replace(shape, value=float(shape.value) + float(shape.slope))  # type: ignore[arg-type]
    return shape


def _before_sleep(node: cst.CSTNode, env: DelayEnv) -> bool:
    if not env.sleep_line:
        return False
    try:
        return env.ctx.location(node).line < env.sleep_line
    except KeyError:
        return False


def _initial_value(expr: cst.BaseExpression, env: DelayEnv) -> Optional[Shape]:
    """The value before the loop: the one binding outside it."""
    if isinstance(expr, cst.Attribute):
        outside_value = env.ctx.outside_value(expr)  # ``self.delay`` set once, in ``__init__``
        return _sub(outside_value, env) if outside_value is not None else None
    if not isinstance(expr, cst.Name):
        return None
    outside = []
    for binding in env.ctx.bindings(expr):
        if binding.kind in ("assign", "annassign", "param") and not _binding_in_loop(binding, env):
            outside.append(binding)
    if len(outside) != 1:
        return None
    value = outside[0].value
    if value is None:
        return CONST_UNKNOWN
    if outside[0].kind == "param":
        return CONST_UNKNOWN
    return _sub(value, env)


def _binding_in_loop(binding: Binding, env: DelayEnv) -> bool:
    for writes in env.loop_writes.values():
        if any(w.node is binding.node for w in writes):
            return True
    return False


def _recurrence(name: str, write: Binding, initial: Shape, env: DelayEnv) -> Optional[Shape]:
    """``d *= 2``, ``d = d * 2``, ``d = min(d * 2, cap)``, ``d += 1``, ``d = uniform(b, d * 3)``."""
    target = name
    if write.kind == "augassign":
        op = write.operator
        step = _sub(write.value, env) if write.value is not None else UNKNOWN_SHAPE
        if step.kind != "const":
            return None
        if isinstance(op, cst.MultiplyAssign):
            return Shape("exp", value=initial.value, factor=step.value)
        if isinstance(op, cst.AddAssign):
            return Shape("linear", value=initial.value, slope=step.value)
        if isinstance(op, cst.LeftShiftAssign) and known(step.value):
            return Shape("exp", value=initial.value, factor=2 ** float(step.value))  # type: ignore[arg-type]
        return None
    value = write.value
    if value is None:
        return None
    value = unwrap_await(value)
    # d = min(d, cap): a cap written as its own statement.
    if isinstance(value, cst.Call) and env.ctx.call_name(value) & {"min"}:
        positional, _ = call_args(value)
        inner = [a for a in positional if _mentions(a, target)]
        others = [a for a in positional if not _mentions(a, target)]
        if len(inner) == 1 and len(others) == 1:
            cap = _sub(others[0], env)
            cap_value = cap.value if cap.kind == "const" else UNKNOWN
            if _is_bare(inner[0], target):
                return Shape("cap", value=cap_value)
            step = _recurrence_expr(inner[0], target, initial, env)
            if step is None:
                return None
            return replace(step, cap=cap_value)
        return None
    return _recurrence_expr(value, target, initial, env)


def _recurrence_expr(value: cst.BaseExpression, target, initial: Shape, env: DelayEnv) -> Optional[Shape]:
    value = unwrap_await(value)
    if isinstance(value, cst.BinaryOperation):
        left_self = _is_bare(value.left, target)
        right_self = _is_bare(value.right, target)
        other = value.right if left_self else value.left if right_self else None
        if other is None:
            return None
        step = _sub(other, env)
        if step.kind != "const":
            return None
        if isinstance(value.operator, cst.Multiply):
            return Shape("exp", value=initial.value, factor=step.value)
        if isinstance(value.operator, cst.Add):
            return Shape("linear", value=initial.value, slope=step.value)
        if isinstance(value.operator, cst.Power) and left_self:
            return None
        return None
    if isinstance(value, cst.Call):
        kind = _random_kind(value, env)
        if kind is not None:
            positional, _ = call_args(value)
            # Decorrelated jitter: uniform(base, previous * 3).
            if len(positional) == 2 and _mentions(positional[1], target) and not _mentions(positional[0], target):
                base = _sub(positional[0], env)
                return Shape("exp", value=base.value if base.kind == "const" else UNKNOWN, factor=3.0, decorrelated=True,
                             jitter=Jitter(JitterKind.DECORRELATED))
        return None
    return None


def _cap_assignment(name: str, write: Binding, env: DelayEnv) -> Optional[Num]:
    """``if d > cap: d = cap`` inside the loop: the assigned value is the cap."""
    if write.value is None:
        return None
    node = write.node
    for ancestor in env.ctx.ancestors(node):
        if isinstance(ancestor, cst.If):
            if name in _names_in(ancestor.test) and isinstance(ancestor.test, cst.Comparison):
                cap = _sub(write.value, env)
                return cap.value if cap.kind == "const" else UNKNOWN
            return None
        if isinstance(ancestor, (cst.For, cst.While, cst.FunctionDef)):
            return None
    return None


def _names_in(expr: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(expr) if isinstance(n, (cst.Name, cst.Attribute))]


def _is_bare(expr: cst.BaseExpression, target: str) -> bool:
    return dotted_name(unwrap_await(expr)) == target


def _mentions(expr: cst.CSTNode, target: str) -> bool:
    return target in _names_in(expr)


# ---------------------------------------------------------------- operators


def _binary(expr: cst.BinaryOperation, env: DelayEnv) -> Shape:
    op = expr.operator
    if isinstance(op, cst.Power):
        return _power(_sub(expr.left, env), _sub(expr.right, env))
    if isinstance(op, cst.LeftShift):
        # a << n == a * 2 ** n
        return _multiply(_sub(expr.left, env), _power(const(2.0), _sub(expr.right, env)))
    left, right = _sub(expr.left, env), _sub(expr.right, env)
    if isinstance(op, cst.Multiply):
        return _multiply(left, right)
    if isinstance(op, (cst.Divide, cst.FloorDivide)):
        if right.kind == "const":
            if known(right.value) and float(right.value) != 0:  # type: ignore[arg-type]
                return _scale(left, 1.0 / float(right.value))  # type: ignore[arg-type]
            return _scale(left, UNKNOWN)
        return UNKNOWN_SHAPE
    if isinstance(op, cst.Add):
        return _add(left, right)
    if isinstance(op, cst.Subtract):
        if right.kind == "const":
            return _shift(left, _neg(right.value))
        if left.kind == "const" and right.kind == "linear":
            return Shape("linear", value=_sub_num(left.value, right.value), slope=_neg(right.slope))
        return UNKNOWN_SHAPE
    return UNKNOWN_SHAPE


def _power(base: Shape, exponent: Shape) -> Shape:
    if base.kind == "const" and exponent.kind == "const":
        return const(_pow(base.value, exponent.value))
    if base.kind == "const" and exponent.kind == "linear":
        if not known(base.value):
            return Shape("exp", value=UNKNOWN, factor=UNKNOWN)
        b = float(base.value)  # type: ignore[arg-type]
        if known(exponent.slope) and float(exponent.slope) <= 0:  # type: ignore[arg-type]
            return UNKNOWN_SHAPE
        factor = _pow(b, exponent.slope)
        value = _pow(b, exponent.value)
        if exponent.cap is not None:
            # 2 ** min(attempt, 6): a clamped exponent caps the delay.
            return Shape("exp", value=value, factor=factor, cap=_pow(b, exponent.cap))
        return Shape("exp", value=value, factor=factor)
    if base.kind == "const" and exponent.kind == "steps" and known(base.value):
        return Shape("steps", steps=tuple(float(base.value) ** s for s in exponent.steps or ()))  # type: ignore[arg-type]
    if base.kind in ("linear", "exp") and exponent.kind == "const":
        return UNKNOWN_SHAPE
    return UNKNOWN_SHAPE


def _pow(a: Num, b: Num) -> Num:
    if known(a) and known(b):
        try:
            return float(a) ** float(b)  # type: ignore[arg-type]
        except (OverflowError, ZeroDivisionError, ValueError):
            return UNKNOWN
    if b is None:
        return None
    return UNKNOWN


def _mul(a: Num, b: Num) -> Num:
    if a is None or b is None:
        return None
    if known(a) and known(b):
        return float(a) * float(b)  # type: ignore[arg-type]
    return UNKNOWN


def _add_num(a: Num, b: Num) -> Num:
    if known(a) and known(b):
        return float(a) + float(b)  # type: ignore[arg-type]
    return UNKNOWN


def _sub_num(a: Num, b: Num) -> Num:
    if known(a) and known(b):
        return float(a) - float(b)  # type: ignore[arg-type]
    return UNKNOWN


def _neg(a: Num) -> Num:
    return -float(a) if known(a) else UNKNOWN  # type: ignore[arg-type]


def _scale(shape: Shape, c: Num) -> Shape:
    if shape.kind == "const":
        return const(_mul(shape.value, c))
    if shape.kind == "linear":
        return replace(shape, value=_mul(shape.value, c), slope=_mul(shape.slope, c), cap=_mul(shape.cap, c))
    if shape.kind == "exp":
        return replace(shape, value=_mul(shape.value, c), cap=_mul(shape.cap, c), offset=_mul(shape.offset, c))
    if shape.kind == "steps" and shape.steps and known(c):
        return replace(shape, steps=tuple(s * float(c) for s in shape.steps), value=_mul(shape.value, c))  # type: ignore[arg-type]
    if shape.kind == "random" and shape.low and shape.high:
        return replace(shape, low=_scale(shape.low, c), high=_scale(shape.high, c))
    return shape


def _shift(shape: Shape, c: Num) -> Shape:
    if shape.kind == "exp":
        return replace(shape, offset=_add_num(shape.offset, c))  # d·f^k + c, not (d + c)·f^k
    if shape.kind in ("const", "linear"):
        return replace(shape, value=_add_num(shape.value, c))
    if shape.kind == "random" and shape.low and shape.high:
        return replace(shape, low=_shift(shape.low, c), high=_shift(shape.high, c))
    return shape


def _multiply(a: Shape, b: Shape) -> Shape:
    if b.kind == "const" and a.kind != "const":
        a, b = b, a
    if a.kind == "const":
        return _scale(b, a.value)
    if a.kind == "random" and b.kind != "random":
        a, b = b, a
    if b.kind == "random" and a.kind in ("exp", "linear", "steps"):
        return _jitter_multiplicative(a, b)
    if a.kind == "exp" and b.kind == "exp":
        if a.offset or b.offset:
            return UNKNOWN_SHAPE  # (d·f^k + c)(e·g^k + o) is no exponential
        return Shape("exp", value=_mul(a.value, b.value), factor=_mul(a.factor, b.factor))
    if a.kind == "random" and b.kind == "random":
        return Shape("random", low=UNKNOWN_SHAPE, high=UNKNOWN_SHAPE)
    return UNKNOWN_SHAPE


def _jitter_multiplicative(growing: Shape, rand: Shape) -> Shape:
    """``d * random()`` (full), ``d * uniform(0.5, 1.5)`` (±50 %)."""
    low = rand.low.value if rand.low and rand.low.kind == "const" else UNKNOWN
    high = rand.high.value if rand.high and rand.high.kind == "const" else UNKNOWN
    if not (known(low) and known(high)):
        return replace(growing, jitter=Jitter(JitterKind.UNKNOWN))
    lo, hi = float(low), float(high)  # type: ignore[arg-type]
    if lo <= 0:
        return replace(_scale(growing, hi), jitter=Jitter(JitterKind.FULL))
    if hi <= lo:
        return _scale(growing, lo)
    centre = (lo + hi) / 2
    band = (hi - lo) / (hi + lo)
    if abs(lo - hi / 2) < 1e-9:
        return replace(_scale(growing, hi), jitter=Jitter(JitterKind.EQUAL))
    return replace(_scale(growing, centre), jitter=Jitter(JitterKind.PROPORTIONAL, round(band, 6)))


def _add(a: Shape, b: Shape) -> Shape:
    if a.kind == "const" and b.kind != "const":
        a, b = b, a
    if b.kind == "const":
        return _shift(a, b.value)
    if a.kind == "random" and b.kind != "random":
        a, b = b, a
    if b.kind == "random":
        return _jitter_additive(a, b)
    if a.kind == "linear" and b.kind == "linear":
        return Shape("linear", value=_add_num(a.value, b.value), slope=_add_num(a.slope, b.slope))
    if {a.kind, b.kind} == {"exp", "linear"}:
        exp = a if a.kind == "exp" else b
        other = b if exp is a else a
        return replace(exp, value=_add_num(exp.value, other.value))
    if a.kind == "exp" and b.kind == "exp" and a.factor == b.factor:
        return _add_exponentials(a, b)
    return UNKNOWN_SHAPE


def _add_exponentials(a: Shape, b: Shape) -> Shape:
    """``d/2 + uniform(0, d/2)`` is equal jitter; other jittered sums keep "some jitter"."""
    cap = _add_num(a.cap, b.cap) if a.cap is not None and b.cap is not None else None
    total = _add_num(a.value, b.value)
    if not a.jitter.present and not b.jitter.present:
        return replace(a, value=total, cap=cap)
    plain, rand = (a, b) if not a.jitter.present else (b, a)
    if plain.jitter.present or rand.jitter.kind is not JitterKind.FULL:
        return replace(a, value=total, cap=cap, jitter=Jitter(JitterKind.UNKNOWN))
    if known(plain.value) and known(rand.value):
        low, spread = float(plain.value), float(rand.value)  # type: ignore[arg-type]
        if abs(low - spread) < 1e-9:
            return replace(a, value=total, cap=cap, jitter=Jitter(JitterKind.EQUAL))
        centre = low + spread / 2
        if centre > 0:
            return replace(a, value=centre, cap=cap, jitter=Jitter(JitterKind.PROPORTIONAL, (spread / 2) / centre))
    return replace(a, value=total, cap=cap, jitter=Jitter(JitterKind.UNKNOWN))


def _jitter_additive(base: Shape, rand: Shape) -> Shape:
    """``d + uniform(0, 1)`` (additive), ``d/2 + uniform(0, d/2)`` (equal)."""
    low, high = rand.low, rand.high
    if low is None or high is None:
        return replace(base, jitter=Jitter(JitterKind.UNKNOWN))
    if base.kind == "const":
        return Shape("random", low=_add(base, low), high=_add(base, high))
    if low.kind == "const" and high.kind == "const":
        if known(low.value) and known(high.value):
            amount = float(high.value) - float(low.value)  # type: ignore[arg-type]
            return replace(_shift(base, low.value), jitter=Jitter(JitterKind.ADDITIVE, amount))
        return replace(base, jitter=Jitter(JitterKind.ADDITIVE, UNKNOWN))
    if base.kind == "exp" and high.kind == "exp" and (low.kind == "const" and low.value == 0):
        if known(base.value) and known(high.value) and abs(float(base.value) - float(high.value)) < 1e-9:  # type: ignore[arg-type]
            return Shape("exp", value=_mul(base.value, 2.0), factor=base.factor, cap=_mul(base.cap, 2.0) if base.cap is not None else None,
                         jitter=Jitter(JitterKind.EQUAL))
        total_low, spread = base.value, high.value
        if known(total_low) and known(spread):
            centre = float(total_low) + float(spread) / 2  # type: ignore[arg-type]
            band = (float(spread) / 2) / centre if centre else UNKNOWN  # type: ignore[arg-type]
            return Shape("exp", value=centre, factor=base.factor, cap=base.cap,
                         jitter=Jitter(JitterKind.PROPORTIONAL, band))
        return replace(base, jitter=Jitter(JitterKind.UNKNOWN))
    return replace(base, jitter=Jitter(JitterKind.UNKNOWN))


# ---------------------------------------------------------------- calls


def _random_kind(call: cst.Call, env: DelayEnv) -> Optional[str]:
    names = env.ctx.call_name(call)
    for name in names:
        if name in _RANDOM_FUNCTIONS:
            return _RANDOM_FUNCTIONS[name]
        if name in _RANDOM_UNKNOWN_SHAPE:
            return "unknown"
        if name.startswith(("random.", "numpy.random.", "secrets.")):
            return "unknown"
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _RANDOM_METHODS:
        receiver = func.value
        if isinstance(receiver, cst.Call) and env.ctx.call_name(receiver) & _RNG_CONSTRUCTORS:
            return _RANDOM_METHODS[func.attr.value]
        receiver_name = dotted_name(receiver) or ""
        if re.search(r"(rand|rng)", receiver_name.rsplit(".", 1)[-1], re.I):
            return _RANDOM_METHODS[func.attr.value]
        if isinstance(receiver, cst.Name):
            for binding in env.ctx.bindings(receiver):
                if isinstance(binding.value, cst.Call) and env.ctx.call_name(binding.value) & _RNG_CONSTRUCTORS:
                    return _RANDOM_METHODS[func.attr.value]
    return None


def _call(call: cst.Call, env: DelayEnv) -> Shape:
    names = env.ctx.call_name(call)
    positional, keywords = call_args(call)
    if names & {"min"} and len(positional) >= 2 and not keywords:
        return _min(positional, env)
    if names & {"max"} and len(positional) >= 2 and not keywords:
        ours = [a for a in positional if not SERVER_CHOSEN.search(env.ctx.code(a))]
        if len(ours) == 1 and len(positional) > 1:
            # ``max(backoff, retry_after)``: the server's Retry-After is a floor; the schedule is ours.
            return _sub(ours[0], env)
        shapes = [_sub(a, env) for a in positional]
        growing = [s for s in shapes if s.kind != "const"]
        if not growing:
            values = [s.value for s in shapes]
            return const(max(values)) if all(known(v) for v in values) else CONST_UNKNOWN  # type: ignore[type-var]
        return growing[0] if len(growing) == 1 else UNKNOWN_SHAPE
    if names & _PASSTHROUGH and positional:
        if names & {"datetime.timedelta"}:
            seconds = keywords.get("seconds")
            return _sub(seconds, env) if seconds is not None and len(call.args) == 1 else UNKNOWN_SHAPE
        return _sub(positional[0], env)
    if names & {"math.pow", "pow"} and len(positional) == 2:
        return _power(_sub(positional[0], env), _sub(positional[1], env))
    kind = _random_kind(call, env)
    if kind is not None:
        return _random(kind, positional, env)
    inlined = env.ctx.helper_delay(call, "returns")
    if inlined is not None:
        return _sub(inlined, env)  # ``self._get_backoff(attempt)``: the helper's expression
    name = last_name(call.func) or ""
    if "jitter" in name.lower():
        inner = _sub(positional[0], env) if positional else UNKNOWN_SHAPE
        if inner.kind == "const" and any(
            n in env.counters for arg in call.args[1:] for n in _names_in(arg.value)
        ):
            # ``full_jitter(base, cap, attempt)``: the helper grows the delay with the attempt.
            inner = UNKNOWN_SHAPE
        lowered = name.lower()
        if "full" in lowered:
            jitter = Jitter(JitterKind.FULL)
        elif "equal" in lowered:
            jitter = Jitter(JitterKind.EQUAL)
        else:
            jitter = Jitter(JitterKind.UNKNOWN)
        if inner.kind in ("exp", "linear", "const", "steps"):
            return replace(inner, jitter=jitter)
        return Shape("unknown", jitter=jitter)
    return UNKNOWN_SHAPE


#: What is left of a deadline: ``remaining``, ``time_left``, ``timer.timeout_secs``.
_TIME_LEFT = re.compile(r"(remain|time_?left|left_?time|time_?out|deadline|budget)", re.I)


def _time_left(expr: cst.BaseExpression) -> bool:
    """``remaining``, ``deadline - time.monotonic()``, ``max(0.0, timer.timeout_secs or 0.0)``:
    the wait is clamped at the deadline, which changes the last wait only."""
    for node in walk(expr):
        if isinstance(node, (cst.Name, cst.Attribute)) and _TIME_LEFT.search(dotted_name(node) or ""):
            return True
        if isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in CLOCK_READS:
            return True
    return False


def _min(args: Sequence[cst.BaseExpression], env: DelayEnv) -> Shape:
    # ``min(interval, remaining)``, ``min(min(2 ** n, 30), start + budget - time.time())``: the
    # schedule, until the deadline clamps the last wait.
    kept = [a for a in args if not _time_left(a)]
    if kept and len(kept) < len(args):
        args = kept
        if len(args) == 1:
            return _sub(args[0], env)
    shapes = [_sub(a, env) for a in args]
    consts = [s for s in shapes if s.kind == "const"]
    others = [s for s in shapes if s.kind != "const"]
    if not others:
        values = [s.value for s in consts]
        return const(min(values)) if all(known(v) for v in values) else CONST_UNKNOWN  # type: ignore[type-var]
    if len(others) != 1:
        return UNKNOWN_SHAPE
    cap: Num = UNKNOWN
    values = [s.value for s in consts]
    if values and all(known(v) for v in values):
        cap = min(float(v) for v in values)  # type: ignore[arg-type]
    inner = others[0]
    if known(inner.cap) and known(cap):
        cap = min(float(inner.cap), float(cap))  # type: ignore[arg-type]
    # ``min(cap, d + uniform(0, 1))``: a bounded jitter drawn before the cap is clamped away by it.
    clamps = inner.jitter.kind in (JitterKind.ADDITIVE, JitterKind.EQUAL, JitterKind.PROPORTIONAL)
    # ``min(cap, uniform(0, base * 2 ** n))``: full jitter drawn over a range that outgrows the
    # cap piles the clients up on it (``uniform(0, min(cap, d))`` draws under the cap instead).
    clamps = clamps or inner.jitter.kind is JitterKind.FULL and not known(inner.cap)
    return replace(inner, cap=cap, jitter_then_cap=inner.jitter_then_cap or clamps)


def _random(kind: str, args: Sequence[cst.BaseExpression], env: DelayEnv) -> Shape:
    if kind == "unit":
        return Shape("random", low=const(0.0), high=const(1.0))
    if kind in ("range", "randrange") and len(args) >= 2:
        return _random_range(_sub(args[0], env), _sub(args[1], env))
    if kind in ("randrange", "below") and len(args) == 1:
        return _random_range(const(0.0), _sub(args[0], env))
    return Shape("random", low=UNKNOWN_SHAPE, high=UNKNOWN_SHAPE)


def _random_range(low: Shape, high: Shape) -> Shape:
    """``uniform(low, high)``: a constant range, or jitter around a growing delay."""
    if not high.grows:
        return Shape("random", low=low, high=high)
    if low.kind == "const":
        # uniform(0, d): full jitter; uniform(base, d): a range up to the growing delay.
        return replace(high, jitter=Jitter(JitterKind.FULL))
    if low.kind == high.kind == "exp" and low.factor == high.factor and known(low.value) and known(high.value):
        lo, hi = float(low.value), float(high.value)  # type: ignore[arg-type]
        if abs(lo - hi / 2) < 1e-9:
            return replace(high, jitter=Jitter(JitterKind.EQUAL))
        if hi > lo > 0:
            return replace(high, value=(lo + hi) / 2, jitter=Jitter(JitterKind.PROPORTIONAL, (hi - lo) / (hi + lo)))
    return replace(high, jitter=Jitter(JitterKind.UNKNOWN))


def _subscript(expr: cst.Subscript, env: DelayEnv) -> Shape:
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return UNKNOWN_SHAPE
    steps = _literal_numbers(expr.value, env)
    key = expr.slice[0].slice.value
    if isinstance(key, (cst.SimpleString, cst.ConcatenatedString)):
        # ``self.config["retry_backoff_ms"]``: a setting, the same on every retry
        # unless the loop writes the container.
        container = dotted_name(expr.value)
        if container is not None and container not in env.loop_writes:
            return CONST_UNKNOWN
        return UNKNOWN_SHAPE
    index = _sub(key, env)
    if steps is None:
        return UNKNOWN_SHAPE if index.kind != "const" else CONST_UNKNOWN
    if index.kind == "const" and known(index.value):
        i = int(index.value)  # type: ignore[arg-type]
        return const(steps[i]) if -len(steps) <= i < len(steps) else UNKNOWN_SHAPE
    if index.kind == "linear" and known(index.value) and index.slope == 1:
        start = int(index.value)  # type: ignore[arg-type]
        if 0 <= start < len(steps):
            return Shape("steps", steps=steps[start:], value=steps[start])
    return UNKNOWN_SHAPE


def _literal_numbers(expr: cst.BaseExpression, env: DelayEnv) -> Optional[Tuple[float, ...]]:
    """``[1, 2, 4]`` directly or through a name bound once (locally or at module level)."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        elements = list(expr.elements)
        # ``(0.1, 0.3, 0.6, None)``: a trailing None marks "no more retries".
        while elements and isinstance(elements[-1].value, cst.Name) and elements[-1].value.value == "None":
            elements.pop()
        values = [number(e.value) for e in elements]
        if values and all(v is not None for v in values):
            return tuple(values)  # type: ignore[arg-type]
        return None
    if isinstance(expr, cst.Name) and env.depth < 10:
        bindings = env.ctx.bindings(expr)
        values_ = [b.value for b in bindings if b.kind in ("assign", "annassign")]
        if len(bindings) == 1 and len(values_) == 1 and values_[0] is not None:
            return _literal_numbers(values_[0], env)
        if all(b.kind == "import" for b in bindings):
            # ``from ._base import _RETRY_DELAYS_SECONDS`` (descope): a list of another module
            constant = env.ctx.module_constant(expr.value, expr)
            if constant is not None and isinstance(constant, (cst.List, cst.Tuple)):
                return _literal_numbers(constant, env)
    return None


def literal_steps(expr: cst.BaseExpression, env: DelayEnv) -> Optional[Tuple[float, ...]]:
    return _literal_numbers(expr, env)


def parameter_value(use: cst.Name, binding: Binding, ctx: ModuleContext) -> Optional[cst.BaseExpression]:
    """The one value every caller in this module gives a parameter (its default when they all
    leave it out), as a node standing at ``use``; None when callers differ, pass what we
    cannot read, or none is here (an engine whose value its callers choose stays unknown)."""
    values = ctx.parameter_values(binding.node)  # type: ignore[arg-type]
    if not values or UNREAD in values:
        return None
    # A caller that passes the default's own value (or hands on a parameter defaulting to it) agrees.
    literal = ctx.literal(binding.value)
    default = repr(literal) if literal is not NO_LITERAL else "default"
    distinct = {repr(v) if v is not DEFAULT else default for v in values}
    if len(distinct) != 1:
        return None
    if all(v is DEFAULT for v in values) or values[0] is DEFAULT:
        if binding.value is None:
            return None  # a required parameter
        return binding.value
    try:
        node = cst.parse_expression(repr(values[0]))
    except Exception:  # noqa: BLE001
        return None
    ctx.note_stand_in(node, use)
    return node
