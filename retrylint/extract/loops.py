"""Hand-written retry loops.

A loop is a retry site when an operation in it fails and the failure path leads
back to the loop head, while success leaves the loop:

* an ``except`` handler that continues or falls through to the next iteration,
  around a ``try`` whose normal completion exits (``break``/``return``, a
  success test such as ``if resp.ok: return resp``, or the flag the ``while``
  tests); or
* a test on an HTTP status that exits for some statuses (a success) and goes
  round again for others.

Loops over items (consumers, servers, stream reads), polling loops without
failure handling, loops whose handlers only catch "not yet" exceptions, and
interactive re-prompt loops are not retries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..model import (
    NO_DELAY,
    UNKNOWN,
    Bound,
    Delay,
    DelayKind,
    GiveUp,
    Location,
    Num,
    RetriedError,
    RetriedStatuses,
    RetryPolicy,
    known,
)
from ..syntax import (
    BREAK,
    CONTINUE,
    RAISE,
    RETURN,
    DEFERRED,
    EXITS,
    FALL,
    LOOPS,
    RAISER_NAME,
    call_args,
    dotted_name,
    if_branches,
    last_name,
    literal_truth,
    outcomes,
    statement_calls,
    statements,
    unwrap_await,
    walk,
    walk_local,
)
from .bounds import TIME_FUNCTIONS, GuardEnv, classify_guard, find_counters, initial_as_shipped
from .context import Binding, ModuleContext
from ..program import Value
from .delays import CounterInfo, DelayEnv, classify, literal_steps, shape_of
from .errors import (
    LEAVES, Handler, catcher_of, describe_handler, failure_names, forces_give_up, retried_error, sent_elsewhere, status_raises, taken_earlier,
)
from .switches import exits_first_by_default, truth_by_default
from .flow import body_exits, exits_in, guard_exits, in_handler, rest_after, status_branch, status_outcomes
from .polls import (
    attempt_probes, awaits_a_state, loops_until_a_state, named_for_waiting, probes_readiness, reads_a_local_file, waits_by_name,
    waits_for_readiness, waits_then_looks_up,
)
from .status import ALL_STATUSES, RESPONSE_OR_STATUS, classified, mentions_status, status_range, status_set
from ..narrowing import Trigger
from .candidates import CONNECTED_STATE, FAILURE_WORDS, loop_may_retry
from .candidates import LOOPS as CANDIDATE_LOOPS
from .vocabulary import CLOCK_READS, LEFTOVER, PENDING, RETRY_DECISION, TRIVIAL_CALLS
from .same_operation import (
    AttemptReads, alternative_input, asks_for_a_repair, bookkeeping, changed_on_path, creates_missing, populates_missing,
    fails_over, hands_failure_to_input_source, marks_receiver_dead, positioned_by_item, records_each_failure, renews_credentials,
    told_by_failure,
)
from .waits import SLEEP_FUNCTIONS, WAITISH, Sleep, sleep_of

_PROMPTS = frozenset({"input", "raw_input", "getpass.getpass", "click.prompt", "click.confirm", "typer.prompt", "typer.confirm"})
#: Calls named like asking a person: ``self._value_prompt()``, ``win.getkey()``, ``get_input()``.
_PROMPT_NAME = re.compile(
    r"^_*((\w+_)?prompt(_\w+)?|a?input|raw_input|(get|read|user)_?input|getkey|getch|getpass|ask_user)$", re.I
)
#: Prompt libraries: every call into them asks a person.
_PROMPT_MODULES = ("questionary.", "inquirer.", "InquirerPy.", "PyInquirer.", "prompt_toolkit.", "rich.prompt.", "pick.")
#: Calls that take the next item of a stream: going round again reads new data, it retries nothing.
_STREAM_READS = frozenset(
    {
        "getone", "getmany", "next", "__next__", "anext", "__anext__", "recv", "recv_into", "recvfrom",
        "receive", "receive_bytes", "receive_text", "receive_json", "read", "readline", "readexactly",
        "readuntil", "read_message", "poll", "consume", "pop", "popleft", "get_message", "get_nowait", "accept",
    }
)
#: Receivers of ``.get()`` that are queues: ``queue``, ``self._score_queue``, ``q``, ``work_q``, ``inbox``.
_QUEUE_NAME = re.compile(r"queue|^_?q$|_q$|inbox|mailbox", re.IGNORECASE)
#: Calls that only report a failure (logging, metrics, callbacks): they do not decide or wait.
_REPORTING = re.compile(
    r"^_*(debug|info|warning|warn|error|exception|critical|log\w*|print|format|\w*record\w*|\w*metric\w*|"
    r"report\w*|emit\w*|trace\w*|\w*_cb|\w*callback\w*|notify\w*|incr\w*|observe\w*|capture\w*|set_exception)$",
    re.I,
)
_BUILTIN_LOOKS = frozenset({"getattr", "hasattr", "type", "isinstance", "cast", "issubclass", "str", "repr", "format", "len", "id", "vars", "dict", "list", "tuple", "bool", "int", "float"})
#: Predicates about a failure or the time left (``_within_time_limit(start)``): they answer, they do not sleep.
_PREDICATE = re.compile(
    r"^_*(is|has|can|should|was|needs?|within)_|(error|expired|retriable|retryable|transient|permanent|fatal|time_?limit|deadline)",
    re.I,
)
_TIMEOUT_CONTEXTS = frozenset(
    {
        "async_timeout.timeout",
        "asyncio.timeout",
        "asyncio.timeout_at",
        "anyio.fail_after",
        "anyio.move_on_after",
        "trio.fail_after",
        "trio.move_on_after",
        "trio.fail_at",
        "trio.move_on_at",
        "eventlet.Timeout",
        "eventlet.timeout.Timeout",
        "gevent.Timeout",
        "gevent.timeout.Timeout",
    }
)
#: Cancel scopes that are a deadline only when given one (``anyio.CancelScope(deadline=...)``).
_CANCEL_SCOPES = frozenset({"anyio.CancelScope", "trio.CancelScope"})
_GIVE_UP_DLQ = ("dead", "dlq", "poison", "quarantine")


@dataclass
class Iteration:
    infinite: bool = False
    attempts: Num = None
    counters: Dict[str, CounterInfo] = field(default_factory=dict)
    step_targets: Dict[str, Tuple[float, ...]] = field(default_factory=dict)
    opaque_targets: Tuple[str, ...] = ()
    text: str = ""


@dataclass
class TryAnalysis:
    node: cst.Try
    handlers: List[Handler]
    retrying: List[Handler]
    exiting: List[Handler]
    rest: List[cst.CSTNode]
    success_exit: bool
    operation: Optional[cst.Call]


@dataclass
class StatusSite:
    """A loop that goes round again on some HTTP statuses."""

    test: cst.If
    response: Optional[cst.Call]
    #: Statuses retried; None when the code decides in a way we cannot read.
    retried: Optional[FrozenSet[int]]
    #: Branches that exit on success (their sleeps are not between attempts).
    success_branches: Tuple[cst.CSTNode, ...] = ()
    #: The test that sends a retried status round (``if self._should_retry(response): continue``),
    #: named in messages; None when the statuses go round by falling through.
    decider: Optional[cst.If] = None


TRIGGER = Trigger(text=FAILURE_WORDS, statements=CANDIDATE_LOOPS, confirm=loop_may_retry)


def extract_loops(ctx: ModuleContext) -> List[RetryPolicy]:
    policies = []
    for node in walk(ctx.module, skip=()):
        if isinstance(node, LOOPS):
            policy = extract_loop(node, ctx)
            if policy is not None:
                policies.append(policy)
    return policies


def extract_loop(loop: cst.CSTNode, ctx: ModuleContext) -> Optional[RetryPolicy]:
    assert isinstance(loop, (cst.For, cst.While))
    sleeps = [s for s in (_sleep(n, ctx) for n in walk_local(loop.body)) if s is not None]
    if isinstance(loop, cst.While):
        # ``while not self._stop.wait(5):`` waits before every attempt.
        sleeps += [s for s in (_sleep(n, ctx) for n in walk(loop.test)) if s is not None]
    iteration = _iteration(loop, ctx, sleeps)
    if iteration is None or _partial_io(loop, ctx) or _takes_items_in_test(loop):
        return None
    writes = _writes(loop, ctx)
    counted = find_counters(writes, ctx, loop)
    # Results of the attempt: what the loop assigns, except the counters it steps.
    result_names = frozenset(writes) - frozenset(iteration.counters) - frozenset(counted)
    loop_trys = _loop_trys(loop, ctx)
    trys = [_analyse_try(t, loop, ctx, result_names, _secondary(t, loop_trys, loop, ctx)) for t in loop_trys]
    # A try around reading the next item of a stream retries nothing: it reads new data.
    reads = _stream_read_lines(loop, ctx)
    retry_trys = [
        t for t in trys
        if t.retrying and t.success_exit and t.operation is not None and not _is_stream_read(t.operation)
        and not any(line < ctx.location(t.operation).line for line in reads)
        and not _runs_a_consumer(t.node)
    ]
    # A failure path that changes what the next pass sends (or where) searches or repairs.
    all_counters = {**iteration.counters, **counted}
    retry_trys = [t for t in (_same_operation_again(t, loop, ctx, writes, all_counters) for t in retry_trys) if t.retrying]
    retry_trys = [t for t in retry_trys if not _converted_before_the_handlers(t, ctx)]
    status = _status_site(loop, ctx, writes)
    if status is not None and any(ctx.is_inside(status.test, t.node.body) and forces_give_up(status.test, t.node)
                                  for t in retry_trys):
        status = None  # the branch spends the attempts and raises: its statuses are given up
    if not retry_trys and status is None:
        return None
    operations = [t.operation for t in retry_trys if t.operation is not None]
    if _prompts(loop, ctx):
        return None  # re-prompting a user is not retrying a failure
    if status is None and len(retry_trys) == 1 and retry_trys[0].operation is not None and waits_then_looks_up(
            loop, [h.names for h in retry_trys[0].retrying], retry_trys[0].operation):
        return None  # waited for a notification, then looked: the value has not arrived yet
    if status is None and operations and all(reads_a_local_file(op) for op in operations):
        return None  # waiting for a file another process writes
    if status is None and operations and all(ctx.call_name(op) & _IMPORTS for op in operations) \
            and _repairs_the_module_cache(loop, ctx):
        return None  # mistralai's ``dynamic_import``: an import race repaired in place, no downstream
    asked = operations + ([status.response] if status is not None and isinstance(status.response, cst.Call) else [])
    if asked and all(_asks_for_a_permit(op) for op in asked):
        return None  # waiting for a local rate limiter's permit is pacing, not retrying a failure

    counters = dict(iteration.counters)
    counters.update(counted)
    bound, give_up_node = _bound(loop, ctx, iteration, counters, writes, retry_trys, status=status)
    by_default = _attempts_by_default(loop, ctx, bound, iteration, counters, writes, retry_trys)
    if known(by_default) and float(by_default) <= 1:  # type: ignore[arg-type]
        return None  # ``def fetch(url, retries=0)``: with the defaults the loop runs once
    if known(by_default) and float(by_default) <= 2:  # type: ignore[arg-type]
        # ``range(self.retries + 1)`` with ``retries=1`` that no caller changes: one retry as shipped.
        bound = replace(bound, attempts=by_default, text=f"{bound.text} (2 attempts as shipped)")
    delay, delay_location, immediate, delay_anchor = _delay(loop, ctx, iteration, counters, writes, sleeps, retry_trys, status)
    readiness = _asks_for_readiness(loop, retry_trys, status, ctx)
    if _polls(loop, retry_trys, status, delay, immediate, ctx, result_names, readiness):
        return None
    errors = _errors(retry_trys, ctx, counters)
    statuses = _statuses(status, retry_trys, ctx)
    if readiness:
        # Waiting for a service to come up, every answer means "not up yet": which errors and
        # statuses go round is no fault; only a hot path (RTY201) or a missing bound is.
        errors, statuses = (), None

    header_end = loop.iter if isinstance(loop, cst.For) else loop.test
    location = ctx.location(loop, end=header_end)
    named = next((c for c in (_named_operation(t.node, ctx) for t in retry_trys) if c is not None), None)
    operation = named or (operations[0] if operations else (status.response if status else None))
    return RetryPolicy(
        source="loop",
        bound=bound,
        delay=delay,
        location=location,
        errors=errors,
        statuses=statuses,
        give_up=_give_up(loop, ctx, bound, give_up_node),
        header_lines=tuple(location.lines),
        delay_location=delay_location,
        immediate_on=immediate,
        anchor=loop,
        delay_anchor=delay_anchor,
        extent=ctx.location(loop),
        description=_describe(loop, ctx),
        operation=ctx.code(operation.func) if isinstance(operation, cst.Call) else "",
        is_async=any(isinstance(n, cst.Await) for n in walk_local(loop.body))
        or bool(isinstance(loop, cst.For) and loop.asynchronous),
    )


#: Importing a module: in-process work with nobody on the other end to overload.
_IMPORTS = frozenset({"importlib.import_module", "__import__", "importlib.reload"})


def _repairs_the_module_cache(loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``sys.modules.pop(modname, None)`` or ``importlib.invalidate_caches()`` before the next
    import: a half-initialised module cleared away, not a wait for one to appear."""
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Call):
            name = dotted_name(node.func) or ""
            if name in ("sys.modules.pop", "importlib.invalidate_caches"):
                return True
        if isinstance(node, cst.Del) and "sys.modules" in ctx.code(node.target):
            return True
    return False


def _polls(
    loop: cst.CSTNode, retry_trys: List[TryAnalysis], status: Optional[StatusSite], delay: Delay,
    immediate: Tuple[str, ...], ctx: ModuleContext, result_names: FrozenSet[str], readiness: bool,
) -> bool:
    """A wait-for-state poll or readiness wait (``readiness``: :func:`_asks_for_readiness`) whose
    failures go round at a pace of their own (see :mod:`.polls`)."""
    if immediate and delay.kind is not DelayKind.NONE and waits_for_readiness(ctx.enclosing_function(loop)):
        # ``_wait_for_server`` probing a dev server it just started: a non-200 answer asks again
        # at once while a refused connection sleeps. Still a wait for the server to come up.
        return True
    if delay.kind is DelayKind.NONE or immediate:
        return False  # a hot failure path while the poll sleeps is a retry: RTY201
    if (waits_by_name(loop, ctx) or readiness) and delay.kind is DelayKind.FIXED:
        # A readiness wait goes round at the poll's own fixed pace; one whose delay grows was
        # written as a retry schedule (``wait_until_ready`` backing off ``2 ** attempt``).
        return True
    if status is not None:
        # A failed HTTP status going round is a retry, unless the loop waits for a state and the
        # status path sleeps as the poll does (dashscope's ``wait``: 503 and "RUNNING" alike wait
        # ``wait_seconds``): the failure adds no call the poll would not make.
        return loops_until_a_state(loop, result_names) or awaits_a_state(statements(loop.body), ctx, result_names)
    return loops_until_a_state(loop, result_names) or any(
        awaits_a_state(statements(t.node.body) + statements(t.node.orelse) + list(t.rest), ctx, result_names)
        for t in retry_trys
    )


def _asks_for_readiness(loop: cst.CSTNode, retry_trys: List[TryAnalysis], status: Optional[StatusSite],
                        ctx: ModuleContext) -> bool:
    """The function says it waits for a server (``_wait_for_server``), or it is named for
    waiting and its attempt only asks whether a service is up (``wait_for_ready`` calling
    ``client.heartbeat()`` or ``GET /health``). A health ping in a function that does not say it
    waits (opensearch-py's ``get_test_client``) is judged as a retry: the labeled sets do."""
    func = ctx.enclosing_function(loop)
    if waits_for_readiness(func) or _commented_as_a_wait(loop):
        return True
    if retry_trys and all(_connects_and_closes(t.node.body) for t in retry_trys):
        return True  # junos-eznc's ``probe()``: open a socket and close it again, until the port answers
    probed = [t.operation for t in retry_trys if t.operation is not None]
    probed += [status.response] if status is not None and status.response is not None else []
    probes = bool(probed) and all(probes_readiness(op) for op in probed)
    if probes and _HEALTH.search(_owner_names(func, ctx)):
        return True  # redis's ``HealthyAnyPolicy._execute``: probes of a health check, spaced out
    if not named_for_waiting(func):
        return False
    return probes or bool(retry_trys) and all(attempt_probes(t.node.body) for t in retry_trys)


#: The author's comment at the head of the loop says it waits for something to be ready:
#: "# wait zipped data is prepared", "# wait until the export is ready".
_WAIT_COMMENT = re.compile(
    r"(?i)^\s*#\s*(wait|waiting|poll)\b[^#]*\b(is|are|to be|gets?|until)\s+(ready|prepared|available|generated|"
    r"built|created|finished|done|complete)\b")


def _commented_as_a_wait(loop: cst.CSTNode) -> bool:
    body = getattr(loop, "body", None)
    first = body.body[0] if isinstance(body, cst.IndentedBlock) and body.body else None
    lines = list(getattr(loop, "leading_lines", ())) + list(getattr(first, "leading_lines", ()))
    if isinstance(body, cst.IndentedBlock) and body.header.comment is not None:
        lines.append(body.header)
    return any(line.comment is not None and _WAIT_COMMENT.match(line.comment.value) for line in lines)


_HEALTH = re.compile(r"health|probe", re.I)
_CONNECTS = frozenset({"connect", "connect_ex", "create_connection", "open_connection"})
_CLOSES = frozenset({"close", "shutdown", "wait_closed"})
_SOCKET_SETUP = frozenset({"settimeout", "setblocking", "setsockopt", "socket"})


def _connects_and_closes(attempt: cst.CSTNode) -> bool:
    """The attempt opens a connection and closes it at once, doing nothing with it: a probe of
    whether the port answers (a readiness check), not work that failed."""
    names = [last_name(c.func) or "" for c in statement_calls(attempt)]
    return bool(names) and any(n in _CONNECTS for n in names) and any(n in _CLOSES for n in names) \
        and all(n in _CONNECTS | _CLOSES | _SOCKET_SETUP for n in names)


def _owner_names(func: Optional[cst.CSTNode], ctx: ModuleContext) -> str:
    """The function's name and its class's: ``HealthyAnyPolicy._execute``."""
    if not isinstance(func, cst.FunctionDef):
        return ""
    return f"{ctx.enclosing_class(func) or ''}.{func.name.value}"


#: What a consumer iterates: ``self._listen()``, ``pubsub.listen()``, ``shared.events``, ``watch(...)``.
_STREAM_ITERABLE = re.compile(r"(listen|subscri|consum|events?$|messages?$|watch|feed)", re.I)


def _runs_a_consumer(attempt: cst.Try) -> bool:
    """``try: for message in self._listen(): handle(message)`` ``except Exception: log``: the
    attempt is a whole consumer run and the loop around it a supervisor, not a retry."""
    for statement in statements(attempt.body):
        if isinstance(statement, cst.For):
            # What is iterated: the call's function and the streams handed to it
            # (``self._dedup_iter(shared.events)``), not a payload in a local
            # (``chat_stream(attempt_messages)``).
            source = unwrap_await(statement.iter)
            parts = [source.func] + [a.value for a in source.args if isinstance(a.value, cst.Attribute)] \
                if isinstance(source, cst.Call) else [source]
            if any(
                isinstance(n, (cst.Name, cst.Attribute)) and _STREAM_ITERABLE.search(last_name(n) or "")
                for part in parts for n in walk(part)
            ):
                return True
    return False


def _partial_io(loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``while sent < len(data): sent += sock.send(data[sent:])``: each pass moves on by what the
    last one transferred (a partial read or write), it repeats nothing."""
    if not isinstance(loop, cst.While) or not isinstance(loop.test, cst.Comparison):
        return False
    progress = dotted_name(loop.test.left)
    if progress is None:
        return False
    for node in walk_local(loop.body):
        if isinstance(node, cst.AugAssign) and dotted_name(node.target) == progress and isinstance(node.operator, cst.AddAssign):
            if not isinstance(node.value, (cst.Integer, cst.Float)):
                return True
    return False


def _takes_items_in_test(loop: cst.CSTNode) -> bool:
    """``while cls := candidates.pop():``: each pass takes the next item."""
    if not isinstance(loop, cst.While):
        return False
    return any(
        isinstance(n, cst.NamedExpr) and isinstance(n.value, cst.Call) and last_name(n.value.func) in ("pop", "popleft", "next")
        for n in walk(loop.test)
    )


def _prompts(loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """Each pass asks a person (``input()``, ``click.prompt``, ``questionary.text(...).ask()``,
    ``self._value_prompt(...)``, a curses ``getkey()``)."""
    for node in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if isinstance(node, cst.Call):
            names = ctx.call_name(node)
            if names & _PROMPTS or any(n.startswith(_PROMPT_MODULES) for n in names):
                return True
            if _PROMPT_NAME.search(last_name(node.func) or ""):
                return True
            if any(arg.keyword is None and isinstance(arg.value, cst.Name)
                   and ctx.qualified_names(arg.value) & {"input", "raw_input", "getpass.getpass"}
                   for arg in node.args):
                return True  # ``await loop.run_in_executor(None, input, "Code: ")`` (not ``call(input=input)``)
            if ctx.summaries.asks_a_person(ctx.helper_key(node)):
                return True  # ``self._ask_code()`` whose body calls ``input()``
    return False


def _stream_read_lines(loop: cst.CSTNode, ctx: ModuleContext) -> List[int]:
    """Lines where each round takes the next item (``item = queue.get()``): a failure after
    that is about this item, and going round again takes another."""
    lines = []
    for node in walk_local(loop.body):
        if isinstance(node, cst.Call) and _is_stream_read(node) and not in_handler(node, loop, ctx):
            lines.append(ctx.location(node).line)
    return lines


def _is_stream_read(call: cst.Call) -> bool:
    """``self.resp.content.readline()``, ``sock.recv(n)``, ``self._queue.get(timeout=1)``:
    not ``urlopen(url).read()`` nor ``requests.get(url)``."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if not isinstance(func.value, (cst.Name, cst.Attribute)):
            return False
        if func.attr.value == "get":
            return bool(_QUEUE_NAME.search(func.value.attr.value if isinstance(func.value, cst.Attribute) else func.value.value))
        return func.attr.value in _STREAM_READS
    if isinstance(func, cst.Name):
        # ``next(it)``, or a helper handed the queue: ``_get_many(self.queue, max_items=10)``
        return func.value in ("next", "anext") or any(
            _QUEUE_NAME.search((dotted_name(a.value) or "").rsplit(".", 1)[-1]) for a in call.args if a.keyword is None
        )
    return False


# ---------------------------------------------------------------- iteration


def _sleep(node: cst.CSTNode, ctx: ModuleContext) -> Optional[Sleep]:
    return sleep_of(node, ctx) if isinstance(node, cst.Call) else None


def _iteration(loop: cst.CSTNode, ctx: ModuleContext, sleeps: List[Sleep]) -> Optional[Iteration]:
    if isinstance(loop, cst.While):
        test = loop.test
        infinite = isinstance(test, cst.Name) and test.value == "True" or (
            isinstance(test, cst.Integer) and test.evaluated_value != 0
        )
        return Iteration(infinite=infinite, text="while " + ctx.code(test))
    assert isinstance(loop, cst.For)
    if _policy_iterator(unwrap_await(loop.iter)):
        return None  # the policy's iterator waits and gives up between passes: read where it is written
    text = f"for {ctx.code(loop.target)} in {ctx.code(loop.iter)}"
    iteration = _for_iteration(loop.target, unwrap_await(loop.iter), ctx, sleeps)
    if iteration is None and _target_unused(loop):
        # ``for _ in node_pool.all():`` repeats the same call once per item: a counted retry.
        iteration = Iteration(attempts=UNKNOWN)
    if iteration is not None:
        iteration.text = text
    return iteration


#: A method of a retry policy that hands out attempts: aiodynamo's ``RetryConfig.attempts()``
#: sleeps and checks its deadline between yields (``async for _ in self.throttle_config.attempts()``).
_POLICY_ITERATOR = re.compile(r"^_*(attempts|iter_attempts|tries|retries|retrying|backoff\w*|retry_\w+)$", re.I)


def _policy_iterator(iterable: cst.BaseExpression) -> bool:
    return isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
        and bool(_POLICY_ITERATOR.match(iterable.func.attr.value))


def _target_unused(loop: cst.For) -> bool:
    names = set(_names(loop.target))
    if not names or not isinstance(loop.target, cst.Name):
        return False
    if names == {"_"}:
        return True
    used = {n.split(".")[0] for n in _names(loop.body)}
    return not (names & used)


def _for_iteration(
    target: cst.BaseExpression, iterable: cst.BaseExpression, ctx: ModuleContext, sleeps: List[Sleep]
) -> Optional[Iteration]:
    env = DelayEnv(ctx, callers=False)  # ``range(max_retries)``: a bound (see DelayEnv.callers)
    target_name = dotted_name(target)
    if isinstance(iterable, cst.Call):
        names = ctx.call_name(iterable)
        positional, keywords = call_args(iterable)
        if "range" in names:
            return _range_iteration(target_name, positional, env)
        if names & {"itertools.count"}:
            start = _const(positional[0] if positional else keywords.get("start"), env, default=0.0)
            step = _const(positional[1] if len(positional) > 1 else keywords.get("step"), env, default=1.0)
            counters = {target_name: CounterInfo(start, step)} if target_name else {}
            return Iteration(infinite=True, counters=counters)
        if names & {"itertools.repeat"}:
            times = positional[1] if len(positional) > 1 else keywords.get("times")
            if times is None:
                return Iteration(infinite=True)
            return Iteration(attempts=_const(times, env))
        if names & {"itertools.cycle"}:
            return Iteration(infinite=True)
        if "enumerate" in names and positional and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            start = _const(positional[1] if len(positional) > 1 else keywords.get("start"), env, default=0.0)
            index_name = dotted_name(target.elements[0].value)
            inner = _for_iteration(target.elements[1].value, unwrap_await(positional[0]), ctx, sleeps)
            if inner is None:
                return None
            if index_name:
                inner.counters[index_name] = CounterInfo(start, 1.0)
            return inner
    steps = literal_steps(iterable, env)
    if steps is not None:
        step_targets = {target_name: steps} if target_name else {}
        return Iteration(attempts=len(steps), step_targets=step_targets)
    # An unknown iterable drives a retry only when the loop sleeps on its items
    # (``for delay in backoff_delays():``); otherwise the loop walks over items.
    if target_name and any(s.delay is not None and target_name in _names(s.delay) for s in sleeps):
        return Iteration(attempts=UNKNOWN, opaque_targets=(target_name,))
    return None


def _attempts_by_default(
    loop: cst.CSTNode, ctx: ModuleContext, bound: Bound, iteration: Iteration, counters: Dict[str, CounterInfo],
    writes: Dict[str, List[Binding]], retry_trys: List[TryAnalysis],
) -> Num:
    """The attempts of a limit we could not read, as the code ships: the limit is a parameter
    (or an attribute holding one) that no caller anywhere passes, whose default allows one
    attempt (``retries=0``, ``max_attempts=1``) or a single retry (``range(self.retries + 1)``
    with ``retries=1``). Anyone calling the code as shipped gets that, so that is what is judged
    (as a retry behind a switch that is off by default). A caller that passes a value decides
    instead; UNKNOWN when none of this applies."""
    if bound.attempts is not UNKNOWN or bound.deadline is not None:
        return UNKNOWN
    if isinstance(loop, cst.For):
        iterable = unwrap_await(loop.iter)
        if isinstance(iterable, cst.Call) and "range" in ctx.call_name(iterable):
            positional, _ = call_args(iterable)
            attempts = _range_iteration(None, positional, DelayEnv(ctx, callers=False, defaults=True)).attempts
            if known(attempts) and float(attempts) <= 2:  # type: ignore[arg-type]
                return attempts
    as_shipped = {
        name: replace(info, init=initial_as_shipped(name, loop, ctx, writes.get(name, []))) if info.init is UNKNOWN else info
        for name, info in counters.items()
    }
    by_default, _ = _bound(loop, ctx, iteration, as_shipped, writes, retry_trys, defaults=True)
    if known(by_default.attempts) and float(by_default.attempts) <= 2:  # type: ignore[arg-type]
        return by_default.attempts
    return UNKNOWN


def _range_iteration(target_name: Optional[str], args: Sequence[cst.BaseExpression], env: DelayEnv) -> Iteration:
    values = [_const(a, env) for a in args]
    if len(values) == 1:
        start, stop, step = 0.0, values[0], 1.0
    elif len(values) == 2:
        start, stop, step = values[0], values[1], 1.0
    elif len(values) == 3:
        start, stop, step = values
    else:
        return Iteration(attempts=UNKNOWN)
    attempts: Num = UNKNOWN
    if known(start) and known(stop) and known(step) and step != 0:
        attempts = len(range(int(start), int(stop), int(step)))  # type: ignore[arg-type]
    counters = {target_name: CounterInfo(start, step)} if target_name else {}
    return Iteration(attempts=attempts, counters=counters)


def _const(expr: Optional[cst.BaseExpression], env: DelayEnv, default: Num = UNKNOWN) -> Num:
    if expr is None:
        return default
    shape = shape_of(expr, env)
    return shape.value if shape.kind == "const" else UNKNOWN


def _names(node: cst.CSTNode) -> List[str]:
    return [dotted_name(n) or "" for n in walk(node) if isinstance(n, (cst.Name, cst.Attribute))]


def _writes(loop: cst.CSTNode, ctx: ModuleContext) -> Dict[str, List[Binding]]:
    writes: Dict[str, List[Binding]] = {}
    for statement in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(statement, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            for name, bindings in ctx.writes_in(statement).items():
                writes.setdefault(name, []).extend(bindings)
        elif isinstance(statement, cst.WithItem) and statement.asname is not None:
            name = dotted_name(statement.asname.name)
            if name:
                writes.setdefault(name, []).append(Binding("with", statement, statement.item))
    return writes


# ---------------------------------------------------------------- try statements


def _loop_trys(loop: cst.CSTNode, ctx: ModuleContext) -> List[cst.Try]:
    """Try statements of this loop's own iteration, not nested in handlers or finally blocks."""
    found = []
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Try):
            nested_in_failure = False
            for ancestor in ctx.ancestors(node):
                if ancestor is loop:
                    break
                if isinstance(ancestor, (cst.ExceptHandler, cst.Finally)):
                    nested_in_failure = True
                    break
            if not nested_in_failure:
                found.append(node)
    return found


def _secondary(node: cst.Try, trys: List[cst.Try], loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A try nested in the work around another try's attempt.

    Inside another try's body, or inside a branch of the processing that follows another
    try (a callback while handling a sent packet). Its handlers that fall through swallow
    a failure of that work (``except KeyError: pass`` while parsing a response): only an
    explicit ``continue`` makes them retry. A try that is a statement of the loop body
    itself is an attempt of its own.
    """
    top_level = node in statements(loop.body)  # type: ignore[attr-defined]
    for other in trys:
        if other is node:
            continue
        if ctx.is_inside(node, other.body):
            return True
        if not top_level and any(ctx.is_inside(node, r) for r in rest_after(other, loop, ctx)):
            return True
    return False


def _analyse_try(
    node: cst.Try, loop: cst.CSTNode, ctx: ModuleContext, result_names: FrozenSet[str], secondary: bool = False
) -> TryAnalysis:
    handlers = [describe_handler(h, ctx) for h in node.handlers]
    operation = _operation(node, ctx)
    rest = rest_after(node, loop, ctx)
    rest_out = outcomes(rest)
    loops_back = (
        bool(rest_out & {FALL, CONTINUE}) and not _raises_through_helper(rest, ctx)
        and not _goes_round_only_on_new_work(rest, loop, ctx)
    )
    retrying, exiting = [], []
    for handler in handlers:
        result = _handler_outcomes(handler, ctx)
        if handler.polling or (timeout_only(handler) and attempt_waits_with_timeout(node, ctx)) or (
            _rounds_only_when_pending(statements(handler.node.body))
        ):
            # ``future.result(0.1)`` then ``except TimeoutError: continue``: waiting, not retrying.
            continue
        if CONTINUE in result:
            retrying.append(handler)
        elif FALL in result and loops_back and not secondary and not _leaves_unless_pending(rest):
            retrying.append(handler)
        elif result & EXITS:
            exiting.append(handler)
    success_path = statements(node.body) + statements(node.orelse)
    return TryAnalysis(
        node=node,
        handlers=handlers,
        retrying=retrying,
        exiting=exiting,
        rest=rest,
        success_exit=_success_exit(
            success_path, rest, loop, ctx, result_names, _in_inner_loop(node, loop, ctx),
            # A flag set after the try is set on success only when no handler falls through to it.
            flag_roots=success_path + (rest if not any(FALL in _handler_outcomes(h, ctx) for h in handlers) else []),
        ),
        operation=operation,
    )


def _goes_round_only_on_new_work(rest: Sequence[cst.CSTNode], loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """After the try the loop leaves, unless a flag it clears on every pass was set again by
    someone else (posthog's deferred lifecycle: ``self._dirty = False`` at the top, then
    ``if self._dirty: continue`` / ``return``): new work arrived, the failure is not retried."""
    if not rest or FALL in outcomes(rest):
        return False
    flags = set()
    for node in rest:
        for inner in walk(node, skip=DEFERRED + LOOPS):
            if isinstance(inner, cst.Continue):
                guard = _guarding_if(inner, node, ctx)
                name = dotted_name(guard.test) if guard is not None else None
                if not name:
                    return False
                flags.add(name)
    if not flags:
        return False
    cleared, set_true = set(), set()
    for inner in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(inner, cst.Assign) and len(inner.targets) == 1:
            name = dotted_name(inner.targets[0].target)
            if name in flags:
                (cleared if _truthiness(inner.value) is False else set_true).add(name)
    return flags <= cleared and not set_true


def _guarding_if(node: cst.CSTNode, root: cst.CSTNode, ctx: ModuleContext) -> Optional[cst.If]:
    """The innermost ``if`` from ``node`` up to ``root`` (included) whose body holds ``node``."""
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, cst.If) and ctx.is_inside(node, ancestor.body):
            return ancestor
        if ancestor is root:
            break
    return None


def _handler_outcomes(handler: Handler, ctx: ModuleContext) -> FrozenSet[str]:
    """What the handler does; one that hands the failure to a helper that always raises gives up."""
    body = statements(handler.node.body)
    result = outcomes(body)
    if result & {FALL, CONTINUE} and _raises_through_helper(body, ctx):
        return frozenset({RAISE})
    return result


def _raises_through_helper(stmts: Sequence[cst.CSTNode], ctx: ModuleContext) -> bool:
    """A statement of ``stmts`` calls a helper of this module every path of which raises,
    before anything can go round (``self._raise_for(e)``, ``_classify_and_raise(exc)``)."""
    for statement in stmts:
        if isinstance(statement, cst.Expr):
            value = unwrap_await(statement.value)
            if isinstance(value, cst.Call) and ctx.summaries.raises(ctx.helper_key(value)):
                return True
        if outcomes([statement]) & {CONTINUE} or not outcomes([statement]) & {FALL}:
            return False
    return False


def _same_operation_again(
    analysis: TryAnalysis, loop: cst.CSTNode, ctx: ModuleContext, writes: Dict[str, List[Binding]],
    counters: Dict[str, CounterInfo],
) -> TryAnalysis:
    """Keep the handlers whose way back repeats the same operation on the same input.

    A handler that changes what the attempt reads (the next port, the redirect target, a
    shorter payload) searches or repairs, and so does one that creates what was missing
    (``os.makedirs``); so does every handler of a ``for`` loop whose item is the input.
    """
    operation = analysis.operation
    if operation is None:
        return analysis
    # ``if self.force_auth_retry: self.url = None`` after the try, off as shipped, changes nothing.
    rest = [r for r in analysis.rest if not (isinstance(r, cst.If) and r.orelse is None
                                             and truth_by_default(r.test, ctx) is False)]
    regions_of = {
        id(h.node): [h.node] + (rest if FALL in _handler_outcomes(h, ctx) else [])
        for h in analysis.retrying
    }
    reads = AttemptReads(operation, loop, ctx, writes, [r for regions in regions_of.values() for r in regions],
                         attempt=analysis.node.body)
    if isinstance(loop, cst.For):
        items = [n for n in _names(loop.target) if n and not bookkeeping(n)]
        if any(reads.reads(n) for n in items) or positioned_by_item(loop, operation, ctx):
            return replace(analysis, retrying=[])  # each pass takes the next candidate
    if alternative_input(reads, operation, loop, ctx):
        return replace(analysis, retrying=[])  # each pass takes the next host, a new random id
    if asks_for_a_repair(analysis.node.body, ctx):
        return replace(analysis, retrying=[])  # ``fixed = fix_chain.invoke(...)``: each pass repairs
    kept = [
        h for h in analysis.retrying
        if not _failure_ends_loop(h, loop)
        and changed_on_path(regions_of[id(h.node)], reads) is None
        and not creates_missing(h.node, None, ctx)
        and not any(renews_credentials(r, None, ctx) for r in regions_of[id(h.node)])
        and not populates_missing(h, regions_of[id(h.node)], ctx)
        and not exits_first_by_default(h.node.body, ctx)  # ``if not restart_on_failure: raise``
        and not (FALL in _handler_outcomes(h, ctx) and _empty_result_leaves(analysis, loop, ctx))
        and told_by_failure(h.variable, regions_of[id(h.node)], reads) is None
        and not records_each_failure(h.variable, regions_of[id(h.node)])
        and not marks_receiver_dead(regions_of[id(h.node)], reads)
        and not fails_over(regions_of[id(h.node)])
        and not _falls_back(h, analysis, ctx)
        and not _rest_advances_the_loop(h, analysis, loop, ctx)
        and not hands_failure_to_input_source(h.variable, regions_of[id(h.node)], reads)
    ]
    return replace(analysis, retrying=kept) if len(kept) != len(analysis.retrying) else analysis


def _rest_advances_the_loop(handler: Handler, analysis: TryAnalysis, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A failure that falls through into the rest of the pass, which moves what the loop's test
    reads on (pytubefix's ``while downloaded < file_size``: a failed size lookup is logged, then
    the chunk is read and ``downloaded += len(chunk)``): the loop walks its input; the next pass
    is not the failed attempt again."""
    if not isinstance(loop, cst.While) or FALL not in outcomes(statements(handler.node.body)):
        return False
    tested = {n for n in _names(loop.test) if n and not bookkeeping(n)}
    if not tested:
        return False
    for region in analysis.rest:
        for node in walk(region, skip=DEFERRED):
            if isinstance(node, cst.AugAssign) and not isinstance(node.value, cst.Integer):
                if set(ctx.writes_in(node)) & tested:
                    return True  # ``downloaded += len(chunk)``, not a count (``+= 1``)
            elif isinstance(node, cst.Assign):
                # ``offset = offset + len(chunk)`` steps from itself; ``done = True`` only ends the loop
                stepped = {n for n in ctx.writes_in(node) if n in tested and n in _names(node.value)}
                if stepped:
                    return True
    return False


def _falls_back(handler: Handler, analysis: TryAnalysis, ctx: ModuleContext) -> bool:
    """opik's experiment pager: ``items, total = resp.content, resp.total`` in the try, and
    ``except ValidationError: items, total = _fetch_page_raw(...)``, then the pass goes on with
    them (``yield from items``, ``page += 1``): the failure path gets the result another way, a
    fallback; nothing is tried again."""
    if FALL not in outcomes(statements(handler.node.body)) or not analysis.rest:
        return False
    attempted = {n for s in walk(analysis.node.body, skip=DEFERRED) if isinstance(s, cst.Assign)
                 for n in ctx.writes_in(s) if not bookkeeping(n)}
    supplied = set()
    for statement in statements(handler.node.body):
        if isinstance(statement, cst.Assign) and isinstance(unwrap_await(statement.value), cst.Call):
            supplied.update(n for n in ctx.writes_in(statement) if n in attempted)
    # ``conn = pool.reconnect()``: a fresh receiver for the same request is a retry's repair
    receivers = {(dotted_name(c.func.value) or "").split(".")[0] for c in walk(analysis.node.body, skip=DEFERRED)
                 if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute)}
    supplied -= receivers
    if not supplied:
        return False
    read_after = {n for r in analysis.rest for n in _names(r)}
    return bool(supplied & read_after)


def _empty_result_leaves(analysis: TryAnalysis, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``chunk = None``, then ``try: chunk = next(gen)`` ``except Exception as ex: read_error = ex``,
    then ``if not chunk: done = True; break`` (clickhouse-connect's reader): each pass empties the
    result first, a failed attempt leaves it empty, and the test after the try leaves the loop
    on an empty result."""
    rest = analysis.rest
    if not rest or not isinstance(rest[0], cst.If) or rest[0].orelse is not None:
        return False
    test = rest[0].test
    if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
            and isinstance(test.expression, cst.Name)):
        return False
    if not outcomes(statements(rest[0].body)) <= EXITS:
        return False
    try_line = ctx.location(analysis.node).line
    bindings = ctx.bindings(test.expression)
    emptied = [b for b in bindings if b.value is not None and ctx.is_inside(b.node, loop)
               and not ctx.is_inside(b.node, analysis.node) and ctx.location(b.node).line < try_line]
    filled = [b for b in bindings if ctx.is_inside(b.node, analysis.node.body)]
    in_handlers = [b for b in bindings if any(ctx.is_inside(b.node, h.node) for h in analysis.handlers)]
    return bool(emptied and filled) and not in_handlers and all(_truthiness(b.value) is False for b in emptied)


def _failure_ends_loop(handler: Handler, loop: cst.CSTNode) -> bool:
    """The handler makes the ``while`` test false before going round: ``while not err:`` with
    ``except OSError as e: err = e; continue`` tries once and leaves (the next address)."""
    if not isinstance(loop, cst.While):
        return False
    test, wanted_truthy = loop.test, False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, wanted_truthy = test.expression, True
    if not isinstance(test, cst.Name):
        return False
    for small in statements(handler.node.body):  # top level only: what every path does
        if (isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == test.value):
            truthy = _truthiness(small.value, handler.variable)
            if truthy is not None and truthy == wanted_truthy:
                return True
    return False


def _truthiness(value: cst.BaseExpression, exception: Optional[str] = None) -> Optional[bool]:
    """Whether a literal (or the handler's ``exception`` variable) is true; None when unknown."""
    if isinstance(value, cst.Name) and exception is not None and value.value == exception:
        return True  # an exception is truthy
    return literal_truth(value)


def timeout_only(handler: Handler) -> bool:
    return bool(handler.names) and all("timeout" in n.rsplit(".", 1)[-1].lower() for n in handler.names)


_TIMEOUT_KEYWORDS = frozenset({"timeout", "timeout_ms", "timeout_s", "wait", "block_ms"})
_WAIT_METHODS = frozenset({"result", "get", "wait", "join", "acquire", "recv", "read", "poll"})


def attempt_waits_with_timeout(node: cst.Try, ctx: ModuleContext, blocking_only: bool = False) -> bool:
    """The attempt itself waits for a bounded time (``future.result(0.1)``, ``wait_for(x, timeout=5)``).

    ``blocking_only``: only a wait that takes its time before it can fail (``asyncio.wait_for(op(),
    timeout=10)``, ``future.result(timeout=5)``, ``done.wait(2)``), so that going round after it
    is not immediate; a plain ``requests.get(url, timeout=5)`` can fail at once.
    """
    for call in walk(node.body, skip=DEFERRED):
        if not isinstance(call, cst.Call):
            continue
        positional, keywords = call_args(call)
        waits_for = bool(ctx.call_name(call) & {"asyncio.wait_for"})
        wait_method = last_name(call.func) in _WAIT_METHODS
        if not blocking_only:
            if set(keywords) & _TIMEOUT_KEYWORDS or waits_for:
                return True
            if wait_method and len(positional) == 1 and len(call.args) == 1:
                return True
            if last_name(call.func) in ("wait", "join", "result") and not positional and any(a.star == "**" for a in call.args):
                return True  # ``process.wait(**wait_args)``: a timeout can only come from what it was given
            continue
        if waits_for and (len(positional) > 1 or "timeout" in keywords):
            return True
        if wait_method and isinstance(call.func, cst.Attribute) and (
            (len(positional) == 1 and not keywords and _is_timeout_value(positional[0]))
            or (not positional and keywords and set(keywords) <= _TIMEOUT_KEYWORDS | {"block"})
        ):
            return True
    return False


def _is_timeout_value(expr: cst.BaseExpression) -> bool:
    """``5``, ``0.5``, ``timeout``, ``self._poll_interval``: what a timed wait is given (not a URL)."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    name = dotted_name(expr) or ""
    return bool(re.search(r"(timeout|wait|delay|interval|seconds|secs)", name.rsplit(".", 1)[-1], re.I))


def _named_operation(node: cst.Try, ctx: ModuleContext) -> Optional[cst.Call]:
    """The call messages and ``explain`` name: :func:`_operation`'s choice, passing over what
    only reshapes local data (``range``, ``zip``, ``stream.seek(0)``), builds the failure
    (``raise TimeoutError(...)``) or reads a clock, and over a ``with`` item that only sets up
    the call in its body (``async with aiohttp.ClientSession() as session: await hook.run(...)``);
    a body that reads what the item returned (``with urlopen(url) as r: r.read()``) names the item."""
    setup: Optional[Tuple[cst.Call, Optional[str]]] = None
    for n in walk(node.body, skip=DEFERRED):
        if not isinstance(n, cst.Call) or ctx.call_name(n) & TRIVIAL_CALLS or sleep_of(n, ctx) is not None:
            continue
        if _bookkeeping_call(n, ctx) or _reshapes_local_data(n) or isinstance(ctx.parent(n), cst.Raise):
            continue
        parent = ctx.parent(n)
        if isinstance(parent, cst.WithItem) and not reads_a_local_file(n):
            if setup is None:
                target = parent.asname.name if parent.asname is not None else None
                setup = (n, target.value if isinstance(target, cst.Name) else None)
            continue
        if setup is not None and setup[1] is not None and isinstance(n.func, cst.Attribute) \
                and (dotted_name(n.func.value) or "").split(".")[0] == setup[1]:
            return setup[0]  # ``response.read()`` consumes what ``urlopen(url)`` returned
        return n
    return setup[0] if setup is not None else None


#: Builtins and methods that reshape local data: never the operation named in a message.
_BUILTIN_HELPERS = frozenset({
    "range", "zip", "enumerate", "sorted", "reversed", "min", "max", "sum", "any", "all", "iter", "map",
    "filter", "getattr", "hasattr", "setattr", "type", "id", "hash", "round", "abs", "azip", "vars",
})
_LOCAL_STATE_METHODS = frozenset({"setLevel", "seek", "tell", "get_dict"})
_CLOCK_NAME = re.compile(r"^_?(get_)?(current_)?(time|timestamp|now)(_ns|_ms|_millis|_in_millis|_seconds)?$")


def _reshapes_local_data(call: cst.Call) -> bool:
    name = last_name(call.func) or ""
    if isinstance(call.func, cst.Name) and name in _BUILTIN_HELPERS:
        return True
    if isinstance(call.func, cst.Attribute) and name in _LOCAL_STATE_METHODS:
        return True
    return bool(_CLOCK_NAME.match(name)) and not call.args


def _operation(node: cst.Try, ctx: ModuleContext) -> Optional[cst.Call]:
    """The first call of the attempt that is not a wait or a trivial builtin.

    A call that only waits (``self._select_next_server()`` whose body sleeps) before the
    real call is a wait before the attempt; when every call waits, the last one is the
    attempt.
    """
    waiting: Optional[cst.Call] = None
    unguarded = _unguarded_operation(node, ctx)
    if unguarded is not None:
        return unguarded
    for n in walk(node.body, skip=DEFERRED):
        if _calls_out(n, ctx):
            sleep = sleep_of(n, ctx)
            if sleep is None:
                if _bookkeeping_call(n, ctx):
                    continue
                return n
            if sleep.delay is None:
                waiting = n
    # Only local data was touched (``items.index(STOP)``, ``time.monotonic()``): a sentinel
    # lookup or bookkeeping, no operation to retry.
    return waiting


def _unguarded_operation(node: cst.Try, ctx: ModuleContext) -> Optional[cst.Call]:
    """swiftclient's ``_retry``: ``if not self.url: self.url, self.token = self.get_auth()`` and
    ``if not self.http_conn: self.http_conn = …`` prepare the attempt only when something is
    missing; the operation is ``rv = func(self.url, self.token, …)``, then ``return rv``. When
    the try holds such set-ups, the first call of its other statements is the operation."""
    seen_setup = False
    for statement in statements(node.body):
        if isinstance(statement, cst.If):
            if _sets_up_what_is_missing(statement):
                seen_setup = True
                continue
            if not any(isinstance(n, cst.Call) for n in walk(statement, skip=DEFERRED)):
                continue  # ``if caller_response_dict is not None: kwargs['response_dict'] = {}``
            return None
        for n in walk(statement, skip=DEFERRED):
            if _calls_out(n, ctx) and sleep_of(n, ctx) is None and not _bookkeeping_call(n, ctx):
                return n if seen_setup else None
    return None


def _calls_out(node: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A call that may be the attempt's operation: not a trivial builtin."""
    return isinstance(node, cst.Call) and not (ctx.call_name(node) & TRIVIAL_CALLS)


def _sets_up_what_is_missing(node: cst.If) -> bool:
    """``if not self.url or not self.token: self.url, self.token = self.get_auth()``: the branch
    assigns a name its test finds missing (no ``else``)."""
    if node.orelse is not None:
        return False
    missing = {dotted_name(t.expression) for t in walk(node.test)
               if isinstance(t, cst.UnaryOperation) and isinstance(t.operator, cst.Not)}
    missing.discard(None)
    assigned = set()
    for n in walk(node.body, skip=DEFERRED):
        if isinstance(n, cst.Assign):
            for target in n.targets:
                elements = target.target.elements if isinstance(target.target, cst.Tuple) else [target.target]
                assigned.update(dotted_name(e.value if isinstance(e, cst.Element) else e) for e in elements)
    return bool(missing & assigned)


#: Methods that read or reshape local data: never the operation a retry repeats.
_LOCAL_METHODS = frozenset(
    {
        "index", "rindex", "rfind", "partition", "rpartition", "lstrip", "rstrip", "splitlines",
        "count", "copy", "keys", "values", "items", "format", "join", "split", "rsplit", "strip",
        "encode", "decode", "lower", "upper", "startswith", "endswith", "isoformat", "append", "extend",
        "total_seconds", "hexdigest", "uuid4", "getLogger",
    }
)


#: Clock reads under other names (a package's own ``metrics.time``, ``datetime.now``).
_CLOCK_READS = CLOCK_READS | {"now", "utcnow", "today"}


def _bookkeeping_call(call: cst.Call, ctx: ModuleContext) -> bool:
    """``time.monotonic()``, ``log.debug(...)``, ``items.index(x)``: not what the attempt does."""
    if ctx.call_name(call) & TIME_FUNCTIONS:
        return True
    name = last_name(call.func) or ""
    if name in _CLOCK_READS and not call.args:
        return True  # ``from distributed.metrics import time``; ``datetime.now()``
    if isinstance(call.func, cst.Attribute) and name in _LOCAL_METHODS:
        return True
    receiver = (dotted_name(call.func.value) or "") if isinstance(call.func, cst.Attribute) else ""
    return bool(_REPORTING.match(name)) and (
        receiver.rsplit(".", 1)[-1].lower().lstrip("_") in ("log", "logger", "logging", "") or name.startswith("log")
    )


def _in_inner_loop(node: cst.CSTNode, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    return any(isinstance(a, LOOPS) for a in _ancestors_until(node, loop, ctx))


def _success_exit(
    attempt: List[cst.CSTNode], rest: List[cst.CSTNode], loop: cst.CSTNode, ctx: ModuleContext, result_names: FrozenSet[str],
    inner: bool = False, flag_roots: Optional[List[cst.CSTNode]] = None,
) -> bool:
    """Does the normal completion of the attempt leave the loop?

    In a try of an inner loop, a ``break`` leaves only the inner loop."""
    for exit_node, guard, positive in exits_in(attempt + rest, ctx):
        if isinstance(exit_node, cst.Break) and (inner or _in_inner_loop(exit_node, loop, ctx)):
            continue
        if isinstance(exit_node, cst.Break) and _after_stop_wait(exit_node, ctx):
            continue
        if guard is None or is_success_test(guard.test, positive, ctx, result_names):
            return True
        if positive and _connected_state(guard.test) and any(
                isinstance(n, cst.Call) and _CONNECTS_CALL.search(last_name(n.func) or "")
                for root in attempt for n in walk(root, skip=DEFERRED)):
            # tarantool's reconnect: ``self.connect_basic()``, then ``else: if self.connected:
            # break``: the state the connect call sets says the attempt worked
            return True
        if isinstance(exit_node, cst.Return) and exit_node.value is not None \
                and any(isinstance(n, cst.Call) for n in walk(exit_node.value, skip=DEFERRED)) \
                and not set(_names(guard.test)) & result_names:
            # ``if self.workflow_run_id is not None: return self.client.Subscribe(...)`` (hatchet):
            # the test chooses which call to make, from what the loop does not change, and the
            # attempt returns that call's result
            return True
    if isinstance(loop, cst.While):
        # ``while not done`` / ``while result is None``: the attempt itself sets the flag
        # (not the timeout of ``while not stop.wait(timeout=refresh_time)``).
        tested = set(_names(loop.test)) - {
            n for call in walk(loop.test) if isinstance(call, cst.Call) and last_name(call.func) == "wait"
            for arg in call.args for n in _names(arg.value)
        }
        for root in attempt if flag_roots is None else flag_roots:
            for node in walk(root, skip=DEFERRED + LOOPS + (cst.ExceptHandler,)):
                if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = node.targets if isinstance(node, cst.Assign) else [node]
                    if isinstance(node, cst.AugAssign):
                        continue  # ``wait += 1`` steps a count towards the loop's bound: no exit
                    for target in targets:
                        if dotted_name(target.target) in tested and not _keeps_the_loop_going(
                                loop.test, dotted_name(target.target), node.value):
                            return True
    return False


_CONNECTS_CALL = re.compile(r"(^|_)(re)?(connect|open|login|log_in|authenticate)(_|$)", re.I)


def _connected_state(test: cst.BaseExpression) -> bool:
    """``self.connected``, ``conn.is_open``: a flag saying a connection is up."""
    return isinstance(test, (cst.Name, cst.Attribute)) and bool(
        CONNECTED_STATE.match((dotted_name(test) or "").rsplit(".", 1)[-1]))


def _operands(test: cst.BaseExpression) -> List[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation):
        return _operands(test.left) + _operands(test.right)
    return [test]


def _keeps_the_loop_going(test: cst.BaseExpression, name: Optional[str], value: Optional[cst.BaseExpression]) -> bool:
    """``is_alive = True`` in the attempt of ``while is_alive and wait < max_wait:`` (jenkinsapi
    waiting for Jenkins to go down): the flag is set to the value that goes round again, so a
    good answer is no exit. Only literal values are read; ``while not done`` with ``done = True``
    leaves."""
    if not isinstance(value, cst.Name) or value.value not in ("True", "False"):
        return False
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return False  # either side may end the loop: not read
    for operand in _operands(test):
        negated = isinstance(operand, cst.UnaryOperation) and isinstance(operand.operator, cst.Not)
        if dotted_name(operand.expression if negated else operand) == name:
            return (value.value == "True") != negated
    return False


#: A local limiter and how it hands out permits: ``rate_limiter.acquire(want)``, ``bucket.consume(1)``.
_LIMITER = re.compile(r"(limit|throttl|bucket|semaphore|permit)", re.I)
_PERMIT_METHODS = frozenset({"acquire", "try_acquire", "consume", "try_consume", "reserve"})


def _asks_for_a_permit(call: cst.Call) -> bool:
    """``result = rate_limiter.acquire(want)``, then ``if result.ok: return`` and
    ``sleep(result.time_to_wait)`` (tos): the loop waits its turn at a limiter in this process."""
    inner = unwrap_await(call)
    func = inner.func if isinstance(inner, cst.Call) else call.func
    return (
        isinstance(func, cst.Attribute) and func.attr.value in _PERMIT_METHODS
        and bool(_LIMITER.search((dotted_name(func.value) or "").rsplit(".", 1)[-1]))
    )


#: The receiver of a wait that a shutdown ends: ``self.stop_event``, ``self._closing``.
_STOP_SIGNAL = re.compile(r"(stop|shutdown|exit|clos|cancel|quit|terminat|halt)", re.I)


def _after_stop_wait(exit_node: cst.Break, ctx: ModuleContext) -> bool:
    """``await wait_for(self.stop_event.wait(), timeout=1.0)`` then ``break``: the break is the
    shutdown the stop signal asks for, and the pass that times out goes round again (nacos's
    periodic refresh), so the work before it is not an attempt that leaves on success."""
    line = ctx.parent(exit_node)
    block = ctx.parent(line) if line is not None else None
    if not isinstance(block, cst.IndentedBlock):
        return False
    members = list(block.body)
    index = next((i for i, m in enumerate(members) if m is line), 0)
    if index == 0:
        return False
    for node in walk(members[index - 1]):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "wait":
            if _STOP_SIGNAL.search(dotted_name(node.func.value) or ""):
                return True
    return False


#: Names of what is still failing: ``if not to_retry: break`` means everything succeeded.


def is_success_test(test: cst.BaseExpression, positive: bool, ctx: ModuleContext, result_names: FrozenSet[str]) -> bool:
    test = unwrap_await(test)  # ``if not await self.should_retry(resp, err):`` as its sync twin
    if isinstance(test, cst.Call) and RETRY_DECISION.search(last_name(test.func) or ""):
        # ``if not retry_func(response): return response``: true means "retry".
        return not positive and _mentions_result(test, result_names)
    if not positive and isinstance(test, (cst.Name, cst.Attribute)) and LEFTOVER.search(dotted_name(test) or ""):
        return _mentions_result(test, result_names)
    statuses = status_set(test, ctx)
    if statuses is not None:
        taken = statuses if positive else ALL_STATUSES - statuses
        return any(200 <= s < 300 for s in taken)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return is_success_test(test.expression, not positive, ctx, result_names)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0].operator
        right = test.comparisons[0].comparator
        if isinstance(right, cst.Name) and right.value == "None":
            if isinstance(op, (cst.Is, cst.Equal)):
                positive = not positive
            return positive and _mentions_result(test.left, result_names)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and positive:
        return is_success_test(test.left, True, ctx, result_names) or is_success_test(test.right, True, ctx, result_names)
    return positive and _mentions_result(test, result_names)


def _mentions_result(node: cst.CSTNode, result_names: FrozenSet[str]) -> bool:
    return any(n.split(".")[0] in result_names or n in result_names for n in _names(node))


# ---------------------------------------------------------------- HTTP status loops


def _status_site(loop: cst.CSTNode, ctx: ModuleContext, writes: Dict[str, List[Binding]]) -> Optional[StatusSite]:
    """A loop that goes round again on some HTTP statuses and exits on success."""
    body = statements(loop.body)  # type: ignore[attr-defined]
    first: Optional[cst.If] = None
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.If) and status_range(node.test, ctx) is not None:
            if any(isinstance(a, cst.ExceptHandler) for a in _ancestors_until(node, loop, ctx)):
                continue
            roots = {n.split(".")[0] for n in _names(node.test)}
            if roots & set(writes):
                first = node
                break
    if first is None:
        return None
    if _checked_before(first, loop, ctx):
        return None  # a failed status raised before this test: only successes reach it
    tail = _tail_from(body, first, ctx)
    if tail is None:
        return None
    retried: Set[int] = set()
    exits_on_success = False
    if _rounds_only_when_pending(tail):
        return None  # ``if data["error"] == "authorization_pending": continue``: a poll
    for status in sorted(ALL_STATUSES):
        # While attempts remain: ``if attempt < max_retries: sleep(...); continue`` then ``return
        # response`` goes round for the status; the return is the last attempt's give-up.
        result = status_outcomes(tail, status, ctx, more_attempts=True)
        # Retried: the status only ever goes round again (a 3xx that goes round follows a
        # redirect, a 1xx is no answer yet). Success: a 2xx can leave
        # (``if node_configs: return node_configs`` after the status check).
        if result & {FALL, CONTINUE} and not result & {RETURN, BREAK} and 400 <= status < 600:
            retried.add(status)
        if 200 <= status < 300 and result & {RETURN, BREAK}:
            exits_on_success = True
    if not retried or not exits_on_success:
        return None
    call = _response_call(first, writes)
    if call is not None:
        reads = AttemptReads(call, loop, ctx, writes, tail)
        after = ctx.location(call).line
        if all(changed_on_path(_status_path(tail, code, ctx), reads, after) is not None for code in sorted(retried)):
            return None  # ``url = response.headers["Location"]``, another host: a walk, not a resend
    if any(renews_credentials(n, None, ctx) for s in tail for n in walk_local(s)
           if isinstance(n, cst.If) and status_range(n.test, ctx) is not None):
        return None  # ``if status == 401: self._refresh_token(); continue``: a repair, then resend
    if all(400 <= s < 500 and s not in (408, 429) for s in retried):
        # Only chosen client errors go round (``if status in (404, 403): sleep; continue``):
        # the loop waits for something to exist or be allowed, as readiness checks do.
        return None
    region = [n for s in tail for n in walk_local(s)]
    status_ifs = [n for n in region if isinstance(n, cst.If) and not in_handler(n, loop, ctx)]
    readable = [n for n in status_ifs if status_range(n.test, ctx) is not None]
    unreadable = [
        n for n in status_ifs
        if status_range(n.test, ctx) is None and (mentions_status(n.test, ctx) or _delegates(n.test, writes))
    ]
    final: Optional[FrozenSet[int]] = frozenset(retried)
    if unreadable:
        final = None  # the code decides with something we cannot read (a config set, a helper)
    else:
        final = _explicit_permanent_handling(readable, frozenset(retried), ctx)
    if final:
        # ``elif 400 <= status < 500: retries = self._handle_client_error(response, ...)``, a helper
        # that raises unless the error is retryable: those statuses are decided there, unread
        classified: Dict[Tuple[int, ...], bool] = {}
        kept = set()
        for code in final:
            path = _status_path(tail, code, ctx)
            key = tuple(id(n) for n in path)
            if key not in classified:
                classified[key] = _classified_by_helper(path, ctx)
            if not classified[key]:
                kept.add(code)
        final = frozenset(kept) or None
    if final:
        entered = _entered_for_statuses(loop, ctx)
        if entered is not None:
            # gen3's ``if response.status_code >= 500: for _ in range(MAX_RETRIES): ...``: the
            # retry exists for the statuses that led into it
            final = frozenset(final & entered) or None
    success = tuple(
        branch
        for n in readable
        for branch in _success_branches(n, ctx)
    )
    return StatusSite(first, call, final, success, _decider(readable, retried, ctx))


def _entered_for_statuses(loop: cst.CSTNode, ctx: ModuleContext) -> Optional[FrozenSet[int]]:
    """The statuses for which an ``if`` around the loop (in the same function) lets it run."""
    for ancestor in ctx.ancestors(loop):
        if isinstance(ancestor, DEFERRED):
            return None
        if isinstance(ancestor, cst.If) and ctx.is_inside(loop, ancestor.body):
            tested = status_range(ancestor.test, ctx)
            if tested is not None and tested[0] == tested[1] and tested[0]:
                return tested[0]
    return None


def _classified_by_helper(path: Sequence[cst.CSTNode], ctx: ModuleContext) -> bool:
    """A step of the path hands the response to a helper of this module that may raise. Only
    the path's own simple statements count (a compound one we could not split, say the try
    around the request, holds the attempt and the success path as well)."""
    for statement in path:
        if isinstance(statement, cst.BaseCompoundStatement):
            continue
        for call in statement_calls(statement):
            if not ctx.summaries.may_raise(ctx.helper_key(call)):
                continue
            if any(RESPONSE_OR_STATUS.search(dotted_name(arg.value) or "") for arg in call.args):
                return True
    return False


def _tail_from(stmts: Sequence[cst.CSTNode], first: cst.If, ctx: ModuleContext) -> Optional[List[cst.CSTNode]]:
    """What runs from the status test on: the rest of its block, then what follows the blocks it
    sits in. An ``if`` around it that is no status test (sentinelhub's ``if sleep_time == 0:``
    around the request) is entered: its other branch never sees a response."""
    start = next((i for i, s in enumerate(stmts) if s is first or ctx.is_inside(first, s)), None)
    if start is None:
        return None
    outer = stmts[start]
    if outer is not first and isinstance(outer, (cst.If, cst.With)) and not (
            isinstance(outer, cst.If) and status_range(outer.test, ctx) is not None):
        if ctx.is_inside(first, outer.body):
            inner = _tail_from(statements(outer.body), first, ctx)
            return None if inner is None else inner + list(stmts[start + 1:])
    return list(stmts[start:])


def _status_path(stmts: Sequence[cst.CSTNode], status: int, ctx: ModuleContext) -> List[cst.CSTNode]:
    """The statements a response with ``status`` may run through: status tests decided for it
    (``if resp.status < 300: mark = next_marker`` is no step of a 503's way back)."""
    path: List[cst.CSTNode] = []
    for node in stmts:
        branch = status_branch(node, status, ctx) if isinstance(node, cst.If) else None
        if branch is not None:
            path += _status_path(branch, status, ctx)
        else:
            path.append(node)
    return path


def _decider(status_ifs: List[cst.If], retried: Set[int], ctx: ModuleContext) -> Optional[cst.If]:
    """The first status test whose branch for a retried status goes round with ``continue``:
    preferably one that names the status (``elif status == 429: continue``), not the earlier
    ``if status == 200: return`` whose ``else`` holds it."""
    for node in status_ifs:
        tested = status_range(node.test, ctx)
        for code in sorted(retried):
            if tested is not None and code in tested[0]:
                branch = status_branch(node, code, ctx)
                if branch is not None and CONTINUE in status_outcomes(branch, code, ctx):
                    return node
    for node in status_ifs:
        for code in sorted(retried):
            branch = status_branch(node, code, ctx)
            if branch is not None and CONTINUE in status_outcomes(branch, code, ctx):
                return node
    return None


def _checked_before(test_if: cst.If, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """Before the status test, the response went through ``raise_for_status()`` or a helper of
    this module that raises for every failed status (``self._check_response(response, msg)``)."""
    roots = {n.split(".")[0] for n in _names(test_if.test)}
    line = ctx.location(test_if).line
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if not isinstance(node, cst.Call) or ctx.location(node).line >= line or in_handler(node, loop, ctx):
            continue
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "raise_for_status":
            if (dotted_name(func.value) or "").split(".")[0] in roots:
                return True
        elif ctx.summaries.raises_for_status(ctx.helper_key(node)) and any(
            (dotted_name(unwrap_await(a.value)) or "").split(".")[0] in roots for a in node.args
        ):
            return True
    return False


def _rounds_only_when_pending(stmts: Sequence[cst.CSTNode]) -> bool:
    """An ``if`` on a protocol's "not yet" answer goes round, and what follows it leaves."""
    for index, statement in enumerate(stmts):
        if not isinstance(statement, cst.If) or not tests_pending(statement.test):
            continue
        body, _ = if_branches(statement)
        after = outcomes(stmts[index + 1 :])
        if outcomes(body) & {CONTINUE, FALL} and after and after <= EXITS:
            return True
        if _pending_chain_else_leaves(statement):
            return True
    return False


def _pending_chain_else_leaves(chain: cst.If) -> bool:
    """``if error == "slow_down": interval += 5`` ``elif error == "authorization_pending":
    continue`` ``else: raise`` (an OAuth device-flow poll, logfire's gateway login): every branch
    that goes round tests a "not yet" answer, and the last ``else`` leaves."""
    node: Optional[cst.CSTNode] = chain
    while isinstance(node, cst.If):
        if not tests_pending(node.test):
            return False
        node = node.orelse
    if not isinstance(node, cst.Else):
        return False
    rest = outcomes(statements(node.body))
    return bool(rest) and rest <= EXITS


def _leaves_unless_pending(rest: Sequence[cst.CSTNode]) -> bool:
    """``if ret != pycurl.E_CALL_MULTI_PERFORM: break`` after the try: only a protocol's "call
    again" answer goes round, whatever the attempt raised (its code lands in ``ret``)."""
    if not rest or not isinstance(rest[0], cst.If) or rest[0].orelse is not None:
        return False
    test = rest[0].test
    negated = isinstance(test, cst.Comparison) and all(
        isinstance(c.operator, (cst.NotEqual, cst.NotIn)) for c in test.comparisons
    )
    return negated and tests_pending(test) and bool(outcomes(statements(rest[0].body))) and outcomes(
        statements(rest[0].body)) <= EXITS


def tests_pending(test: cst.BaseExpression) -> bool:
    for node in walk(test):
        if isinstance(node, cst.SimpleString) and PENDING.search(node.value):
            return True
        if isinstance(node, cst.Attribute) and PENDING.search(node.attr.value) and node.attr.value.isupper():
            return True  # ``State.PENDING``
    return False


def _explicit_permanent_handling(status_ifs: List[cst.If], retried: FrozenSet[int], ctx: ModuleContext) -> FrozenSet[int]:
    """When the code exits explicitly on some 4xx, only 4xx it explicitly retries count.

    ``if status == 200: return … elif status in (404, 403, 405): return None`` handles
    the client errors it knows; the statuses that fall through were not chosen for retry.
    """
    exits_4xx: Set[int] = set()
    retries: Set[int] = set()
    for node in status_ifs:
        sure, may = status_range(node.test, ctx) or (frozenset(), ALL_STATUSES)
        body, orelse = if_branches(node)
        for branch, statuses in ((body, sure), (orelse, ALL_STATUSES - may)):
            if branch is None:
                continue
            result = outcomes(branch)
            permanent = {s for s in statuses if 400 <= s < 500 and s not in (408, 429)}
            if result and result <= EXITS:
                exits_4xx |= permanent
                if _asks_a_classifier(node.test, ctx):
                    # ``if not is_recoverable(r.status): return r``: what it accepts was chosen
                    retries |= set(ALL_STATUSES - statuses)
            elif CONTINUE in result:
                retries |= set(statuses)
    if not exits_4xx:
        return retried
    return frozenset(s for s in retried if not (400 <= s < 500) or s in retries)


def _asks_a_classifier(test: cst.BaseExpression, ctx: ModuleContext) -> bool:
    """The test is a status predicate's answer (``is_recoverable(r.status)``, negated or not)."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    test = unwrap_await(test)
    return isinstance(test, cst.Call) and classified(test, ctx) is not None


def _success_branches(node: cst.If, ctx: ModuleContext) -> List[cst.CSTNode]:
    sure, may = status_range(node.test, ctx) or (frozenset(), ALL_STATUSES)
    out = []
    # ``if status != 200:`` is taken by a 204 too, but it is the failures' way: a branch is the
    # success way only when no 4xx/5xx surely takes it.
    if any(200 <= s < 300 for s in sure) and not any(400 <= s < 600 for s in sure):
        out.append(node.body)
    elif isinstance(node.orelse, cst.Else) and any(200 <= s < 300 for s in ALL_STATUSES - may) \
            and not any(400 <= s < 600 for s in ALL_STATUSES - may):
        # An ``elif`` is a status test of its own (judged when the caller reaches it): taking
        # the whole chain after ``elif 300 <= status < 400`` as the 2xx way would hide the
        # ``elif status == 429: sleep(2)`` in it.
        out.append(node.orelse)
    return out


def _delegates(test: cst.BaseExpression, writes: Dict[str, List[Binding]]) -> bool:
    """A call in the test that is handed the response: ``retry.handle_retry_on_status(resp.status)``."""
    for node in walk(test):
        if isinstance(node, cst.Call) and any(
            name.split(".")[0] in writes for arg in node.args for name in _names(arg.value)
        ):
            return True
    return False


def _ancestors_until(node: cst.CSTNode, stop: cst.CSTNode, ctx: ModuleContext):
    for ancestor in ctx.ancestors(node):
        if ancestor is stop:
            return
        yield ancestor


def _response_call(test_if: cst.If, writes: Dict[str, List[Binding]]) -> Optional[cst.Call]:
    for name in _names(test_if.test):
        for binding in writes.get(name.split(".")[0], []):
            value = unwrap_await(binding.value) if binding.value is not None else None
            if isinstance(value, cst.Call):
                return value
    return None


# ---------------------------------------------------------------- bounds


def _bound(
    loop: cst.CSTNode,
    ctx: ModuleContext,
    iteration: Iteration,
    counters: Dict[str, CounterInfo],
    writes: Dict[str, List[Binding]],
    retry_trys: List[TryAnalysis],
    defaults: bool = False,
    status: Optional[StatusSite] = None,
) -> Tuple[Bound, Optional[cst.CSTNode]]:
    """The site's bound: the loosest over its retry paths (``defaults``: limits read as their
    parameters' defaults, see :func:`_attempts_by_default`).

    A guard inside one ``except`` handler bounds only that handler's path: a limit on
    timeouts does not stop the retries of connection errors. So does a guard inside the branch
    that sends a status round (``if response.status_code == 429: sleep(retry_after); continue``):
    a limit on connection errors does not stop the 429s.
    """
    failing = frozenset(
        name for t in retry_trys for h in t.handlers for name in failure_names(h, ctx)
    )
    attempt_line = min((ctx.location(t.node).line for t in retry_trys), default=0)
    env = GuardEnv(ctx, counters=counters, loop_writes=writes, failure_names=failing,
                   attempt_line=attempt_line, appended=_appended(loop), defaults=defaults)
    handlers = [h for t in retry_trys for h in t.retrying]
    shared = _PathBound(attempts=iteration.attempts, deadline=_enclosing_timeout(loop, ctx))
    per_handler = {id(h.node): _PathBound() for h in handlers}
    decider = status.decider if status is not None else None
    status_path = _PathBound() if decider is not None else None
    texts: List[str] = []
    give_up: Optional[cst.CSTNode] = None
    if iteration.attempts is not None:
        texts.append(iteration.text)
    if shared.deadline is not None:
        texts.append("inside a timeout context")
    if isinstance(loop, cst.While) and not iteration.infinite:
        guard = classify_guard(loop.test, env, ctx.location(loop).line, at_loop_head=True)
        shared.apply(guard)
        if guard.kind in ("counter", "deadline"):
            texts.append(iteration.text)
        elif guard.kind in ("flag", "failure") and _flag_set_by_decision(loop.test, writes, retry_trys, ctx):
            shared.possible = True  # ``while retry_active:`` with ``retry_active = self.increment(...)``
        elif guard.kind in ("flag", "failure"):
            # ``while retry:`` with ``retry = _try < self._retries`` on the failure path (influxdb):
            # the flag holds the count's test, read as if the loop head made it.
            for comparison in _flag_set_by_count(loop.test, writes, retry_trys, ctx):
                counted_guard = classify_guard(comparison, env, ctx.location(comparison).line, at_loop_head=True)
                if counted_guard.kind in ("counter", "deadline"):
                    shared.apply(counted_guard)
                    texts.append(f"{iteration.text}, {ctx.code(comparison)}")
                    break
    attempt_regions = [t.node.body for t in retry_trys] + [t.node.orelse for t in retry_trys if t.node.orelse]
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Expr) and _raises_when_expired(node):
            shared.possible = True  # ``timer.maybe_raise()``
            continue
        if not isinstance(node, cst.If) or not guard_exits(node, ctx):
            continue
        owner = next((h for h in handlers if ctx.is_inside(node, h.node)), None)
        if owner is None and any(ctx.is_inside(node, h.node) for t in retry_trys for h in t.handlers):
            continue  # a test on the path of a failure that is not retried (rq's DequeueTimeout) bounds nothing
        if owner is not None:
            target = per_handler[id(owner.node)]
        elif status_path is not None and node is not decider and ctx.is_inside(node, decider):
            target = status_path
        else:
            target = shared
        if _is_gate(node):
            target.possible = True  # ``if retry.handle_retry(): continue``: a policy object decides
            continue
        if _one_shot(node, ctx) or _one_shot_flag(node, writes, loop, ctx):
            target.attempts = _tighter(target.attempts, 2)  # a flag allows a single retry
            texts.append("once: if " + ctx.code(node.test))
            continue
        guard = classify_guard(node.test, env, ctx.location(node).line, negated=not body_exits(node))
        if guard.kind == "unknown" and any(ctx.is_inside(node, region) for region in attempt_regions):
            # A test on the success path is not a bound, unless it gives up by raising
            # (``if not eligible_servers: raise NoServersError``).
            if not any(RAISE in outcomes(b) for b in if_branches(node) if b is not None):
                continue
        before = (target.attempts, target.deadline)
        target.apply(guard)
        if guard.kind in ("counter", "deadline"):
            texts.append("if " + ctx.code(node.test))
            if (target.attempts, target.deadline) != before or give_up is None:
                give_up = node
    for handler in handlers:
        if _delegates_to_policy(handler) or _hands_over_the_limit(handler, ctx):
            per_handler[id(handler.node)].possible = True
    if status is not None and not retry_trys and _status_path_hands_over_the_limit(loop, status, ctx):
        # lago's ``handle_rate_limit_response(response, config, retry_attempt)``: raises when spent
        (status_path or shared).possible = True
    paths = [shared.merged(per_handler[id(h.node)]) for h in handlers]
    if status_path is not None:
        paths.append(shared.merged(status_path))
    paths = paths or [shared]
    return _loosest(paths, "; ".join(texts)), give_up


@dataclass
class _PathBound:
    attempts: Num = None
    deadline: Num = None
    #: A test we cannot read may stop the retry: the bound exists but is unknown.
    possible: bool = False

    def apply(self, guard) -> None:
        if guard.kind == "counter":
            self.attempts = _tighter(self.attempts, guard.attempts)
        elif guard.kind == "deadline":
            self.deadline = _tighter(self.deadline, guard.deadline)
        elif guard.kind == "unknown":
            self.possible = True

    def merged(self, other: "_PathBound") -> "_PathBound":
        return _PathBound(
            _tighter(self.attempts, other.attempts),
            _tighter(self.deadline, other.deadline),
            self.possible or other.possible,
        )

    def bound(self, text: str) -> Bound:
        attempts = self.attempts
        if attempts is None and self.deadline is None and self.possible:
            attempts = UNKNOWN
        return Bound(attempts=attempts, deadline=self.deadline, text=text)


def _loosest(paths: List[_PathBound], text: str) -> Bound:
    bounds = [p.bound(text) for p in paths]
    if any(b.unbounded for b in bounds):
        return Bound(text="")
    first = bounds[0]
    if all((b.attempts, b.deadline) == (first.attempts, first.deadline) for b in bounds):
        return first
    # Paths stop at different limits: the site is bounded, by limits that depend on the error.
    return Bound(attempts=UNKNOWN, text=text)


_EXPIRY_CALL = re.compile(r"(maybe_raise|raise_if_expired|raise_on_timeout|check_deadline|check_timeout|ensure_time)", re.I)


def _raises_when_expired(statement: cst.Expr) -> bool:
    value = unwrap_await(statement.value)
    return isinstance(value, cst.Call) and bool(_EXPIRY_CALL.search(last_name(value.func) or ""))


def _one_shot(node: cst.If, ctx: ModuleContext) -> bool:
    """``if ex.status == 410 and retry_410: retry_410 = False; continue``: a flag allows one retry."""
    body, _ = if_branches(node)
    if CONTINUE not in outcomes(body):
        return False
    tested = set(_names(node.test))
    for statement in body:
        if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Name):
            if statement.value.value in ("False", "None") and any(
                dotted_name(t.target) in tested for t in statement.targets
            ):
                return True
    return False


def _one_shot_flag(node: cst.If, writes: Dict[str, List[Binding]], loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """``if not retry: raise`` with ``retry = False`` in the loop: one retry, then give up.

    A flag the loop sets both ways (``failure = False`` each pass, ``failure = True`` in the
    handler) says how this pass went, not that the retry was spent; so does one reset by a
    statement of the loop's own body at the start of every pass, before the test reads it
    (``emitted = False`` before the try, set in an inner ``async for``). ``can_retry = False``
    after the test is the one-shot flag itself."""
    own = set(statements(loop.body))  # type: ignore[attr-defined]
    test_line = ctx.location(node).line
    for name in {n for n in _names(node.test)}:
        bindings = writes.get(name, [])
        if any(b.node in own and ctx.location(b.node).line < test_line for b in bindings):
            continue
        if bindings and all(
            isinstance(b.value, cst.Name) and b.value.value in ("False", "None", "True") for b in bindings
        ) and len({b.value.value for b in bindings}) == 1:
            body, orelse = if_branches(node)
            return any(b is not None and outcomes(b) & EXITS for b in (body, orelse))
    return False


_POLICY_RECEIVER = re.compile(r"(retry_?policy|retrier|retryer|retry_?strategy|policy|backoff|back_?off)$", re.I)
_POLICY_METHOD = re.compile(r"^(back_?off|should_retry|increment|next_backoff|on_failure|handle_retry\w*)$", re.I)


def _asks_a_policy(node: cst.CSTNode) -> bool:
    """``if ok or not retry_policy.should_retry(response, exc, n): break`` after the try
    (azure-datalake-store): the policy object decides, and its ``should_retry`` sleeps."""
    if not isinstance(node, cst.If):
        return False
    for call in walk(node.test):
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            receiver = (dotted_name(call.func.value) or "").rsplit(".", 1)[-1]
            if _POLICY_RECEIVER.search(receiver) or _POLICY_METHOD.match(call.func.attr.value):
                return True
    return False


def _delegates_to_policy(handler: Handler) -> bool:
    """``retry_policy.back_off(wait)``: a policy object decides, may sleep, and may give up."""
    for node in walk(handler.node.body, skip=DEFERRED):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            receiver = (dotted_name(node.func.value) or "").rsplit(".", 1)[-1]
            if _POLICY_RECEIVER.search(receiver) or _POLICY_METHOD.match(node.func.attr.value):
                return True
    return False


_LIMIT_WORDS = re.compile(r"(deadline|attempts?|retries|retry|tries|max_?time|budget|time_?left|remaining)", re.I)


def _hands_over_the_limit(handler: Handler, ctx: ModuleContext) -> bool:
    """``_delay_until_retry(exc, deadline, attempts)``: a helper handed the deadline or the count
    may well raise when it is spent (a bound we cannot read)."""
    stepped = frozenset(dotted_name(n.target) for n in walk(handler.node.body, skip=DEFERRED) if isinstance(n, cst.AugAssign))
    return any(_takes_the_limit(node, ctx, stepped) for node in statement_calls(handler.node.body))


def _status_path_hands_over_the_limit(loop: cst.CSTNode, status: StatusSite, ctx: ModuleContext) -> bool:
    """After the status test, a helper is handed the attempt count or deadline (or counts and
    raises when spent): the bound of a status loop that may well be there, unread. A delay
    handed on (``retry_after``) is not the count."""
    after = ctx.location(status.test).line
    return any(_takes_the_limit(node, ctx, delays_count=False) for node in statement_calls(loop.body)  # type: ignore[attr-defined]
               if ctx.location(node).line > after and node is not status.response)


def _takes_the_limit(node: cst.Call, ctx: ModuleContext, stepped: FrozenSet[str] = frozenset(),
                     delays_count: bool = True) -> bool:
    """The call counts the attempts and raises when spent (``self._check_attempts()``), compares a
    counter ``stepped`` just before it (``timeouts += 1`` then ``_raise_if_needed(exc)``), or is
    handed the count or the deadline (``delays_count``: a name of a delay counts as one too)."""
    key = ctx.helper_key(node)
    if ctx.summaries.limits(key) or stepped & ctx.summaries.limit_names(key):
        return True
    if ctx.call_name(node) & SLEEP_FUNCTIONS or _bookkeeping_call(node, ctx):
        return False
    lasts = [n.rsplit(".", 1)[-1] for arg in node.args for n in _names(arg.value) if n]
    return any(_LIMIT_WORDS.search(last) and (delays_count or not _DELAY_WORDS.search(last)) for last in lasts)


#: ``retry_after``, ``retry_delay``: what a helper is told to wait, not how many attempts are left.
_DELAY_WORDS = re.compile(r"after|delay|wait|sleep|backoff|interval", re.I)


def _is_gate(node: cst.If) -> bool:
    """An If that sends the loop round again when a policy object says so.

    ``if retry.handle_retry(): continue``: the call decides, and may well sleep. A predicate
    about the failure (``exc.has_error_label(…)``, ``is_retryable(e)``) only filters.
    """
    body, _ = if_branches(node)
    if CONTINUE not in outcomes(body):
        return False
    for n in walk(node.test):
        if isinstance(n, cst.Call):
            name = last_name(n.func) or ""
            if name in ("isinstance", "getattr", "hasattr", "len", "type") or _PREDICATE.search(name):
                continue
            return True
    return False


def _enclosing_timeout(loop: cst.CSTNode, ctx: ModuleContext) -> Num:
    """``async with asyncio.timeout(30): while True: …``: the context is the deadline."""
    for ancestor in ctx.ancestors(loop):
        if isinstance(ancestor, DEFERRED):
            return None
        if isinstance(ancestor, cst.With):
            for item in ancestor.items:
                call = unwrap_await(item.item)
                if not isinstance(call, cst.Call):
                    continue
                names = ctx.call_name(call)
                if names & _CANCEL_SCOPES and "deadline" in call_args(call)[1]:
                    return UNKNOWN  # an absolute deadline: a bound, of a value we cannot read
                if names & _TIMEOUT_CONTEXTS:
                    positional, keywords = call_args(call)
                    value = positional[0] if positional else next(iter(keywords.values()), None)
                    return _const(value, DelayEnv(ctx, callers=False)) if value is not None else UNKNOWN
    return None


def _flag_set_by_decision(test: cst.BaseExpression, writes, retry_trys: List[TryAnalysis], ctx: ModuleContext) -> bool:
    """The ``while`` flag is set from a call on the failure path: that call decides when to stop."""
    for name in _names(test):
        for binding in writes.get(name, []):
            value = unwrap_await(binding.value) if binding.value is not None else None
            if isinstance(value, cst.Call) and any(
                ctx.is_inside(binding.node, h.node) for t in retry_trys for h in t.retrying
            ):
                return True
    return False


def _flag_set_by_count(test: cst.BaseExpression, writes, retry_trys: List[TryAnalysis],
                       ctx: ModuleContext) -> List[cst.Comparison]:
    """``retry = _try < self._retries`` in a retrying handler, for ``while retry:``."""
    if not isinstance(test, cst.Name):
        return []
    found = []
    for binding in writes.get(test.value, []):
        value = binding.value
        if isinstance(value, cst.Comparison) and any(
                ctx.is_inside(binding.node, h.node) for t in retry_trys for h in t.retrying):
            found.append(value)
    return found


def _tighter(a: Num, b: Num) -> Num:
    if a is None:
        return b
    if b is None:
        return a
    if known(a) and known(b):
        return min(a, b)  # type: ignore[type-var]
    return a if known(a) else b if known(b) else UNKNOWN


def _appended(loop: cst.CSTNode) -> FrozenSet[str]:
    out = set()
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "add"):
            name = dotted_name(node.func.value)
            if name:
                out.add(name)
    return frozenset(out)


# ---------------------------------------------------------------- delays


def _delay(
    loop: cst.CSTNode,
    ctx: ModuleContext,
    iteration: Iteration,
    counters: Dict[str, CounterInfo],
    writes: Dict[str, List[Binding]],
    sleeps: List[Sleep],
    retry_trys: List[TryAnalysis],
    status: Optional[StatusSite],
) -> Tuple[Delay, Optional[Location], Tuple[str, ...], Optional[cst.Call]]:
    """The delay before the next attempt, path by path.

    Paths that disagree make the schedule unknown; the failures retried with no delay
    at all while others wait are returned as well.
    """
    mutated = _method_receivers(loop)
    env_for = lambda sleep: DelayEnv(  # noqa: E731 - a small factory, used twice
        ctx,
        counters=counters,
        loop_writes=writes,
        step_targets=iteration.step_targets,
        opaque_targets=iteration.opaque_targets,
        sleep_line=ctx.location(sleep.call).line,
        sleep_node=sleep.call,
        mutated=mutated,
    )
    usable = [s for s in sleeps if not _in_exit_branch(s.call, loop, ctx)]
    in_try = lambda s: any(ctx.is_inside(s.call, t.node) for t in retry_trys)  # noqa: E731
    in_rest = lambda s: any(ctx.is_inside(s.call, r) or s.call is r for t in retry_trys for r in t.rest)  # noqa: E731
    top = [s for s in usable if not in_try(s) and not in_rest(s)]
    paths: List[List[Sleep]] = []
    hidden: List[bool] = []
    # ``for _ in ExponentialBackoff():``: the iterator waits on each step.
    waits_per_item = isinstance(loop, cst.For) and _iterates_a_backoff(loop, ctx)
    timeouts: List[bool] = []
    owners: List[Tuple[str, ...]] = []
    for analysis in retry_trys:
        before_operation = _sleeps_before_operation(analysis, usable, ctx)
        rest_sleeps = [s for s in usable if any(ctx.is_inside(s.call, r) or s.call is r for r in analysis.rest)]
        for handler in analysis.retrying:
            own = [s for s in usable if ctx.is_inside(s.call, handler.node)]
            falls = FALL in outcomes(statements(handler.node.body))
            paths.append(top + before_operation + own + (rest_sleeps if falls else []))
            hidden.append(_hidden_wait(analysis, handler, ctx) or attempt_waits_with_timeout(analysis.node, ctx, blocking_only=True) or waits_per_item)
            timeouts.append(bool(handler.names) and all("timeout" in n.rsplit(".", 1)[-1].lower() for n in handler.names))
            owners.append(handler.names or ("everything",))
            some_attempts = own and falls and _sleeps_only_on_some_attempts(own, loop, handler, counters, ctx)
            if own and falls and (_sleeps_only_for_some_failures(handler, own, ctx) or some_attempts):
                # ``except AirflowException as exc: if str(exc).startswith("404"): sleep(...)``: the
                # other failures go round at once; ``if ttl < TTL / 2: sleep(0.05)``: so do the
                # attempts before.
                paths.append(top + before_operation + rest_sleeps)
                hidden.append(
                    _hidden_wait(analysis, handler, ctx, skip={id(s.call) for s in own})
                    or attempt_waits_with_timeout(analysis.node, ctx, blocking_only=True) or waits_per_item
                )
                timeouts.append(False)
                other = "some attempts" if some_attempts else "other cases"
                owners.append(tuple(f"{n} ({other})" for n in (handler.names or ("everything",))))
    if status is not None and not _status_raises_into_handler(status, retry_trys, ctx):
        excluded = list(status.success_branches)
        paths.append([s for s in usable if not any(ctx.is_inside(s.call, b) for b in excluded)
                      and not any(ctx.is_inside(s.call, h.node) for t in retry_trys for h in t.handlers)])
        hidden.append(any(isinstance(n, cst.If) and _is_gate(n) for n in walk_local(loop.body)))  # type: ignore[attr-defined]
        timeouts.append(False)
        owners.append(("HTTP statuses",))
        if _status_also_goes_round_unslept(paths[-1], loop, ctx):
            # ``if reset_time > 0: sleep(reset_time); continue`` ``else: continue`` (ovhcloud): a
            # 429 without the header goes round at once
            paths.append([])
            hidden.append(False)
            timeouts.append(False)
            owners.append(("HTTP statuses (some responses)",))
    delays: List[Tuple[Delay, Optional[Sleep]]] = []
    immediate: List[str] = []
    for path, is_hidden, is_timeout, owner in zip(paths, hidden, timeouts, owners):
        if not path:
            if is_timeout and any(paths):
                continue  # the attempt already waited its timeout; the other paths set the schedule
            delays.append((Delay(DelayKind.UNKNOWN) if is_hidden else NO_DELAY, None))
            if not is_hidden:
                immediate.extend(owner)
            continue
        delay, sleep = combine_delays([(classify(s.delay, env_for(s)), s) for s in path])
        delays.append((delay, sleep))
    if not delays:
        return NO_DELAY, None, (), None
    first, sleep = delays[0]
    if all(_same_schedule(d, first) for d, _ in delays[1:]):
        honours = any(d.honours_retry_after for d, _ in delays)
        where = ctx.location(sleep.call) if sleep is not None else None
        sleeps_used = {id(s.call) for _, s in delays if s is not None}
        anchor = sleep.call if sleep is not None and len(sleeps_used) == 1 else None
        return replace(first, honours_retry_after=honours), where, (), anchor
    return Delay(DelayKind.UNKNOWN, text=first.text), None, tuple(dict.fromkeys(immediate)), None


def _status_also_goes_round_unslept(sleeps: List[Sleep], loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A status path's sleep under an ``if`` whose ``else`` goes round without sleeping."""
    for sleep in sleeps:
        guard = next((a for a in ctx.ancestors(sleep.call) if isinstance(a, cst.If)), None)
        if guard is None or not ctx.is_inside(guard, loop) or not isinstance(guard.orelse, cst.Else):
            continue
        if not ctx.is_inside(sleep.call, guard.body):
            continue
        other = statements(guard.orelse)
        if CONTINUE in outcomes(other) and not any(
                isinstance(n, cst.Call) and sleep_of(n, ctx) is not None for st in other for n in walk(st, skip=DEFERRED)):
            return True
    return False


def _status_raises_into_handler(status: StatusSite, retry_trys: List[TryAnalysis], ctx: ModuleContext) -> bool:
    """``try: … if resp.status_code > 400: resp.raise_for_status() … except Exception:
    sleep(delay)``: every retried status raises into a retrying handler, so the statuses wait
    as that handler does; they are no way round of their own."""
    if not status.retried:
        return False
    if not any(t.retrying and any(s is status.test or ctx.is_inside(status.test, s) for s in statements(t.node.body))
               for t in retry_trys):
        return False
    for code in sorted(status.retried):
        branch = status_branch(status.test, code, ctx)
        if branch is None or status_outcomes(branch, code, ctx) != frozenset({RAISE}):
            return False
    return True


#: Methods that move a schedule on: ``attempt.update_delay(now)``, ``backoff.next()``.
_STEPS_A_SCHEDULE = re.compile(r"(update|next|advance|step|increment|bump|grow|backoff|delay|fail)", re.I)


def _method_receivers(loop: cst.CSTNode) -> FrozenSet[str]:
    """Local objects the loop steps through a method (not ``self``: its attributes are
    read as set in ``__init__`` unless the loop assigns them)."""
    found = set()
    for node in walk_local(loop.body):  # type: ignore[attr-defined]
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
            if node.func.value.value not in ("self", "cls") and _STEPS_A_SCHEDULE.search(node.func.attr.value):
                found.add(node.func.value.value)
    return frozenset(found)


def _sleeps_only_for_some_failures(handler: Handler, own: List[Sleep], ctx: ModuleContext) -> bool:
    """Every sleep of the handler sits in the body of an ``if`` (no ``else``) that looks at the
    failure itself and does not leave: the failures it does not pick fall through unslept."""
    names = set(failure_names(handler, ctx))
    if not names:
        return False
    for sleep in own:
        guard = next((a for a in ctx.ancestors(sleep.call) if isinstance(a, cst.If)), None)
        if guard is None or not ctx.is_inside(guard, handler.node) or guard.orelse is not None:
            return False
        if _tests_the_delay(guard, sleep):
            return False  # ``if tts: sleep(tts)``: a zero delay is skipped, every failure waits its turn
        if _skips_for_an_instruction(guard, ctx):
            return False  # ``if not isinstance(e, ServerReloadError): sleep(...)``: told to come back now
        if not ctx.is_inside(sleep.call, guard.body) or not set(_names(guard.test)) & names:
            return False
        if outcomes(statements(guard.body)) & EXITS:
            return False
    return True


def _skips_for_an_instruction(guard: cst.If, ctx: ModuleContext) -> bool:
    """The sleep is skipped only for a failure that is the server's instruction (langsmith's
    sandbox stream: ``is_hot_reload = isinstance(e, SandboxServerReloadError)``, ``if not
    is_hot_reload: sleep(delay)``): reconnecting at once after a 1001 Going Away is what it asks."""
    tests = [guard.test]
    for name in walk(guard.test):
        if isinstance(name, cst.Name):
            bound = [b.value for b in ctx.bindings(name) if b.value is not None]
            if len(bound) == 1:
                tests.append(bound[0])
    for test in tests:
        for call in walk(test):
            if isinstance(call, cst.Call) and last_name(call.func) == "isinstance" and len(call.args) == 2:
                named = [dotted_name(n) or "" for n in walk(call.args[1].value) if isinstance(n, (cst.Name, cst.Attribute))]
                if named and all(sent_elsewhere(n.rsplit(".", 1)[-1]) for n in named if n):
                    return True
    return False


def _tests_the_delay(guard: cst.If, sleep: Sleep) -> bool:
    """The guard only asks whether there is a delay to wait (``if tts:``, ``if delay > 0:``)."""
    tested = {n for n in _names(guard.test) if n}
    waited = {n for n in _names(sleep.call) if n}
    return bool(tested) and tested <= waited


def _sleeps_only_on_some_attempts(own: List[Sleep], loop: cst.CSTNode, handler: Handler,
                                  counters: Dict[str, CounterInfo], ctx: ModuleContext) -> bool:
    """Every sleep of the handler sits in the body of an ``if`` (no ``else``, no exit) that tests
    the attempt count against something other than the loop's own bound (redis-py's cluster
    ``if ttl < self.RedisClusterRequestTTL / 2: sleep(0.05)``): the attempts it does not pick
    go round at once. ``if attempt < retries - 1: sleep(d)`` names the loop's bound: it only
    skips the wait after the last attempt, and every retry waits."""
    header = loop.iter if isinstance(loop, cst.For) else loop.test  # type: ignore[union-attr]
    bound_names = set(_names(header))
    for sleep in own:
        guard = next((a for a in ctx.ancestors(sleep.call) if isinstance(a, cst.If)), None)
        if guard is None or not ctx.is_inside(guard, handler.node) or guard.orelse is not None:
            return False
        if not ctx.is_inside(sleep.call, guard.body) or outcomes(statements(guard.body)) != {FALL}:
            return False  # ``if try_count <= MAX: sleep(2); continue`` then ``break``: the others leave
        tested = set(_names(guard.test))
        if not tested & set(counters) or (tested - set(counters)) & bound_names:
            return False
        if not (tested - set(counters)):
            return False  # ``if attempt: sleep(...)``: every retry after the first waits
    return True


def _iterates_a_backoff(loop: cst.For, ctx: ModuleContext) -> bool:
    """``for _ in ExponentialBackoff():`` (or ``retries = ExponentialBackoff(); for _ in retries``):
    the iterator waits on each step."""
    iterable = unwrap_await(loop.iter)
    values = [iterable]
    if isinstance(iterable, cst.Name):
        values = [b.value for b in ctx.bindings(iterable) if b.value is not None]
    return any(
        isinstance(v, cst.Call) and (bool(WAITISH.search(last_name(v.func) or "")) or any(
            # ``for count in utils.iterate_timeout(timeout, msg, wait=5):``: handed the wait
            a.keyword is not None and _WAIT_KEYWORD.fullmatch(a.keyword.value) for a in v.args))
        for v in map(unwrap_await, values)
    )


_WAIT_KEYWORD = re.compile(r"(wait|delay|interval|sleep|backoff|poll_interval|sleep_time|wait_time)", re.I)


def _sleeps_before_operation(analysis: TryAnalysis, sleeps: List[Sleep], ctx: ModuleContext) -> List[Sleep]:
    """A sleep inside the attempt counts only when it runs before the operation."""
    operation = analysis.operation
    if operation is None:
        return []
    line = ctx.location(operation).line
    return [
        s for s in sleeps
        if ctx.is_inside(s.call, analysis.node.body) and ctx.location(s.call).line < line and s.call is not operation
    ]


def _hidden_wait(analysis: TryAnalysis, handler: Handler, ctx: ModuleContext, skip: FrozenSet[int] = frozenset()) -> bool:
    """A wait we cannot classify on this path: the delay is unknown, not absent.

    A waiting call inside the attempt after the operation, one in a loop nested in the
    handler, or a decision handed to a policy object (``handler.can_retry(error=e)``,
    ``self.process_redirect(exc)``) that may well sleep.
    """
    for node in walk(analysis.node.body, skip=DEFERRED):
        if isinstance(node, cst.Call):
            # A helper that waits somewhere inside is likely the operation itself (a blocking
            # call with a timeout); only explicit or plainly named waits count here.
            found = sleep_of(node, ctx)
            if found is not None and found.kind != "helper" and not _goes_round_on_its_own(node, analysis.node, ctx):
                return True
    names = set(failure_names(handler, ctx))
    if _delegates_to_policy(handler) or any(_asks_a_policy(n) for r in analysis.rest for n in walk(r, skip=DEFERRED)):
        return True
    for node in walk(handler.node.body, skip=DEFERRED):
        if isinstance(node, cst.If) and _is_gate(node):
            return True
        if not isinstance(node, cst.Call) or id(node) in skip:
            continue
        if sleep_of(node, ctx) is not None:
            return True
        if _hands_over_a_delay(node):
            return True  # zenodo-get's ``handle_download_error(..., pause_duration, ..., sleep_func)``
        if names and delegates_failure(node, names, ctx) and not _cannot_wait(node, ctx):
            return True
    return False


def _converted_before_the_handlers(analysis: TryAnalysis, ctx: ModuleContext) -> bool:
    """esdk-obs's ``_get_temporary_aksk``: the attempt calls ``_do_temporary_aksk_request``, which
    turns every failure into ``TemporaryAKSKException``; the loop's first handler re-raises that
    class, so the ``except Exception: sleep(...)`` below it never runs: no retry can happen."""
    operation = analysis.operation
    calls = [n for n in walk(analysis.node.body, skip=DEFERRED) if isinstance(n, cst.Call)]
    if operation is None or calls != [operation]:
        return False  # other work in the attempt may fail with anything
    callee = ctx.program_callee(operation)
    found = ctx.program.converts(*callee) if callee is not None else None
    if found is None:
        return False
    escapes, facts, _ = found
    caught = [h.names if not h.catch_all else ("Exception",) for h in analysis.handlers]
    retrying = {id(h) for h in analysis.retrying}
    for error in escapes:
        index = catcher_of(error, caught, ctx, facts)
        if index is None or index != LEAVES and id(analysis.handlers[index]) in retrying:
            return False
    return True


def _goes_round_on_its_own(sleep: cst.Call, attempt: cst.Try, ctx: ModuleContext) -> bool:
    """monday-sdk's ``if response.status_code == 429: time.sleep(30); ...; continue`` inside the
    attempt: that sleep belongs to a path of its own, which goes round from there; it is no
    wait on the path of a failure the handler catches."""
    for ancestor in ctx.ancestors(sleep):
        if ancestor is attempt:
            return False
        if isinstance(ancestor, cst.IndentedBlock) and isinstance(ctx.parent(ancestor), (cst.If, cst.Else)) \
                and outcomes(statements(ancestor)) == frozenset({CONTINUE}):
            return True
    return False


def _cannot_wait(call: cst.Call, ctx: ModuleContext) -> bool:
    """monday-sdk's ``update_retry_context_from_exception(e, response, ...)``, imported from
    another module of the package: the program view reads it as bookkeeping (it only looks at
    the error and returns what it found), so handing it the failure adds no wait."""
    callee = ctx.program_callee(call)
    found = ctx.program.quiet(*callee) if callee is not None else None
    if found is None:
        return False
    line, facts = found
    shown = f"`{callee[0]}` only reads, computes and logs: it cannot wait"
    ctx.outside_values.append((call, Value("", callee[0], facts.path, line, shown=shown)))
    return True


#: The last part of a name that holds a pause or the function that takes it.
_PAUSE_NAME = re.compile(r"(^|_)(wait|delay|interval|sleep|backoff|pause)(_|s?$)", re.I)


def _hands_over_a_delay(call: cst.Call) -> bool:
    """A helper handed a delay (``pause_duration``) or a sleep function (``sleep_func``): it may
    well wait with them, an unknown delay rather than none. Logging calls only report them."""
    name = last_name(call.func) or ""
    if _REPORTING.match(name) or name in _BUILTIN_LOOKS or name in ("min", "max", "round", "abs", "sum", "next", "iter"):
        return False  # ``min(wait, cap)`` computes a delay; it does not wait
    for arg in call.args:
        value = arg.value
        if isinstance(value, (cst.Name, cst.Attribute)) and _PAUSE_NAME.search((dotted_name(value) or "").rsplit(".", 1)[-1]):
            return True
    return False


def delegates_failure(call: cst.Call, names: Set[str], ctx: ModuleContext, statement_only: bool = True) -> bool:
    """``handler.prepare_for_next_attempt(error=e)``, ``uri = self.process_redirect(exc)``.

    An action that is handed the failure: not a predicate in a test, not an exception
    built for ``raise``, not logging or metrics.
    """
    called = last_name(call.func) or ""
    if _REPORTING.match(called) or _PREDICATE.search(called) or called in _BUILTIN_LOOKS or RAISER_NAME.match(called):
        return False  # ``utils.raise_with_cause(..., cause=e)`` gives up; it waits for nothing
    if (dotted_name(call.func) or "").split(".")[0].lower() in ("log", "logger", "logging", "_log", "_logger"):
        return False
    if not any(set(_names(arg.value)) & names for arg in call.args):
        return False
    if not statement_only:
        return True
    parent = ctx.parent(call)
    if isinstance(parent, cst.Await):
        parent = ctx.parent(parent)
    return isinstance(parent, (cst.Expr, cst.Assign, cst.AnnAssign))


def _in_exit_branch(node: cst.CSTNode, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A sleep in a branch that always leaves the loop is not between attempts."""
    for ancestor in ctx.ancestors(node):
        if ancestor is loop:
            return False
        if isinstance(ancestor, cst.IndentedBlock) and isinstance(ctx.parent(ancestor), (cst.If, cst.Else)):
            result = outcomes(statements(ancestor))
            if result and result <= EXITS:
                return True
    return False


def combine_delays(delays: List[Tuple[Delay, Sleep]]) -> Tuple[Delay, Optional[Sleep]]:
    """One delay for a path: the schedule, with server-chosen waits (Retry-After) set aside.

    An explicit sleep is the schedule; a call that merely waits for something on the way
    (``await self.ensure_coordinator_known()``) does not change its shape.
    """
    explicit = [(d, s) for d, s in delays if s is None or s.delay is not None]
    if explicit:
        delays = explicit
    # A server-chosen wait has no shape of its own; one that mixes it with a schedule keeps it.
    scheduled = [(d, s) for d, s in delays if not (d.honours_retry_after and d.kind is DelayKind.UNKNOWN)]
    honours = len(scheduled) < len(delays)
    if not scheduled:
        delay, sleep = delays[0]
        return Delay(DelayKind.UNKNOWN, honours_retry_after=True, text=delay.text), sleep
    first, sleep = scheduled[0]
    if not all(_same_schedule(d, first) for d, _ in scheduled[1:]):
        return Delay(DelayKind.UNKNOWN, honours_retry_after=honours, text=first.text), None
    return replace(first, honours_retry_after=honours or first.honours_retry_after), sleep


def _same_schedule(a: Delay, b: Delay) -> bool:
    return (a.kind, a.base, a.factor, a.step, a.cap, a.steps, a.jitter) == (b.kind, b.base, b.factor, b.step, b.cap, b.steps, b.jitter)


# ---------------------------------------------------------------- errors and statuses


def _errors(retry_trys: List[TryAnalysis], ctx: ModuleContext, counters: Dict[str, CounterInfo]) -> Tuple[RetriedError, ...]:
    out = []
    for analysis in retry_trys:
        raises_for_status, raises_own = status_raises(analysis.node, ctx)
        rest_filter = _rest_filters(analysis.rest, ctx, counters)
        gives_up = any(isinstance(n, cst.If) and forces_give_up(n, analysis.node) for n in walk_local(analysis.node.body))
        for handler in analysis.retrying:
            index = analysis.handlers.index(handler)
            earlier_exit = any(h in analysis.exiting for h in analysis.handlers[:index])
            falls = FALL in outcomes(statements(handler.node.body))
            taken = taken_earlier(analysis.handlers[:index], raises_for_status, raises_own)
            out.append(retried_error(handler, ctx, earlier_exit or gives_up or (falls and rest_filter),
                                     raises_for_status and not taken, raises_own and not taken))
    return tuple(out)


def _rest_filters(rest: List[cst.CSTNode], ctx: ModuleContext, counters: Dict[str, CounterInfo]) -> bool:
    """After a swallowed failure, a test that raises and is not an attempt limit or a deadline
    still lets permanent errors out: ``elif not future.retriable(): raise``, or ``except ValueError:
    data = {}`` followed by status checks that raise on a 4xx."""
    env = GuardEnv(ctx, counters=counters)
    for statement in rest:
        for node in walk(statement, skip=DEFERRED):
            if not isinstance(node, cst.If):
                continue
            if outcomes(if_branches(node)[0]) & EXITS and any(
                isinstance(n, cst.Call) and _PREDICATE_NAME.search(last_name(n.func) or "")
                or isinstance(n, (cst.Name, cst.Attribute)) and _PREDICATE_NAME.search(last_name(n) or "")
                for n in walk(node.test)
            ):
                return True  # ``if not future.retriable(): raise``, ``if not retryable_error: return``
            if any(b is not None and RAISE in outcomes(b) for b in if_branches(node)):
                if classify_guard(node.test, env, 0).kind not in ("counter", "deadline"):
                    return True
    return False


_PREDICATE_NAME = re.compile(r"(retriable|retryable|transient|permanent|fatal)", re.I)


def _no_control_flow(node: cst.If) -> bool:
    """``if not err.response.is_closed: err.response.read()``: both ways carry on alike."""
    body, orelse = if_branches(node)
    return outcomes(body) <= {FALL} and (orelse is None or outcomes(orelse) <= {FALL})


def _sets_a_flag(node: cst.If) -> bool:
    """``elif e.status_code in self.retry_on_status: retry = True``: the decision is kept in a
    name that a later test reads."""
    body, orelse = if_branches(node)
    return any(isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name)
               for statement in list(body) + list(orelse or []) for n in walk(statement))


def _statuses(status: Optional[StatusSite], retry_trys: List[TryAnalysis], ctx: ModuleContext) -> Optional[RetriedStatuses]:
    retried: Set[int] = set()
    where: Optional[cst.CSTNode] = None
    if status is not None:
        if status.retried is None:
            return None
        retried |= status.retried
        where = (status.decider or status.test).test
    for analysis in retry_trys:
        for handler in analysis.retrying:
            ifs = [n for n in walk(handler.node.body, skip=DEFERRED) if isinstance(n, cst.If)]
            tests = [n for n in ifs if status_range(n.test, ctx) is not None]
            if not tests:
                continue
            names = set(failure_names(handler, ctx))
            if any(
                status_range(n.test, ctx) is None and (
                    mentions_status(n.test, ctx) and _sets_a_flag(n)
                    or (mentions_status(n.test, ctx) or set(_names(n.test)) & names) and not _no_control_flow(n))
                for n in ifs
            ):
                return None  # a decision on the failure that we cannot read
            path = statements(handler.node.body) + analysis.rest
            for code in range(400, 600):
                if status_outcomes(path, code, ctx) & {FALL, CONTINUE}:
                    retried.add(code)
            where = where or tests[0].test
    if not retried or where is None:
        return None
    if all(400 <= s < 500 and s not in (408, 429) for s in retried):
        # ``except ClientResponseError as exc: if exc.status == 404: sleep(wait)``, everything
        # else raised: waiting for the resource to appear, as status loops on 404/403 do
        return None
    return RetriedStatuses(tuple(sorted(retried)), ctx.location(where), ctx.code(where))


# ---------------------------------------------------------------- give-up and text


def _give_up(loop: cst.CSTNode, ctx: ModuleContext, bound: Bound, guard: Optional[cst.CSTNode]) -> GiveUp:
    if bound.unbounded:
        return GiveUp.NEVER
    candidates: List[cst.CSTNode] = []
    if isinstance(guard, cst.If):
        body, orelse = if_branches(guard)
        candidates.extend(body if outcomes(body) & EXITS else orelse or [])
    after = rest_after(loop, ctx.module, ctx)[:2]
    if isinstance(loop, cst.For) and loop.orelse is not None:
        after = statements(loop.orelse) + after
    candidates.extend(after)
    for statement in candidates:
        text = ctx.code(statement).lower()
        if any(word in text for word in _GIVE_UP_DLQ):
            return GiveUp.DEAD_LETTER
        if isinstance(statement, cst.Raise):
            return GiveUp.RAISE
        if isinstance(statement, cst.Return):
            return GiveUp.RETURN
    return GiveUp.UNKNOWN


def _describe(loop: cst.CSTNode, ctx: ModuleContext) -> str:
    if isinstance(loop, cst.While):
        return f"`while {ctx.code(loop.test)}` retry loop"
    return f"`for … in {ctx.code(loop.iter)}` retry loop"  # type: ignore[attr-defined]
