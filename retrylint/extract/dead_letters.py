"""Dead-letter-queue operations: writes to a DLQ and replays out of one.

For every publish (or broker-side move) call that :mod:`.brokers` recognises:

* the **destination** is classified by :mod:`.queue_names` (DLQ, work queue, archive,
  unknown);
* the **messages** of the function are followed from where they are received (a
  ``receive_message`` response and the loops over it, a ``poll()``, a loop over a
  consumer, the parameters of a consumer callback or of a celery task) through plain
  assignments and ``for`` loops, so that a publish whose payload comes from a message
  read out of a DLQ is a **replay**; any other publish to a DLQ is a **write**;
* a write's payload is read by :mod:`.dead_letter_context` (what context it carries);
* a replay gets its loop, whether the loop is paced (sleep, limiter, token bucket) and
  bounded (``range(limit)``, a counter checked against a limit, one bounded receive),
  and what runs it (:mod:`.triggers_of_work`).

A DLQ copied to another DLQ (an archive) is neither. What is not known stays unknown.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..model import DeadLetterKind, DeadLetterOperation, Location
from ..narrowing import AllOf, Trigger, Words
from ..syntax import (
    DEFERRED,
    LOOPS,
    call_args,
    dotted_name,
    last_name,
    number,
    outcomes,
    statements,
    unwrap_await,
    walk,
)
from .brokers import (
    ALL_METHODS,
    MOVE,
    PUBLISH,
    PACKAGES,
    PUBLISH_METHODS,
    RECEIVE,
    SUBSCRIBE,
    BrokerCall,
    Brokers,
)
from .context import ModuleContext
from .dead_letter_helpers import HelperCalls, message_parameters
from .dead_letter_context import ATTRIBUTES, BODY, CONTEXT_FIELDS, Carried, FieldNames, PayloadReader
from .queue_names import UNKNOWN_QUEUE, QueueNames, QueueRef
from .triggers_of_work import WorkTriggers
from .waits import sleep_of

# ---------------------------------------------------------------- narrowing

#: Calls that say, from another function, how an operation runs: consumer callbacks and
#: schedulers. (Receives and clients matter in the publishing function, which its publish keeps.)
_REGISTRATIONS = frozenset({"basic_consume", "subscribe", "consume", "Consumer", "register_callback", "add_job",
                            "add_periodic_task", "parse_args", "parse_known_args", "set_defaults", "Fire"})
#: Decorators of celery tasks (their queues), scheduled jobs and click/typer commands.
_DECORATORS = frozenset({"task", "shared_task", "scheduled_job", "periodic_task", "db_periodic_task", "repeat",
                         "crontab", "command", "group"})


# A broker call is recognised through its client's package, imported by the module, or by
# SQS's own keywords (see brokers.py): a file without any of them has no DLQ operation.
TRIGGER = Trigger(
    text=AllOf(
        # the rarer gate first: most files name no broker
        # (``redis`` never goes on with a letter in a package's name: ``redistribute`` is no broker)
        Words(*sorted({p.split(".")[-1] for packages in PACKAGES.values() for p in packages}), "QueueUrl", "SourceArn",
              word_end=True),
        Words(*sorted(PUBLISH_METHODS)),
    ),
    calls=PUBLISH_METHODS,
)
#: What says from elsewhere how an operation runs: consumer and scheduler registrations
#: (``schedule.every(5).minutes.do(job)``), task, job and command decorators, ``while``
#: loops (a caller that runs a replay forever), and ``self.x = …`` assignments that create
#: a client or name a queue (read when the operation uses ``self.x``).
CONTEXT = Trigger(
    text=TRIGGER.text,
    calls=_REGISTRATIONS | {"do", "schedule", "cron"},
    decorators=_DECORATORS,
    statements=(ast.While, ast.Assign),
    confirm=lambda statement, source: isinstance(statement, ast.While) or _assigns_self(statement),
    context=True,
)


def _assigns_self(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return False
    target = statement.targets[0]
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"

# ---------------------------------------------------------------- message flow


@dataclass(frozen=True)
class Received:
    """Where the messages held by a name come from."""

    source: QueueRef
    broker: str
    #: The receive call, the loop over a consumer, or the subscription (outside the function).
    node: cst.CSTNode
    #: One call returns a bounded number of messages.
    bounded: bool = True


class MessageFlow:
    """Names that hold received messages, in one function (or the module's top level).

    ``messages`` holds every name whose value comes from a received message (what a replay
    re-publishes may be re-wrapped: ``Message(body=msg.body)``); ``raw`` only those that hold
    the message as it came (``msg``, ``msg.value()``, ``m["Body"]``, ``json.loads(body)``), which
    a dead letter carries as "the original message" and nothing more.
    """

    def __init__(self, scope: cst.CSTNode, extractor: "_Extractor") -> None:
        self.scope = scope
        self.x = extractor
        self.messages: Dict[str, Received] = {}
        self.raw: Set[str] = set()
        if isinstance(scope, cst.FunctionDef):
            self._parameters(scope)
        for _ in range(2):  # assignments inside loops may feed names read earlier
            for node in walk(scope, skip=DEFERRED):
                if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None:
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                    self._assign(targets, node.value)
                elif isinstance(node, cst.NamedExpr):
                    self._assign([node.target], node.value)
                elif isinstance(node, (cst.For, cst.CompFor)):
                    received = self.source_of_iteration(node)
                    if received is not None:
                        self._bind(node.target, received, raw=self._raw_source(_iterated(node.iter)))
                elif isinstance(node, cst.WithItem) and node.asname is not None:
                    self._assign([node.asname.name], node.item)
                elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                      and node.func.attr.value in ("append", "extend", "appendleft") and node.args
                      and isinstance(node.func.value, cst.Name)):
                    # popped.append(message): the list holds received messages
                    received = self.mentioned(node.args[0].value)
                    if received is not None:
                        self._bind(node.func.value, received, raw=False)

    def _assign(self, targets: Sequence[cst.CSTNode], value: cst.BaseExpression) -> None:
        received = self.source_of(value)
        if received is not None:
            for target in targets:
                self._bind(target, received, raw=self._raw_source(value))

    def _raw_source(self, expr: cst.BaseExpression) -> bool:
        """A receive call, a consumer, or plain access to a raw message."""
        expr = unwrap_await(expr)
        if isinstance(expr, cst.Call) and self.x.recognised(expr) is not None:
            return True
        if self.x.brokers.iterable_consumer(expr) is not None:
            return True
        return self.is_raw_access(expr)

    def is_raw_access(self, expr: cst.CSTNode) -> bool:
        """``msg``, ``msg.value()``, ``m["Body"]``, ``resp.get("Messages", [])``, ``json.loads(body)``."""
        for node in _access_chain(expr, self.x.ctx):
            if isinstance(node, cst.Name):
                return node.value in self.raw
            if isinstance(node, cst.Call) and self.x.recognised(node) is not None:
                return self.x.recognised(node).role == RECEIVE  # type: ignore[union-attr]
        return False

    def _parameters(self, func: cst.FunctionDef) -> None:
        params = [p.name.value for p in func.params.params + func.params.posonly_params + func.params.kwonly_params]
        params = [p for p in params if p not in ("self", "cls")]
        subscription = self.x.triggers.callbacks.get(func)
        if subscription is not None:
            received = Received(subscription.queue, subscription.broker, subscription.call)
        elif self.x.brokers.task_decorator(func) is not None:
            received = Received(self.x.brokers.task_queue(func), "celery", func)
        else:
            # A callback registered elsewhere: its messages are known by their type or their ack,
            # but not where they come from.
            for name in self.x.brokers.message_parameters(func) + message_parameters(func):
                self.messages[name] = Received(UNKNOWN_QUEUE, "unknown", func)
                self.raw.add(name)
            return
        for name in params:
            self.messages[name] = received
            self.raw.add(name)

    def _bind(self, target: cst.CSTNode, received: Received, raw: bool) -> None:
        for node in walk(target):
            if isinstance(node, cst.Name):
                self.messages.setdefault(node.value, received)
                if raw:
                    self.raw.add(node.value)

    def source_of(self, expr: cst.BaseExpression) -> Optional[Received]:
        # receive(...), receive(...)["Messages"], (await receive(...)).get("Messages", [])
        for node in _access_chain(expr):
            if isinstance(node, cst.Call):
                recognised = self.x.recognised(node)
                if recognised is not None and recognised.role == RECEIVE:
                    source = recognised.queue
                    if not source.known and isinstance(node.func, cst.Attribute):
                        source = self.x.brokers.queue_of_object(node.func.value)
                    return Received(source, recognised.broker, node, recognised.bounded)
        return self.mentioned(expr)

    def source_of_iteration(self, loop: cst.CSTNode) -> Optional[Received]:
        iterated = _iterated(loop.iter)  # type: ignore[attr-defined]
        received = self.source_of(iterated)
        if received is not None:
            return received
        consumer = self.x.brokers.iterable_consumer(iterated)
        if consumer is not None:
            family, source, _ = consumer
            return Received(source, family, loop, bounded=False)
        return None

    def mentioned(self, expr: cst.CSTNode) -> Optional[Received]:
        for node in walk(expr, skip=DEFERRED):
            if isinstance(node, cst.Name) and node.value in self.messages and self._is_local(node):
                return self.messages[node.value]
        return None

    def _is_local(self, name: cst.Name) -> bool:
        # Attribute names (``msg.body``'s ``body``) are not variables.
        parent = self.x.ctx.parent(name)
        return not (isinstance(parent, cst.Attribute) and parent.attr is name)

    def is_message(self, expr: cst.CSTNode) -> bool:
        """The raw message, or plain access to it (for the payload reader)."""
        if isinstance(expr, cst.Name):
            return expr.value in self.raw and self._is_local(expr)
        return self.is_raw_access(expr)


# ---------------------------------------------------------------- limits of a replay

_LIMITISH = re.compile(r"limit|max(?!_?wait)|budget|quota|total|remaining|deadline|until|how_many|^n$|^num_|^count$|_count$", re.I)
_LIMITER_OBJECT = re.compile(r"limit|throttl|bucket|rate|pace", re.I)
_LIMITER_METHODS = frozenset({"acquire", "try_acquire", "wait", "consume", "take", "hit", "throttle", "block"})


def rate_limited(loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """A sleep, a limiter or a token bucket somewhere in the loop paces it."""
    for node in walk(loop, skip=DEFERRED):
        if isinstance(node, cst.Call):
            sleep = sleep_of(node, ctx)
            if sleep is not None and number(sleep.delay) != 0:
                return True
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _LIMITER_METHODS:
                if _LIMITER_OBJECT.search(dotted_name(func.value) or ""):
                    return True
        elif isinstance(node, cst.WithItem):
            item = node.item.func if isinstance(node.item, cst.Call) else node.item
            if _LIMITER_OBJECT.search(dotted_name(item) or ""):
                return True  # with limiter: / async with AsyncLimiter(10):
    return False


def batch_limited(loops: Sequence[cst.CSTNode], received: Optional[Received], ctx: ModuleContext) -> bool:
    """The replay stops after a number of messages: ``range(limit)``, ``islice``, a counter checked
    against a limit, or one bounded receive outside the loop."""
    outer = loops[-1]
    counters = _counters(outer)
    for loop in loops:
        if isinstance(loop, cst.For):
            iterated = loop.iter
            if isinstance(iterated, cst.Call) and ctx.call_name(iterated) & {"range", "itertools.islice", "islice"}:
                return True
            if isinstance(iterated, cst.Subscript) and any(
                isinstance(e.slice, cst.Slice) and (e.slice.upper is not None) for e in iterated.slice
            ):
                return True
        elif isinstance(loop, cst.While) and _limit_test(loop.test, counters):
            return True
    for node in walk(outer, skip=DEFERRED):
        if isinstance(node, cst.If) and _limit_test(node.test, counters):
            ends = outcomes(statements(node.body))
            if ends & {"break", "return", "raise"}:
                return True
    if received is not None and received.bounded and isinstance(received.node, cst.Call):
        # resp = sqs.receive_message(..., MaxNumberOfMessages=10); for m in resp["Messages"]: ...
        return not _in_body(received.node, outer, ctx)
    return False


def _in_body(node: cst.CSTNode, loop: cst.CSTNode, ctx: ModuleContext) -> bool:
    """Inside what the loop repeats (its body), not its header (``for m in receive(...)``)."""
    return ctx.is_inside(node, loop.body) or node is loop.body  # type: ignore[attr-defined]


def _access_chain(expr: cst.CSTNode, ctx: Optional[ModuleContext] = None) -> List[cst.CSTNode]:
    """``json.loads(m["Body"].decode())`` → the call, ``m["Body"].decode()``, ``m["Body"]``, ``m``:
    plain access (attributes, subscripts, method calls, and decoders when ``ctx`` is given) down to its base."""
    out: List[cst.CSTNode] = []
    while len(out) < 20:
        if isinstance(expr, cst.BaseExpression):
            expr = unwrap_await(expr)
        out.append(expr)
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value  # msg.value(), body.decode(), resp.get("Messages", [])
        elif ctx is not None and isinstance(expr, cst.Call) and ctx.call_name(expr) & _DECODERS and expr.args:
            expr = expr.args[0].value
        else:
            break
    return out


_DECODERS = frozenset({"json.loads", "orjson.loads", "ujson.loads", "simplejson.loads", "pickle.loads",
                       "msgpack.unpackb", "str", "bytes", "base64.b64decode"})
_ITERATION_WRAPPERS = frozenset({"enumerate", "itertools.islice", "islice", "list", "iter", "reversed", "sorted"})


def _iterated(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``enumerate(consumer)``, ``islice(consumer, limit)``: what is iterated."""
    while isinstance(expr, cst.Call) and dotted_name(expr.func) in _ITERATION_WRAPPERS and expr.args:
        expr = expr.args[0].value
    return expr


def _counters(loop: cst.CSTNode) -> List[str]:
    """Names counted in the loop (``moved += 1``) and ``enumerate`` indexes."""
    out = []
    for node in walk(loop, skip=DEFERRED):
        if isinstance(node, cst.AugAssign):
            name = dotted_name(node.target)
            if name:
                out.append(name)
        elif isinstance(node, cst.For) and isinstance(node.iter, cst.Call) and dotted_name(node.iter.func) == "enumerate":
            target = node.target
            first = target.elements[0].value if isinstance(target, cst.Tuple) and target.elements else None
            if isinstance(first, cst.Name):
                out.append(first.value)
    return out


def _limit_test(test: cst.BaseExpression, counters: Sequence[str]) -> bool:
    for node in walk(test, skip=DEFERRED):
        if isinstance(node, cst.Comparison) and not any(
            isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons
        ):
            for name in (dotted_name(n) for n in walk(node) if isinstance(n, (cst.Name, cst.Attribute))):
                if name and (name in counters or _LIMITISH.search(name.rsplit(".", 1)[-1])):
                    return True
    return False


# ---------------------------------------------------------------- the extractor


class _Extractor:
    def __init__(self, ctx: ModuleContext, calls: List[cst.Call], helpers: bool = False) -> None:
        self.ctx = ctx
        self.names = QueueNames(ctx)
        self.brokers = Brokers(ctx, self.names)
        self.helpers = HelperCalls(ctx, self.brokers, self.names)
        self.fields = FieldNames(ctx.settings)
        self._recognised: Dict[int, Optional[BrokerCall]] = {}
        if helpers:
            # Sites: the project's own send/store/receive helpers and ``call("SendMessage")``
            # (the broker calls are the other extractor's); subscriptions still say what runs code.
            own = [b for b in (self.helpers.recognise(c) for c in calls) if b is not None]
            self.calls = own + [b for b in (self.brokers.recognise(c) for c in calls)
                                if b is not None and b.role == SUBSCRIBE]
            for found in own:
                self._recognised[id(found.call)] = found
            self._drains = [c for c in calls if c.args and id(c) not in self._recognised]
        else:
            self.calls = [b for b in (self.recognised(c) for c in calls) if b is not None]
            self._drains = []
        self.triggers = WorkTriggers(ctx, self.brokers, [b for b in self.calls if b.role == SUBSCRIBE])
        self._flows: Dict[int, MessageFlow] = {}
        self._loops_reported: set = set()

    def recognised(self, call: cst.Call) -> Optional[BrokerCall]:
        """A broker's client call; else a project helper that reads a DLQ (``transport.pop(dlq)``)
        or calls an operation by name (``client.call("ReceiveMessage", QueueUrl=...)``)."""
        key = id(call)
        if key not in self._recognised:
            found = self.brokers.recognise(call)
            if found is not None and found.opaque and not found.queue.known:
                expanded = self.helpers.expanded(call)  # client.send_message(**kwargs), kwargs a dict here
                again = self.brokers.recognise(expanded) if expanded is not None else None
                if again is not None:
                    again.call = call
                    found = again
            if found is None:
                helper = self.helpers.recognise(call)
                if helper is not None and (helper.role == RECEIVE or helper.method.startswith("call(")):
                    found = helper
            self._recognised[key] = found
        return self._recognised[key]

    def flow(self, node: cst.CSTNode) -> MessageFlow:
        scope = self.ctx.enclosing_function(node) or self.ctx.module
        key = id(scope)
        if key not in self._flows:
            self._flows[key] = MessageFlow(scope, self)
        return self._flows[key]

    def run(self) -> List[DeadLetterOperation]:
        out = []
        for call in self.calls:
            if call.role == PUBLISH:
                operation = self.publish(call)
            elif call.role == MOVE:
                operation = self.move(call)
            else:
                operation = None
            if operation is not None:
                out.append(operation)
        for call in self._drains:
            operation = self.drain(call)
            if operation is not None:
                out.append(operation)
        return out

    # ------------------------------------------------------------ drain with a handler

    def drain(self, call: cst.Call) -> Optional[DeadLetterOperation]:
        """``drain_queue(dlq_url, handler=_replay, max_messages=n)``: a project's consumer loop
        fed by a DLQ, with a handler of this module that re-publishes each message to a work
        queue. The replay is the call (the loop is generic); its limits are what the call passes."""
        positional, keywords = call_args(call)
        if not positional or not self.names.classify(positional[0]).is_dlq:
            return None
        handlers = [keywords[k] for k in ("handler", "callback", "on_message", "func", "fn") if k in keywords]
        handlers += [a for a in positional[1:2] if isinstance(a, (cst.Name, cst.Attribute))]
        for handler in handlers:
            func = self.brokers.function_of(handler)
            if func is None:
                continue
            params = [p.name.value for p in func.params.params if p.name.value not in ("self", "cls")]
            if not params:
                continue
            for node in walk(func.body, skip=DEFERRED):
                if not isinstance(node, cst.Call):
                    continue
                found = self.recognised(node)
                if found is None or found.role != PUBLISH or not found.queue.is_work:
                    continue
                parts = list(found.body) + list(found.attributes)
                if not any(isinstance(n, cst.Name) and n.value == params[0] for p in parts for n in walk(p)):
                    continue
                given = [k for k in keywords if k not in ("handler", "callback", "on_message", "func", "fn")]
                rate = any(_LIMITER_OBJECT.search(k) or re.search(r"per_second|interval|sleep|delay", k) for k in given)
                batch = any(_LIMITISH.search(k) for k in given)
                source = self.names.classify(positional[0])
                bc = BrokerCall(call, "helper", MOVE, last_name(call.func) or "drain", source, destination=found.queue)
                runner = self.triggers.at(call)
                return self._operation(bc, source, found.queue, runner, None, rate, batch, runner.automatic,
                                       runner.detail)
        return None

    # ------------------------------------------------------------ publish

    def publish(self, call: BrokerCall) -> Optional[DeadLetterOperation]:
        flow = self.flow(call.call)
        destination = call.queue
        received = None
        for part in call.body + call.attributes:
            received = received or flow.mentioned(part)
        if received is not None and received.source.is_dlq:
            if destination.is_work:
                return self.replay(call, destination, received, flow)
            return None  # DLQ to DLQ or to an archive; or to a destination we cannot read
        if destination.is_dlq:
            return self.write(call, flow)
        return None

    def write(self, call: BrokerCall, flow: MessageFlow) -> Optional[DeadLetterOperation]:
        reader = PayloadReader(self.ctx, flow.scope, flow.is_message, self.fields)
        parts = [(e, BODY) for e in call.body] + [(e, ATTRIBUTES) for e in call.attributes]
        if call.broker == "store" and len(call.body) == 1 and isinstance(call.body[0], cst.Tuple):
            # dead_letters.append((topic, event, exc)): a record whose elements are its fields.
            carried = Carried(words=set(call.attribute_keywords))
            for element in call.body[0].elements:
                evidence = reader.read(element.value, BODY)
                evidence.known = True
                evidence.words.add(last_name(element.value) or "")
                carried.merge(evidence)
        else:
            carried = reader.read_all(parts, call.attribute_keywords)
        carries: Tuple[str, ...] = ()
        missing: Tuple[str, ...] = ()
        if carried.known and not call.opaque and parts + list(call.attribute_keywords):
            carries = self.fields.carried(carried)
            missing = tuple(f for f in CONTEXT_FIELDS if f not in carries)
        if call.broker in ("helper", "store") and "message" not in carries:
            return None  # a helper call that visibly sends no message is no dead letter we can read
        runner = self.triggers.at(call.call)
        location = self.ctx.location(call.call)
        return DeadLetterOperation(
            kind=DeadLetterKind.WRITE,
            location=location,
            broker=call.broker,
            queue=call.queue.text,
            trigger=runner.trigger,
            automatic=runner.automatic,
            carries=carries,
            missing=missing,
            header_lines=tuple(location.lines),
            extent=location,
            description=call.description,
            trigger_detail=runner.detail,
        )

    # ------------------------------------------------------------ replay

    def replay(self, call: BrokerCall, destination: QueueRef, received: Received, flow: MessageFlow) -> DeadLetterOperation:
        chain = self._loops_around(call.call, flow.scope)
        loop = self._replay_loop(chain, received, flow)
        rate = batch = None
        if loop is not None:
            inner = [l for l in chain if l is loop or self.ctx.is_inside(l, loop)]
            first_here = id(loop) not in self._loops_reported
            self._loops_reported.add(id(loop))
            if first_here:  # one RTY403 per loop, however many publishes it holds
                rate = rate_limited(loop, self.ctx)
                batch = batch_limited(inner, received, self.ctx)
        runner = self.triggers.at(call.call)
        guard = self._attempt_guard(call.call, flow.scope)
        return self._operation(
            call, received.source, destination, runner, loop, rate, batch,
            automatic=runner.automatic if not guard else None,
            detail=runner.detail if not guard else f"{runner.detail}; bounded by `{guard}`",
        )

    def move(self, call: BrokerCall) -> Optional[DeadLetterOperation]:
        flow = self.flow(call.call)
        source = call.queue
        destination = call.destination
        if call.broker == "sqs":
            # start_message_move_task only moves out of a DLQ; no DestinationArn: back where they came from.
            source = QueueRef("dlq", source.text or "the dead-letter queue")
            if not _arg_given(call.call, "DestinationArn"):
                destination = QueueRef("work", "the queues the messages came from")
        if not (source.is_dlq and destination.is_work):
            return None
        chain = self._loops_around(call.call, flow.scope)
        loop = chain[-1] if chain and call.broker != "sqs" else None
        if loop is not None:
            rate, batch = rate_limited(loop, self.ctx), batch_limited(chain, None, self.ctx)
        elif call.broker == "sqs":
            rate, batch = call.rate_given, None
        else:
            rate, batch = None, True  # one message
        runner = self.triggers.at(call.call)
        return self._operation(call, source, destination, runner, loop, rate, batch, runner.automatic, runner.detail)

    def _operation(
        self, call: BrokerCall, source: QueueRef, destination: QueueRef, runner, loop: Optional[cst.CSTNode],
        rate: Optional[bool], batch: Optional[bool], automatic: Optional[bool], detail: str,
    ) -> DeadLetterOperation:
        location = self.ctx.location(call.call)
        lines = set(location.lines)
        loop_location: Optional[Location] = None
        loop_text = ""
        if loop is not None:
            header_end = loop.test if isinstance(loop, cst.While) else loop.iter  # type: ignore[attr-defined]
            loop_location = self.ctx.location(loop, end=header_end)
            lines |= set(loop_location.lines)
            loop_text = ("while " + self.ctx.code(loop.test)) if isinstance(loop, cst.While) else (  # type: ignore[attr-defined]
                "for " + self.ctx.code(loop.target) + " in " + self.ctx.code(loop.iter)  # type: ignore[attr-defined]
            )
        return DeadLetterOperation(
            kind=DeadLetterKind.REPLAY,
            location=location,
            broker=call.broker,
            queue=source.text,
            destination=destination.text,
            trigger=runner.trigger,
            automatic=automatic,
            rate_limited=rate,
            batch_limited=batch,
            header_lines=tuple(sorted(lines)),
            extent=self.ctx.location(loop) if loop is not None else location,
            description=call.description,
            loop_location=loop_location,
            loop_text=loop_text if len(loop_text) <= 60 else loop_text[:57] + "...",
            trigger_detail=detail,
        )

    def _loops_around(self, node: cst.CSTNode, scope: cst.CSTNode) -> List[cst.CSTNode]:
        """Loops around ``node`` inside its function, innermost first."""
        out = []
        for ancestor in self.ctx.ancestors(node):
            if ancestor is scope or isinstance(ancestor, DEFERRED):
                break
            if isinstance(ancestor, LOOPS):
                out.append(ancestor)
        return out

    def _replay_loop(self, chain: List[cst.CSTNode], received: Received, flow: MessageFlow) -> Optional[cst.CSTNode]:
        """The loop that moves the dead letters: the outermost one around the receive, else the
        innermost one over received messages (a single receive's batch)."""
        holding = [l for l in chain if l is received.node or _in_body(received.node, l, self.ctx)]
        if holding:
            return holding[-1]
        for loop in chain:
            if isinstance(loop, cst.For) and (
                flow.mentioned(loop.iter) is not None
                or received.node is loop.iter
                or self.ctx.is_inside(received.node, loop.iter)
            ):
                return loop
        return None

    def _attempt_guard(self, node: cst.CSTNode, scope: cst.CSTNode) -> str:
        """``if retries < 3: republish`` — a re-drive bounded by the attempt count the message carries."""
        for ancestor in self.ctx.ancestors(node):
            if ancestor is scope:
                break
            if isinstance(ancestor, cst.If):
                for comparison in (n for n in walk(ancestor.test) if isinstance(n, cst.Comparison)):
                    words = [last_name(n) or "" for n in walk(comparison) if isinstance(n, (cst.Name, cst.Attribute))]
                    words += [
                        n.evaluated_value for n in walk(comparison)
                        if isinstance(n, cst.SimpleString) and isinstance(n.evaluated_value, str)
                    ]
                    if any(self.fields.field_of(w) == "attempts" for w in words) and (
                        self.ctx.is_inside(node, ancestor.body)
                    ):
                        return self.ctx.code(comparison)
        return ""


def _arg_given(call: cst.Call, keyword: str) -> bool:
    return keyword in call_args(call)[1]


def extract_dead_letters(ctx: ModuleContext) -> List[DeadLetterOperation]:
    calls = [n for n in walk(ctx.module, skip=()) if isinstance(n, cst.Call) and last_name(n.func) in ALL_METHODS]
    if not any(last_name(c.func) in PUBLISH_METHODS for c in calls):
        return []
    return _Extractor(ctx, calls).run()


def extract_helper_dead_letters(ctx: ModuleContext) -> List[DeadLetterOperation]:
    """DLQ writes and replays through the project's own helpers (:mod:`.dead_letter_helpers`)."""
    calls = [n for n in walk(ctx.module, skip=()) if isinstance(n, cst.Call)]
    return _Extractor(ctx, calls, helpers=True).run()


__all__ = ["TRIGGER", "extract_dead_letters", "extract_helper_dead_letters", "MessageFlow", "rate_limited", "batch_limited"]
