"""Task-queue retries: celery task options and ``self.retry(...)``, dramatiq ``@actor``.

celery 5: ``max_retries=3`` (None: forever), ``default_retry_delay=180``,
``retry_backoff=False`` (True or a number: exponential from that factor),
``retry_backoff_max=600``, ``retry_jitter=True`` (full jitter), ``autoretry_for=()``.
dramatiq 2: ``max_retries=20`` (None: forever), ``min_backoff=15000`` ms,
``max_backoff=7 days`` in ms, the backoff doubled and stretched by up to ×2 at random.
Only tasks that retry (``autoretry_for``, ``self.retry``) and actors with explicit
retry options are sites.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

import libcst as cst

from ...model import UNBOUNDED, UNKNOWN, Bound, Delay, DelayKind, Jitter, JitterKind, RetryPolicy, known
from ...narrowing import Trigger
from ...syntax import DEFERRED, dotted_name, walk
from ..context import ModuleContext
from ..delays import CounterInfo, DelayEnv, classify
from ..errors import describe_handler, retried_error
from ..polls import asks_for_a_state
from .common import Args, build, clause, decorated, last, names_of, predicate, resolve, scaled, text_trigger, value

CELERY_TASKS = frozenset({"celery.shared_task", "celery.task", "celery.app.shared_task"})
_RETRY_OPTIONS = frozenset({"autoretry_for", "max_retries", "retry_backoff", "retry_backoff_max", "retry_jitter",
                            "default_retry_delay", "retry_kwargs"})
DRAMATIQ_ACTORS = frozenset({"dramatiq.actor", "dramatiq.actor.actor"})
_DRAMATIQ_OPTIONS = frozenset({"max_retries", "min_backoff", "max_backoff", "retry_when", "throws"})

#: celery Task and dramatiq Retries defaults, as assumed here (tests compare them with the packages).
DEFAULTS = {
    "celery.max_retries": 3.0,
    "celery.default_retry_delay": 180.0,
    "celery.retry_backoff_max": 600.0,
    "celery.retry_jitter": True,
    "dramatiq.max_retries": 20.0,
    "dramatiq.min_backoff_ms": 15000.0,
    "dramatiq.max_backoff_ms": 604_800_000.0,
}

TRIGGER = Trigger(
    text=text_trigger("celery", "shared_task", ".task(", "dramatiq", "self.retry("),
    calls=frozenset({"task", "shared_task", "actor", "retry"}),
)


def extract(ctx: ModuleContext) -> List[RetryPolicy]:
    policies: List[RetryPolicy] = []
    for decorator in _task_decorators(ctx):
        policies.extend(_celery_task(decorator, ctx))
    for call in _dramatiq_actors(ctx):
        policies.append(_dramatiq(call, ctx))
    return policies


# ---------------------------------------------------------------- celery


def _task_decorators(ctx: ModuleContext) -> List[cst.Call]:
    """``@app.task(...)``, ``@shared_task(...)``, ``@celery_app.task(bind=True, ...)``."""
    found = []
    for node in walk(ctx.module, skip=()):
        if not isinstance(node, cst.Decorator) or not isinstance(node.decorator, cst.Call):
            continue
        call = node.decorator
        names = ctx.call_name(call)
        if names & CELERY_TASKS or (
            last(call.func) == "task" and (_is_celery_app(call.func, ctx) or set(Args.of(call).keywords) & _RETRY_OPTIONS)
        ):
            found.append(call)
    return found


#: ``celery``, ``celery_app``, ``myproject.celery.app``: where projects keep their Celery app.
_CELERY_MODULE = re.compile(r"(^|\.)celery\w*(\.|$)")


def _is_celery_app(func: cst.BaseExpression, ctx: ModuleContext) -> bool:
    """``app.task`` where ``app`` is a Celery app: built here, or imported from a celery module.

    An app imported from elsewhere (``from myproject.worker import app``) is recognised by
    the celery-only retry options the task passes instead.
    """
    if not isinstance(func, cst.Attribute):
        return False
    receiver = resolve(func.value, ctx)
    if isinstance(receiver, cst.Call) and ctx.call_name(receiver) & {"celery.Celery", "celery.app.Celery"}:
        return True
    return any(_CELERY_MODULE.search(q) for q in ctx.qualified_names(func))


def _options(call: cst.Call, ctx: ModuleContext) -> Dict[str, cst.BaseExpression]:
    args = Args.of(call)
    options = dict(args.keywords)
    retry_kwargs = resolve(options.get("retry_kwargs"), ctx)
    if isinstance(retry_kwargs, cst.Dict):
        for element in retry_kwargs.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                options.setdefault(element.key.evaluated_value, element.value)  # type: ignore[arg-type]
    return options


def _celery_bound(max_retries: Optional[cst.BaseExpression], ctx: ModuleContext) -> Bound:
    if max_retries is None:
        return Bound(attempts=DEFAULTS["celery.max_retries"] + 1)
    resolved = resolve(max_retries, ctx)
    if isinstance(resolved, cst.Name) and resolved.value == "None":
        return UNBOUNDED
    count = value(max_retries, ctx, UNKNOWN)
    return Bound(attempts=float(count) + 1 if known(count) else UNKNOWN)  # type: ignore[arg-type]


def _celery_delay(options: Dict[str, cst.BaseExpression], ctx: ModuleContext, text: str) -> Delay:
    backoff = resolve(options.get("retry_backoff"), ctx)
    jitter_expr = resolve(options.get("retry_jitter"), ctx)
    jittered = not (isinstance(jitter_expr, cst.Name) and jitter_expr.value == "False")
    if backoff is None or (isinstance(backoff, cst.Name) and backoff.value == "False"):
        base = value(options.get("default_retry_delay"), ctx, DEFAULTS["celery.default_retry_delay"])
        return Delay(DelayKind.FIXED, base=base, text="default_retry_delay" if "default_retry_delay" in options else "default_retry_delay=180 (the default)")
    factor = 1.0 if isinstance(backoff, cst.Name) and backoff.value == "True" else value(backoff, ctx, UNKNOWN)
    cap = value(options.get("retry_backoff_max"), ctx, DEFAULTS["celery.retry_backoff_max"])
    return Delay(DelayKind.EXPONENTIAL, base=factor, factor=2.0, cap=cap,
                 jitter=Jitter(JitterKind.FULL) if jittered else Jitter(), text=text)


def _celery_task(call: cst.Call, ctx: ModuleContext) -> List[RetryPolicy]:
    options = _options(call, ctx)
    function = decorated(call, ctx)
    out: List[RetryPolicy] = []
    if "autoretry_for" in options:
        location = ctx.location(call)
        names = names_of(options["autoretry_for"], ctx)
        errors = [clause(names, location, f"autoretry_for={ctx.code(options['autoretry_for'])}") if names
                  else predicate(location, ctx.code(options["autoretry_for"]))]
        delay = _celery_delay(options, ctx, f"retry_backoff={ctx.code(options['retry_backoff'])}" if "retry_backoff" in options else "")
        out.append(build("celery", call, ctx, _celery_bound(options.get("max_retries"), ctx), delay, errors,
                         description="celery task with `autoretry_for`"))
    if function is not None:
        out.extend(_self_retries(function, options, ctx))
    return out


def _self_retries(function: cst.FunctionDef, options: Dict[str, cst.BaseExpression], ctx: ModuleContext) -> List[RetryPolicy]:
    """``raise self.retry(exc=exc, countdown=...)`` inside a bound task."""
    params = function.params.params
    receiver = params[0].name.value if params else None
    calls = [
        node for node in walk(function.body, skip=DEFERRED)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "retry" and dotted_name(node.func.value) == receiver
    ]
    if _polls(calls, function, ctx):
        return []
    out = []
    for node in calls:
        args = Args.of(node)
        max_retries = args.get("max_retries") or options.get("max_retries")
        bound = _celery_bound(max_retries, ctx)
        countdown = args.get("countdown")
        eta = args.get("eta")
        if countdown is not None:
            env = DelayEnv(ctx, counters={f"{receiver}.request.retries": CounterInfo(0.0, 1.0)},
                           loop_writes=ctx.writes_in(function.body))
            delay = classify(countdown, env)
        elif eta is not None:
            delay = Delay(DelayKind.UNKNOWN, text=ctx.code(eta))
        else:
            # Task.retry() without a countdown waits default_retry_delay; retry_backoff
            # only shapes autoretry_for.
            base = value(options.get("default_retry_delay"), ctx, DEFAULTS["celery.default_retry_delay"])
            delay = Delay(DelayKind.FIXED, base=base, text="default_retry_delay")
        errors = []
        handler = next((a for a in ctx.ancestors(node) if isinstance(a, cst.ExceptHandler)), None)
        if handler is not None and ctx.is_inside(handler, function):
            errors.append(retried_error(describe_handler(handler, ctx), ctx, False, False))
        out.append(build("celery", node, ctx, bound, delay, errors, description="celery `self.retry(...)`"))
    return out


def _polls(calls: List[cst.Call], function: cst.FunctionDef, ctx: ModuleContext) -> bool:
    """``if not deps.ready(): raise self.retry(countdown=interval)`` (celery's ``chord_unlock``):
    the task polls a state at its own pace, and a failure that retries at the same pace adds no
    call the poll would not make (see :mod:`..polls`)."""
    paces = {ctx.code(countdown) if (countdown := Args.of(call).get("countdown")) is not None else None for call in calls}
    if len(paces) != 1 or None in paces:
        return False
    for call in calls:
        if any(isinstance(a, cst.ExceptHandler) for a in ctx.ancestors(call)):
            continue  # the failure path; the not-ready path is what makes the task a poll
        guard = next((a for a in ctx.ancestors(call) if isinstance(a, cst.If)), None)
        if guard is not None and ctx.is_inside(guard, function) and asks_for_a_state(guard.test, ctx):
            return True
    return False


# ---------------------------------------------------------------- dramatiq


def _dramatiq_actors(ctx: ModuleContext) -> List[cst.Call]:
    found = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.Decorator) and isinstance(node.decorator, cst.Call):
            call = node.decorator
            if ctx.call_name(call) & DRAMATIQ_ACTORS and set(Args.of(call).keywords) & _DRAMATIQ_OPTIONS:
                found.append(call)
    return found


def _dramatiq(call: cst.Call, ctx: ModuleContext) -> RetryPolicy:
    args = Args.of(call)
    location = ctx.location(call)
    max_retries = args.get("max_retries")
    if max_retries is not None and isinstance(resolve(max_retries, ctx), cst.Name) and resolve(max_retries, ctx).value == "None":  # type: ignore[union-attr]
        bound = UNBOUNDED
    else:
        count = value(max_retries, ctx, DEFAULTS["dramatiq.max_retries"])
        bound = Bound(attempts=float(count) + 1 if known(count) else UNKNOWN)  # type: ignore[arg-type]
    low = scaled(value(args.get("min_backoff"), ctx, DEFAULTS["dramatiq.min_backoff_ms"]), 0.001)
    cap = scaled(value(args.get("max_backoff"), ctx, DEFAULTS["dramatiq.max_backoff_ms"]), 0.001)
    # compute_backoff: min_backoff * 2 ** retries, stretched by uniform(1, 2).
    delay = Delay(DelayKind.EXPONENTIAL, base=scaled(low, 1.5), factor=2.0, cap=cap,
                  jitter=Jitter(JitterKind.PROPORTIONAL, 1 / 3), text=ctx.code(call.func))
    errors = []
    if args.given("retry_when"):
        errors.append(predicate(location, ctx.code(args.get("retry_when"))))  # type: ignore[arg-type]
    else:
        errors.append(clause(("Exception",), location, "every exception (dramatiq retries all by default)",
                             permanent_exit=args.given("throws")))
    return build("dramatiq", call, ctx, bound, delay, errors, description="dramatiq `@actor(...)`")
