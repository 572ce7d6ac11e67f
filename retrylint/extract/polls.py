"""Wait-for-state polls: a loop that asks for a state until it reads the one it waits for.

``while True: status = client.describe(...)["Status"]; if status == "available": return;
sleep(10)`` goes round after a *successful* call, because the resource is not there yet. When its
failure path goes round at the same pace (it catches the call's failure and sleeps, or falls
through to the poll's own sleep), the failure adds no call the poll would not make: it is polling,
and no retry rule speaks (the README, "What counts as a retry"). A failure path that goes round at
once while the poll sleeps stays a retry (RTY201): that is a hot loop for as long as an outage lasts.

What is read as a state, precision first: the attempt's own result (or the call itself) compared
with a state name (a string, ``JobState.JOB_STATE_DONE``), or a ``done``-style question asked of
the result, in an exit's guard or in the ``while`` test (``while state not in (State.DONE,
State.ERROR)``). Outcome words (``"ok"``, ``"error"``) are results of one call, not states of a
resource (unless they are members of a ``State`` enum), and HTTP statuses are failures: both keep
the loop a retry.

A readiness wait is a poll too: a loop in a function named for waiting (``wait_for_job``,
``wait_server_ready``, ``_wait_http_up``, ``InferenceEndpoint.wait``, a sensor's ``poke``, the
methods of a ``*Sensor*`` class) that goes round at a fixed pace until a server, file or
resource answers (a delay that grows was written as a retry schedule, and is judged as one).
``ensure_*_ready`` and ``*_with_retry`` names say nothing: a function that *ensures* something
retries until it holds. So is a loop whose attempt reads a file: it waits for another process to
write it, and there is no downstream to overload.
"""

from __future__ import annotations

import re
from typing import FrozenSet, List, Optional, Sequence, Tuple

import libcst as cst

from ..syntax import DEFERRED, EXITS, dotted_name, if_branches, last_name, outcomes, statement_calls, walk
from .context import ModuleContext
from .flow import exits_in

#: The answer of one call, not the state of a resource: ``if result["status"] == "ok": return``.
_OUTCOMES = frozenset({"ok", "okay", "success", "successful", "error", "errors", "fail", "failed", "failure", "true", "false"})
#: Questions a result answers about its state: ``job.done()``, ``op.is_ready()``.
_STATE_QUESTIONS = frozenset({
    "done", "ready", "is_ready", "is_done", "finished", "is_finished", "complete", "is_complete",
    "completed", "is_completed", "is_available", "is_healthy", "is_running", "is_terminal",
})
#: ALL_CAPS members of these are HTTP statuses (``HTTPStatus.OK``, ``requests.codes.OK``).
_STATUS_ENUMS = ("httpstatus", "codes", "status_codes")


#: A function whose job is to wait: ``wait``, ``wait_for_job``, ``_wait_until_ready``, ``await_ready``,
#: ``async_wait``.
_WAITS = re.compile(r"^_*(async_)?a?wait(_|$)", re.I)
#: Reading a file: ``open(fn)``, ``path.read_text()``, ``scheduler_file.open(mode="r")``.
_FILE_READS = frozenset({"read_text", "read_bytes"})
_READ_MODES = frozenset({"r", "rb", "rt", "r+", "rb+"})


def awaits_a_state(stmts: Sequence[cst.CSTNode], ctx: ModuleContext, result_names: FrozenSet[str]) -> bool:
    """Does an exit on this success path wait for a state the attempt reads?"""
    for _exit, guard, _positive in exits_in(list(stmts), ctx):
        if guard is not None and _state_test(guard.test, result_names):
            return True
    return any(isinstance(s, cst.If) and _progress_chain(s, result_names) for s in stmts)


def _progress_chain(chain: cst.If, result_names: FrozenSet[str]) -> bool:
    """python-kasa's firmware update: ``if state.status == 0: break`` ``elif state.status == 2:
    log progress`` ``elif state.status == 3: sleep`` ``elif state.status < 0: break``: numbered
    states of what the attempt read, some ending the wait and some going round: a progress poll."""
    codes, exits, rounds = set(), 0, 0
    node: Optional[cst.CSTNode] = chain
    subject = None
    while isinstance(node, cst.If):
        test = node.test
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return False
        left, right = test.left, test.comparisons[0].comparator
        name = dotted_name(left) or ""
        if not isinstance(right, cst.Integer) or name.split(".")[0] not in result_names or "." not in name:
            return False
        if subject not in (None, name) or int(right.value) >= 100:
            return False
        subject = name
        codes.add(int(right.value))
        body, _ = if_branches(node)
        if outcomes(body) & EXITS:
            exits += 1
        else:
            rounds += 1
        node = node.orelse
    return len(codes) >= 3 and exits >= 1 and rounds >= 1


def loops_until_a_state(loop: cst.CSTNode, result_names: FrozenSet[str]) -> bool:
    """``while state not in (State.DONE, State.ERROR):`` with ``state`` read by the attempt."""
    return isinstance(loop, cst.While) and _state_test(loop.test, result_names)


#: A class whose job is to wait for a condition: airflow's sensors (``S3KeySensor``, ``HttpSensorTrigger``,
#: ``BaseSensorOperator``), not ``SensorReader``.
_SENSOR = re.compile(r"(Sensor(Trigger|Operator|Async)?|EventTrigger)$")


def waits_by_name(loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    function = ctx.enclosing_function(loop)
    if function is not None and (_WAITS.match(function.name.value) or function.name.value == "poke"):
        return True
    return bool(_SENSOR.search(ctx.enclosing_class(loop) or ""))


_LOOKUP_ERRORS = frozenset({"KeyError", "IndexError", "LookupError"})


def waits_then_looks_up(loop: cst.CSTNode, handler_names: List[Tuple[str, ...]], operation: cst.Call) -> bool:
    """faust's livecheck signal: ``await self._wait_for_resolved(timeout=…)`` each pass, then
    ``self._get_current_value(key)`` whose ``KeyError`` means "not arrived yet": a wait for a
    value to arrive, not a retry of a failed lookup."""
    if not handler_names or not all(names and all(n.rsplit(".", 1)[-1] in _LOOKUP_ERRORS for n in names)
                                    for names in handler_names):
        return False
    for node in walk(loop.body, skip=DEFERRED):  # type: ignore[attr-defined]
        if node is operation:
            return False
        if isinstance(node, cst.Call) and _WAITS.match(last_name(node.func) or ""):
            return True
    return False


def _state_test(test: cst.BaseExpression, result_names: FrozenSet[str]) -> bool:
    for node in walk(test):
        if isinstance(node, cst.Comparison) and _reads_the_attempt(node, result_names):
            sides = [node.left, *(target.comparator for target in node.comparisons)]
            if any(_state_name(side) for side in sides):
                return True
        question = node.func if isinstance(node, cst.Call) else node
        if isinstance(question, cst.Attribute) and question.attr.value in _STATE_QUESTIONS:
            # ``operation.done()`` or ``operation.done``, asked of what the attempt read
            receiver = dotted_name(question.value) or ""
            if receiver.split(".")[0] in result_names:
                return True
    return False


def _reads_the_attempt(comparison: cst.Comparison, result_names: FrozenSet[str]) -> bool:
    """The compared value comes from the attempt: a name it assigns, or a call made in the test."""
    for node in walk(comparison):
        if isinstance(node, cst.Name) and node.value in result_names:
            return True
        if isinstance(node, cst.Call) and last_name(node.func) not in ("len", "str", "int", "getattr"):
            return True
    return False


def _state_name(side: cst.BaseExpression) -> bool:
    if isinstance(side, (cst.Tuple, cst.List, cst.Set)):
        return any(_state_name(element.value) for element in side.elements)
    text = _string(side)
    if text is not None:
        return bool(text.strip()) and text.strip().lower() not in _OUTCOMES
    if isinstance(side, cst.Attribute):
        member = side.attr.value
        owner = (dotted_name(side.value) or "").rsplit(".", 1)[-1].lower()
        if not member.isupper() or len(member) <= 2 or owner in _STATUS_ENUMS:
            return False
        # ``JobStatus.State.ERROR`` is a state of a job; a bare ``Result.ERROR`` is an outcome.
        return member.lower() not in _OUTCOMES or "state" in owner or "status" in owner
    return False


def _string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def reads_a_local_file(call: cst.Call) -> bool:
    """A loop whose attempt reads a file waits for another process to write it (a scheduler
    file, a response file): a poll of the local disk, no downstream to overload."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value == "open"
    if not isinstance(func, cst.Attribute):
        return False
    name = func.attr.value
    if name in _FILE_READS:
        return True
    if name != "open":
        return False  # ``self.connection.open()`` opens a connection
    if dotted_name(func.value) in ("io", "codecs", "gzip", "bz2", "lzma"):
        return True
    modes = [a.value for a in call.args if a.keyword is None or a.keyword.value == "mode"]
    return any(_string(m) in _READ_MODES for m in modes)


#: Probes of whether a service is up: a loop of them waits for readiness, it retries nothing.
_PROBE_CALL = re.compile(
    r"^_*(ping|heartbeat|health|healthz|health_?check|check_health|is_healthy|is_ready|ready|readiness\w*|"
    r"is_alive|alive|liveness\w*|wait_ready|is_up)$",
    re.IGNORECASE,
)
_PROBE_PATH = re.compile(r"/(health|healthz|healthcheck|ready|readyz|readiness|livez|liveness|ping|heartbeat|_cluster/health)\b")


def probes_readiness(call: cst.Call) -> bool:
    """``client.heartbeat()``, ``conn.ping()``, ``requests.get(f"{url}/health")``: asking
    whether a service is up. Looping on it until it answers waits for readiness (a server just
    started, a dependency booting), as the checks of a deployment do; no failed work is retried."""
    if _PROBE_CALL.match(last_name(call.func) or ""):
        return True
    for node in walk(call, skip=DEFERRED):
        if isinstance(node, (cst.SimpleString, cst.FormattedStringText)):
            if _PROBE_PATH.search(node.value):
                return True
    return False


#: A function named for waiting until a server or service is up: ``_wait_for_server``,
#: ``_await_server`` (one just started, most often; a generic ``wait_until_ready(url)`` is
#: judged by what it does).
_READINESS_WAIT = re.compile(
    r"^_*(a?wait_(for_|until_)?(the_)?(\w+_)?(server|service)(_\w+)?|warm_?up(_\w+)?|"
    r"(ensure|wait_until|wait_for|wait_till)_(the_)?(\w+_)?(is_)?(up|running|started|online|booted))$", re.IGNORECASE)
_NOT_THE_WORK = re.compile(r"^(print|log|debug|info|warning|warn|error|exception|sleep)$", re.IGNORECASE)


def attempt_probes(attempt: cst.CSTNode) -> bool:
    """The steps of an attempt come down to a readiness probe (building a client aside):
    ``client = HttpClient(host); client.heartbeat()``."""
    steps = [
        c for c in statement_calls(attempt)
        if not (last_name(c.func) or "")[:1].isupper() and not _NOT_THE_WORK.match(last_name(c.func) or "")
    ]
    return bool(steps) and all(probes_readiness(c) for c in steps)


_WAITING_NAME = re.compile(r"(^|_)(a?wait\w*|\w*ready|warm_?up|until\w*)(_|$)", re.IGNORECASE)


def named_for_waiting(func: Optional[cst.CSTNode]) -> bool:
    """``wait_for``, ``wait_for_ready``, ``wait_server_ready``, ``_await_server``."""
    return isinstance(func, cst.FunctionDef) and bool(_WAITING_NAME.search(func.name.value))


def waits_for_readiness(func: Optional[cst.CSTNode]) -> bool:
    """The function's name says it waits for a service to come up."""
    return isinstance(func, cst.FunctionDef) and bool(_READINESS_WAIT.match(func.name.value))


def asks_for_a_state(test: cst.BaseExpression, ctx: ModuleContext) -> bool:
    """A guard that waits for a state: ``if not result.ready():``, a name bound once to such a
    question (``ready = deps.ready()`` then ``if not ready:``), or a call's answer compared with
    a state name (``if job.status() != "DONE":``)."""
    inner = test.expression if isinstance(test, cst.UnaryOperation) else test
    if isinstance(inner, cst.Name):
        bindings = ctx.bindings(inner)
        if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Call):
            return False
        inner = bindings[0].value
    if isinstance(inner, cst.Call):
        return isinstance(inner.func, cst.Attribute) and inner.func.attr.value in _STATE_QUESTIONS
    return isinstance(inner, cst.Comparison) and _state_test(inner, frozenset())
