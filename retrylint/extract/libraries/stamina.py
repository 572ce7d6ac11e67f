"""stamina: ``@stamina.retry(on=...)``, ``stamina.retry_context(on=...)``, ``RetryingCaller``.

Defaults (stamina 26): ``attempts=10``, ``timeout=45``, ``wait_initial=0.1``,
``wait_max=5``, ``wait_jitter=1`` (added), ``wait_exp_base=2``; ``on=`` is mandatory.
"""

from __future__ import annotations

from typing import List

import libcst as cst

from ...model import Bound, Delay, DelayKind, Jitter, JitterKind, Num, RetriedError, RetryPolicy, UNKNOWN, known
from ...narrowing import Trigger
from ..context import ModuleContext
from .built import policies_of
from .common import Args, build, calls_named, clause, last, names_of, predicate, text_trigger, value

POLICIES = frozenset({"stamina.retry", "stamina.retry_context", "stamina.RetryingCaller", "stamina.AsyncRetryingCaller",
                      "stamina._core.retry", "stamina._core.retry_context"})
_WORDS = frozenset({"retry", "retry_context", "RetryingCaller", "AsyncRetryingCaller"})

#: stamina.retry's defaults, as assumed here (tests compare them with the installed stamina).
DEFAULTS = {"attempts": 10.0, "timeout": 45.0, "wait_initial": 0.1, "wait_max": 5.0, "wait_jitter": 1.0, "wait_exp_base": 2.0}

TRIGGER = Trigger(text=text_trigger("stamina"), calls=_WORDS)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    # ``@stamina.retry(**GUNDI_API_RETRY)``: the mapping's keys are written in where it can be read.
    return policies_of(calls_named(ctx, POLICIES), ctx, _policy)


def _policy(call: cst.Call, args: Args, ctx: ModuleContext) -> RetryPolicy:
    location = ctx.location(call)
    caller = last(call.func).endswith("RetryingCaller")

    def setting(name: str) -> Num:
        # A ``**mapping`` that cannot be read may set any argument: its defaults are not known.
        return value(args.get(name), ctx, UNKNOWN if args.opaque else DEFAULTS[name])

    attempts = setting("attempts")
    deadline = setting("timeout")
    bound = Bound(attempts=attempts, deadline=deadline)
    if bound.unbounded and args.opaque:
        bound = Bound(attempts=UNKNOWN)
    base = setting("wait_initial")
    cap = setting("wait_max")
    factor = setting("wait_exp_base")
    amount = setting("wait_jitter")
    jitter = Jitter(JitterKind.ADDITIVE, amount) if not (known(amount) and float(amount) == 0) else Jitter()  # type: ignore[arg-type]
    # _compute_backoff: min(wait_max, wait_initial * wait_exp_base ** (n - 1) + uniform(0, wait_jitter))
    delay = Delay(DelayKind.EXPONENTIAL, base=base, factor=factor, cap=cap, jitter=jitter, text=ctx.code(call.func),
                  jitter_then_cap=True)
    errors: List[RetriedError] = []
    on = args.get("on", 0) if not caller else None
    if on is not None:
        names = names_of(on, ctx)
        errors.append(clause(names, location, f"on={ctx.code(on)}") if names else predicate(location, ctx.code(on)))
    return build("stamina", call, ctx, bound, delay, errors, description=f"stamina `{last(call.func)}(...)`")
