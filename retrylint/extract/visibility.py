"""RTY502: a consumer that can hold a message longer than the queue hides it.

A queue hides a received message for a window (SQS visibility timeout, celery's
``visibility_timeout`` transport option for SQS and redis, a Pub/Sub ack deadline, a Service
Bus lock); when the window ends before the consumer acks, the message is delivered again, to
another consumer, while the first is still working on it. Both numbers must be in the module,
or nothing is judged:

* **celery** (``broker_transport_options={"visibility_timeout": N}`` in ``app.conf``,
  ``conf.update(...)``, ``Celery(...)``, a config module or class, also the old upper-case and
  Django ``CELERY_`` names). A task holds its message for its retry countdown (a retried task
  waits its ``countdown``/``default_retry_delay``/backoff as an unacknowledged ETA message,
  whatever ``acks_late`` says) and, with ``acks_late`` (``task_acks_late`` or the task's own
  option), for its run time, bounded by ``time_limit`` (``task_time_limit``), or at least
  ``soft_time_limit`` when that is the only limit. Without ``acks_late`` the message is acked
  before the task runs, so a long task is not redelivered. ``apply_async(countdown=N)`` holds
  its ETA message for ``N`` s as well. With no ``visibility_timeout`` and the module's one broker
  URL a literal ``redis://`` URL, kombu's redis default (1 h) is the window.
* **SQS** (``receive_message(VisibilityTimeout=N)``; or one ``VisibilityTimeout`` given to
  ``create_queue``/``set_queue_attributes`` in the module), **Pub/Sub** synchronous ``pull``
  (one ``ack_deadline_seconds`` given to ``create_subscription`` in the module) and **Service
  Bus** receivers (one ``lock_duration`` given to ``create_queue``/``create_subscription``):
  the consumer holds the message for the worst-case total wait of the retries that run after
  the receive in the same function (a hand-written retry there, a call to a function of the
  module that a retry library decorates, or to a helper of the module that holds a hand-written
  retry), as :func:`retrylint.schedule.schedule` computes it (plus the sleep a ``for … in
  range(n)`` loop also takes after its last failure, :func:`_trailing_sleep`),
  or for a handler timeout around it when that is shorter (``asyncio.wait_for(…, timeout=N)``,
  ``asyncio.timeout(N)``, ``anyio.fail_after(N)``, ``eventlet.Timeout(N)``).

A handler timeout after the receive around the message's work that is longer than the window
is reported by itself, as is an HTTP call on the message whose ``timeout=`` is (:func:`_handler_timeouts`). Work after a delete or ack of the message
(``delete_message``, ``message.delete()``, ``acknowledge``, ``complete_message``) that runs on
every path before it is not judged: the message can no longer be delivered again.

A heartbeat that extends the window anywhere in the module (``change_message_visibility``,
``change_message_visibility_batch``, ``modify_ack_deadline``, ``renew_message_lock``,
``AutoLockRenewer``, a receiver with ``auto_lock_renewer=``/``max_lock_renewal_duration``)
keeps the rule silent, and so does Pub/Sub's streaming pull (``subscribe``), which extends
leases by itself. A Service Bus renewer with a known ``max_lock_renewal_duration`` (the same in
the whole module, nothing renewing by hand) is no open-ended heartbeat: the lock lasts that long
plus one ``lock_duration``, and that is the window.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..model import UNKNOWN, Num, RetryPolicy, VisibilityWindow, known
from ..schedule import delay_range, format_seconds, largest_reachable_delay, schedule
from ..syntax import DEFERRED, call_args, dotted_name, last_name, walk
from .brokers import RECEIVE, STREAM, Brokers
from .context import ModuleContext
from .libraries.common import decorated, resolve, value
from .queue_names import QueueNames

#: Calls that extend the window of a message being worked on.
HEARTBEATS = frozenset({"change_message_visibility", "change_message_visibility_batch", "change_visibility",
                        "modify_ack_deadline", "renew_message_lock", "AutoLockRenewer", "renew_lock"})
#: Calls that receive the messages a consumer works on.
RECEIVES = ("receive_message", "receive_messages", "pull", "get_queue_receiver", "get_subscription_receiver")
_RENEWER_KEYWORDS = frozenset({"auto_lock_renewer", "max_lock_renewal_duration"})

#: celery setting names (lower case, Django's ``CELERY_`` prefix dropped) → what they set.
CELERY_SETTINGS = {
    "broker_transport_options": "transport",
    "task_time_limit": "time_limit",
    "celeryd_task_time_limit": "time_limit",
    "task_soft_time_limit": "soft_time_limit",
    "celeryd_task_soft_time_limit": "soft_time_limit",
    "task_acks_late": "acks_late",
    "acks_late": "acks_late",  # CELERY_ACKS_LATE, once the prefix is dropped
    "broker_url": "broker",
}
#: kombu's redis transport hides an unacknowledged message for an hour when no
#: ``visibility_timeout`` is given (``kombu.transport.redis.Channel.visibility_timeout``).
REDIS_VISIBILITY_DEFAULT = 3600.0
_REDIS_SCHEMES = ("redis://", "rediss://", "redis+socket://", "sentinel://")


def _setting(name: str) -> Optional[str]:
    lowered = name.lower()
    if lowered in CELERY_SETTINGS:
        return CELERY_SETTINGS[lowered]
    if lowered.startswith("celery_"):
        return CELERY_SETTINGS.get(lowered[len("celery_"):])
    return None


def _number(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Num:
    """Seconds from a number, a duration, a name bound once, or a numeric string (``"60"``)."""
    if expr is None:
        return None
    resolved = resolve(expr, ctx)
    if isinstance(resolved, cst.SimpleString):
        text = resolved.evaluated_value
        try:
            return float(text)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return UNKNOWN
    if isinstance(resolved, cst.Call) and last_name(resolved.func) in ("str", "int", "float"):
        positional, _ = call_args(resolved)
        return _number(positional[0], ctx) if positional else UNKNOWN
    return value(expr, ctx, None)


def _truth(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Optional[bool]:
    resolved = resolve(expr, ctx) if expr is not None else None
    if isinstance(resolved, cst.Name) and resolved.value in ("True", "False"):
        return resolved.value == "True"
    return None


def _dict_items(expr: Optional[cst.BaseExpression], ctx: ModuleContext) -> Optional[Dict[str, cst.BaseExpression]]:
    resolved = resolve(expr, ctx) if expr is not None else None
    if isinstance(resolved, cst.Dict):
        out = {}
        for element in resolved.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                key = element.key.evaluated_value
                if isinstance(key, str):
                    out[key] = element.value
        return out
    if isinstance(resolved, cst.Call) and dotted_name(resolved.func) == "dict":
        return dict(call_args(resolved)[1])
    return None


class _Settings:
    """celery settings written in the module: each known value, and where it is set."""

    def __init__(self) -> None:
        self.values: Dict[str, List[Tuple[cst.BaseExpression, cst.CSTNode]]] = {}

    def add(self, name: str, expr: cst.BaseExpression, node: cst.CSTNode) -> None:
        kind = _setting(name)
        if kind is not None:
            self.values.setdefault(kind, []).append((expr, node))

    def one(self, kind: str) -> Optional[Tuple[cst.BaseExpression, cst.CSTNode]]:
        found = self.values.get(kind, [])
        return found[0] if len(found) == 1 else None


def _celery_settings(ctx: ModuleContext) -> _Settings:
    settings = _Settings()
    for node in walk(ctx.module, skip=()):
        if isinstance(node, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if node.value is None:
                continue
            for target in targets:
                if isinstance(target, cst.Name):
                    settings.add(target.value, node.value, node)  # a config module or class
                elif isinstance(target, cst.Attribute) and (dotted_name(target.value) or "").endswith("conf"):
                    settings.add(target.attr.value, node.value, node)  # app.conf.task_acks_late = True
                elif isinstance(target, cst.Subscript) and (dotted_name(target.value) or "").endswith("conf"):
                    element = target.slice[0].slice if target.slice else None
                    if isinstance(element, cst.Index) and isinstance(element.value, cst.SimpleString):
                        key = element.value.evaluated_value
                        if isinstance(key, str):
                            settings.add(key, node.value, node)
        elif isinstance(node, cst.Call):
            func = node.func
            name = last_name(func)
            is_conf_update = name == "update" and isinstance(func, cst.Attribute) and (dotted_name(func.value) or "").endswith("conf")
            is_app = name == "Celery" or bool(ctx.call_name(node) & {"celery.Celery", "celery.app.Celery"})
            if not (is_conf_update or is_app):
                continue
            positional, keywords = call_args(node)
            for key, expr in keywords.items():
                settings.add("broker_url" if is_app and key == "broker" else key, expr, node)
            if is_conf_update and positional:
                for key, expr in (_dict_items(positional[0], ctx) or {}).items():
                    settings.add(key, expr, node)
    return settings


def _heartbeat(ctx: ModuleContext) -> bool:
    """Something extends the window for as long as the work runs. A Service Bus lock renewer
    that stops after a known ``max_lock_renewal_duration`` is not this: see :func:`_renewal_limit`."""
    limited = _renewal_limit(ctx) is not None
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.Call):
            name = last_name(node.func)
            if name in HEARTBEATS and not (limited and name == "AutoLockRenewer"):
                return True
            if not limited and any(a.keyword is not None and a.keyword.value in _RENEWER_KEYWORDS for a in node.args):
                return True
    return False


def _renewal_limit(ctx: ModuleContext) -> Optional[Tuple[float, cst.CSTNode]]:
    """The one known ``max_lock_renewal_duration`` of the module's Service Bus lock renewers,
    when every renewer has one (``AutoLockRenewer(max_lock_renewal_duration=300)``, a receiver's
    ``max_lock_renewal_duration=``) and nothing renews by hand; else None."""
    limits: List[Tuple[Num, cst.CSTNode]] = []
    for node in walk(ctx.module, skip=()):
        if not isinstance(node, cst.Call):
            continue
        name = last_name(node.func)
        _, keywords = call_args(node)
        if name in ("renew_message_lock", "renew_lock", "register"):
            return None
        if "max_lock_renewal_duration" in keywords:
            limits.append((_number(keywords["max_lock_renewal_duration"], ctx), node))
        elif name == "AutoLockRenewer":
            return None  # its default (300 s) applies per registration; keep it a heartbeat
    if not limits or not all(known(n) for n, _ in limits) or len({n for n, _ in limits}) != 1:
        return None
    return float(limits[0][0]), limits[0][1]  # type: ignore[arg-type]


# ---------------------------------------------------------------- celery


def _celery(ctx: ModuleContext, policies: Sequence[RetryPolicy], heartbeat: bool) -> List[VisibilityWindow]:
    settings = _celery_settings(ctx)
    transport = settings.one("transport")
    options = _dict_items(transport[0], ctx) if transport is not None else None
    if transport is not None and not options:
        return []  # options we cannot read may set it
    if options and "visibility_timeout" in options:
        window = _number(options["visibility_timeout"], ctx)
        if not known(window):
            return []
        window_line = ctx.location(transport[1]).line  # type: ignore[index]
        window_text = f"transport's `visibility_timeout` of {format_seconds(window)} (line {window_line})"
    else:
        broker = _redis_broker(settings, ctx)
        if broker is None:
            return []
        window = REDIS_VISIBILITY_DEFAULT
        window_text = (f"redis transport's default `visibility_timeout` of {format_seconds(window)} (kombu's, for the "
                       f"broker of line {ctx.location(broker).line}; nothing sets another)")
    acks_late_setting = settings.one("acks_late")
    conf_acks_late = _truth(acks_late_setting[0], ctx) if acks_late_setting else False
    conf_limit = _limit(settings, ctx)
    out: List[VisibilityWindow] = []
    if conf_acks_late and conf_limit is not None:
        seconds_, text, node = conf_limit
        out.append(_window(ctx, node, "celery", window, window_text, seconds_,
                           f"with `task_acks_late` every task may run for {text} before its message is acked", heartbeat))
    # Tasks: their own limits, and their retries' countdowns.
    by_task: Dict[int, List[RetryPolicy]] = {}
    for policy in policies:
        if policy.source == "celery" and isinstance(policy.anchor, cst.Call):
            task = decorated(policy.anchor, ctx) or ctx.enclosing_function(policy.anchor)
            if task is not None:
                by_task.setdefault(id(task), []).append(policy)
    # apply_async(countdown=N) / retry(countdown=N) outside a policy: the worker holds the ETA message N s.
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.Call) and last_name(node.func) == "apply_async":
            countdown = _number(call_args(node)[1].get("countdown"), ctx)
            if known(countdown) and float(countdown) > 0:  # type: ignore[arg-type]
                out.append(_window(ctx, node, "celery", window, window_text, float(countdown),  # type: ignore[arg-type]
                                   f"`{ctx.code(node.func)}(countdown=…)` waits {format_seconds(countdown)} "
                                   "as an unacknowledged ETA message", heartbeat))
    for decorator_call, task in _task_decorators(ctx):
        _, keywords = call_args(decorator_call)
        acks_late = _truth(keywords.get("acks_late"), ctx) if "acks_late" in keywords else conf_acks_late
        holds: List[Tuple[float, str]] = []
        own_limit = _task_limit(keywords, ctx)
        if acks_late and own_limit is not None:
            holds.append((own_limit[0], f"with `acks_late` it may run for {own_limit[1]} before its message is acked"))
        for policy in by_task.get(id(task), []):
            largest = largest_reachable_delay(policy)
            if known(largest) and float(largest) > 0:  # type: ignore[arg-type]
                amount = ("a countdown that grows without bound" if float(largest) == float("inf")  # type: ignore[arg-type]
                          else f"up to {format_seconds(largest)}")
                holds.append((float(largest), f"its {policy.description} (line {policy.location.line}) waits "  # type: ignore[arg-type]
                                              f"{amount} as an unacknowledged ETA message"))
        if not holds:
            continue
        longest = max(holds, key=lambda h: h[0])
        out.append(_window(ctx, decorator_call, "celery", window, window_text, longest[0],
                           f"task `{task.name.value}`: {longest[1]}", heartbeat))
    return out


def _redis_broker(settings: _Settings, ctx: ModuleContext) -> Optional[cst.CSTNode]:
    """Where the module's one broker URL is a literal ``redis://`` (or ``rediss://``…) URL."""
    found = settings.one("broker")
    if found is None:
        return None
    resolved = resolve(found[0], ctx)
    text = resolved.evaluated_value if isinstance(resolved, cst.SimpleString) else None
    if isinstance(text, str) and text.startswith(_REDIS_SCHEMES):
        return found[1]
    return None


def _limit(settings: _Settings, ctx: ModuleContext) -> Optional[Tuple[float, str, cst.CSTNode]]:
    hard = settings.one("time_limit")
    if hard is not None:
        number_ = _number(hard[0], ctx)
        if known(number_):
            return float(number_), f"up to `task_time_limit` = {format_seconds(number_)}", hard[1]  # type: ignore[arg-type]
        return None
    soft = settings.one("soft_time_limit")
    if soft is not None:
        number_ = _number(soft[0], ctx)
        if known(number_):
            return float(number_), f"at least `task_soft_time_limit` = {format_seconds(number_)} (no hard limit)", soft[1]  # type: ignore[arg-type]
    return None


def _task_limit(keywords: Dict[str, cst.BaseExpression], ctx: ModuleContext) -> Optional[Tuple[float, str]]:
    if "time_limit" in keywords:
        number_ = _number(keywords["time_limit"], ctx)
        return (float(number_), f"up to `time_limit` = {format_seconds(number_)}") if known(number_) else None  # type: ignore[arg-type]
    if "soft_time_limit" in keywords:
        number_ = _number(keywords["soft_time_limit"], ctx)
        if known(number_):
            return float(number_), f"at least `soft_time_limit` = {format_seconds(number_)} (no hard limit)"  # type: ignore[arg-type]
    return None


def _task_decorators(ctx: ModuleContext) -> List[Tuple[cst.Call, cst.FunctionDef]]:
    """``@app.task(...)``/``@shared_task(...)`` calls and the functions they make tasks."""
    out = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                expr = decorator.decorator
                if not isinstance(expr, cst.Call):
                    continue
                names = ctx.qualified_names(expr.func)
                if names & {"celery.shared_task", "celery.task", "celery.app.shared_task"} or (
                    last_name(expr.func) == "task" and isinstance(expr.func, cst.Attribute)
                ):
                    out.append((expr, node))
    return out


# ---------------------------------------------------------------- SQS, Pub/Sub, Service Bus


def _queue_window(ctx: ModuleContext) -> Dict[str, Tuple[Num, cst.CSTNode, str]]:
    """The one window each family's queues are created with in the module (several → unknown)."""
    found: Dict[str, List[Tuple[Num, cst.CSTNode, str]]] = {}
    for node in walk(ctx.module, skip=()):
        if not isinstance(node, cst.Call):
            continue
        method = last_name(node.func)
        _, keywords = call_args(node)
        if method in ("create_queue", "set_queue_attributes") and "Attributes" in keywords:
            attributes = _dict_items(keywords["Attributes"], ctx)
            if attributes and "VisibilityTimeout" in attributes:
                found.setdefault("sqs", []).append((_number(attributes["VisibilityTimeout"], ctx), node,
                                                    "`VisibilityTimeout`"))
        elif method in ("create_subscription", "update_subscription"):
            request = _dict_items(keywords.get("request"), ctx) or {}
            deadline = keywords.get("ack_deadline_seconds") or request.get("ack_deadline_seconds")
            if deadline is not None:
                found.setdefault("pubsub", []).append((_number(deadline, ctx), node, "`ack_deadline_seconds`"))
        if method in ("create_queue", "create_subscription", "update_queue") and "lock_duration" in keywords:
            found.setdefault("servicebus", []).append((_number(keywords["lock_duration"], ctx), node, "`lock_duration`"))
    out = {}
    for family, values in found.items():
        numbers = {v[0] for v in values if known(v[0])}
        if len(numbers) == 1 and all(known(v[0]) for v in values):
            out[family] = values[0]
    return out


def _consumers(ctx: ModuleContext, policies: Sequence[RetryPolicy], heartbeat: bool) -> List[VisibilityWindow]:
    brokers = Brokers(ctx, QueueNames(ctx))
    windows = _queue_window(ctx)
    retried_functions = _retried_functions(ctx, policies)
    out: List[VisibilityWindow] = []
    for node in walk(ctx.module, skip=()):
        if not isinstance(node, cst.Call):
            continue
        method = last_name(node.func)
        if method not in RECEIVES:
            continue
        _, keywords = call_args(node)
        if method in ("get_queue_receiver", "get_subscription_receiver"):
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            traced = brokers.family_of(receiver) if receiver is not None else None
            family = "servicebus" if traced == "servicebus" or (traced is None and "servicebus" in brokers.imported) else None
        else:
            recognised = brokers.recognise(node)
            if recognised is None or recognised.role not in (RECEIVE, STREAM):
                continue
            family = recognised.broker
        if family not in ("sqs", "pubsub", "servicebus"):
            continue
        window: Num = None
        window_text = ""
        if family == "sqs" and "VisibilityTimeout" in keywords:
            window = _number(keywords["VisibilityTimeout"], ctx)
            window_text = f"visibility timeout of {format_seconds(window)} (`VisibilityTimeout={ctx.code(keywords['VisibilityTimeout'])}`)"
        elif family in windows:
            window, where, label = windows[family]
            window_text = f"queue's {label} of {format_seconds(window)} (line {ctx.location(where).line})"
        if not known(window):
            continue
        renewal = _renewal_limit(ctx) if family == "servicebus" else None
        if renewal is not None:
            # Renewed until max_lock_renewal_duration has passed, then held one more lock at most.
            window = float(window) + renewal[0]  # type: ignore[arg-type]
            window_text = (f"{window_text}, renewed for `max_lock_renewal_duration` = {format_seconds(renewal[0])} "
                           f"(line {ctx.location(renewal[1]).line}): {format_seconds(window)} in all")
        function = ctx.enclosing_function(node)
        if function is None:
            continue
        holds = _retry_wait_after(node, function, ctx, policies, retried_functions)
        if holds is None:
            continue
        out.append(_window(ctx, node, family, window, window_text, holds[0], holds[1], heartbeat))
    return out


def _helper_loops(ctx: ModuleContext, policies: Sequence[RetryPolicy]) -> Dict[str, Tuple[cst.FunctionDef, List[RetryPolicy]]]:
    """Functions of the module (one definition by that name) that hold a hand-written retry."""
    defined: Dict[str, List[cst.FunctionDef]] = {}
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.FunctionDef):
            defined.setdefault(node.name.value, []).append(node)
    out: Dict[str, Tuple[cst.FunctionDef, List[RetryPolicy]]] = {}
    for policy in policies:
        if policy.source not in ("loop", "recursion") or policy.anchor is None:
            continue
        function = ctx.enclosing_function(policy.anchor) if policy.source == "loop" else None
        if function is None and isinstance(policy.anchor, cst.FunctionDef):
            function = policy.anchor
        if function is None or len(defined.get(function.name.value, [])) != 1:
            continue
        out.setdefault(function.name.value, (function, []))[1].append(policy)
    return out


def _retried_functions(ctx: ModuleContext, policies: Sequence[RetryPolicy]) -> Dict[str, RetryPolicy]:
    """Functions of the module a retry library decorates, by name."""
    out: Dict[str, RetryPolicy] = {}
    for policy in policies:
        if policy.anchor is None or policy.source in ("loop", "recursion"):
            continue
        func = decorated(policy.anchor, ctx)
        if func is not None:
            out[func.name.value] = policy
    return out


def _retry_wait_after(receive: cst.Call, function: cst.FunctionDef, ctx: ModuleContext, policies: Sequence[RetryPolicy],
                      retried: Dict[str, RetryPolicy]) -> Optional[Tuple[float, str]]:
    """The longest worst-case total wait of the retries run after ``receive`` in ``function``."""
    start = ctx.location(receive).end_line
    where = ctx.location(function)
    messages = _message_names(receive, function, ctx)
    releases = _releases(function, start, messages, ctx)
    candidates: List[Tuple[float, str]] = []
    retrying: List[cst.CSTNode] = []  # the retried work: a handler timeout around it is judged with it
    for policy in policies:
        if policy.source not in ("loop", "recursion") or policy.extent is None:
            continue
        if start < policy.extent.line and policy.extent.end_line <= where.end_line and policy.extent.line >= where.line:
            if policy.anchor is not None:
                retrying.append(policy.anchor)
                if _released_before(policy.anchor, releases, ctx):
                    continue  # deleted/acked before the retry: it can no longer be delivered again
            candidates.append(_bounded(_total(policy, f"the {policy.description} (line {policy.location.line})",
                                              _trailing_sleep(policy, ctx)),
                                       policy.anchor, function, ctx))
    helpers = _helper_loops(ctx, policies)
    for node in walk(function.body, skip=DEFERRED):
        if not isinstance(node, cst.Call):
            continue
        name = last_name(node.func)
        if ctx.location(node).line <= start:
            continue
        receiver = dotted_name(node.func.value) if isinstance(node.func, cst.Attribute) else None
        if receiver not in (None, "self", "cls"):
            continue
        if name in retried:
            retrying.append(node)
            if _released_before(node, releases, ctx):
                continue
            policy = retried[name]
            candidates.append(_bounded(_total(policy, f"`{name}()` (line {ctx.location(node).line}), retried by its "
                                                      f"{policy.description} (line {policy.location.line}),"),
                                       node, function, ctx))
        elif name in helpers and helpers[name][0] is not function:
            # A helper of the module that retries by hand (``def handle(body): for attempt in range(6): ...``).
            retrying.append(node)
            if _released_before(node, releases, ctx):
                continue
            for policy in helpers[name][1]:
                candidates.append(_bounded(_total(policy, f"`{name}()` (line {ctx.location(node).line}) runs its "
                                                          f"{policy.description} (line {policy.location.line}), which",
                                                  _trailing_sleep(policy, ctx)),
                                           node, function, ctx))
    candidates += _handler_timeouts(function, start, messages, releases, retrying, ctx)
    candidates = [c for c in candidates if c[0] >= 0]
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[0])


#: HTTP calls whose ``timeout=`` bounds one request of the handler (requests, httpx, aiohttp).
_HTTP_CALLS = frozenset({"get", "post", "put", "patch", "delete", "request", "urlopen"})
#: Calls that remove a received message from the queue (SQS delete, Pub/Sub ack, Service Bus
#: complete, kombu ack): after one, the message can no longer be delivered again.
_RELEASES = frozenset({"delete_message", "delete_message_batch", "acknowledge", "ack", "complete_message"})
#: Nodes whose inside may not run (a release there does not cover what follows it).
_BRANCHES = (cst.If, cst.Else, cst.While, cst.ExceptHandler, cst.ExceptStarHandler, cst.IfExp, cst.Match,
             cst.BooleanOperation, cst.Lambda, cst.For, cst.SimpleStatementSuite)


def _message_names(receive: cst.Call, function: cst.FunctionDef, ctx: ModuleContext) -> Set[str]:
    """Names the function binds to what ``receive`` returned, or to what is read from it
    (``resp``, ``for m in resp.get("Messages", [])``, ``body = json.loads(m["Body"])``)."""
    names: Set[str] = set()

    def mentions(expr: Optional[cst.CSTNode]) -> bool:
        if expr is None:
            return False
        for node in walk(expr, skip=DEFERRED):
            if node is receive or isinstance(node, cst.Name) and node.value in names:
                return True
        return False

    def bound(target: cst.BaseExpression) -> Set[str]:
        out = set()
        for node in walk(target):
            if isinstance(node, cst.Name):
                out.add(node.value)
        return out

    for _ in range(4):
        before = len(names)
        for node in walk(function.body, skip=DEFERRED):
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and mentions(node.value):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, (cst.Name, cst.Tuple, cst.List)):
                        names |= bound(target)
            elif isinstance(node, cst.For) and mentions(node.iter):
                names |= bound(node.target)
            elif isinstance(node, cst.With):
                for item in node.items:
                    if item.asname is not None and mentions(item.item):
                        names |= bound(item.asname.name)
        if len(names) == before:
            break
    return names


def _releases(function: cst.FunctionDef, start: int, messages: Set[str], ctx: ModuleContext) -> List[cst.Call]:
    """The calls after the receive that delete or ack a message: ``sqs.delete_message(...)``,
    ``subscriber.acknowledge(...)``, ``receiver.complete_message(msg)``, ``message.delete()``."""
    out = []
    for node in walk(function.body, skip=DEFERRED):
        if not isinstance(node, cst.Call) or ctx.location(node).line <= start:
            continue
        name = last_name(node.func)
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if name in _RELEASES or (name in ("delete", "complete") and isinstance(receiver, cst.Name)
                                 and receiver.value in messages and not node.args):
            out.append(node)
    return out


def _released_before(work: cst.CSTNode, releases: Sequence[cst.Call], ctx: ModuleContext) -> bool:
    """A release that always runs before ``work`` (earlier, in a block that holds it, not under a branch)."""
    begins = ctx.location(work)
    for release in releases:
        ends = ctx.location(release)
        if (ends.end_line, ends.end_column) > (begins.line, begins.column):
            continue
        for ancestor in ctx.ancestors(release):
            if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                if ctx.is_inside(work, ancestor):
                    return True
                break
            if isinstance(ancestor, _BRANCHES):
                break
    return False


def _handler_timeouts(function: cst.FunctionDef, start: int, messages: Set[str], releases: Sequence[cst.Call],
                      retrying: Sequence[cst.CSTNode], ctx: ModuleContext) -> List[Tuple[float, str]]:
    """Handler timeouts after the receive around work on the message (``asyncio.wait_for(handle(m),
    timeout=120)``, ``async with asyncio.timeout(120):``): the consumer may hold the message that
    long. Timeouts around retried work are judged with the retry (:func:`_bounded`)."""
    out: List[Tuple[float, str]] = []
    for node in walk(function.body, skip=DEFERRED):
        limit: Num = None
        work: Optional[cst.CSTNode] = None
        shown = ""
        if isinstance(node, cst.Call) and last_name(node.func) == "wait_for" and ctx.location(node).line > start:
            positional, keywords = call_args(node)
            given = keywords.get("timeout") or (positional[1] if len(positional) > 1 else None)
            limit = _number(given, ctx)
            work = keywords.get("fut") or keywords.get("aw") or (positional[0] if positional else None)
            shown = f"`{ctx.code(node.func)}(..., timeout={ctx.code(given) if given is not None else '?'})`"
        elif (isinstance(node, cst.Call) and last_name(node.func) in _HTTP_CALLS and isinstance(node.func, cst.Attribute)
              and ctx.location(node).line > start and "timeout" in call_args(node)[1]):
            # requests.post(..., json=body, timeout=300): one call may wait that long for its answer
            given = call_args(node)[1]["timeout"]
            limit = _number(given, ctx)
            work = node
            shown = f"`{ctx.code(node.func)}(..., timeout={ctx.code(given)})`"
        elif isinstance(node, cst.With) and ctx.location(node).line > start:
            for item in node.items:
                call = item.item
                if isinstance(call, cst.Call) and last_name(call.func) in _TIMEOUT_CONTEXTS:
                    limit = _context_limit(call, ctx)
                    work = node.body
                    shown = f"`{ctx.code(call)}`"
                    break
        if work is None or not known(limit) or float(limit) <= 0:  # type: ignore[arg-type]
            continue
        if not any(isinstance(n, cst.Name) and n.value in messages for n in walk(work, skip=DEFERRED)):
            continue  # not the message's work (a long poll, a lock, another queue)
        if any(ctx.is_inside(r, work) or r is work for r in retrying):
            continue
        if _released_before(node, releases, ctx):
            continue
        if isinstance(node, cst.Call) and last_name(node.func) != "wait_for":
            out.append((float(limit), f"{shown} (line {ctx.location(node).line}) may wait up to "  # type: ignore[arg-type]
                                      f"{format_seconds(limit)} for its answer while the handler holds the message"))
            continue
        out.append((float(limit), f"the handler timeout {shown} (line {ctx.location(node).line}) "  # type: ignore[arg-type]
                                  f"lets the handler hold the message for up to {format_seconds(limit)}"))
    return out


def _trailing_sleep(policy: RetryPolicy, ctx: ModuleContext) -> float:
    """The sleep a ``for attempt in range(n)`` retry also takes after its last failure: the wait
    sits unconditionally in the ``except`` block, so the n-th failure sleeps too before the loop
    ends (``except ConnectionError: time.sleep(min(20, 2 ** attempt))`` waits 1 … 16 s and then 20 s
    more). 0 when that is not certain."""
    anchor = policy.anchor
    if not isinstance(anchor, cst.For) or policy.delay_location is None or not known(policy.bound.attempts):
        return 0.0
    if not (isinstance(anchor.iter, cst.Call) and dotted_name(anchor.iter.func) == "range"):
        return 0.0
    sleep = next((n for n in walk(anchor.body, skip=DEFERRED)
                  if isinstance(n, cst.Call) and ctx.location(n) == policy.delay_location), None)
    if sleep is None:
        return 0.0
    chain = list(ctx.ancestors(sleep))
    line = next((a for a in chain if isinstance(a, cst.SimpleStatementLine)), None)
    handler = next((a for a in chain if isinstance(a, (cst.ExceptHandler, cst.For))), None)
    if line is None or not isinstance(handler, cst.ExceptHandler) or not isinstance(handler.body, cst.IndentedBlock):
        return 0.0
    if not any(s is line for s in handler.body.body):
        return 0.0  # under an ``if`` in the handler: maybe not after the last failure
    attempt = next((a for a in chain if isinstance(a, cst.Try)), None)
    if attempt is None or not isinstance(anchor.body, cst.IndentedBlock) or not any(s is attempt for s in anchor.body.body):
        return 0.0
    for statement in handler.body.body:
        if statement is line:
            break
        if any(isinstance(n, (cst.Raise, cst.Return, cst.Break, cst.Continue)) for n in walk(statement, skip=DEFERRED)):
            return 0.0  # an earlier exit may skip the last sleep
    last = delay_range(policy.delay, int(policy.bound.attempts))  # type: ignore[arg-type]
    return float(last.high) if known(last.high) else 0.0  # type: ignore[arg-type]


#: Calls that bound the time of what runs inside them (the handler timeout of the doctrine).
_TIMEOUT_CONTEXTS = frozenset({"timeout", "fail_after", "move_on_after", "Timeout", "timeout_at"})


def _bounded(held: Tuple[float, str], node: Optional[cst.CSTNode], function: cst.FunctionDef,
             ctx: ModuleContext) -> Tuple[float, str]:
    """A wait cut by a handler timeout around it: ``asyncio.wait_for(handle(m), timeout=45)``,
    ``async with asyncio.timeout(45):``, ``anyio.fail_after(45)``, ``with eventlet.Timeout(45):``."""
    if node is None or held[0] < 0:
        return held
    limits: List[float] = []
    for ancestor in ctx.ancestors(node):
        if ancestor is function:
            break
        if isinstance(ancestor, cst.Call) and last_name(ancestor.func) == "wait_for":
            positional, keywords = call_args(ancestor)
            limit = _number(keywords.get("timeout") or (positional[1] if len(positional) > 1 else None), ctx)
            if known(limit):
                limits.append(float(limit))  # type: ignore[arg-type]
        elif isinstance(ancestor, cst.With):
            for item in ancestor.items:
                call = item.item
                if isinstance(call, cst.Call) and last_name(call.func) in _TIMEOUT_CONTEXTS:
                    limit = _context_limit(call, ctx)
                    if known(limit):
                        limits.append(float(limit))  # type: ignore[arg-type]
    if limits and min(limits) < held[0]:
        return min(limits), f"{held[1]}, cut by a {format_seconds(min(limits))} handler timeout,"
    return held


def _total(policy: RetryPolicy, text: str, trailing: float = 0.0) -> Tuple[float, str]:
    total = schedule(policy).total_worst
    if not known(total):
        return -1.0, ""
    if trailing > 0:
        total = float(total) + trailing  # type: ignore[arg-type]
        return total, (f"{text} can wait {format_seconds(total)} in all (with the {format_seconds(trailing)} it also "
                       f"sleeps after its last failure)")
    return float(total), f"{text} can wait {format_seconds(total)} in all"  # type: ignore[arg-type]


def _window(ctx: ModuleContext, node: cst.CSTNode, broker: str, window: Num, window_text: str, holds: float,
            holds_text: str, heartbeat: bool) -> VisibilityWindow:
    location = ctx.location(node)
    statement = ctx.statement_of(node)
    first = ctx.location(statement).line if statement is not None else location.line
    return VisibilityWindow(location=location, broker=broker, window=window, window_text=window_text, holds=holds,
                            holds_text=holds_text, heartbeat=heartbeat,
                            header_lines=tuple(range(min(first, location.line), location.end_line + 1)) or (location.line,),
                            extent=location)


def extract(ctx: ModuleContext, policies: Sequence[RetryPolicy]) -> List[VisibilityWindow]:
    heartbeat = _heartbeat(ctx)
    return _celery(ctx, policies, heartbeat) + _consumers(ctx, policies, heartbeat)


__all__ = ["extract", "HEARTBEATS", "CELERY_SETTINGS"]


def _context_limit(call: cst.Call, ctx: ModuleContext) -> Num:
    """The seconds of a timeout scope: ``asyncio.timeout(N)``, ``anyio.fail_after(delay=N)``,
    ``eventlet.Timeout(seconds=N)``."""
    positional, keywords = call_args(call)
    return _number(keywords.get("delay") or keywords.get("seconds") or keywords.get("timeout")
                   or (positional[0] if positional else None), ctx)
