"""Which calls wait before the next attempt.

``time.sleep``/``asyncio.sleep``/``trio.sleep``/``anyio.sleep``/gevent/eventlet,
``Event.wait(timeout)``, ``asyncio.wait_for(event.wait(), timeout)``: a delay we
can classify.  A call whose name says it waits (``self._backoff()``,
``wait_before_query()``), or a function of the same module that sleeps, is a
delay of unknown shape: it is not "no delay".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Tuple

import libcst as cst

from ..syntax import DEFERRED, call_args, dotted_name, last_name, unwrap_await, walk
from ..narrowing import Trigger, Words
from .context import ModuleContext

SLEEP_FUNCTIONS = frozenset(
    {
        "time.sleep",
        "asyncio.sleep",
        "asyncio.tasks.sleep",
        "trio.sleep",
        "anyio.sleep",
        "gevent.sleep",
        "eventlet.sleep",
        "eventlet.greenthread.sleep",
        "tornado.gen.sleep",
        "curio.sleep",
    }
)
_EVENT_CONSTRUCTORS = frozenset(
    {"threading.Event", "threading.Condition", "multiprocessing.Event", "gevent.event.Event"}
)
_EVENTISH = re.compile(r"(event|stop|shutdown|clos|exit|quit|cancel|wake|halt|terminat|done|finish|evt)", re.I)
#: A call whose name says it waits: its delay is unknown, not absent.
WAITISH = re.compile(r"(sleep|(?<!no)wait|backoff|delay|pause|throttle|cool_?down)", re.I)


#: Helpers that wait (``def _backoff(self): time.sleep(…)``) are read from the module when a
#: loop calls them (:func:`find_sleepers`): narrowing keeps them.
_WAIT_WORDS = ("sleep", "wait", "backoff", "delay", "pause", "throttle", "cooldown", "cool_down", "select", "poll")
SLEEPERS = Trigger(
    text=Words(*_WAIT_WORDS, ignore_case=True), calls=frozenset(_WAIT_WORDS), partial=True, context=True, called=True
)

#: Names of calls that answer a question about waiting rather than wait.
_GETTER = re.compile(r"(^|_)(get|compute|calc|calculate|remaining)(_|$)", re.I)

SLEEP_WRAPPER = re.compile(r"^_*(a?sleep|sleep_?(fn|func|function|for)?)$", re.I)


@dataclass(frozen=True)
class Sleep:
    call: cst.Call
    #: The delay expression; None when the call waits for an unknown time.
    delay: Optional[cst.BaseExpression]
    #: ``explicit`` (a sleep or timed wait), ``named`` (a call named like a wait),
    #: ``helper`` (a function of this module whose body waits).
    kind: str = "explicit"


def sleep_of(call: cst.Call, ctx: ModuleContext) -> Optional[Sleep]:
    """A call that waits before the next attempt, with its delay expression."""
    partial = _partial_sleep(call, ctx)
    if partial is not None:
        return partial
    names = ctx.call_name(call)
    if names & SLEEP_FUNCTIONS:
        positional, keywords = call_args(call)
        arg = keywords.get("seconds", keywords.get("delay", positional[0] if positional else None))
        if arg is None:
            return Sleep(call, cst.Integer("0")) if not call.args else Sleep(call, None)
        return Sleep(call, arg)
    if names & {"asyncio.wait_for"}:
        positional, keywords = call_args(call)
        waited = unwrap_await(positional[0]) if positional else None
        timeout = keywords.get("timeout", positional[1] if len(positional) > 1 else None)
        if isinstance(waited, cst.Call) and last_name(waited.func) == "wait" and timeout is not None:
            return Sleep(call, timeout)
        return None
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "wait":
        # ``event.wait(delay)``, ``self._reconnect_abort.wait(delay)``: a timed wait; ``event.wait()``
        # waits for something else to happen (an unknown delay, not none).
        positional, keywords = call_args(call)
        until = keywords.get("until")
        if until is not None and not (isinstance(until, cst.Name) and until.value == "None"):
            # ``self.extractor.wait(until=reset, seconds=None if reset else 600)``: the server's
            # reset time decides; the seconds are only its fallback
            return Sleep(call, None, "named")
        timeout = next((keywords[k] for k in ("timeout", "seconds", "secs", "delay") if k in keywords), None)
        if timeout is None and positional:
            timeout = positional[0]
        if timeout is not None:
            return Sleep(call, timeout)
        # ``event.wait()`` waits for something else to happen, ``self.extractor.wait(until=reset)``
        # for a time we cannot read: a delay of unknown shape either way.
        return Sleep(call, None, "named")
    name = last_name(func)
    if name and SLEEP_WRAPPER.match(name):
        # ``self._sleep(self.SLEEP_TIME)``: a wrapper of sleep with the delay as its argument.
        positional, keywords = call_args(call)
        if len(positional) == 1 and not keywords:
            return Sleep(call, positional[0])
    inlined = ctx.helper_delay(call, "sleeps")
    if inlined is not None:
        return Sleep(call, inlined, "helper")  # ``self._backoff(attempt)`` sleeping one expression
    if name and WAITISH.search(name) and name != "wait_for" and not (names & {"asyncio.wait_for", "asyncio.wait"}):
        if _GETTER.search(name):
            return None  # ``self._get_max_wait()``, ``wait_get_result()``: it returns a value
        return Sleep(call, None, "named")
    sleeper = _sleeper_called(call, ctx)
    if sleeper is not None:
        # ``if self._check_exception(ex): continue`` whose body sleeps ``time.sleep(3)`` before
        # answering: that literal is the wait (f5-sdk); anything else waits an unknown time
        return Sleep(call, ctx.sleepers[sleeper], "helper")
    return None


def _partial_sleep(call: cst.Call, ctx: ModuleContext) -> Optional[Sleep]:
    """``nap = functools.partial(time.sleep, DELAY)`` bound once, then ``nap()``: a sleep whose
    delay is the argument the partial fixed (or the one the call adds)."""
    if not isinstance(call.func, cst.Name):
        return None
    bindings = ctx.bindings(call.func)
    if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Call):
        return None
    made = bindings[0].value
    if not ctx.call_name(made) & {"functools.partial"}:
        return None
    fixed, keywords = call_args(made)
    if not fixed or not isinstance(fixed[0], (cst.Name, cst.Attribute)) or not ctx.qualified_names(fixed[0]) & SLEEP_FUNCTIONS:
        return None
    given, given_keywords = call_args(call)
    delay = next((k.get(n) for k in (keywords, given_keywords) for n in ("seconds", "delay") if k.get(n) is not None), None)
    arguments = list(fixed[1:]) + list(given)
    if delay is None and arguments:
        delay = arguments[0]
    return Sleep(call, delay if delay is not None else cst.Integer("0"))


def _is_event(receiver: cst.BaseExpression, ctx: ModuleContext) -> bool:
    name = dotted_name(receiver)
    if name is None:
        return False
    if _EVENTISH.search(name.rsplit(".", 1)[-1]):
        return True
    if isinstance(receiver, cst.Name):
        for binding in ctx.bindings(receiver):
            value = binding.value
            if isinstance(value, cst.Call) and ctx.call_name(value) & _EVENT_CONSTRUCTORS:
                return True
    return False


def _sleeper_called(call: cst.Call, ctx: ModuleContext) -> Optional[str]:
    """``self._select_next_server()`` or ``helper()`` defined in this module, whose body sleeps:
    its key in ``ctx.sleepers`` (``name`` or ``Class.name``), else None."""
    sleepers = ctx.sleepers
    if not sleepers:
        return None
    func = call.func
    key = None
    if isinstance(func, cst.Name):
        key = func.value
    elif isinstance(func, cst.Attribute) and dotted_name(func.value) in ("self", "cls"):
        owner = ctx.enclosing_class(call)
        key = f"{owner}.{func.attr.value}" if owner is not None else None
    return key if key in sleepers else None


def find_sleepers(module: cst.Module) -> Dict[str, Optional[cst.BaseExpression]]:
    """Functions (``name``) and methods (``Class.name``) of a module whose own body waits,
    each with the one number literal every wait of its body sleeps (``time.sleep(3)`` in
    each branch that answers "retry"), else None.

    Read from the whole module before narrowing, syntactically: a call named like a sleep
    or a wait in the function's own body (nested functions excluded).
    """
    out: Dict[str, Optional[cst.BaseExpression]] = {}

    def body_waits(func: cst.FunctionDef) -> Tuple[bool, Optional[cst.BaseExpression]]:
        waits = []
        for node in walk(func.body, skip=DEFERRED):
            if isinstance(node, cst.Call):
                name = last_name(node.func) or ""
                if WAITISH.search(name) or name in ("select", "poll"):
                    waits.append(node)
        if not waits:
            return False, None
        looped = {id(n) for loop in walk(func.body, skip=DEFERRED) if isinstance(loop, (cst.For, cst.While))
                  for n in walk(loop, skip=DEFERRED)}
        if any(id(node) in looped for node in waits):
            return True, None  # aioapns's ``acquire``: sleeps in a loop until a connection is free, for how long is unknown
        delays = set()
        for node in waits:
            # ``time.sleep(3)``/``sleep(3)``: one literal argument, no keywords
            if not (last_name(node.func) == "sleep" and len(node.args) == 1 and node.args[0].keyword is None
                    and isinstance(node.args[0].value, (cst.Integer, cst.Float))):
                return True, None
            delays.add(node.args[0].value.value)
        return True, (waits[0].args[0].value if len(delays) == 1 else None)

    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            waits, delay = body_waits(statement)
            if waits:
                out[statement.name.value] = delay
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for member in statement.body.body:
                if isinstance(member, cst.FunctionDef):
                    waits, delay = body_waits(member)
                    if waits:
                        out[f"{statement.name.value}.{member.name.value}"] = delay
    return out
