"""backoff: ``@backoff.on_exception(wait_gen, exception, ...)`` and ``@backoff.on_predicate(...)``.

Defaults (backoff 2.2): no ``max_tries``/``max_time`` (never stops), ``jitter=full_jitter``,
``expo(base=2, factor=1, max_value=None)``, ``constant(interval=1)``; ``giveup=`` is the
exit for permanent errors.
"""

from __future__ import annotations

from typing import List

import libcst as cst

from ...model import UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetriedError, RetryPolicy
from ...narrowing import Trigger
from ..context import ModuleContext
from .built import policies_of
from .common import Args, build, calls_named, clause, last, names_of, predicate, resolve, text_trigger, value

DECORATORS = frozenset({"backoff.on_exception", "backoff.on_predicate", "backoff._decorator.on_exception",
                        "backoff._decorator.on_predicate"})
_WORDS = frozenset({"on_exception", "on_predicate"})
#: Golden ratio: fibo() grows like an exponential of this factor.
_PHI = 1.618

#: Defaults of backoff's wait generators, as assumed here (tests compare them with backoff).
DEFAULTS = {"expo.base": 2.0, "expo.factor": 1.0, "constant.interval": 1.0}


TRIGGER = Trigger(text=text_trigger("backoff"), calls=_WORDS)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    return policies_of(calls_named(ctx, DECORATORS), ctx, _policy)


def _backoff_name(expr: cst.BaseExpression, ctx: ModuleContext) -> str:
    target = expr.func if isinstance(expr, cst.Call) else expr
    for qualified in ctx.qualified_names(target):
        if qualified.startswith("backoff."):
            return qualified.rsplit(".", 1)[-1]
    return ""


def _policy(call: cst.Call, args: Args, ctx: ModuleContext) -> RetryPolicy:
    on_exception = last(call.func) == "on_exception"
    location = ctx.location(call)
    max_tries = args.get("max_tries")
    max_time = args.get("max_time")
    bound = Bound(
        attempts=_count(max_tries, ctx),
        deadline=_count(max_time, ctx),
        clips_to_deadline=True,  # _next_wait: min(seconds, max_time - elapsed)
    )
    if bound.unbounded and args.opaque:
        bound = Bound(attempts=UNKNOWN)
    delay = _delay(args, ctx)
    errors: List[RetriedError] = []
    if on_exception:
        exception = args.get("exception", 1)
        names = names_of(exception, ctx)
        # ``**DEFAULT_BACKOFF_SETTINGS`` (gen3's settings carry ``"giveup": exception_do_not_retry``):
        # keyword arguments we cannot read may give up on permanent errors
        has_giveup = args.given("giveup") or args.opaque
        if names:
            errors.append(clause(names, location, f"exception={ctx.code(exception)}", permanent_exit=has_giveup))
        elif exception is not None:
            errors.append(predicate(location, ctx.code(exception)))
    kind = "on_exception" if on_exception else "on_predicate"
    return build("backoff", call, ctx, bound, delay, errors, description=f"backoff `@{kind}(...)`")


def _count(expr, ctx: ModuleContext):
    """``max_tries``/``max_time``: a number, None, or a callable/unknown value."""
    if expr is None:
        return None
    resolved = resolve(expr, ctx) or expr
    if isinstance(resolved, cst.Lambda):
        return UNKNOWN
    return value(expr, ctx, UNKNOWN)


def _delay(args: Args, ctx: ModuleContext) -> Delay:
    wait_gen = args.get("wait_gen", 0)
    if wait_gen is None:
        return Delay(DelayKind.UNKNOWN)
    name = _backoff_name(resolve(wait_gen, ctx) or wait_gen, ctx)
    text = ctx.code(wait_gen)
    jitter = _jitter(args, ctx)
    if name == "expo":
        base = value(args.get("base"), ctx, DEFAULTS["expo.base"])
        factor = value(args.get("factor"), ctx, DEFAULTS["expo.factor"])
        cap = value(args.get("max_value"), ctx, None)
        return Delay(DelayKind.EXPONENTIAL, base=factor, factor=base, cap=cap, jitter=jitter, text=text)
    if name == "fibo":
        cap = value(args.get("max_value"), ctx, None)
        return Delay(DelayKind.EXPONENTIAL, base=1.0, factor=_PHI, cap=cap, jitter=jitter, text=text)
    if name == "constant":
        interval = value(args.get("interval"), ctx, DEFAULTS["constant.interval"])
        if interval == 0:
            if args.given("on_backoff"):
                # `interval=0` with a handler: the handler does the waiting (often Retry-After).
                return Delay(DelayKind.UNKNOWN, text=f"interval=0, on_backoff={ctx.code(args.get('on_backoff'))}")
            return Delay(DelayKind.NONE, text=f"{text}, interval=0")  # full jitter of 0 s is 0 s
        return Delay(DelayKind.FIXED, base=interval, jitter=jitter, text=text)
    if name == "runtime":
        # The wait comes from the result or the exception (e.g. a Retry-After header).
        return Delay(DelayKind.UNKNOWN, honours_retry_after=True, text=text)
    return Delay(DelayKind.UNKNOWN, jitter=jitter, text=text)


def _jitter(args: Args, ctx: ModuleContext) -> Jitter:
    if not args.given("jitter"):
        return Jitter(JitterKind.FULL)
    expr = resolve(args.get("jitter"), ctx)
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return Jitter()
    name = _backoff_name(expr, ctx)
    if name == "full_jitter":
        return Jitter(JitterKind.FULL)
    if name == "random_jitter":
        return Jitter(JitterKind.ADDITIVE, 1.0)  # adds random() seconds
    return Jitter(JitterKind.UNKNOWN)
