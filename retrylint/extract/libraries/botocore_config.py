"""botocore ``Config(retries={"max_attempts"/"total_max_attempts": n, "mode": ...})``.

How many attempts botocore makes (checked against botocore 1.44.8: ``args.py``
``_compute_retry_max_attempts``, ``client.py`` ``_register_retries``, ``retries/standard.py``,
``translate.py``), in **every** mode:

- ``max_attempts: n`` counts *retries*: botocore turns it into ``total_max_attempts = n + 1``
  (legacy mode takes ``n`` back and ``translate.py`` adds the first request again), so
  ``{"max_attempts": 5, "mode": "standard"}`` makes 6 attempts, not 5;
- ``total_max_attempts: n`` counts every attempt, and wins when both keys are given;
- neither: standard/adaptive make 3 attempts (``DEFAULT_MAX_ATTEMPTS``; DynamoDB 4), legacy 5
  (``_retry.json``; DynamoDB 10). With no ``mode`` the mode comes from ``AWS_RETRY_MODE`` or the
  config file, else botocore's default: ``legacy`` in older releases, ``standard`` in recent ones
  (1.44.8), so a bare ``{}`` makes 3 attempts there; retrylint counts 3, the lower of the two.

Delays: legacy waits ``random() * 2 ** (attempt - 1)`` seconds with no cap. standard/adaptive wait
``random() * min(scale * 2 ** (attempt - 1), 20)``: full jitter under a 20 s cap, where ``scale``
is 1 s for throttling errors (and for every error in older releases) and 50 ms for other errors
in recent ones; the model keeps 1 s, the longest. With no ``mode`` the delay is modelled as
legacy (the default of the releases most code was written against).
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
        # ``max_attempts`` counts retries in every mode (args.py: total_max_attempts = n + 1).
        count = value(entries["max_attempts"], ctx, UNKNOWN)
        attempts = float(count) + 1 if known(count) else UNKNOWN  # type: ignore[arg-type]
    elif "mode" not in entries:
        attempts = 3.0  # the mode is botocore's default: standard (3) in recent releases, legacy (5) before
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
