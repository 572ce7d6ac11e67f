"""botocore ``Config(retries={"max_attempts"/"total_max_attempts": n, "mode": ...})``.

legacy mode (botocore's built-in default): ``random() * 2 ** (attempt - 1)`` seconds with
no cap; ``max_attempts`` counts retries. standard/adaptive: full jitter capped at 20 s,
``max_attempts`` counts every attempt.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from ...model import UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetryPolicy, known
from ...narrowing import Trigger
from ..context import ModuleContext
from .common import Args, build, calls_named, last, resolve, text_trigger, value

CONFIG = frozenset({"botocore.config.Config", "botocore.client.Config"})

TRIGGER = Trigger(text=text_trigger("botocore", "retries"), calls=frozenset({"Config"}))


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    return [p for p in (_policy(call, ctx) for call in calls_named(ctx, CONFIG)) if p is not None]


def _entries(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Optional[Dict[str, cst.BaseExpression]]:
    resolved = resolve(expr, ctx)
    if isinstance(resolved, cst.Dict):
        out = {}
        for element in resolved.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            out[str(element.key.evaluated_value)] = element.value
        return out
    if isinstance(resolved, cst.Call) and last(resolved.func) == "dict":
        return dict(Args.of(resolved).keywords)
    return None


def _policy(call: cst.Call, ctx: ModuleContext) -> Optional[RetryPolicy]:
    args = Args.of(call)
    retries = args.get("retries")
    if retries is None:
        return None
    entries = _entries(retries, ctx)
    if entries is None:
        return None
    mode_expr = resolve(entries.get("mode"), ctx)
    mode = mode_expr.evaluated_value if isinstance(mode_expr, cst.SimpleString) else ("legacy" if mode_expr is None else None)
    if "total_max_attempts" in entries:
        attempts = value(entries["total_max_attempts"], ctx, UNKNOWN)
    elif "max_attempts" in entries:
        count = value(entries["max_attempts"], ctx, UNKNOWN)
        if mode == "legacy":
            attempts = float(count) + 1 if known(count) else UNKNOWN  # type: ignore[arg-type]
        else:
            attempts = count
    else:
        attempts = 5.0 if mode == "legacy" else 3.0 if mode in ("standard", "adaptive") else UNKNOWN
    bound = Bound(attempts=attempts if attempts is not None else UNKNOWN)
    if mode == "legacy":
        delay = Delay(DelayKind.EXPONENTIAL, base=1.0, factor=2.0, cap=None, jitter=Jitter(JitterKind.FULL),
                      text='mode="legacy"')
    elif mode in ("standard", "adaptive"):
        delay = Delay(DelayKind.EXPONENTIAL, base=1.0, factor=2.0, cap=20.0, jitter=Jitter(JitterKind.FULL),
                      text=f'mode="{mode}"')
    else:
        delay = Delay(DelayKind.UNKNOWN)
    return build("botocore", call, ctx, bound, delay, (), description=f"botocore `Config(retries=...)` ({mode or 'unknown'} mode)")
