"""Dead-letter traffic that goes through a project's own helpers (issue 12).

Real code rarely calls the broker where it dead-letters or replays: it calls its own
``self.publish(retry_policy.dead_letter_queue, message)``, ``publish_to(dlq, body)``,
``self._driver.push(_dead_letter_key(...), data)``, ``store.dlq_insert(DeadLetter(...))``,
keeps dead letters in a list (``self.dead_letters.append((topic, event, exc))``), reads them
back with a transport's ``pop(dlq)``, or calls an SDK wrapper by operation name
(``client.call("SendMessage", QueueUrl=..., MessageBody=...)``).

A helper call is read as a **send** when the called name is a send verb (``publish``,
``send``, ``push``, ``put``, ``produce``, ``enqueue``, ``write``, ``insert``, in any
part of the name: ``_publish_redriven``, ``_write_dead_letter``) and one of its arguments names
a queue the configured DLQ pattern matches (the destination; the arguments after it and the
keywords are the payload), or the name itself says it writes to a DLQ (``dlq_insert``,
``add_dead_letter``) on an object of another module; as a **list store** when a DLQ-named
``self.<attr>`` or module list gets ``append``/``appendleft``/``insert``/``put``; as a
**receive** when a transport-like ``pop``/``receive``/``get``/``read`` is given a DLQ-named queue.
Helpers defined in the module itself are judged inside (their own broker call), never at
every call, so a write is reported once.

Precision first: a helper write counts only when what it sends visibly holds the message
(a received message, a message-typed parameter, a key or name such as ``payload``/``event``);
a payload built by another helper or passed in as a parameter stays unknown (no rule judges
it), and a dead letter put back unchanged into the DLQ it was read from (a restore) is not a
new one (the replay logic of :mod:`.dead_letters` sees the message came from a DLQ).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst

from ..narrowing import Trigger, Words
from ..syntax import call_args, dotted_name, last_name, walk
from .brokers import METHODS, PUBLISH, PUBLISH_METHODS, RECEIVE, SQS, BrokerCall
from .context import ModuleContext
from .queue_names import QueueRef

#: Words (of a called name) that say the call sends something somewhere.
SEND_VERBS = frozenset({"publish", "send", "push", "put", "produce", "enqueue", "write", "insert", "requeue",
                        "redrive", "republish", "resend"})
#: Methods that add to a list/queue object kept as a dead-letter store.
STORE_METHODS = frozenset({"append", "appendleft", "insert", "put", "put_nowait", "rpush", "lpush"})
#: Words of a called name that read messages back.
RECEIVE_VERBS = frozenset({"pop", "receive", "dequeue", "reserve"})
#: … and ``read_messages(queue_url=dlq_url)``, ``fetch_batch(dlq)``: read + messages.
_READS = frozenset({"read", "get", "fetch", "poll", "pull", "consume"})
#: Receivers whose ``pop``/``get`` reads a mapping, not a queue.
_MAPPINGS = re.compile(r"environ|kwargs|options|config|settings|params|headers|attributes|meta|cache|^os$", re.I)
#: A store whose last word says it holds something other than dead letters themselves.
_NOT_STORES = frozenset({"id", "ids", "count", "counts", "counter", "size", "depth", "stats", "metrics", "keys",
                         "names", "seen", "lock", "len", "length", "total", "url", "urls", "arn", "name", "topic",
                         "queue", "queues", "key", "config", "settings", "enabled", "handler", "handlers", "callback"})
#: Keywords that configure the call, not the dead letter.
_CONFIG_KEYWORDS = frozenset({"timeout", "priority", "delay", "delay_seconds", "ttl", "retry", "client", "connection",
                              "conn", "session", "region_name", "loop", "block", "wait", "mandatory", "persistent",
                              "durable", "route", "route_urn", "key", "partition", "routing_key", "exchange"})
#: Keywords of a helper that name where it sends.
_DESTINATION_KEYWORDS = ("queue", "queue_name", "queue_url", "topic", "destination", "dest", "target", "target_url",
                         "target_queue", "target_queue_url", "to_queue", "dlq", "dlq_url", "dead_letter_queue")
#: Names of destinations that are files, folders or buckets, not queues.
_NOT_QUEUES = re.compile(r"file|path|dir|folder|backup|bucket|s3|csv|log|table|db", re.I)
#: SDK wrappers that call an operation by name: ``client.call("SendMessage", QueueUrl=...)``.
_OPERATION_CALLERS = frozenset({"call", "_call", "call_api", "api_call", "make_api_call", "_make_api_call", "invoke"})
_SQS_OPERATIONS = {"".join(w.capitalize() for w in m.split("_")): m for m in METHODS[SQS]}

_DLQ_WORDS = ("dlq", "DLQ", "Dlq", "dead_letter", "DEAD_LETTER", "deadletter", "DeadLetter", "deadLetter",
              "dead-letter", "Deadletter", "DEADLETTER", "dead letter", "poison", "Poison", "POISON")

#: Files that name a dead-letter queue: a helper call (``partial``: a verb anywhere in the
#: called name) may be a DLQ write, and ``client.call("SendMessage", ...)`` a send or a replay.
TRIGGER = Trigger(
    # case-blind: one scan of the file's lower-case copy per word (shared with other gates)
    text=Words(*{w.lower() for w in _DLQ_WORDS}, ignore_case=True),
    calls=SEND_VERBS | STORE_METHODS | _OPERATION_CALLERS | {"drain", "replay"},
    partial=True,
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> Tuple[str, ...]:
    return tuple(w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if w)


def _record(expr: cst.CSTNode) -> bool:
    """``DeadLetter(...)``, ``models.FailedJob(...)``: a record class built in place."""
    return isinstance(expr, cst.Call) and (last_name(expr.func) or "x")[:1].isupper()


#: Annotations of a parameter that holds the message being handled (``message: VsMessage``,
#: ``received: ReceivedMessage``, ``job: Payload``), not an envelope built for the DLQ.
_MESSAGE_TYPES = re.compile(r"(Message|Payload|Job|Event|Record|Delivery)$")
_ENVELOPE_TYPES = re.compile(r"dead|dlq|envelope|fail|poison|error|exception|retry|batch|list|result", re.I)
#: Methods whose parameter is the delivered message (a broker's ``nack(message)``).
_SETTLE_METHODS = frozenset({"nack", "reject"})


def message_parameters(func: cst.FunctionDef) -> List[str]:
    """Parameters that hold the message itself: typed as a message class, or the message a
    ``nack``/``reject`` method settles."""
    params = [p for p in func.params.params + func.params.posonly_params + func.params.kwonly_params
              if p.name.value not in ("self", "cls")]
    out = []
    for param in params:
        if param.annotation is None:
            continue
        annotation = param.annotation.annotation
        if isinstance(annotation, cst.SimpleString):
            text = str(annotation.evaluated_value or "")
        else:
            text = dotted_name(annotation) or ""
        last = text.rsplit(".", 1)[-1]
        if _MESSAGE_TYPES.search(last) and not _ENVELOPE_TYPES.search(last):
            out.append(param.name.value)
    if func.name.value in _SETTLE_METHODS and len(params) == 1 and params[0].annotation is None:
        out.append(params[0].name.value)
    return out


class HelperCalls:
    """Recognises the helper calls of one module (see the module docstring)."""

    def __init__(self, ctx: ModuleContext, brokers, names) -> None:
        self.ctx = ctx
        self.brokers = brokers
        self.names = names
        self._own: Optional[set] = None
        self._sends: dict = {}

    def own_functions(self) -> set:
        """Names of the functions and methods this module defines (judged inside, not at calls)."""
        if self._own is None:
            tree = getattr(self.ctx.program, "_tree", None)
            import ast

            self._own = set()
            if tree is not None:
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._own.add(node.name)
        return self._own

    def recognise(self, call: cst.Call) -> Optional[BrokerCall]:
        method = last_name(call.func)
        if not method:
            return None
        if method in _OPERATION_CALLERS:
            return self._operation(call)
        words = name_words(method)
        if not words:
            return None
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if words[-1] in STORE_METHODS or method in STORE_METHODS:
            found = self._store(call, method, receiver)
            if found is not None:
                return found
        if set(words) & SEND_VERBS and not method[:1].isupper():  # ``RedriveItem(...)`` builds a record
            return self._send(call, method, receiver, words)
        if words[0] in RECEIVE_VERBS or (len(words) > 1 and words[1] in RECEIVE_VERBS and words[0] in ("try", "do")) or (
            words[0] in _READS and words[-1] in ("message", "messages", "batch")
        ):
            return self._receive(call, method)
        return None

    # ------------------------------------------------------------ pieces

    def expanded(self, call: cst.Call) -> Optional[cst.Call]:
        """``send_message(**kwargs)`` with ``kwargs = {"QueueUrl": url, "MessageBody": body}`` a
        dict literal of the function: the call with those keywords written in (their values are
        the function's own nodes). None when there is no such dict."""
        stars = [a for a in call.args if a.star == "**"]
        if len(stars) != 1 or not isinstance(stars[0].value, cst.Name):
            return None
        bindings = self.ctx.bindings(stars[0].value)
        values = [b.value for b in bindings if b.kind in ("assign", "annassign")]
        if len(bindings) != 1 or len(values) != 1 or not isinstance(values[0], cst.Dict):
            return None
        extra = []
        for element in values[0].elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            key = element.key.evaluated_value
            if not isinstance(key, str) or not key.isidentifier():
                return None
            extra.append(cst.Arg(keyword=cst.Name(key), value=element.value))
        # kwargs["MaxNumberOfMessagesPerSecond"] = rate: keys written later count too.
        name = stars[0].value.value
        scope = self.ctx.enclosing_function(call) or self.ctx.module
        for node in walk(scope):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    sub = target.target
                    if isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name) and sub.value.value == name:
                        index = sub.slice[0].slice if len(sub.slice) == 1 else None
                        key = index.value if isinstance(index, cst.Index) else None
                        if not isinstance(key, cst.SimpleString) or not str(key.evaluated_value).isidentifier():
                            return None
                        extra.append(cst.Arg(keyword=cst.Name(str(key.evaluated_value)), value=node.value))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                    dotted_name(node.func.value) == name and node.func.attr.value in ("update", "setdefault"):
                return None
        return call.with_changes(args=[a for a in call.args if a.star != "**"] + extra)

    def _operation(self, call: cst.Call) -> Optional[BrokerCall]:
        expanded = self.expanded(call)
        if expanded is not None:
            found = self._operation(expanded)
            if found is not None:
                found.call = call
            return found
        positional, keywords = call_args(call)
        if not positional or not isinstance(positional[0], cst.SimpleString):
            return None
        operation = positional[0].evaluated_value
        method = _SQS_OPERATIONS.get(operation) if isinstance(operation, str) else None
        if method is None or not (set(keywords) & {"QueueUrl", "SourceArn", "Entries", "MessageBody"}):
            return None
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        built = self.brokers._build(call, SQS, method, METHODS[SQS][method], receiver)
        built.method = f'call("{operation}")'
        return built

    def _store(self, call: cst.Call, method: str, receiver: Optional[cst.BaseExpression]) -> Optional[BrokerCall]:
        """``self.dead_letters.append(...)``, ``DLQ.append(...)``: a list kept as a DLQ."""
        if receiver is None or not isinstance(receiver, (cst.Name, cst.Attribute)):
            return None
        name = dotted_name(receiver) or ""
        if isinstance(receiver, cst.Attribute):
            if dotted_name(receiver.value) not in ("self", "cls"):
                return None
        elif self.ctx.enclosing_function(call) is not None and any(
            b.kind != "import" for b in self.ctx.bindings(receiver)
        ):
            return None  # a local list: a result being built, not a store
        last = name.rsplit(".", 1)[-1]
        words = name_words(last)
        if not words or words[-1] in _NOT_STORES or not self.names.is_dlq_name(last):
            return None
        if self.brokers.family_of(receiver) not in (None, "other"):
            return None  # a broker client: read by the broker tables
        positional, keywords = call_args(call)
        body = positional[1:] if method == "insert" else positional
        if not body or any(a.star for a in call.args):
            return None
        return BrokerCall(call, "store", PUBLISH, f"{last}.{method}", QueueRef("dlq", name), tuple(body))

    def _tree(self):
        return getattr(self.ctx.program, "_tree", None)

    def helper_definition(self, call: cst.Call, receiver: Optional[cst.BaseExpression], method: str):
        """The ``ast`` definition of a helper of this module a call calls (read from the whole
        file, so that narrowing changes nothing): ``f(...)``, ``self.f(...)``, ``bus.f(...)``
        with ``bus: Bus`` or ``bus = Bus()``; None when it is not one of this module's."""
        import ast

        tree = self._tree()
        if tree is None:
            return None
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        if receiver is None:
            found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == method]
            return found[0] if found else None
        owner = None
        if dotted_name(receiver) in ("self", "cls"):
            owner = self.ctx.enclosing_class(call)
        else:
            for node in self.brokers.origin(receiver)[:1]:
                target = node.func if isinstance(node, cst.Call) else node
                owner = str(target.evaluated_value or "") if isinstance(target, cst.SimpleString) else dotted_name(target)
        cls = classes.get(owner or "")
        if cls is None:
            return None
        for member in cls.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name == method:
                return member
        return None

    def sends(self, definition) -> bool:
        """Does a helper of this module send anything: a broker's publish method, an SDK
        operation by name, or a call named like a send one level down? ``EventBus.publish``
        that only calls handlers does not."""
        import ast

        key = id(definition)
        if key not in self._sends:
            found = False
            for node in ast.walk(definition):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name in PUBLISH_METHODS or (set(name_words(name)) & SEND_VERBS and not name[:1].isupper()):
                    found = True
                elif name in _OPERATION_CALLERS and node.args and isinstance(node.args[0], ast.Constant) \
                        and node.args[0].value in _SQS_OPERATIONS:
                    found = True
                if found:
                    break
            self._sends[key] = found
        return self._sends[key]

    def _send(self, call: cst.Call, method: str, receiver: Optional[cst.BaseExpression],
              words: Tuple[str, ...]) -> Optional[BrokerCall]:
        if self.brokers.recognise(call) is not None:
            return None
        definition = self.helper_definition(call, receiver, method)
        if definition is not None and not self.sends(definition):
            return None  # a helper of this module that we can read, and it sends nothing
        positional, keywords = call_args(call)
        if any(a.star for a in call.args):
            return None
        attributes = tuple(v for k, v in keywords.items() if k not in _CONFIG_KEYWORDS)
        attribute_keywords = tuple(k for k in keywords if k not in _CONFIG_KEYWORDS)
        # The destination: the first argument that names a DLQ (a record built in place,
        # ``DeadLetter(...)``, is a payload, not a queue) ...
        for index, arg in enumerate(positional):
            if not _record(arg) and self.names.classify(arg).is_dlq:
                body = positional[index + 1:]
                if not body and not attributes:
                    return None
                return BrokerCall(call, "helper", PUBLISH, method, self.names.classify(arg), tuple(body),
                                  attributes, attribute_keywords)
        # ... else the first that names a work queue (``target``, ``queue_url``): a replay when
        # what it sends was read out of a DLQ, nothing otherwise.
        for index, arg in enumerate(positional):
            if _NOT_QUEUES.search(dotted_name(arg) or ""):
                continue  # write_to(target_file, message): a backup, not a queue
            if isinstance(arg, (cst.Name, cst.Attribute)) and self.names.classify(arg).is_work and positional[index + 1:]:
                return BrokerCall(call, "helper", PUBLISH, method, self.names.classify(arg),
                                  tuple(positional[index + 1:]), attributes, attribute_keywords)
        for keyword in _DESTINATION_KEYWORDS:
            arg = keywords.get(keyword)
            if arg is None:
                continue
            queue = self.names.classify(arg)
            if not queue.known:
                # requeue(queue_url=url if ... else queue_url): the keyword says it is the destination.
                queue = QueueRef(self.names.identifier_kind(keyword), self.names.display(arg))
            if queue.is_dlq or queue.is_work:
                rest = [v for k, v in keywords.items() if k != keyword and k not in _CONFIG_KEYWORDS]
                if queue.is_dlq and not positional and not rest:
                    return None
                return BrokerCall(call, "helper", PUBLISH, method, queue, tuple(positional), tuple(rest),
                                  tuple(k for k in keywords if k != keyword and k not in _CONFIG_KEYWORDS))
        # ``store.dlq_insert(record)``: the name says it writes a dead letter, to a store of another module.
        if self.names.is_dlq_name(method) and isinstance(receiver, cst.Attribute) and method not in self.own_functions():
            if dotted_name(receiver) in ("self", "cls") or not positional:
                return None
            return BrokerCall(call, "helper", PUBLISH, method, QueueRef("dlq", method), tuple(positional),
                              tuple(v for k, v in keywords.items() if k not in _CONFIG_KEYWORDS),
                              tuple(k for k in keywords if k not in _CONFIG_KEYWORDS))
        return None

    def _receive(self, call: cst.Call, method: str) -> Optional[BrokerCall]:
        """``transport.pop(dlq, timeout)``, ``queue.receive(dlq_url)``: messages read out of a DLQ."""
        if isinstance(call.func, cst.Attribute) and _MAPPINGS.search(dotted_name(call.func.value) or "?"):
            return None
        positional, keywords = call_args(call)
        candidates = positional[:2] + [keywords[k] for k in ("queue", "queue_name", "queue_url", "name", "source")
                                       if k in keywords]
        for arg in candidates:
            ref = self.names.classify(arg)
            if ref.is_dlq:
                return BrokerCall(call, "helper", RECEIVE, method, ref, bounded=True)
        return None


__all__ = ["TRIGGER", "HelperCalls", "message_parameters", "SEND_VERBS", "STORE_METHODS"]
