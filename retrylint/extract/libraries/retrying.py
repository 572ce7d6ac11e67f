"""retrying: ``@retry``/``@retry(...)`` and ``Retrying(...)`` (all waits in milliseconds).

Defaults (retrying 1.x): no stop (never stops), no wait, every exception retried.
Its exponential wait is ``2 ** attempt * wait_exponential_multiplier`` ms.
"""

from __future__ import annotations

from typing import List

import libcst as cst

from ...model import (
    NO_DELAY,
    UNBOUNDED,
    UNKNOWN,
    Bound,
    Delay,
    DelayKind,
    Jitter,
    JitterKind,
    RetriedError,
    RetryPolicy,
    known,
)
from ...narrowing import Trigger
from ..context import ModuleContext
from .common import Args, bare_decorators, build, calls_named, clause, last, predicate, scaled, text_trigger, value

POLICIES = frozenset({"retrying.retry", "retrying.Retrying"})

_WORDS = frozenset({"retry", "Retrying"})

TRIGGER = Trigger(text=text_trigger("retrying"), calls=_WORDS, decorators=_WORDS)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    policies = [_policy(call, Args.of(call), ctx) for call in calls_named(ctx, POLICIES)]
    for name in bare_decorators(ctx, frozenset({"retrying.retry"})):
        policies.append(
            build("retrying", name, ctx, UNBOUNDED, NO_DELAY,
                  [clause(("Exception",), ctx.location(name), "retry_on_exception (the default: every exception)")],
                  description="retrying `@retry`")
        )
    return policies


def _ms(args: Args, name: str, ctx: ModuleContext):
    return scaled(value(args.get(name), ctx, None), 0.001)


def _policy(call: cst.Call, args: Args, ctx: ModuleContext) -> RetryPolicy:
    location = ctx.location(call)
    if args.given("stop") or args.given("stop_func"):
        bound = Bound(attempts=UNKNOWN)
    else:
        attempts = value(args.get("stop_max_attempt_number"), ctx, None)
        deadline = _ms(args, "stop_max_delay", ctx)
        bound = Bound(attempts=attempts, deadline=deadline)
        if bound.unbounded and args.opaque:
            bound = Bound(attempts=UNKNOWN)
    delay = _delay(args, ctx)
    errors: List[RetriedError] = []
    if args.given("retry_on_exception"):
        errors.append(predicate(location, ctx.code(args.get("retry_on_exception"))))  # type: ignore[arg-type]
    elif not args.opaque:
        errors.append(clause(("Exception",), location, "retry_on_exception (the default: every exception)"))
    return build("retrying", call, ctx, bound, delay, errors, description=f"retrying `{last(call.func)}(...)`")


def _delay(args: Args, ctx: ModuleContext) -> Delay:
    text = ctx.code(args.call.func)
    jitter_max = _ms(args, "wait_jitter_max", ctx)
    jitter = Jitter(JitterKind.ADDITIVE, jitter_max) if jitter_max is not None else Jitter()
    if args.given("wait") or args.given("wait_func"):
        return Delay(DelayKind.UNKNOWN, text=text)
    if args.given("wait_exponential_multiplier") or args.given("wait_exponential_max"):
        multiplier = _ms(args, "wait_exponential_multiplier", ctx)
        multiplier = 0.001 if multiplier is None else multiplier
        cap = _ms(args, "wait_exponential_max", ctx)
        return Delay(DelayKind.EXPONENTIAL, base=scaled(multiplier, 2.0), factor=2.0, cap=cap, jitter=jitter, text=text)
    if args.given("wait_incrementing_start") or args.given("wait_incrementing_increment"):
        start = _ms(args, "wait_incrementing_start", ctx)
        step = _ms(args, "wait_incrementing_increment", ctx)
        return Delay(DelayKind.LINEAR, base=start if start is not None else 0.0, step=step if step is not None else 0.1,
                     jitter=jitter, text=text)
    if args.given("wait_random_min") or args.given("wait_random_max"):
        low = _ms(args, "wait_random_min", ctx)
        high = _ms(args, "wait_random_max", ctx)
        low = 0.0 if low is None else low
        high = 1.0 if high is None else high
        if known(low) and known(high):
            return Delay(DelayKind.FIXED, base=low, jitter=Jitter(JitterKind.ADDITIVE, float(high) - float(low)), text=text)  # type: ignore[arg-type]
        return Delay(DelayKind.FIXED, base=UNKNOWN, jitter=Jitter(JitterKind.UNKNOWN), text=text)
    if args.given("wait_fixed"):
        return Delay(DelayKind.FIXED, base=_ms(args, "wait_fixed", ctx), jitter=jitter, text=text)
    if args.opaque:
        return Delay(DelayKind.UNKNOWN, text=text)
    if jitter_max is not None:
        return Delay(DelayKind.FIXED, base=0.0, jitter=jitter, text=text)
    return NO_DELAY
