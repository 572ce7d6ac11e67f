"""Retries by recursion: a function that calls itself again from its error path.

The call must repeat the same operation: every argument is passed through
unchanged, or is a counter (``retries - 1``, ``attempt=attempt + 1``) or a
constant flag (``_retried=True``).  A call with other changed arguments walks
something (a tree, a list of hosts) and is not a retry.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from ..model import UNKNOWN, Bound, DelayKind, GiveUp, Num, RetriedStatuses, RetryPolicy, known
from ..syntax import (
    DEFERRED,
    EXITS,
    call_args,
    dotted_name,
    if_branches,
    last_name,
    number,
    outcomes,
    statements,
    unwrap_await,
    walk,
)
from ..narrowing import Trigger
from .candidates import FAILURE_WORDS, FUNCTIONS, function_may_recurse
from .bounds import CounterInfo, GuardEnv, classify_guard, find_counters
from .context import ModuleContext
from ..program import DEFAULT
from .delays import DelayEnv, classify
from .waits import Sleep, sleep_of
from .errors import describe_handler, retried_error, status_raises, taken_earlier
from .polls import attempt_probes, named_for_waiting, waits_for_readiness
from .switches import taken_only_when
from .same_operation import (
    MUTATORS,
    attempt_reads,
    bookkeeping,
    counter_names_candidate,
    creates_missing,
    populates_missing,
    renews_credentials,
)
from .loops import attempt_waits_with_timeout, combine_delays, delegates_failure, tests_pending, timeout_only
from .status import ALL_STATUSES, status_range


TRIGGER = Trigger(text=FAILURE_WORDS, statements=FUNCTIONS, confirm=function_may_recurse)


def extract_recursions(ctx: ModuleContext) -> List[RetryPolicy]:
    out = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, cst.FunctionDef):
            policy = extract_recursion(node, ctx)
            if policy is not None:
                out.append(policy)
    return out


def _params(func: cst.FunctionDef) -> List[cst.Param]:
    p = func.params
    return list(p.posonly_params) + list(p.params) + list(p.kwonly_params)


def _self_calls(func: cst.FunctionDef, ctx: ModuleContext) -> List[cst.Call]:
    name = func.name.value
    params = _params(func)
    receiver = params[0].name.value if params and params[0].name.value in ("self", "cls") else None
    calls = []
    for node in walk(func.body):
        if not isinstance(node, cst.Call):
            continue
        target = node.func
        if isinstance(target, cst.Name) and target.value == name:
            if any(b.kind == "def" and b.node is func for b in ctx.bindings(target)):
                calls.append(node)
        elif receiver and isinstance(target, cst.Attribute) and target.attr.value == name:
            if dotted_name(target.value) == receiver:
                calls.append(node)
        elif _calls_back(node, func, receiver, ctx) is not None:
            calls.append(node)  # ``return self._again(url)`` where ``_again`` calls ``fetch(url)`` back
    return calls


def _calls_back(call: cst.Call, func: cst.FunctionDef, receiver: Optional[str], ctx: ModuleContext):
    """The pass-through wrapper (:class:`retrylint.program.Wrapper`) a call goes through back
    to ``func``, or None."""
    target = call.func
    owner = ctx.enclosing_class(func)
    if receiver and isinstance(target, cst.Attribute) and dotted_name(target.value) == receiver and owner:
        key = f"{owner}.{target.attr.value}"
    elif not receiver and isinstance(target, cst.Name):
        key = target.value
    else:
        return None
    wrapper = ctx.program.own().wrappers.get(key)
    if wrapper is None or wrapper.target != func.name.value:
        return None
    return wrapper


def _wrapper_sleep(call: cst.Call, func: cst.FunctionDef, ctx: ModuleContext) -> Optional[Sleep]:
    """The sleep a wrapper does before calling back, as a sleep of this function."""
    params = _params(func)
    receiver = params[0].name.value if params and params[0].name.value in ("self", "cls") else None
    wrapper = _calls_back(call, func, receiver, ctx)
    if wrapper is None or wrapper.sleeps is None:
        return None
    try:
        node = cst.parse_expression(wrapper.sleeps)
    except Exception:  # noqa: BLE001
        return Sleep(call, None, "helper")
    if any(isinstance(n, cst.Name) for n in walk(node, skip=())):
        return Sleep(call, None, "helper")  # depends on names of the wrapper: unknown here
    ctx.note_stand_in(node, call)
    return Sleep(call, node, "helper")


def _failure_context(call: cst.Call, func: cst.FunctionDef, ctx: ModuleContext) -> Optional[cst.CSTNode]:
    """The except handler or failed-status branch the call sits in, if any."""
    for ancestor in ctx.ancestors(call):
        if ancestor is func:
            return None
        if isinstance(ancestor, DEFERRED):
            return None
        if isinstance(ancestor, cst.ExceptHandler):
            return ancestor
        if isinstance(ancestor, cst.If):
            taken = _statuses_taken(ancestor, call, ctx)
            if taken and not any(200 <= s < 300 for s in taken):
                return ancestor
    return None


def _statuses_taken(test_if: cst.If, call: cst.Call, ctx: ModuleContext) -> Optional[FrozenSet[int]]:
    """The statuses that may reach ``call`` through this ``if``; None when it tests no status."""
    found = status_range(test_if.test, ctx)
    if found is None:
        return None
    return found[1] if ctx.is_inside(call, test_if.body) else ALL_STATUSES - found[0]


def _statuses(call: cst.Call, func: cst.FunctionDef, ctx: ModuleContext) -> Optional[RetriedStatuses]:
    """The failed statuses whose branch calls back (``if _should_retry(response): … return
    self.request(…)``): those the code's status test lets through to the call."""
    for ancestor in ctx.ancestors(call):
        if ancestor is func or isinstance(ancestor, (cst.ExceptHandler,) + DEFERRED):
            return None
        if isinstance(ancestor, cst.If):
            taken = _statuses_taken(ancestor, call, ctx)
            if taken is None:
                continue
            retried = tuple(s for s in sorted(taken) if 400 <= s < 600)
            if not retried or any(200 <= s < 300 for s in taken):
                return None
            return RetriedStatuses(retried, ctx.location(ancestor.test), ctx.code(ancestor.test))
    return None


def _argument_roles(call: cst.Call, func: cst.FunctionDef, ctx: ModuleContext) -> Optional[Dict[str, str]]:
    """Each parameter's role in the call: pass, counter, const; None when the call changes the operation."""
    params = [p for p in _params(func)]
    names = [p.name.value for p in params]
    if names and names[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        names = names[1:]
    roles: Dict[str, str] = {}
    positional, keywords = call_args(call)
    pairs: List[Tuple[str, cst.BaseExpression]] = list(zip(names, positional)) + list(keywords.items())
    failure = _failure_context(call, func, ctx)
    caught = (failure.name.name.value if isinstance(failure, cst.ExceptHandler) and failure.name is not None
              and isinstance(failure.name.name, cst.Name) else None)
    if len(positional) > len(names) and func.params.star_arg is None:
        return None
    for param, value in pairs:
        value = unwrap_await(value)
        if dotted_name(value) == param:
            roles[param] = "pass"
        elif isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Add, cst.Subtract)) and (
            dotted_name(value.left) == param and number(value.right) is not None
        ):
            roles[param] = "counter"
        elif number(value) is not None or isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
            roles[param] = "const"
        elif caught is not None and isinstance(value, cst.Name) and value.value == caught:
            roles[param] = "failure"  # ``last_exception=error``: raised when the attempts run out
        elif isinstance(value, (cst.Name, cst.Attribute)) and dotted_name(value) in names:
            # Another parameter's value in this place (``get_style(default)``): a different input.
            return None
        else:
            return None
    for arg in call.args:
        if arg.star and dotted_name(arg.value) not in (
            getattr(func.params.star_arg, "name", cst.Name("_")).value if isinstance(func.params.star_arg, cst.Param) else None,
            func.params.star_kwarg.name.value if func.params.star_kwarg else None,
        ):
            return None
    return roles


def extract_recursion(func: cst.FunctionDef, ctx: ModuleContext) -> Optional[RetryPolicy]:
    calls = [c for c in _self_calls(func, ctx) if _failure_context(c, func, ctx) is not None]
    # ``if status == 401: self._refresh_session()`` then call again: a repair, not a retry
    calls = [c for c in calls if not renews_credentials(_failure_context(c, func, ctx), ctx.location(c).line, ctx)]
    # ``if self.wait_on_rate_limit: return self.request(...)`` with the switch off by default
    calls = [c for c in calls if not taken_only_when(c, func, ctx)]
    if not calls:
        return None
    call = calls[0]
    roles = _argument_roles(call, func, ctx)
    if roles is None:
        return None
    failure = _failure_context(call, func, ctx)
    if isinstance(failure, cst.ExceptHandler) and _repairs_before(failure, call, ctx):
        return None  # "not found: create it, then run again" repairs the cause; it does not retry
    if _takes_the_other_way(call, func, ctx):
        return None  # ``return self._upload(…, existing=None)``: update failed, now create
    if isinstance(failure, cst.ExceptHandler) and _continues_unfinished_work(failure, call, ctx):
        return None  # ``if e.error_code == "PARTIAL_DELETE": self.rm(path)``: call again to finish
    if isinstance(failure, cst.ExceptHandler) and _changes_passed_input(failure, call, func, roles, ctx):
        return None  # ``kwargs[kwarg] = sanitized`` then ``wrapper(*args, **kwargs)``: a repaired request
    if isinstance(failure, cst.ExceptHandler) and isinstance(ctx.parent(failure), cst.Try) and any(
        role == "counter" and counter_names_candidate(param, ctx.parent(failure).body, func, ctx)
        or role == "failure" and attempt_reads(param, ctx.parent(failure).body, func, ctx)
        for param, role in roles.items()
    ):
        # ``free_name(base, n + 1)`` after ``os.open(f"{base}-{n}", O_EXCL)`` failed: the next
        # candidate; ``fix(prompt, error=e)`` sending the error back: a repair from feedback
        return None
    if isinstance(failure, cst.ExceptHandler) and _changes_read_state(failure, call, ctx):
        return None  # ``remaining.append(value)`` then ``run_command()``: the attempt reads it, another input
    if isinstance(failure, cst.ExceptHandler) and _restarts_a_worker(failure, call, ctx):
        return None  # ``create_task(self._writer_loop())`` after a worker loop failed: a supervisor
    if isinstance(failure, cst.ExceptHandler) and _asks_before(failure, ctx):
        return None  # together's CLI: prompt for the missing argument, then run the command again
    counters = _counters(func, call, roles, ctx)
    for name in counters:
        if roles.get(name) == "pass":
            roles[name] = "counter"  # ``retry_count = retry_count + 1`` before passing it on
    handler_variable = None
    if isinstance(failure, cst.ExceptHandler) and failure.name is not None and isinstance(failure.name.name, cst.Name):
        handler_variable = failure.name.name.value
    try_line = min((ctx.location(n).line for n in walk(func.body) if isinstance(n, cst.Try)), default=0)
    env = GuardEnv(
        ctx,
        counters=counters,
        failure_names=frozenset({handler_variable} if handler_variable else ()),
        attempt_line=try_line,
    )
    bound = _bound(func, call, roles, env, ctx)
    if bound.attempts is UNKNOWN and bound.deadline is None:
        shipped = _bound(func, call, roles, replace(env, defaults=True), ctx)
        if known(shipped.attempts) and float(shipped.attempts) <= 1:  # type: ignore[arg-type]
            return None  # ``max_retries = opts.get("max_retries", 0) if opts else 0``: off as shipped

    sleeps = []
    for node in walk(failure):
        if isinstance(node, cst.Call) and node is not call:
            sleep = sleep_of(node, ctx)
            if sleep is not None and ctx.location(node).line <= ctx.location(call).line:
                sleeps.append(sleep)
    wrapped = _wrapper_sleep(call, func, ctx)
    if wrapped is not None:
        sleeps.append(wrapped)
    on_entry = _waits_on_entry(func, failure, ctx, call,
                               frozenset(name for name, role in roles.items() if role == "counter"))
    sleeps += on_entry
    if sleeps:
        # Every local of the function is computed again on each attempt, like a loop's body.
        writes = ctx.writes_in(func.body)
        delay_env = DelayEnv(ctx, counters=dict(counters), loop_writes=writes)
        # A wait on entry runs in the call made again, which already holds the stepped counter
        # (``retry_counter + 1``): its first retry sees ``init + step``.
        entry_env = DelayEnv(ctx, counters={
            name: replace(info, init=float(info.init) + float(info.step))  # type: ignore[arg-type]
            if known(info.init) and known(info.step) else info for name, info in counters.items()
        }, loop_writes=writes)
        entering = {id(s) for s in on_entry}
        delays = [(classify(s.delay, entry_env if id(s) in entering else delay_env), s) for s in sleeps]
        delay, chosen = combine_delays(delays)
        delay_location = ctx.location(chosen.call) if chosen is not None else None
    else:
        from ..model import NO_DELAY

        delay, delay_location = NO_DELAY, None

    if delay.kind is DelayKind.FIXED and (waits_for_readiness(func) or named_for_waiting(func)
                                          and isinstance(failure, cst.ExceptHandler)
                                          and isinstance(ctx.parent(failure), cst.Try)
                                          and attempt_probes(ctx.parent(failure).body)):
        return None  # ``_await_server``: a heartbeat at a fixed pace until the server answers
    errors = ()
    if isinstance(failure, cst.ExceptHandler):
        try_node = ctx.parent(failure)
        handler = describe_handler(failure, ctx)
        if handler.polling:
            return None
        if isinstance(try_node, cst.Try) and timeout_only(handler) and attempt_waits_with_timeout(try_node, ctx):
            return None  # ``wait_for(queue.put(x), timeout=1)`` again: waiting for room, not retrying
        earlier_exit = False
        raises_for_status = raises_own = False
        if isinstance(try_node, cst.Try):
            for other in try_node.handlers:
                if other is failure:
                    break
                if outcomes(statements(other.body)) & EXITS:
                    earlier_exit = True
            raises_for_status, raises_own = status_raises(try_node, ctx)
            earlier = [describe_handler(h, ctx) for h in try_node.handlers[:list(try_node.handlers).index(failure)]]
            if taken_earlier(earlier, raises_for_status, raises_own):
                raises_for_status = raises_own = False
        errors = (retried_error(handler, ctx, earlier_exit, raises_for_status, raises_own),)

    location = ctx.location(func.name)
    header_start = ctx.location(func)
    return RetryPolicy(
        source="recursion",
        bound=bound,
        delay=delay,
        location=location,
        errors=errors,
        statuses=next((found for found in (_statuses(c, func, ctx) for c in calls) if found is not None), None),
        give_up=GiveUp.NEVER if bound.unbounded else GiveUp.UNKNOWN,
        header_lines=tuple(range(header_start.line, ctx.location(func.params).end_line + 1)) or (location.line,),
        delay_location=delay_location,
        extent=ctx.location(func),
        description=f"recursive retry in `{func.name.value}()`",
        operation=func.name.value,
        is_async=func.asynchronous is not None,
        anchor=func,
    )


def _waits_on_entry(func: cst.FunctionDef, failure: Optional[cst.CSTNode], ctx: ModuleContext,
                    call: Optional[cst.Call] = None, counters: FrozenSet[str] = frozenset()) -> List[Sleep]:
    """``self.throttle(wait=wait)`` as a statement of the function body before the attempt
    (apprise's plugins): every call, the one made again included, waits there first. Also
    ``if delay: await asyncio.sleep(reconnect_delay)`` when the call made again passes
    ``delay=True`` (gmqtt's ``reconnect``), and ``if retry_counter > 0: time.sleep(...)`` when
    the call made again passes the counter on (googlemaps' and routingpy's ``_request``)."""
    found: List[Sleep] = []
    for statement in statements(func.body):
        if failure is not None and ctx.is_inside(failure, statement):
            break
        if isinstance(statement, cst.If) and statement.orelse is None and counters \
                and set(_names(statement.test)) & counters:
            for inner in walk(statement.body):
                sleep = sleep_of(inner, ctx) if isinstance(inner, cst.Call) else None
                if sleep is not None:
                    found.append(sleep)
            continue
        if isinstance(statement, cst.If) and statement.orelse is None and call is not None \
                and isinstance(statement.test, cst.Name) and _passes_true(call, statement.test.value):
            for inner in statements(statement.body):
                value = unwrap_await(inner.value) if isinstance(inner, cst.Expr) else None
                sleep = sleep_of(value, ctx) if isinstance(value, cst.Call) else None
                if sleep is not None:
                    found.append(sleep)
            continue
        value = unwrap_await(statement.value) if isinstance(statement, cst.Expr) else None
        if isinstance(value, cst.Call):
            sleep = sleep_of(value, ctx)
            if sleep is not None:
                found.append(sleep)
    return found


def _passes_true(call: cst.Call, parameter: str) -> bool:
    """The call made again passes ``parameter=True``."""
    return any(arg.keyword is not None and arg.keyword.value == parameter and isinstance(arg.value, cst.Name)
               and arg.value.value == "True" for arg in call.args)


def _counters(func: cst.FunctionDef, call: cst.Call, roles: Dict[str, str], ctx: ModuleContext) -> Dict[str, CounterInfo]:
    counters: Dict[str, CounterInfo] = {}
    positional, keywords = call_args(call)
    defaults = {p.name.value: p.default for p in _params(func)}
    for param, role in roles.items():
        if role != "counter":
            continue
        value = keywords.get(param)
        if value is None:
            names = [p.name.value for p in _params(func)]
            if names and names[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
                names = names[1:]
            index = names.index(param) if param in names else -1
            value = positional[index] if 0 <= index < len(positional) else None
        if not isinstance(value, cst.BinaryOperation):
            continue
        amount = number(value.right) or 0.0
        step = amount if isinstance(value.operator, cst.Add) else -amount
        default = defaults.get(param)
        init: Num = number(default) if default is not None and number(default) is not None else UNKNOWN
        counters[param] = CounterInfo(_started_by_callers(func, param, init, step, ctx), step)
    # Counters stepped in the body: ``self._attempts += 1`` or ``retry_count = retry_count + 1``
    # before calling again.
    for name, info in find_counters(ctx.writes_in(func.body), ctx, func).items():
        if "." in name:
            counters[name] = info
        elif name in roles and name not in counters:
            default = defaults.get(name)
            init: Num = number(default) if default is not None and number(default) is not None else UNKNOWN
            counters[name] = CounterInfo(init, info.step, info.update_line)
    return counters


def _started_by_callers(func: cst.FunctionDef, param: str, init: Num, step: float, ctx: ModuleContext) -> Num:
    """Where the module's callers start a recursion's counter (``self.connect(5)`` for
    ``def connect(self, retry=0)``): the most retries any of them allows, the default for a caller
    that leaves it out, unknown when one passes a value not read. No caller here: the default."""
    node = next((p for p in _params(func) if p.name.value == param), None)
    values = ctx.parameter_values(node) if node is not None else None
    if not values or step == 0:
        return init
    starts: List[float] = []
    for value in values:
        start = init if value is DEFAULT else value
        if isinstance(start, bool) or not isinstance(start, (int, float)):
            return UNKNOWN
        starts.append(float(start))
    return max(starts) if step < 0 else min(starts)  # counting down: the highest start; up: the lowest


def _bound(func: cst.FunctionDef, call: cst.Call, roles: Dict[str, str], env: GuardEnv, ctx: ModuleContext) -> Bound:
    attempts: Num = None
    texts = []
    checked = False
    for node in walk(func.body):
        if not isinstance(node, cst.If):
            continue
        body, orelse = if_branches(node)
        exits = any(b is not None and outcomes(b) & EXITS and not _contains(b, call) for b in (body, orelse))
        guards_call = ctx.is_inside(call, node.body)
        if not exits and not guards_call:
            continue
        mentioned = {n.split(".")[0] for n in _names(node.test)} | set(_names(node.test))
        if guards_call and (
            # ``if retry and …: return f(retry=False)`` under ``retry=True``; ``if cwd not in
            # sys.path: sys.path.insert(0, cwd); return load(path)``; a helper of the attempt that
            # resets ``self.access_token``: the guard is false on the next call, so one retry.
            any(roles.get(m) == "const" and _flips_default(func, call, m) for m in mentioned)
            or _guard_made_false(node, call, ctx) or _guard_cleared_by_attempt(node, call, ctx)
        ):
            attempts = 2.0 if attempts is None else _tighter_num(attempts, 2.0)
            texts.append("once: if " + ctx.code(node.test))
            checked = True
            continue
        if guards_call:
            # ``if retries > 0: return f(retries - 1)``: recursion continues while the test holds.
            guard = classify_guard(node.test, env, ctx.location(node).line, at_loop_head=True)
            if guard.kind == "counter":
                attempts = _plus_one(guard.attempts)
                texts.append("if " + ctx.code(node.test))
                checked = True
                continue
            if guard.kind in ("unknown", "deadline"):
                # ``if new_page_length >= 12: return _query()``: a test we cannot read stops it.
                attempts = attempts if attempts is not None else UNKNOWN
                texts.append("if " + ctx.code(node.test))
                checked = True
                continue
        guard = classify_guard(node.test, env, ctx.location(node).line)
        if guard.kind == "flag" and exits and _flag_set_before_call(node, call, func, ctx):
            # ``if self._timed_out: raise`` … ``self._timed_out = True`` … ``return self._request()``
            attempts = 2.0 if attempts is None else attempts
            texts.append("once: if " + ctx.code(node.test))
            checked = True
            continue
        if guard.kind == "counter":
            attempts = guard.attempts if attempts is None else attempts
            texts.append("if " + ctx.code(node.test))
            checked = True
        elif guard.kind == "deadline":
            return Bound(attempts=attempts, deadline=guard.deadline, text="if " + ctx.code(node.test))
        elif any(roles.get(m) == "const" for m in mentioned):
            flipped = any(roles.get(m) == "const" and (_flips_default(func, call, m) or (
                exits and _const_trips_guard(node.test, call, func, m))) for m in mentioned)
            # ``retry=False`` passed to a ``retry=True`` parameter: exactly one retry.
            attempts, checked = (2.0 if flipped else UNKNOWN), True
            texts.append("if " + ctx.code(node.test))
    if checked:
        return Bound(attempts=attempts if attempts is not None else UNKNOWN, text="; ".join(texts))
    if all(role == "pass" for role in roles.values()):
        return Bound(text="")
    return Bound(attempts=UNKNOWN)


def _repairs_before(handler: cst.ExceptHandler, call: cst.Call, ctx: ModuleContext) -> bool:
    """Before calling itself again the handler repairs the cause: it creates what was missing
    (``os.makedirs``), fills in a lookup that failed, or hands the failure to a repair."""
    before = _before(handler, call, ctx)
    return (
        creates_missing(handler.body, ctx.location(call).line, ctx)
        or populates_missing(describe_handler(handler, ctx), [before], ctx)
        or _acts_on_failure(handler, before, ctx)
    )


def _continues_unfinished_work(handler: cst.ExceptHandler, call: cst.Call, ctx: ModuleContext) -> bool:
    """The call again sits under a test for a protocol's "not done yet" answer."""
    for ancestor in ctx.ancestors(call):
        if ancestor is handler:
            return False
        if isinstance(ancestor, cst.If) and ctx.is_inside(call, ancestor.body) and tests_pending(ancestor.test):
            return True
    return False


def _changes_passed_input(
    handler: cst.ExceptHandler, call: cst.Call, func: cst.FunctionDef, roles: Dict[str, str], ctx: ModuleContext,
) -> bool:
    """The handler rewrites what it passes on unchanged by name before calling again: a
    parameter reassigned, an item or attribute of it set, or a mutating method called on it."""
    call_line = ctx.location(call).line
    passed = {name for name, role in roles.items() if role == "pass"}
    for arg in call.args:
        if arg.star and isinstance(arg.value, cst.Name):
            passed.add(arg.value.value)  # ``**kwargs`` / ``*args`` handed on as they are
    if not passed:
        return False
    for target in _written_before(handler, call_line, ctx):
        if _tunes_the_attempt(target):
            continue  # ``kwargs["retries"] = n + 1``, ``request.timeout *= 2``: still the same request
        while isinstance(target, (cst.Subscript, cst.Attribute)):
            target = target.value
        if isinstance(target, cst.Name) and target.value in passed:
            return True
    return False


def _written_before(handler: cst.ExceptHandler, call_line: int, ctx: ModuleContext) -> Iterator[cst.BaseExpression]:
    """What the handler assigns, or changes with a mutating method (``items.append(x)``),
    before the line that calls again."""
    for node in walk(handler.body, skip=DEFERRED):
        if not isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Call)) or ctx.location(node).line >= call_line:
            continue
        if isinstance(node, cst.Assign):
            yield from (t.target for t in node.targets)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            yield node.target
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in MUTATORS:
            yield node.func.value


def _changes_read_state(handler: cst.ExceptHandler, call: cst.Call, ctx: ModuleContext) -> bool:
    """The handler changes a name that is no parameter but that the attempt hands to its calls
    (a closure's ``remaining`` list read by ``app.parse_known_args(remaining)``) before calling
    itself: the next call reads another input."""
    attempt = ctx.parent(handler)
    if not isinstance(attempt, cst.Try):
        return False
    read: Set[str] = set()
    # The attempt is the try and what the function does before it on each call (``target =
    # self._pick_target(excluded)`` chooses where the try sends: hazelcast's PN counter).
    function = ctx.enclosing_function(attempt)
    before = [st for st in (statements(function.body) if function is not None else [])
              if ctx.location(st).line < ctx.location(attempt).line and not ctx.is_inside(attempt, st)]
    for region in [attempt.body, *before]:
        for node in walk(region, skip=DEFERRED):
            if isinstance(node, cst.Call):
                for arg in node.args:
                    read.update(n for n in _names(arg.value) if n and "." not in n and not bookkeeping(n))
    return any(dotted_name(target) in read for target in _written_before(handler, ctx.location(call).line, ctx))


#: Calls that start a coroutine or a thread in the background instead of awaiting it.
_SCHEDULERS = frozenset({"create_task", "ensure_future", "run_coroutine_threadsafe", "start_soon", "spawn", "Thread"})


def _restarts_a_worker(handler: cst.ExceptHandler, call: cst.Call, ctx: ModuleContext) -> bool:
    """The attempt is itself a worker loop (``while not self._closed: …``, or ``while True``)
    and the failure path starts a fresh copy of it in the background
    (``self._writer_task = asyncio.create_task(self._writer_loop())``): a supervisor restarting
    a task, not a retry of one operation."""
    attempt = ctx.parent(handler)
    if not isinstance(attempt, cst.Try):
        return False
    body = statements(attempt.body)
    if not any(isinstance(s, cst.While) for s in body):
        return False
    parent = ctx.parent(ctx.parent(call))  # Call -> Arg -> Call
    return isinstance(parent, cst.Call) and last_name(parent.func) in _SCHEDULERS


def _asks_before(handler: cst.ExceptHandler, ctx: ModuleContext) -> bool:
    """The handler asks a person (``prompt.prompt(name)``, ``input()``) before calling again."""
    from .loops import _prompts  # the loop extractor's test for re-prompts, applied to the handler

    return _prompts(handler, ctx)


def _tunes_the_attempt(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        index = target.slice[0].slice
        key = index.value.evaluated_value if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) else None
        return isinstance(key, str) and bookkeeping(key)
    name = dotted_name(target)
    return bool(name) and bookkeeping(name)  # type: ignore[arg-type]


def _acts_on_failure(handler: cst.ExceptHandler, before: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``except SchemaNotReplicatedError as e: self._send_schema(e); return self.add(item)``: the
    failure is handed to something that repairs its cause before the call runs again."""
    if handler.name is None or not isinstance(handler.name.name, cst.Name):
        return False
    names = {handler.name.name.value}
    for node in walk(before, skip=DEFERRED):
        if isinstance(node, cst.Call) and sleep_of(node, ctx) is None and not isinstance(ctx.parent(node), (cst.Raise, cst.If)):
            # ``self._send_schema_and_retry_fn(e, …).result()`` counts as well as a plain statement.
            if delegates_failure(node, names, ctx, statement_only=False):
                return True
    return False


def _before(handler: cst.ExceptHandler, call: cst.Call, ctx: ModuleContext) -> cst.CSTNode:
    """The handler's statements before the one that calls the function again."""
    statement = ctx.statement_of(call)
    body = handler.body
    if isinstance(body, cst.IndentedBlock):
        kept = []
        for member in body.body:
            if member is statement or ctx.is_inside(statement, member):
                break
            kept.append(member)
        return body.with_changes(body=kept)
    return body


def _tighter_num(a: Num, b: float) -> Num:
    return min(float(a), b) if known(a) else b  # type: ignore[arg-type]


#: Calls that put an item into a container: ``sys.path.insert(0, d)``, ``seen.add(k)``.
_ADDS = frozenset({"insert", "append", "add", "extend", "appendleft", "setdefault", "update"})


def _guard_made_false(guard: cst.If, call: cst.Call, ctx: ModuleContext) -> bool:
    """``if item not in container:`` whose branch puts ``item`` into ``container`` before ``call``;
    ``if self._future and not self._future.done(): await self._future`` (distributed's actor):
    the future the guard waits for is done on the next call."""
    if _waits_out_its_future(guard, call, ctx):
        return True
    test = guard.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.NotIn)):
        return False
    item, container = ctx.code(test.left), ctx.code(test.comparisons[0].comparator)
    call_line = ctx.location(call).line
    for node in walk(guard.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _ADDS:
            if ctx.code(node.func.value) == container and any(ctx.code(a.value) == item for a in node.args):
                if ctx.location(node).line < call_line:
                    return True
    return False


def _waits_out_its_future(guard: cst.If, call: cst.Call, ctx: ModuleContext) -> bool:
    parts = [guard.test]
    while isinstance(parts[0], cst.BooleanOperation) and isinstance(parts[0].operator, cst.And):
        parts = [parts[0].left, parts[0].right] + parts[1:]
    pending = set()
    for part in parts:
        if isinstance(part, cst.UnaryOperation) and isinstance(part.operator, cst.Not) \
                and isinstance(part.expression, cst.Call) and isinstance(part.expression.func, cst.Attribute) \
                and part.expression.func.attr.value == "done":
            pending.add(ctx.code(part.expression.func.value))
    if not pending:
        return False
    call_line = ctx.location(call).line
    for node in walk(guard.body):
        waited = None
        if isinstance(node, cst.Await):
            waited = node.expression
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                "result", "wait", "exception"):
            waited = node.func.value
        if waited is not None and ctx.code(waited) in pending and ctx.location(node).line < call_line:
            return True
    return False


def _guard_cleared_by_attempt(guard: cst.If, call: cst.Call, ctx: ModuleContext) -> bool:
    """``if self.access_token: try: return self._sasl_start_jwt(conn) except …: return
    self._authenticate(conn)`` where the attempt's helper resets ``self.access_token`` on an auth
    error (pymongo OIDC): the call runs again once, down the other branch."""
    tested = {n.split(".", 1)[1] for n in _names(guard.test) if n.startswith("self.") and n.count(".") == 1}
    if not tested:
        return False
    call_line = ctx.location(call).line
    for node in walk(guard.body):
        if isinstance(node, cst.Call) and node is not call and ctx.location(node).line <= call_line:
            key = ctx.helper_key(node)
            if tested & ctx.summaries.clears(key):
                return True
            for inherited in sorted(ctx.summaries.inherited_calls(key)):
                owner, method = inherited.split(".", 1)
                if tested & ctx.program.inherited_clears(owner, method):
                    return True
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in ("None", "False"):
            if any(dotted_name(t.target) in {"self." + n for n in tested} for t in node.targets):
                if ctx.location(node).line < call_line:
                    return True
    return False


def _flag_set_before_call(guard: cst.If, call: cst.Call, func: cst.FunctionDef, ctx: ModuleContext) -> bool:
    """The tested flag is set to a constant on the way to the recursive call."""
    tested = set(_names(guard.test))
    for node in walk(func.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in ("True", "False"):
            if any(dotted_name(t.target) in tested for t in node.targets):
                if ctx.location(node).line < ctx.location(call).line:
                    return True
    return False


def _takes_the_other_way(call: cst.Call, func: cst.FunctionDef, ctx: ModuleContext) -> bool:
    """``if existing is not None and status == 404: return self._upload(…, existing=None)``
    where the attempt branches on ``existing``: the call runs the other branch (create after a
    failed update), a fallback to another operation, not the same one again."""
    for ancestor in ctx.ancestors(call):
        if ancestor is func:
            return False
        if isinstance(ancestor, cst.If) and ctx.is_inside(call, ancestor.body):
            param = _passes_what_fails_the_guard(ancestor.test, call, func)
            if param is not None and any(
                isinstance(n, cst.If) and param in _names(n.test) and not ctx.is_inside(call, n)
                for n in walk(func.body)
            ):
                return True
    return False


def _passes_what_fails_the_guard(test: cst.BaseExpression, call: cst.Call, func: cst.FunctionDef) -> Optional[str]:
    """A conjunct of the guard is a parameter's ``is not None`` (or truth) test, and the call
    passes None (or False) for it: that parameter."""
    conjuncts = []
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
            stack += [node.left, node.right]
        else:
            conjuncts.append(node)
    passed = _passed_arguments(call, func)
    for conjunct in conjuncts:
        if isinstance(conjunct, cst.Comparison) and len(conjunct.comparisons) == 1 \
                and isinstance(conjunct.comparisons[0].operator, cst.IsNot) \
                and isinstance(conjunct.comparisons[0].comparator, cst.Name) \
                and conjunct.comparisons[0].comparator.value == "None":
            param, off = dotted_name(conjunct.left), ("None",)
        elif isinstance(conjunct, cst.Name):
            param, off = conjunct.value, ("None", "False")
        else:
            continue
        value = passed.get(param or "")
        if isinstance(value, cst.Name) and value.value in off:
            return param
    return None


def _flips_default(func: cst.FunctionDef, call: cst.Call, param: str) -> bool:
    """The call passes a boolean constant opposite to the parameter's boolean default."""
    default = next((p.default for p in _params(func) if p.name.value == param), None)
    passed = _passed_arguments(call, func).get(param)
    booleans = ("True", "False")
    return (
        isinstance(default, cst.Name) and default.value in booleans
        and isinstance(passed, cst.Name) and passed.value in booleans
        and default.value != passed.value
    )


def _const_trips_guard(test: cst.BaseExpression, call: cst.Call, func: cst.FunctionDef, param: str) -> bool:
    """``if chunk_size <= 50 or stop: raise`` with ``chunk_size=50`` passed on: the next call
    meets the exit at once, so there is one retry (ibm-watsonx-ai's smaller-chunk fallback)."""
    passed = _passed_arguments(call, func).get(param)
    value = number(passed) if passed is not None else None
    if value is None:
        return False
    parts = [test]
    while isinstance(parts[0], cst.BooleanOperation) and isinstance(parts[0].operator, cst.Or):
        parts = [parts[0].left, parts[0].right] + parts[1:]
    for part in parts:
        if not isinstance(part, cst.Comparison) or len(part.comparisons) != 1 or dotted_name(part.left) != param:
            continue
        bound = number(part.comparisons[0].comparator)
        op = part.comparisons[0].operator
        if bound is None:
            continue
        checks = {cst.LessThanEqual: value <= bound, cst.LessThan: value < bound, cst.Equal: value == bound,
                  cst.GreaterThanEqual: value >= bound, cst.GreaterThan: value > bound}
        if checks.get(type(op), False):
            return True
    return False


def _passed_arguments(call: cst.Call, func: cst.FunctionDef) -> Dict[str, cst.BaseExpression]:
    """What the self-call passes for each of ``func``'s parameters, by name (``self``/``cls``
    left out of a method called as ``self.f(...)``)."""
    names = [p.name.value for p in _params(func)]
    if names and names[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        names = names[1:]
    positional, keywords = call_args(call)
    passed = dict(zip(names, positional))
    passed.update(keywords)
    return passed


def _plus_one(value: Num) -> Num:
    return float(value) + 1 if known(value) else value  # type: ignore[arg-type]


def _contains(stmts, node: cst.CSTNode) -> bool:
    return any(n is node for s in stmts for n in walk(s))


def _names(node: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(node) if isinstance(n, (cst.Name, cst.Attribute))]
