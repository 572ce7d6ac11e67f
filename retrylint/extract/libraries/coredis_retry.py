"""coredis retry policies (``coredis.retry``), as coredis 6.9 runs them.

``ConstantRetryPolicy(retryable_exceptions, retries, *, deadline=inf, delay=1)`` waits ``delay``
after every failed attempt; ``ExponentialBackoffRetryPolicy(retryable_exceptions, retries, *,
deadline=inf, base_delay=1, max_delay=inf, jitter=False)`` waits ``min(max_delay, 2 ** (n - 1) *
base_delay)`` after attempt ``n``, drawn from ``uniform(base_delay, that)`` with ``jitter=True``.
``retries`` counts retries (``retries + 1`` attempts); ``retries=None`` stops only at the
deadline, so with the default ``deadline=inf`` it retries forever. ``NoRetryPolicy()`` makes one
attempt. A ``CompositeRetryPolicy`` is judged through the policies it combines, and
``@retryable(policy=...)`` through its policy.
"""

from __future__ import annotations

import math
from typing import List, Optional

import libcst as cst

from ...model import UNBOUNDED, UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetryPolicy, known
from ...narrowing import Trigger
from ..context import ModuleContext
from .built import policies_of
from .common import Args, build, calls_named, clause, is_false, names_of, resolve, text_trigger, value

CONSTANT = frozenset({"coredis.retry.ConstantRetryPolicy"})
EXPONENTIAL = frozenset({"coredis.retry.ExponentialBackoffRetryPolicy"})

#: coredis.retry defaults, as assumed here (tests compare them with the installed coredis).
DEFAULTS = {"delay": 1.0, "base_delay": 1.0}

TRIGGER = Trigger(text=text_trigger("coredis"), calls=frozenset({"ConstantRetryPolicy", "ExponentialBackoffRetryPolicy"}))


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    return policies_of(calls_named(ctx, CONSTANT | EXPONENTIAL), ctx, _policy)


def _policy(call: cst.Call, args: Args, ctx: ModuleContext) -> Optional[RetryPolicy]:
    exponential = bool(ctx.call_name(call) & EXPONENTIAL)
    name = "ExponentialBackoffRetryPolicy" if exponential else "ConstantRetryPolicy"
    retries_expr = args.get("retries", 1)
    if retries_expr is None and not args.opaque:
        return None  # a required argument left out: the call fails, nothing retries
    retries = value(retries_expr, ctx, UNKNOWN)
    if known(retries) and float(retries) <= 0:  # type: ignore[arg-type]
        return None  # one attempt
    deadline = _deadline(args.get("deadline"), ctx)
    if retries is None:
        bound = UNBOUNDED if deadline is None else Bound(deadline=deadline, text=f"deadline={_seconds(deadline)}")
    else:
        attempts = float(retries) + 1 if known(retries) else UNKNOWN  # type: ignore[arg-type]
        bound = Bound(attempts=attempts, deadline=deadline)
    delay = _exponential(args, ctx, call) if exponential else _constant(args, ctx, call)
    errors = []
    retried = args.get("retryable_exceptions", 0)
    names = names_of(retried, ctx) if retried is not None else None
    if names:
        errors.append(clause(names, ctx.location(retried), f"retryable_exceptions={ctx.code(retried)}"))
    if bound.unbounded and _reconnects(names, delay):
        # coredis's PubSub/cache ``ExponentialBackoffRetryPolicy((ConnectionError,), retries=None,
        # max_delay=16, jitter=True)``: it keeps a long-lived connection up, paced and dispersed,
        # the way a supervisor restarts its child; not a retry of a failed request.
        return None
    return build("coredis", call, ctx, bound, delay, errors, description=f"coredis `{name}(...)`")


def _constant(args: Args, ctx: ModuleContext, call: cst.Call) -> Delay:
    pause = value(args.get("delay"), ctx, DEFAULTS["delay"])
    if known(pause) and float(pause) == 0:  # type: ignore[arg-type]
        return Delay(DelayKind.NONE, text=ctx.code(call))
    return Delay(DelayKind.FIXED, base=pause, text=ctx.code(call))


def _exponential(args: Args, ctx: ModuleContext, call: cst.Call) -> Delay:
    base = value(args.get("base_delay"), ctx, DEFAULTS["base_delay"])
    cap = value(args.get("max_delay"), ctx, None)
    if known(cap) and math.isinf(float(cap)):  # type: ignore[arg-type]
        cap = None
    jitter_expr = resolve(args.get("jitter"), ctx) if args.get("jitter") is not None else None
    if jitter_expr is None or is_false(jitter_expr):
        jitter = Jitter(JitterKind.NONE)
    elif isinstance(jitter_expr, cst.Name) and jitter_expr.value == "True":
        # uniform(base_delay, delay): random, with a floor of base_delay rather than 0.
        jitter = Jitter(JitterKind.UNKNOWN)
    else:
        return Delay(DelayKind.UNKNOWN, text=ctx.code(call))
    # The first retry follows attempt 1: 2 ** 0 * base_delay.
    return Delay(DelayKind.EXPONENTIAL, base=base, factor=2.0, cap=cap, jitter=jitter, text=ctx.code(call))


def _reconnects(names, delay: Delay) -> bool:
    """Only connection errors, with jittered and capped backoff."""
    return (
        bool(names) and all(n.rsplit(".", 1)[-1] == "ConnectionError" for n in names)
        and delay.kind is DelayKind.EXPONENTIAL and delay.cap is not None
        and delay.jitter.kind is not JitterKind.NONE
    )


def _deadline(expr: Optional[cst.BaseExpression], ctx: ModuleContext):
    """Seconds, None for ``math.inf`` or absent, UNKNOWN when unreadable."""
    if expr is None:
        return None
    resolved = resolve(expr, ctx)
    if isinstance(resolved, cst.Attribute) and ctx.code(resolved) in ("math.inf", "float('inf')"):
        return None
    found = value(expr, ctx, UNKNOWN)
    if known(found) and math.isinf(float(found)):  # type: ignore[arg-type]
        return None
    return found


def _seconds(deadline) -> str:
    return f"{deadline:g} s" if known(deadline) else "unknown"
