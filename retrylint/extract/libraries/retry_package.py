"""The ``retry`` package: ``@retry(...)`` and ``retry_call(f, ...)``.

Defaults (retry 0.9): ``exceptions=Exception``, ``tries=-1`` (forever), ``delay=0``,
``max_delay=None``, ``backoff=1``, ``jitter=0``. A number ``jitter`` is added to the
delay after each try (deterministic growth, not randomness); a ``(low, high)``
tuple adds a random amount.
"""

from __future__ import annotations

from typing import List

import libcst as cst

from ...model import UNBOUNDED, UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetryPolicy, known
from ...narrowing import Trigger
from ..context import ModuleContext
from .common import Args, bare_decorators, build, calls_named, clause, last, names_of, predicate, resolve, text_trigger, value

DECORATORS = frozenset({"retry.retry", "retry.api.retry"})
CALLS = frozenset({"retry.retry_call", "retry.api.retry_call"})

#: The retry package's defaults, as assumed here (tests compare them with the installed package).
DEFAULTS = {"tries": -1.0, "delay": 0.0, "backoff": 1.0, "jitter": 0.0}

_WORDS = frozenset({"retry", "retry_call"})

TRIGGER = Trigger(text=text_trigger("from retry", "import retry"), calls=_WORDS, decorators=_WORDS)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    policies = [_policy(call, Args.of(call), ctx, offset=0) for call in calls_named(ctx, DECORATORS)]
    policies += [_policy(call, Args.of(call), ctx, offset=3) for call in calls_named(ctx, CALLS)]
    for name in bare_decorators(ctx, DECORATORS):
        policies.append(_defaults(name, ctx))
    return policies


def _defaults(node, ctx: ModuleContext) -> RetryPolicy:
    from ...model import NO_DELAY

    return build("retry", node, ctx, UNBOUNDED, NO_DELAY,
                 [clause(("Exception",), ctx.location(node), "exceptions=Exception (the default)")],
                 description="retry `@retry`")


def _policy(call: cst.Call, args: Args, ctx: ModuleContext, offset: int) -> RetryPolicy:
    """``offset``: retry_call(f, fargs, fkwargs, exceptions, tries, ...) shifts the positions."""
    location = ctx.location(call)
    tries = value(args.get("tries", offset + 1), ctx, DEFAULTS["tries"])
    if known(tries) and float(tries) < 0:  # type: ignore[arg-type]
        bound = UNBOUNDED
    else:
        bound = Bound(attempts=tries if tries is not None else UNKNOWN)
    delay_value = value(args.get("delay", offset + 2), ctx, DEFAULTS["delay"])
    cap = value(args.get("max_delay", offset + 3), ctx, None)
    factor = value(args.get("backoff", offset + 4), ctx, DEFAULTS["backoff"])
    jitter_expr = resolve(args.get("jitter", offset + 5), ctx)
    text = ctx.code(call.func)
    jitter = Jitter()
    step: object = None
    if isinstance(jitter_expr, cst.Tuple) and len(jitter_expr.elements) == 2:
        low = value(jitter_expr.elements[0].value, ctx, UNKNOWN)
        high = value(jitter_expr.elements[1].value, ctx, UNKNOWN)
        amount = float(high) - float(low) if known(low) and known(high) else UNKNOWN  # type: ignore[arg-type]
        jitter = Jitter(JitterKind.ADDITIVE, amount)
    elif jitter_expr is not None:
        step = value(jitter_expr, ctx, UNKNOWN)
    if known(delay_value) and float(delay_value) == 0 and not (known(step) and float(step) > 0) and not jitter.present:  # type: ignore[arg-type]
        delay = Delay(DelayKind.NONE, text=text)
    elif known(factor) and float(factor) > 1:  # type: ignore[arg-type]
        delay = Delay(DelayKind.EXPONENTIAL, base=delay_value, factor=factor, cap=cap, jitter=jitter, text=text)
    elif known(factor) and float(factor) == 1:  # type: ignore[arg-type]
        if known(step) and float(step) > 0:  # type: ignore[arg-type]
            delay = Delay(DelayKind.LINEAR, base=delay_value, step=step, cap=cap, jitter=jitter, text=text)  # type: ignore[arg-type]
        else:
            delay = Delay(DelayKind.FIXED, base=delay_value, cap=cap, jitter=jitter, text=text)
    else:
        delay = Delay(DelayKind.UNKNOWN, text=text)
    exceptions = args.get("exceptions", offset + 0)
    if exceptions is None:
        errors = [clause(("Exception",), location, "exceptions=Exception (the default)")]
    else:
        names = names_of(exceptions, ctx)
        errors = [clause(names, location, f"exceptions={ctx.code(exceptions)}") if names else predicate(location, ctx.code(exceptions))]
    return build("retry", call, ctx, bound, delay, errors, description=f"retry `{last(call.func)}(...)`")
