"""google-api-core ``retry.Retry(...)`` / ``AsyncRetry(...)``.

Defaults (api-core 2.x): ``predicate=if_transient_error``, ``initial=1``, ``maximum=60``,
``multiplier=2``, ``timeout=120`` (``deadline=`` is the old name); the sleep is
``uniform(0, delay)`` (full jitter). ``timeout=None`` retries forever.
"""

from __future__ import annotations

from typing import List

import libcst as cst

from ...model import UNBOUNDED, UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetriedStatuses, RetryPolicy
from ...narrowing import Trigger
from ..context import ModuleContext
from .built import policies_of
from .common import Args, build, calls_named, clause, is_none, last, names_of, predicate, resolve, text_trigger, value

RETRY = frozenset(
    {
        "google.api_core.retry.Retry",
        "google.api_core.retry.AsyncRetry",
        "google.api_core.retry.retry_unary.Retry",
        "google.api_core.retry.retry_unary_async.AsyncRetry",
        "google.api_core.retry_async.AsyncRetry",
    }
)

#: google.api_core.retry.Retry defaults, as assumed here (tests compare them with api-core).
DEFAULTS = {"initial": 1.0, "maximum": 60.0, "multiplier": 2.0, "timeout": 120.0}
#: google.api_core.exceptions classes and the HTTP status they stand for.
HTTP_STATUS = {
    "BadRequest": 400, "InvalidArgument": 400, "FailedPrecondition": 400, "OutOfRange": 400,
    "Unauthorized": 401, "Unauthenticated": 401, "Forbidden": 403, "PermissionDenied": 403,
    "NotFound": 404, "MethodNotAllowed": 405, "Conflict": 409, "AlreadyExists": 409,
    "LengthRequired": 411, "PreconditionFailed": 412, "RequestRangeNotSatisfiable": 416,
    "TooManyRequests": 429, "ResourceExhausted": 429, "InternalServerError": 500, "Unknown": 500,
    "DataLoss": 500, "MethodNotImplemented": 501, "BadGateway": 502, "ServiceUnavailable": 503,
    "GatewayTimeout": 504, "DeadlineExceeded": 504,
}

TRIGGER = Trigger(text=text_trigger("api_core"), calls=frozenset({"Retry", "AsyncRetry"}))


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    return policies_of(calls_named(ctx, RETRY), ctx, _policy)


def _policy(call: cst.Call, args: Args, ctx: ModuleContext) -> RetryPolicy:
    timeout_expr = args.get("timeout", 4) or args.get("deadline")  # (predicate, initial, maximum, multiplier, timeout, on_error)
    if timeout_expr is not None and is_none(resolve(timeout_expr, ctx)):
        bound = UNBOUNDED
    else:
        bound = Bound(deadline=value(timeout_expr, ctx, DEFAULTS["timeout"]) if timeout_expr is not None else DEFAULTS["timeout"])
        if bound.deadline is None:
            bound = Bound(deadline=UNKNOWN)
    delay = Delay(
        DelayKind.EXPONENTIAL,
        base=value(args.get("initial", 1), ctx, DEFAULTS["initial"]),
        factor=value(args.get("multiplier", 3), ctx, DEFAULTS["multiplier"]),
        cap=value(args.get("maximum", 2), ctx, DEFAULTS["maximum"]),
        jitter=Jitter(JitterKind.FULL),
        text=ctx.code(call.func),
    )
    errors = []
    statuses = None
    predicate_expr = args.get("predicate", 0)
    if predicate_expr is not None:
        resolved = resolve(predicate_expr, ctx)
        names = None
        if isinstance(resolved, cst.Call) and any(q.endswith("if_exception_type") for q in ctx.call_name(resolved)):
            names = names_of(cst.Tuple([cst.Element(a.value) for a in resolved.args if not a.keyword]), ctx)
        if names:
            errors.append(clause(names, ctx.location(predicate_expr), f"predicate={ctx.code(predicate_expr)}"))
            codes = sorted({HTTP_STATUS[n.rsplit(".", 1)[-1]] for n in names
                            if n.startswith("google.api_core.exceptions.") and n.rsplit(".", 1)[-1] in HTTP_STATUS})
            if codes:
                statuses = RetriedStatuses(tuple(codes), ctx.location(predicate_expr), ctx.code(predicate_expr))
        elif not any(q.endswith("if_transient_error") for q in ctx.qualified_names(resolved or predicate_expr)):
            errors.append(predicate(ctx.location(predicate_expr), ctx.code(predicate_expr)))
    return build("google-api-core", call, ctx, bound, delay, errors,
                 description=f"google-api-core `{last(call.func)}(...)`", statuses=statuses)
