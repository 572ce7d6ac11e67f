"""tenacity: ``@retry``, ``@retry(...)``, ``Retrying``/``AsyncRetrying(...)``, ``.retry_with(...)``.

Defaults (tenacity 9): ``stop=stop_never``, ``wait=wait_none()``,
``retry=retry_if_exception_type()`` (every ``Exception``). ``wait_exponential``
has no jitter and its ``max`` is effectively infinite.
"""

from __future__ import annotations

from dataclasses import replace
from typing import List

import libcst as cst

from ...model import (
    NO_DELAY,
    UNBOUNDED,
    UNKNOWN,
    UNKNOWN_DELAY,
    Bound,
    Delay,
    DelayKind,
    Jitter,
    JitterKind,
    Num,
    RetriedError,
    RetryPolicy,
    known,
)
from ...narrowing import Trigger
from ...syntax import dotted_name, walk
from ..context import ModuleContext
from .built import expand, factory_uses, merge, place
from .common import (
    Args,
    bare_decorators,
    build,
    calls_named,
    clause,
    last,
    names_of,
    predicate,
    resolve,
    shipped_default,
    text_trigger,
    value,
)

POLICIES = frozenset(
    {
        "tenacity.retry",
        "tenacity.Retrying",
        "tenacity.AsyncRetrying",
        "tenacity.asyncio.AsyncRetrying",
        "tenacity.TornadoRetrying",
        "tenacity.tornadoweb.TornadoRetrying",
    }
)
_WORDS = frozenset({"retry", "Retrying", "AsyncRetrying", "TornadoRetrying", "retry_with"})

#: Defaults of tenacity's waits, as assumed here (tests compare them with the installed tenacity).
DEFAULTS = {
    "wait_random.min": 0.0,
    "wait_random.max": 1.0,
    "wait_incrementing.start": 0.0,
    "wait_incrementing.increment": 100.0,
    "wait_exponential.multiplier": 1.0,
    "wait_exponential.exp_base": 2.0,
    "wait_exponential_jitter.initial": 1.0,
    "wait_exponential_jitter.jitter": 1.0,
}


TRIGGER = Trigger(text=text_trigger("tenacity"), calls=_WORDS, decorators=_WORDS)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    placed = []
    for call in calls_named(ctx, POLICIES):
        uses = factory_uses(call, ctx, lambda c, a, x: _policy(c, a, x, defaults=True))
        if uses is not None:
            placed.extend((policy, None) for policy in uses)
            continue
        args, built = expand(call, ctx)
        placed.append((place(_policy(call, args, ctx, defaults=True), built, ctx), built))
    for name in bare_decorators(ctx, frozenset({"tenacity.retry"})):
        placed.append((_default_policy(name, ctx), None))
    for call in _retry_with_calls(ctx):
        args, built = expand(call, ctx)
        placed.append((place(_policy(call, args, ctx, defaults=False), built, ctx), built))
    return merge(placed)


def _retry_with_calls(ctx: ModuleContext) -> List[cst.Call]:
    """``fetch.retry_with(stop=...)``: a tenacity-wrapped function re-configured."""
    if not _imports_tenacity(ctx.module):
        return []
    return [
        node
        for node in walk(ctx.module, skip=())
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "retry_with"
    ]


def _imports_tenacity(module: cst.Module) -> bool:
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import) and any(
                (dotted_name(alias.name) or "").split(".")[0] == "tenacity" for alias in small.names
            ):
                return True
            if isinstance(small, cst.ImportFrom) and small.module is not None:
                if (dotted_name(small.module) or "").split(".")[0] == "tenacity":
                    return True
    return False


def _default_policy(node: cst.BaseExpression, ctx: ModuleContext) -> RetryPolicy:
    return build(
        "tenacity",
        node,
        ctx,
        UNBOUNDED,
        NO_DELAY,
        [clause(("Exception",), ctx.location(node), "retry=retry_if_exception_type() (the default)")],
        description="tenacity `@retry`",
    )


def _policy(call: cst.Call, args: Args, ctx: ModuleContext, defaults: bool) -> RetryPolicy:
    """``defaults=False`` for ``retry_with``: arguments not given keep an unknown earlier value."""
    stop = args.get("stop")
    wait = args.get("wait")
    retry = args.get("retry")
    if stop is not None:
        bound = _stop(stop, ctx)
    elif defaults and not args.opaque:
        bound = UNBOUNDED
    else:
        bound = Bound(attempts=UNKNOWN)
    if wait is not None:
        delay = _floored(_wait(wait, ctx), wait, bound, ctx)
    elif defaults and not args.opaque:
        delay = NO_DELAY
    else:
        delay = UNKNOWN_DELAY
    location = ctx.location(call)
    if retry is not None:
        errors = _retry(retry, ctx, location)
    elif defaults and not args.opaque:
        errors = [clause(("Exception",), location, "retry_if_exception_type() (the default)")]
    else:
        errors = []
    kind = last(call.func)
    description = "tenacity `@retry(...)`" if kind == "retry" else f"tenacity `{kind}(...)`"
    return build("tenacity", call, ctx, bound, delay, errors, description=description)


# ---------------------------------------------------------------- stop


def _stop(expr: cst.BaseExpression, ctx: ModuleContext) -> Bound:
    expr = resolve(expr, ctx) or expr
    if isinstance(expr, cst.BinaryOperation):
        left, right = _stop(expr.left, ctx), _stop(expr.right, ctx)
        if isinstance(expr.operator, cst.BitOr):
            return _either(left, right)
        if isinstance(expr.operator, cst.BitAnd):
            return _both(left, right)
        return Bound(attempts=UNKNOWN)
    name = _tenacity_name(expr, ctx)
    if name == "stop_never":
        return UNBOUNDED
    if isinstance(expr, cst.Call):
        args = Args.of(expr)
        if name == "stop_after_attempt":
            given = args.get("max_attempt_number", 0)
            attempts = value(given, ctx, UNKNOWN)
            if not known(attempts):
                # ``stop_after_attempt(max_retries)`` in ``def create_base_retry_decorator(...,
                # max_retries=1)`` that no caller in the package changes: one attempt as shipped
                shipped = shipped_default(given, ctx)
                as_shipped = value(shipped, ctx, UNKNOWN) if shipped is not None else UNKNOWN
                if known(as_shipped) and float(as_shipped) <= 1:  # type: ignore[arg-type]
                    attempts = as_shipped
            return Bound(attempts=attempts if attempts is not None else UNKNOWN)
        if name in ("stop_after_delay", "stop_before_delay"):
            deadline = value(args.get("max_delay", 0), ctx, UNKNOWN)
            return Bound(deadline=deadline if deadline is not None else UNKNOWN)
        if name in ("stop_any", "stop_all"):
            parts = [_stop(a, ctx) for a in args.positional]
            if not parts:
                return Bound(attempts=UNKNOWN)
            combined = parts[0]
            for part in parts[1:]:
                combined = _either(combined, part) if name == "stop_any" else _both(combined, part)
            return combined
    return Bound(attempts=UNKNOWN)


def _either(a: Bound, b: Bound) -> Bound:
    """Stops when either stops: the tighter bound."""
    return Bound(attempts=_min(a.attempts, b.attempts), deadline=_min(a.deadline, b.deadline))


def _both(a: Bound, b: Bound) -> Bound:
    """Stops only when both would: unbounded if either never stops."""
    if a.unbounded or b.unbounded:
        return UNBOUNDED
    return Bound(attempts=_max(a.attempts, b.attempts), deadline=_max(a.deadline, b.deadline))


def _min(a: Num, b: Num) -> Num:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b) if known(a) and known(b) else UNKNOWN  # type: ignore[type-var]


def _max(a: Num, b: Num) -> Num:
    if a is None or b is None:
        return a if b is None else b
    return max(a, b) if known(a) and known(b) else UNKNOWN  # type: ignore[type-var]


# ---------------------------------------------------------------- wait


def _wait(expr: cst.BaseExpression, ctx: ModuleContext) -> Delay:
    expr = resolve(expr, ctx) or expr
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _sum(_wait(expr.left, ctx), _wait(expr.right, ctx))
    name = _tenacity_name(expr, ctx)
    text = ctx.code(expr)
    if name == "wait_none" or (isinstance(expr, cst.Call) and name == "wait_none"):
        return Delay(DelayKind.NONE, text=text)
    if not isinstance(expr, cst.Call):
        return Delay(DelayKind.UNKNOWN, text=text)
    args = Args.of(expr)
    if name == "wait_fixed":
        return Delay(DelayKind.FIXED, base=value(args.get("wait", 0), ctx, UNKNOWN), text=text)
    if name == "wait_random":
        low = value(args.get("min", 0), ctx, DEFAULTS["wait_random.min"])
        high = value(args.get("max", 1), ctx, DEFAULTS["wait_random.max"])
        return _random_range(low, high, text)
    if name == "wait_incrementing":
        return Delay(
            DelayKind.LINEAR,
            base=value(args.get("start", 0), ctx, DEFAULTS["wait_incrementing.start"]),
            step=value(args.get("increment", 1), ctx, DEFAULTS["wait_incrementing.increment"]),
            cap=value(args.get("max", 2), ctx, None),
            text=text,
        )
    if name in ("wait_exponential", "wait_random_exponential", "wait_full_jitter"):
        multiplier = value(args.get("multiplier", 0), ctx, DEFAULTS["wait_exponential.multiplier"])
        exp_base = value(args.get("exp_base", 2), ctx, DEFAULTS["wait_exponential.exp_base"])
        cap = value(args.get("max", 1), ctx, None)
        jitter = Jitter(JitterKind.FULL) if name != "wait_exponential" else Jitter()
        return Delay(DelayKind.EXPONENTIAL, base=multiplier, factor=exp_base, cap=cap, jitter=jitter, text=text)
    if name == "wait_exponential_jitter":
        # tenacity >= 9.1 names the base ``multiplier`` (``initial`` is its deprecated alias).
        initial = value(args.get("initial", 0) or args.get("multiplier", 5), ctx, DEFAULTS["wait_exponential_jitter.initial"])
        cap = value(args.get("max", 1), ctx, None)
        exp_base = value(args.get("exp_base", 2), ctx, 2.0)
        amount = value(args.get("jitter", 3), ctx, DEFAULTS["wait_exponential_jitter.jitter"])
        jitter = Jitter(JitterKind.ADDITIVE, amount) if amount != 0 else Jitter()
        # max(min, min(multiplier * exp_base ** n + uniform(0, jitter), max)): jitter, then the cap.
        return Delay(DelayKind.EXPONENTIAL, base=initial, factor=exp_base, cap=cap, jitter=jitter, text=text,
                     jitter_then_cap=True)
    if name in ("wait_combine",):
        delays = [_wait(a, ctx) for a in args.positional]
        combined = delays[0] if delays else UNKNOWN_DELAY
        for other in delays[1:]:
            combined = _sum(combined, other)
        return combined
    if name == "wait_chain":
        steps = [_wait(a, ctx) for a in args.positional]
        if steps and all(d.kind is DelayKind.FIXED and known(d.base) and not d.jitter.present for d in steps):
            values = tuple(float(d.base) for d in steps)  # type: ignore[arg-type]
            return Delay(DelayKind.STEPS, steps=values, base=values[0], text=text)
        return Delay(DelayKind.UNKNOWN, text=text)
    return Delay(DelayKind.UNKNOWN, text=text)


def _floored(delay: Delay, wait: cst.BaseExpression, bound: Bound, ctx: ModuleContext) -> Delay:
    """``wait_exponential(multiplier=1, min=4, max=10)`` with ``stop_after_attempt(3)``: tenacity
    waits ``max(min, multiplier * 2 ** (n - 1))``, so the two waits are 4 s and 4 s. Under a
    floor that the bound never lets the schedule outgrow, every retry waits the same delay."""
    resolved = resolve(wait, ctx) or wait
    if delay.kind is not DelayKind.EXPONENTIAL or delay.jitter.present or not isinstance(resolved, cst.Call) \
            or _tenacity_name(resolved, ctx) != "wait_exponential" or not known(bound.attempts):
        return delay
    floor = value(Args.of(resolved).get("min", 3), ctx, None)  # (multiplier, max, exp_base, min)
    if not (known(floor) and known(delay.base) and known(delay.factor)):
        return delay
    waits = []
    for n in range(1, int(float(bound.attempts))):  # type: ignore[arg-type]
        wait_n = max(float(floor), float(delay.base) * float(delay.factor) ** (n - 1))  # type: ignore[arg-type]
        waits.append(min(wait_n, float(delay.cap)) if known(delay.cap) else wait_n)  # type: ignore[arg-type]
    if len(set(waits)) == 1:
        return replace(delay, kind=DelayKind.FIXED, base=waits[0], factor=None, cap=None)
    return delay


def _random_range(low: Num, high: Num, text: str) -> Delay:
    if known(low) and known(high):
        if float(low) == 0:  # type: ignore[arg-type]
            return Delay(DelayKind.FIXED, base=high, jitter=Jitter(JitterKind.FULL), text=text)
        return Delay(DelayKind.FIXED, base=low, jitter=Jitter(JitterKind.ADDITIVE, float(high) - float(low)), text=text)  # type: ignore[arg-type]
    return Delay(DelayKind.FIXED, base=UNKNOWN, jitter=Jitter(JitterKind.UNKNOWN), text=text)


def _sum(a: Delay, b: Delay) -> Delay:
    """``wait_fixed(3) + wait_random(0, 2)``: the growth of the growing part, the jitter of both."""
    text = f"{a.text} + {b.text}"
    if a.kind is DelayKind.NONE:
        return b
    if b.kind is DelayKind.NONE:
        return a
    growing = [d for d in (a, b) if d.kind in (DelayKind.EXPONENTIAL, DelayKind.LINEAR)]
    fixed = [d for d in (a, b) if d.kind is DelayKind.FIXED]
    if len(fixed) == 2:
        jitter = _merge_jitter(a, b)
        base = float(a.base) + float(b.base) if known(a.base) and known(b.base) else UNKNOWN  # type: ignore[arg-type]
        if a.jitter.kind is JitterKind.FULL or b.jitter.kind is JitterKind.FULL:
            # wait_fixed(3) + wait_random(0, 2): 3 s plus up to 2 s
            plain, rand = (a, b) if b.jitter.present else (b, a)
            return Delay(DelayKind.FIXED, base=plain.base, jitter=Jitter(JitterKind.ADDITIVE, rand.base), text=text)
        return Delay(DelayKind.FIXED, base=base, jitter=jitter, text=text)
    if len(growing) == 1 and len(fixed) == 1:
        grow, rest = growing[0], fixed[0]
        if rest.jitter.present:
            amount = rest.base if rest.jitter.kind is JitterKind.FULL else rest.jitter.amount
            jitter = Jitter(JitterKind.ADDITIVE, amount) if not grow.jitter.present else Jitter(JitterKind.UNKNOWN)
            return Delay(grow.kind, base=grow.base, factor=grow.factor, step=grow.step, cap=grow.cap, jitter=jitter, text=text)
        base = float(grow.base) + float(rest.base) if known(grow.base) and known(rest.base) else UNKNOWN  # type: ignore[arg-type]
        return Delay(grow.kind, base=base, factor=grow.factor, step=grow.step, cap=grow.cap, jitter=grow.jitter, text=text)
    return Delay(DelayKind.UNKNOWN, jitter=_merge_jitter(a, b), text=text)


def _merge_jitter(a: Delay, b: Delay) -> Jitter:
    if a.jitter.present or b.jitter.present:
        return Jitter(JitterKind.UNKNOWN)
    return Jitter()


# ---------------------------------------------------------------- retry predicate


def _retry(expr: cst.BaseExpression, ctx: ModuleContext, location) -> List[RetriedError]:
    expr = resolve(expr, ctx) or expr
    text = ctx.code(expr)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _retry(expr.left, ctx, location) + _retry(expr.right, ctx, location)
    name = _tenacity_name(expr, ctx)
    if isinstance(expr, cst.Call):
        args = Args.of(expr)
        if name == "retry_if_exception_type":
            given = args.get("exception_types", 0)
            if given is None:
                return [clause(("Exception",), location, text)]
            names = names_of(given, ctx)
            return [clause(names, location, text)] if names else [predicate(location, text)]
        if name == "retry_if_not_exception_type":
            # Everything but the listed types: a catch-all with an exit for those.
            return [clause(("Exception",), location, text, permanent_exit=True)]
        if name == "retry_any":
            out: List[RetriedError] = []
            for part in args.positional:
                out.extend(_retry(part, ctx, location))
            return out
    return [predicate(location, text)]


def _tenacity_name(expr: cst.BaseExpression, ctx: ModuleContext) -> str:
    """``wait_fixed`` for ``tenacity.wait_fixed(...)``, ``t.wait.wait_fixed``, ``from tenacity import wait_fixed``."""
    target = expr.func if isinstance(expr, cst.Call) else expr
    for qualified in ctx.qualified_names(target):
        if qualified.startswith("tenacity."):
            return qualified.rsplit(".", 1)[-1]
    return ""
