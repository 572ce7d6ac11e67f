"""Which queue an expression names, and whether it is a dead-letter queue.

Code names a queue (a topic, a routing key, a list, a subscription) with a string
literal (``"orders-dlq"``), an f-string whose literal part says what it is
(``f"{env}.orders.DLQ"``), a name or attribute (``DLQ_URL``, ``self.dead_letter_queue``),
a constant or single assignment of one of these, or a lookup keyed by one
(``os.environ["ORDERS_DLQ_URL"]``, ``sqs.get_queue_url(QueueName="orders-dlq")["QueueUrl"]``).

The answer is a :class:`QueueRef` of one of four kinds:

* ``dlq``: the configured dead-letter pattern matches (settings ``dead_letter_pattern``);
* ``other``: an archive, an alert or audit channel: neither a DLQ nor a work queue;
* ``work``: a known queue that is not a DLQ: a literal, a name that says it is a queue
  (``queue_url``, ``args.queue``), or the message's original queue (``x-death``);
* ``unknown``: nothing static says which queue it is (a parameter ``q``, ``config.get(key)``).

Rules never guess from ``unknown``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

import libcst as cst

from ..syntax import dotted_name, unwrap_await
from .context import ModuleContext

DLQ = "dlq"
WORK = "work"
OTHER = "other"
UNKNOWN = "unknown"
#: An empty string (pika's default exchange ""): says nothing about the queue.
_NEUTRAL = "neutral"

#: Destinations that keep dead letters out of the work queues: archives, alerts, audits.
_ARCHIVE = re.compile(r"archiv|audit|alert|notif|monitor|metric|report|incident", re.I)
#: The queue a dead letter came from (RabbitMQ ``x-death``, "original queue" headers).
_ORIGIN = re.compile(r"x-death|x_death|first[-_]death|original|origin", re.I)
#: Identifiers that say they hold a queue, a topic or where messages go.
_QUEUEISH = re.compile(
    r"queue|topic|url|arn|exchange|routing|stream|subscription|dest|target|main|primary|inbox|work|jobs?$|tasks?$",
    re.I,
)

_MAX_DEPTH = 4


@dataclass(frozen=True)
class QueueRef:
    kind: str
    #: The queue as the code names it, for messages: ``orders-dlq``, ``DLQ_URL``.
    text: str = ""

    @property
    def is_dlq(self) -> bool:
        return self.kind == DLQ

    @property
    def is_work(self) -> bool:
        return self.kind == WORK

    @property
    def known(self) -> bool:
        return self.kind in (DLQ, WORK, OTHER)


UNKNOWN_QUEUE = QueueRef(UNKNOWN)


@functools.lru_cache(maxsize=16)
def compiled_pattern(pattern: str) -> "re.Pattern[str]":
    return re.compile(pattern, re.IGNORECASE)


class QueueNames:
    """Classifies queue expressions of one module against the configured DLQ pattern."""

    def __init__(self, ctx: ModuleContext) -> None:
        self.ctx = ctx
        self.pattern = compiled_pattern(ctx.settings.dead_letter_pattern)
        self._writes: Dict[int, Dict[str, list]] = {}

    def attribute_bindings(self, attribute: cst.Attribute) -> list:
        """The bindings of ``self.<attr>`` in every method of the class around ``attribute``."""
        owner = next((a for a in self.ctx.ancestors(attribute) if isinstance(a, cst.ClassDef)), None)
        if owner is None or not isinstance(owner.body, cst.IndentedBlock):
            return []
        writes = self._writes.get(id(owner))
        if writes is None:
            writes = self._writes[id(owner)] = {}
            for member in owner.body.body:
                if isinstance(member, cst.FunctionDef):
                    for name, bindings in self.ctx.writes_in(member).items():
                        writes.setdefault(name, []).extend(bindings)
        return writes.get(f"self.{attribute.attr.value}", [])

    # ------------------------------------------------------------ text

    def text_kind(self, text: str) -> str:
        """A literal queue name: a DLQ, an archive, or a work queue ("" says nothing)."""
        if not text:
            return _NEUTRAL
        if self.pattern.search(text):
            return DLQ
        if _ARCHIVE.search(text):
            return OTHER
        return WORK

    def identifier_kind(self, name: str) -> str:
        """What the name of a variable, attribute or lookup key says about its queue."""
        if self.pattern.search(name):
            return DLQ
        if _ARCHIVE.search(name):
            return OTHER
        if _ORIGIN.search(name) or _QUEUEISH.search(name):
            return WORK
        return _NEUTRAL

    def is_dlq_name(self, name: str) -> bool:
        return bool(self.pattern.search(name))

    # ------------------------------------------------------------ expressions

    def classify(self, expr: Optional[cst.CSTNode], depth: int = 0) -> QueueRef:
        if expr is None:
            return UNKNOWN_QUEUE
        kind = self._kind(expr, depth)
        if kind == _NEUTRAL:
            kind = UNKNOWN
        return QueueRef(kind, self.display(expr))

    def classify_all(self, exprs: Iterable[Optional[cst.CSTNode]]) -> QueueRef:
        """Several expressions that together name one destination (exchange + routing key)."""
        present = [e for e in exprs if e is not None]
        kinds = [self._kind(e, 0) for e in present]
        kind = _composite(kinds)
        if kind == _NEUTRAL:
            kind = UNKNOWN
        shown = [self.display(e) for e, k in zip(present, kinds) if k != _NEUTRAL]
        return QueueRef(kind, " / ".join(dict.fromkeys(s for s in shown if s)))

    def display(self, expr: cst.CSTNode) -> str:
        """The queue for messages: a literal's value, a list's names, the name a path helper
        is given (``topic_path(project, "orders")`` → ``orders``), else the source text."""
        expr = unwrap_await(expr) if isinstance(expr, cst.BaseExpression) else expr
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return value if isinstance(value, str) else self.ctx.code(expr)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)) and expr.elements:
            return ", ".join(self.display(e.value) for e in expr.elements)
        if isinstance(expr, cst.Subscript) and isinstance(unwrap_await(expr.value), cst.Call):
            return self.display(expr.value)  # get_queue_url(QueueName="orders-dlq")["QueueUrl"]
        if isinstance(expr, cst.Call):
            literals = [a.value for a in expr.args if isinstance(a.value, cst.SimpleString)]
            if literals:
                return self.display(literals[-1])
        if isinstance(expr, cst.Name):
            # subscription = subscriber.subscription_path(project, "orders-dlq-sub"): show the queue's
            # name rather than the variable's, unless the value is a long URL or ARN.
            values = self._name_values(expr)
            if values and len(values) == 1 and isinstance(unwrap_await(values[0]), (cst.SimpleString, cst.Call)):
                shown = self.display(values[0])
                if shown != self.ctx.code(values[0]) and "://" not in shown and not shown.startswith("arn:"):
                    return shown
                if isinstance(unwrap_await(values[0]), cst.SimpleString) and "://" not in shown and len(shown) < 40:
                    return shown
        code = self.ctx.code(expr)
        return code if len(code) <= 60 else code[:57] + "..."

    def _kind(self, expr: cst.CSTNode, depth: int) -> str:
        if depth > _MAX_DEPTH:
            return UNKNOWN
        if isinstance(expr, cst.BaseExpression):
            expr = unwrap_await(expr)
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return self.text_kind(value if isinstance(value, str) else value.decode("latin-1"))
        if isinstance(expr, (cst.FormattedString, cst.ConcatenatedString)):
            return self._formatted(expr, depth)
        if isinstance(expr, cst.Name):
            if expr.value in ("None", "True", "False"):
                return _NEUTRAL
            return self._named(expr.value, self._name_values(expr), depth)
        if isinstance(expr, cst.Attribute):
            return self._named(expr.attr.value, self._attribute_values(expr), depth, base=expr.value)
        if isinstance(expr, cst.Subscript):
            # os.environ["ORDERS_DLQ_URL"], queues["dlq"]: the key says which queue; else the container.
            keys = _composite([self._key_kind(e, depth) for e in expr.slice])
            if keys in (DLQ, OTHER):
                return keys
            container = self._kind(expr.value, depth + 1)
            return keys if keys == WORK and container not in (DLQ, OTHER) else container
        if isinstance(expr, cst.Call):
            # get_queue_url(QueueName="orders-dlq"), os.getenv("DLQ_URL"), topic_path(project, "orders"),
            # self.dead_letter_queue_url(): the arguments or the called name say which queue.
            own = self.identifier_kind(_last(expr.func) or "")
            parts = [own if own in (DLQ, OTHER) else _NEUTRAL]
            parts += [self._kind(arg.value, depth + 1) for arg in expr.args]
            if isinstance(expr.func, cst.Attribute):
                parts.append(self._kind(expr.func.value, depth + 1))
            return _composite(parts)
        if isinstance(expr, cst.BinaryOperation):
            return _composite([self._kind(expr.left, depth + 1), self._kind(expr.right, depth + 1)])
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return _composite([self._kind(e.value, depth + 1) for e in expr.elements])
        if isinstance(expr, cst.Dict):
            # xreadgroup(streams={"orders:dlq": ">"}): the keys name the streams.
            return _composite([self._kind(e.key, depth + 1) for e in expr.elements if isinstance(e, cst.DictElement)])
        return UNKNOWN

    def _key_kind(self, element: cst.SubscriptElement, depth: int) -> str:
        """A string key read as an identifier (``["QUEUE_URL"]`` says work queue, ``["Body"]`` nothing)."""
        value = element.slice.value if isinstance(element.slice, cst.Index) else None
        if value is None:
            return _NEUTRAL
        if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
            return self.identifier_kind(value.evaluated_value)
        return self._kind(value, depth + 1)

    def _formatted(self, expr: cst.CSTNode, depth: int) -> str:
        literal: List[str] = []
        inner: List[str] = []
        for part in _string_parts(expr):
            if isinstance(part, str):
                literal.append(part)
            else:
                inner.append(self._kind(part, depth + 1))
        text = "".join(literal)
        if self.pattern.search(text) or DLQ in inner:
            return DLQ
        if _ARCHIVE.search(text) or OTHER in inner:
            return OTHER
        if sum(c.isalpha() for c in text) >= 2:
            return WORK  # f"{env}.orders": the literal names the queue
        return _composite(inner)

    def _named(self, name: str, values: Optional[List[cst.BaseExpression]], depth: int, base: Optional[cst.CSTNode] = None) -> str:
        own = self.identifier_kind(name)
        if own in (DLQ, OTHER):
            return own
        resolved = _agree([self._kind(v, depth + 1) for v in values]) if values else UNKNOWN
        if resolved in (DLQ, OTHER):
            return resolved
        if own == WORK or resolved == WORK:
            return WORK
        if base is not None and own == _NEUTRAL:
            # settings.DLQ.url, queues["dlq"].name: the owner may say it.
            owner = self._kind(base, depth + 1)
            if owner in (DLQ, OTHER):
                return owner
        return UNKNOWN

    # ------------------------------------------------------------ values

    def _name_values(self, name: cst.Name) -> Optional[List[cst.BaseExpression]]:
        """The values a simple name is assigned (all of them), or None when one is not readable."""
        bindings = [b for b in self.ctx.bindings(name) if b.kind != "import" or b.value is not None]
        if not bindings:
            constant = self.ctx.module_constant(name.value, name)
            return [constant] if constant is not None else None
        values = []
        for binding in bindings:
            if binding.kind not in ("assign", "annassign") or binding.value is None:
                return None
            values.append(binding.value)
        return values

    def _attribute_values(self, attribute: cst.Attribute) -> Optional[List[cst.BaseExpression]]:
        """``self.x``: every value the class assigns to it, in any method."""
        if dotted_name(attribute.value) not in ("self", "cls"):
            return None
        values = [b.value for b in self.attribute_bindings(attribute) if b.value is not None]
        return values or None


def _string_parts(expr: cst.CSTNode) -> List[object]:
    """Literal text (str) and formatted expressions of an f-string or a concatenation."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return [value if isinstance(value, str) else ""]
    if isinstance(expr, cst.ConcatenatedString):
        return _string_parts(expr.left) + _string_parts(expr.right)
    if isinstance(expr, cst.FormattedString):
        out: List[object] = []
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(part.value)
            elif isinstance(part, cst.FormattedStringExpression):
                out.append(part.expression)
        return out
    return [expr]


def _composite(kinds: Iterable[str]) -> str:
    """Parts of one name: a DLQ part makes a DLQ, then an archive, then a work queue."""
    seen = set(kinds)
    for kind in (DLQ, OTHER, WORK, UNKNOWN):
        if kind in seen:
            return kind
    return _NEUTRAL if seen else UNKNOWN


def _agree(kinds: List[str]) -> str:
    """Several assignments of one variable: known only when they all say the same."""
    seen = set(kinds)
    return kinds[0] if len(seen) == 1 else UNKNOWN


def _last(expr: cst.CSTNode) -> Optional[str]:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None
