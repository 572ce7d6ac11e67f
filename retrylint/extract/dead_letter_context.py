"""What a dead letter carries next to the original message (RETRY_DOCTRINE.md §4).

A dead letter should carry the failure reason, the attempt count and the first-received
time. They are found by name in what the code sends: the keys of dict payloads and
headers (nested too), the keywords of ``dict(...)`` and of Pub/Sub attributes, the
names of the variables and attributes passed (``str(exc)`` with ``exc`` bound by
``except … as exc``, ``self.request.retries``), the words of f-strings, Kafka
``(key, value)`` header tuples. The names of each field are settings
(``dead_letter_reason_fields`` …); a name carries a field when the field's words appear
in it in order (``error_message`` → ``error``, ``ApproximateReceiveCount`` →
``receive_count``, ``x-first-seen-at`` → ``first_seen``).

What is read must be known: a payload built by a helper (``build_envelope(msg)``), a
parameter that may already be an envelope, original headers forwarded as they came
(``properties=properties``) or ``**kwargs`` make the whole dead letter unknown, and no
rule judges it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Set, Tuple

import libcst as cst

from ..settings import Settings
from ..syntax import DEFERRED, call_args, dotted_name, last_name, unwrap_await, walk
from .context import ModuleContext

MESSAGE = "message"
REASON = "reason"
ATTEMPTS = "attempts"
FIRST_RECEIVED = "first_received"
CONTEXT_FIELDS = (REASON, ATTEMPTS, FIRST_RECEIVED)
LABELS = {
    MESSAGE: "the original message",
    REASON: "the failure reason",
    ATTEMPTS: "the attempt count",
    FIRST_RECEIVED: "the first-received time",
}

# Roles of a payload part.
BODY = "body"
ATTRIBUTES = "attributes"

#: Calls that turn a value into a message body without changing what it says.
_SERIALIZERS = frozenset(
    {
        "json.dumps", "orjson.dumps", "ujson.dumps", "simplejson.dumps", "rapidjson.dumps", "pickle.dumps",
        "msgpack.packb", "msgpack.dumps", "str", "bytes", "repr", "int", "float", "bool", "len", "round",
        "bytearray", "base64.b64encode",
    }
)
_PASS_THROUGH_METHODS = frozenset({"encode", "decode", "dumps", "format", "model_dump_json", "json",
                                   # a message's own serializers: the message as it is
                                   "to_json", "to_dict", "as_dict", "dict", "model_dump", "serialize", "to_bytes"})
#: Calls that read the exception being handled: a failure reason.
_EXCEPTION_READERS = frozenset(
    {"traceback.format_exc", "traceback.format_exception", "traceback.format_exception_only", "sys.exc_info",
     "traceback.print_exc"}
)
#: Message objects whose keywords carry headers or attributes.
_MESSAGE_CONSTRUCTORS = {
    "BasicProperties": ("headers",),
    "Message": ("headers",),
    "ServiceBusMessage": ("application_properties",),
    "PubsubMessage": ("attributes",),
}
_MESSAGE_WORDS = frozenset({"message", "msg", "body", "payload", "original", "data", "record", "event", "job"})
_WORD = re.compile(r"^[A-Za-z_$][\w.$-]{0,60}$")


@dataclass
class Carried:
    """What a part of a dead letter is known to carry."""

    known: bool = True
    message: bool = False
    words: Set[str] = field(default_factory=set)
    #: An exception variable or ``traceback.format_exc()`` is in it: a failure reason.
    exception: bool = False

    def merge(self, other: "Carried") -> "Carried":
        self.known = self.known and other.known
        self.message = self.message or other.message
        self.words |= other.words
        self.exception = self.exception or other.exception
        return self


def unknown() -> Carried:
    return Carried(known=False)


def words_of(name: str) -> Tuple[str, ...]:
    """``ApproximateReceiveCount`` → (approximate, receive, count); ``x-first-seen`` → (first, seen)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    words = tuple(w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w)
    return words[1:] if words[:1] == ("x",) and len(words) > 1 else words


def _contains(words: Tuple[str, ...], part: Tuple[str, ...]) -> bool:
    n = len(part)
    return n > 0 and any(words[i : i + n] == part for i in range(len(words) - n + 1))


class FieldNames:
    """The configured names of the three context fields."""

    def __init__(self, settings: Settings) -> None:
        self.fields = {
            REASON: [words_of(n) for n in settings.dead_letter_reason_fields],
            ATTEMPTS: [words_of(n) for n in settings.dead_letter_attempt_fields],
            FIRST_RECEIVED: [words_of(n) for n in settings.dead_letter_first_received_fields],
        }

    def field_of(self, name: str) -> Optional[str]:
        words = words_of(name)
        # First-received names (``first_attempt``) before attempt names (``attempt``).
        for key in (FIRST_RECEIVED, ATTEMPTS, REASON):
            if any(_contains(words, part) for part in self.fields[key]):
                return key
        return None

    def carried(self, carried: Carried) -> Tuple[str, ...]:
        found = {f for f in (self.field_of(w) for w in carried.words) if f is not None}
        if carried.exception:
            found.add(REASON)
        if carried.message or any(set(words_of(w)) & _MESSAGE_WORDS for w in carried.words):
            found.add(MESSAGE)
        return tuple(f for f in (MESSAGE,) + CONTEXT_FIELDS if f in found)


class PayloadReader:
    """Reads the parts of one dead letter, inside one function."""

    def __init__(
        self,
        ctx: ModuleContext,
        scope: cst.CSTNode,
        #: Is the expression the received message as it came (``msg``, ``msg.value()``)?
        is_message: Callable[[cst.CSTNode], bool],
        fields: FieldNames,
    ) -> None:
        self.ctx = ctx
        self.scope = scope
        self.is_message = is_message
        self.fields = fields

    def read_all(self, parts: Iterable[Tuple[cst.BaseExpression, str]], keywords: Iterable[str] = ()) -> Carried:
        out = Carried(words=set(keywords))
        for expr, role in parts:
            out.merge(self.read(expr, role))
        return out

    def read(self, expr: Optional[cst.CSTNode], role: str, depth: int = 0) -> Carried:
        if expr is None:
            return Carried()
        if depth > 6:
            return unknown()
        if isinstance(expr, cst.BaseExpression):
            expr = unwrap_await(expr)
        if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary)):
            value = expr.evaluated_value if isinstance(expr, cst.SimpleString) else None
            words = {value} if isinstance(value, str) and _WORD.match(value) else set()
            return Carried(words=words)
        if isinstance(expr, (cst.FormattedString, cst.ConcatenatedString)):
            return self._formatted(expr)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self._named(expr, role, depth)
        if isinstance(expr, cst.Subscript):
            if self.is_message(expr):
                return Carried(message=True) if role == BODY else unknown()
            if self._mentions_exception(expr):
                return Carried(exception=True)
            return unknown()
        if isinstance(expr, cst.Dict):
            return self._dict(expr, role, depth)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            out = Carried()
            for element in expr.elements:
                out.merge(self.read(element.value, role, depth + 1))
            return out
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.read(expr.elt, role, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self.read(expr.left, role, depth + 1).merge(self.read(expr.right, role, depth + 1))
        if isinstance(expr, cst.IfExp):
            return self.read(expr.body, role, depth + 1).merge(self.read(expr.orelse, role, depth + 1))
        if isinstance(expr, cst.Call):
            return self._call(expr, role, depth)
        return unknown()

    # ------------------------------------------------------------ pieces

    def _formatted(self, expr: cst.CSTNode) -> Carried:
        """An f-string: its words and the names it renders (``f"failed after {attempts}: {exc}"``)."""
        out = Carried()
        for node in walk(expr):
            if isinstance(node, cst.FormattedStringText):
                out.words.update(re.findall(r"[A-Za-z_]\w*", node.value))
            elif isinstance(node, (cst.Name, cst.Attribute)):
                out.words.add(last_name(node) or "")
                if isinstance(node, cst.Name) and self._is_exception(node):
                    out.exception = True
        return out

    def _named(self, expr: cst.BaseExpression, role: str, depth: int) -> Carried:
        name = last_name(expr) or ""
        if name == "None":
            return Carried()
        if self.fields.field_of(name) is not None:
            return Carried(words={name})  # ``attempts``, ``self.request.retries``: the field itself
        if self.is_message(expr):
            return Carried(message=True) if role == BODY else unknown()
        if isinstance(expr, cst.Name):
            if self._is_exception(expr):
                return Carried(exception=True, words={name})
            return self._variable(expr, role, depth)
        if self._mentions_exception(expr):
            return Carried(exception=True)  # exc.args, exc.response.status_code
        return unknown()

    def _variable(self, name: cst.Name, role: str, depth: int) -> Carried:
        bindings = self.ctx.bindings(name)
        values = []
        for binding in bindings:
            if binding.kind not in ("assign", "annassign") or binding.value is None:
                return unknown()
            values.append(binding.value)
        if not bindings:
            constant = self.ctx.module_constant(name.value, name)
            if constant is None:
                return unknown()
            values = [constant]
        out = Carried(words={name.value})
        for value in values:
            out.merge(self.read(value, role, depth + 1))
        out.merge(self._later_writes(name.value))
        return out

    def _later_writes(self, name: str) -> Carried:
        """``envelope["reason"] = …``, ``envelope.update(attempts=n)``, ``headers.setdefault("x", …)``."""
        out = Carried()
        for node in walk(self.scope, skip=DEFERRED):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    subscript = target.target
                    if isinstance(subscript, cst.Subscript) and dotted_name(subscript.value) == name:
                        for element in subscript.slice:
                            if isinstance(element.slice, cst.Index):
                                out.merge(self.read(element.slice.value, ATTRIBUTES, 5))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                if dotted_name(node.func.value) == name and node.func.attr.value in ("update", "setdefault", "__setitem__"):
                    positional, keywords = call_args(node)
                    out.words.update(keywords)
                    for arg in positional[:1]:
                        out.merge(self.read(arg, ATTRIBUTES, 5))
        out.known = True
        return out

    def _dict(self, expr: cst.Dict, role: str, depth: int) -> Carried:
        out = Carried()
        for element in expr.elements:
            if isinstance(element, cst.StarredDictElement):
                out.merge(self.read(element.value, ATTRIBUTES, depth + 1))
                continue
            key = element.key
            if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
                out.words.add(key.evaluated_value)
            elif isinstance(key, (cst.Name, cst.Attribute)):
                out.words.add(last_name(key) or "")
            # A value is data: what it says is evidence, but it cannot hide context.
            value = self.read(element.value, role, depth + 1)
            value.known = True
            out.merge(value)
        return out

    def _call(self, call: cst.Call, role: str, depth: int) -> Carried:
        names = self.ctx.call_name(call)
        method = last_name(call.func) or ""
        positional, keywords = call_args(call)
        if names & _EXCEPTION_READERS:
            return Carried(exception=True)
        if names & {"dict"}:
            out = Carried(words=set(keywords))
            for value in list(keywords.values()):
                evidence = self.read(value, role, depth + 1)
                evidence.known = True
                out.merge(evidence)
            for arg in positional:
                out.merge(self.read(arg, ATTRIBUTES, depth + 1))
            return out
        if method in _MESSAGE_CONSTRUCTORS:
            out = Carried(words={k for k in keywords if k not in _MESSAGE_CONSTRUCTORS[method]})
            body = keywords.get("body", keywords.get("data", positional[0] if positional else None))
            if method != "BasicProperties" and body is not None:
                out.merge(self.read(body, BODY, depth + 1))
            for keyword in _MESSAGE_CONSTRUCTORS[method]:
                if keyword in keywords:
                    out.merge(self.read(keywords[keyword], ATTRIBUTES, depth + 1))
            return out
        if names & _SERIALIZERS:
            out = Carried()
            for arg in positional[:1]:
                out.merge(self.read(arg, role, depth + 1))
            return out
        if isinstance(call.func, cst.Attribute) and method in _PASS_THROUGH_METHODS:
            return self.read(call.func.value, role, depth + 1)
        if self.is_message(call):  # msg.value(), message.body.decode()
            return Carried(message=True) if role == BODY else unknown()
        record = self._record(call, method, positional, keywords, role, depth)
        if record is not None:
            return record
        if names & {"type"} and self._mentions_exception(call):
            return Carried(exception=True)  # type(exc).__name__
        return unknown()

    def _record(self, call: cst.Call, method: str, positional, keywords, role: str, depth: int) -> Optional[Carried]:
        """``DeadLetter(payload=…, error=…, attempts=…)``: a record class built with keywords; its
        keys are the fields it carries, with the attributes its class sets itself when the
        program view knows the class (an envelope that adds ``failed_at`` in ``__init__``)."""
        if not method[:1].isupper() or positional or not keywords or any(a.star for a in call.args):
            return None
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        attributes = self._class_attributes(call.func)
        if attributes is None:
            return None  # a class we cannot read may add fields of its own
        if self._copies_a_parameter(call, method):
            return unknown()  # a store copying the DeadLetter it was given: the caller decided what it holds
        out = Carried(words=set(keywords) | attributes)
        for value in keywords.values():
            evidence = self.read(value, role, depth + 1)
            evidence.known = True
            out.merge(evidence)
        return out

    def _copies_a_parameter(self, call: cst.Call, class_name: str) -> bool:
        """Inside ``def dlq_insert(self, dl: DeadLetter)``, ``DeadLetter(queue=dl.queue, ...)`` is a copy."""
        func = self.ctx.enclosing_function(call)
        if func is None:
            return False
        for param in func.params.params + func.params.posonly_params + func.params.kwonly_params:
            if param.annotation is None:
                continue
            annotation = param.annotation.annotation
            text = str(annotation.evaluated_value or "") if isinstance(annotation, cst.SimpleString) else (
                dotted_name(annotation) or "")
            if text.rsplit(".", 1)[-1] == class_name:
                return True
        return False

    def _class_attributes(self, func: cst.BaseExpression) -> Optional[Set[str]]:
        program = getattr(self.ctx, "program", None)
        name = last_name(func) or ""
        if program is None or not isinstance(func, cst.Name):
            return None
        try:
            own = program.own()
            cls = own.classes.get(name)
            if cls is None and name in own.imports:
                module, attribute = own.imports[name]
                other = program.module(module) if attribute else None
                cls = other.classes.get(attribute) if other is not None else None
        except Exception:  # noqa: BLE001 - the class is simply unknown
            return None
        if cls is None:
            return None
        return set(cls.values) | set(cls.unknown)

    # ------------------------------------------------------------ names

    def _mentions_exception(self, expr: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Name) and self._is_exception(n) for n in walk(expr))

    def _is_exception(self, name: cst.Name) -> bool:
        return any(b.kind == "except" for b in self.ctx.bindings(name))


__all__ = [
    "Carried", "FieldNames", "PayloadReader", "words_of", "MESSAGE", "REASON", "ATTEMPTS", "FIRST_RECEIVED",
    "CONTEXT_FIELDS", "LABELS", "BODY", "ATTRIBUTES",
]
