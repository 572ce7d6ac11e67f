"""redis-py ``Retry(backoff, retries, supported_errors=...)`` and its backoff classes.

redis 8: ``retries < 0`` retries forever; the backoff before retry ``n`` is computed
from ``n`` failures: ``ExponentialBackoff`` → ``min(cap, base * 2 ** n)`` (no jitter),
``FullJitterBackoff`` → ``uniform(0, …)``, ``EqualJitterBackoff``,
``DecorrelatedJitterBackoff``, ``ExponentialWithJitterBackoff`` → ``min(cap, random() * base * 2 ** n)``
(all take ``cap`` then ``base``). ``ExponentialWithJitterBackoff`` draws *before* it clamps (redis 8.2.0
``redis/backoff.py``): unlike ``FullJitterBackoff``'s ``uniform(0, min(cap, base * 2 ** n))``, every
draw over the cap becomes exactly the cap, ``1 - cap / (base * 2 ** n)`` of them (RTY504);
``NoBackoff`` → 0; ``ConstantBackoff(b)`` → b. Defaults: ``cap=0.512``, ``base=0.008``.
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from ...model import UNBOUNDED, UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetryPolicy, known
from ...narrowing import Trigger
from ..context import ModuleContext
from .built import policies_of
from .common import Args, build, calls_named, clause, names_of, resolve, scaled, text_trigger, value

RETRY = frozenset({"redis.retry.Retry", "redis.Retry", "redis.asyncio.retry.Retry", "redis.asyncio.Retry",
                   "redis.asyncio.client.Retry"})

#: redis.backoff defaults, as assumed here (tests compare them with the installed redis).
DEFAULTS = {"cap": 0.512, "base": 0.008}
_JITTERS = {
    "FullJitterBackoff": JitterKind.FULL,
    "EqualJitterBackoff": JitterKind.EQUAL,
    "DecorrelatedJitterBackoff": JitterKind.DECORRELATED,
    "ExponentialWithJitterBackoff": JitterKind.FULL,
    "ExponentialBackoff": JitterKind.NONE,
}

TRIGGER = Trigger(text=text_trigger("redis"), calls=frozenset({"Retry"}))


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    return policies_of(calls_named(ctx, RETRY), ctx, _policy)


def _policy(call: cst.Call, args: Args, ctx: ModuleContext) -> Optional[RetryPolicy]:
    retries = value(args.get("retries", 1), ctx, UNKNOWN)
    if known(retries) and float(retries) == 0:  # type: ignore[arg-type]
        return None
    if known(retries) and float(retries) < 0:  # type: ignore[arg-type]
        bound = UNBOUNDED
    else:
        bound = Bound(attempts=float(retries) + 1 if known(retries) else UNKNOWN)  # type: ignore[arg-type]
    delay = _backoff(args.get("backoff", 0), ctx)
    errors = []
    supported = args.get("supported_errors", 2)
    if supported is not None:
        names = names_of(supported, ctx)
        if names:
            errors.append(clause(names, ctx.location(supported), f"supported_errors={ctx.code(supported)}"))
    return build("redis", call, ctx, bound, delay, errors, description="redis `Retry(...)`")


def _backoff(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Delay:
    resolved = resolve(expr, ctx) if expr is not None else None
    if not isinstance(resolved, cst.Call):
        return Delay(DelayKind.UNKNOWN)
    names = {q.rsplit(".", 1)[-1] for q in ctx.call_name(resolved) if q.startswith("redis")}
    args = Args.of(resolved)
    text = ctx.code(resolved)
    if "NoBackoff" in names:
        return Delay(DelayKind.NONE, text=text)
    if "ConstantBackoff" in names:
        return Delay(DelayKind.FIXED, base=value(args.get("backoff", 0), ctx, UNKNOWN), text=text)
    for name, jitter in _JITTERS.items():
        if name in names:
            cap = value(args.get("cap", 0), ctx, DEFAULTS["cap"])
            base = value(args.get("base", 1), ctx, DEFAULTS["base"])
            # The first retry comes after one failure: base * 2 ** 1.
            return Delay(DelayKind.EXPONENTIAL, base=scaled(base, 2.0), factor=2.0, cap=cap, jitter=Jitter(jitter), text=text,
                         jitter_then_cap=name == "ExponentialWithJitterBackoff")
    return Delay(DelayKind.UNKNOWN, text=text)
