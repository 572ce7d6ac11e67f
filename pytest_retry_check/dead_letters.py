"""Capture what the code under test sends to its dead-letter queue.

Each dead letter must carry the original message, the failure reason, the attempt count and
the first-received time. Hand the capture to the code as its DLQ (``DeadLetters.send`` takes
any call shape) or put it in place of the real publish function with ``patch``.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from .clock import current_clock

__all__ = ["DeadLetter", "DeadLetters", "FIELD_ALIASES"]

# Names code commonly uses for the four things (envelope keys, keyword arguments, headers).
FIELD_ALIASES: Dict[str, Tuple[str, ...]] = {
    "message": ("message", "original_message", "original", "payload", "body", "msg", "task", "event", "data"),
    "reason": ("reason", "failure_reason", "error", "error_message", "exception", "failure", "cause", "last_error", "status", "status_code"),
    "attempts": ("attempts", "attempt_count", "attempt", "retries", "retry_count", "tries", "num_attempts", "delivery_count"),
    "first_received": ("first_received", "first_received_at", "received_at", "first_seen", "first_seen_at", "enqueued_at", "first_attempt_at", "created_at"),
}
_NESTED = ("headers", "metadata", "meta", "attributes", "context", "properties", "dead_letter", "dlq")
FIELDS = tuple(FIELD_ALIASES)


_NOTHING: Any = type("_Nothing", (), {"__repr__": lambda self: "<nothing>"})()


@dataclass(frozen=True, eq=False)
class DeadLetter:
    """One dead letter, with the four context fields found in whatever was sent.

    It also stands for what the code put in the queue (``sent``, when that was one object:
    ``dlq.append(envelope)``): it compares equal to it and indexes into it, so code that reads
    its dead letters back (``dlq[0]["reason"]``, ``dlq == [envelope]``) sees its own objects."""

    message: Any
    reason: Any
    attempts: Any
    first_received: Any
    at: Optional[float]  # virtual time of the send, when a fake clock was active
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)
    #: The one object the code sent (``append(x)``, ``dlq[key] = x``); else nothing.
    sent: Any = field(default=_NOTHING, repr=False)
    #: The key of a dict-style write (``dlq[message_id] = envelope``), else None.
    key: Any = field(default=None, repr=False)

    def _fields(self) -> Tuple[Any, ...]:
        return (self.message, self.reason, self.attempts, self.first_received, self.at, self.args, self.kwargs)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DeadLetter):
            return self._fields() == other._fields()
        return self.sent is not _NOTHING and bool(self.sent == other)

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> Any:
        if self.sent is _NOTHING:
            raise TypeError("this dead letter was sent as several arguments; read .message, .reason, .attempts, .first_received")
        return self.sent[key]

    def missing(self) -> List[str]:
        """The context fields that are absent or unusable, with why."""
        problems = []
        if self.message is None:
            problems.append("original message")
        if _blank(self.reason):
            problems.append("failure reason")
        if _as_count(self.attempts) is None:
            problems.append("attempt count" if _blank(self.attempts) else f"attempt count ({self.attempts!r} is not a whole number >= 1)")
        if _blank(self.first_received):
            problems.append("first-received time")
        elif not _is_time(self.first_received):
            problems.append(f"first-received time ({self.first_received!r} is not a time)")
        return problems


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, (str, bytes, Mapping, list, tuple)) and len(value) == 0)


def _as_count(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and value >= 1 else None


def _is_time(value: Any) -> bool:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value > 0
    if isinstance(value, str):
        try:
            _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return True
        except ValueError:
            try:
                return float(value) > 0
            except ValueError:
                return False
    return False


def _as_mapping(value: Any) -> Optional[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, (bytes, str)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text.lstrip().startswith("{"):
            try:
                loaded = json.loads(text)
            except ValueError:
                return None
            return loaded if isinstance(loaded, dict) else None
    if hasattr(value, "__dict__") and not isinstance(value, type):  # a dataclass or message object
        try:
            return {k: v for k, v in vars(value).items() if not k.startswith("_")}
        except TypeError:
            return None
    return None


def _lookup(sources: Sequence[Mapping[str, Any]], name: str) -> Any:
    for source in sources:
        for alias in FIELD_ALIASES[name]:
            # An empty original ({}, "") is still the original: record it as it was sent.
            if alias in source and (source[alias] is not None if name == "message" else not _blank(source[alias])):
                return source[alias]
    return None


class DeadLetters:
    """A dead-letter queue capture. ``send`` (also ``__call__``, ``put``, ``publish``) records
    whatever it is given; ``entries`` lists :class:`DeadLetter` s."""

    def __init__(self) -> None:
        self.entries: List[DeadLetter] = []
        self._undo: List[Tuple[Any, str, Any]] = []

    def send(self, *args: Any, **kwargs: Any) -> None:
        sources: List[Mapping[str, Any]] = [kwargs]
        envelope = _as_mapping(args[0]) if len(args) == 1 and not kwargs else None
        if envelope is not None:
            sources.append(envelope)
        for source in list(sources):
            for key in _NESTED:
                nested = _as_mapping(source.get(key)) if isinstance(source, Mapping) else None
                if nested is not None:
                    sources.append(nested)
        message = _lookup(sources, "message")
        values = {name: _lookup(sources, name) for name in ("reason", "attempts", "first_received")}
        if message is None and args and (envelope is None or not any(v is not None for v in values.values())):
            message = args[0]  # dlq.send(original, reason=..., ...), or a bare original
        remaining = list(args[1:]) if args and envelope is None else []
        for name in ("reason", "attempts", "first_received"):  # dlq.send(msg, reason, attempts, first)
            if values[name] is None and remaining:
                values[name] = remaining.pop(0)
        clock = current_clock()
        sent = args[0] if len(args) == 1 and not kwargs else _NOTHING
        self.entries.append(
            DeadLetter(message, values["reason"], values["attempts"], values["first_received"], clock.now() if clock else None, tuple(args), dict(kwargs), sent)
        )

    __call__ = put = publish = put_nowait = send

    # The list protocol (also a deque's, a dict's and a queue's writes): code that keeps its dead
    # letters in a collection (``dlq.append(msg)``, ``dlq[msg_id] = envelope``,
    # ``dlq.appendleft(msg)``, ``dlq += [msg]``) can be handed this capture as that collection;
    # reading back gives the code's own objects (see DeadLetter).
    append = send

    def extend(self, items: Iterable[Any]) -> None:
        for item in items:
            self.send(item)

    def __iadd__(self, items: Iterable[Any]) -> "DeadLetters":
        self.extend(items)
        return self

    def insert(self, index: int, item: Any) -> None:
        self.send(item)
        self.entries.insert(index, self.entries.pop())

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)

    def extendleft(self, items: Iterable[Any]) -> None:
        for item in items:
            self.appendleft(item)

    def pop(self, index: int = -1) -> DeadLetter:
        return self.entries.pop(index)

    def popleft(self) -> DeadLetter:
        return self.entries.pop(0)

    def remove(self, item: Any) -> None:
        self.entries.pop(self.index(item))

    def index(self, item: Any, *bounds: int) -> int:
        for i in range(len(self.entries))[slice(*bounds) if bounds else slice(None)]:
            if self._matches(self.entries[i], item):
                return i
        raise ValueError(f"{item!r} is not among the dead letters")

    def count(self, item: Any) -> int:
        return sum(1 for e in self.entries if self._matches(e, item))

    def copy(self) -> List[DeadLetter]:
        return list(self.entries)

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        def value(entry: DeadLetter) -> Any:
            item = entry.sent if entry.sent is not _NOTHING else entry.message
            return key(item) if key is not None else item

        self.entries.sort(key=value, reverse=reverse)

    def reverse(self) -> None:
        self.entries.reverse()

    def __reversed__(self) -> Iterator[DeadLetter]:
        return reversed(self.entries)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DeadLetters):
            return self.entries == other.entries
        if isinstance(other, (list, tuple)):
            return len(other) == len(self.entries) and all(e == o for e, o in zip(self.entries, other))
        return NotImplemented

    __hash__ = object.__hash__

    def __setitem__(self, index: Any, item: Any) -> None:
        # A list index when it is one (in range, not a key already used); else a dict's key.
        if isinstance(index, int) and not isinstance(index, bool) and -len(self.entries) <= index < len(self.entries) and index not in self.keys():
            self.send(item)
            self.entries[index] = self.entries.pop()
            return
        if isinstance(index, slice):
            scratch = DeadLetters()
            scratch.extend(item)
            self.entries[index] = scratch.entries
            return
        self.send(item)  # a dict-style DLQ: dlq[message_id] = envelope
        entry = self.entries.pop()
        self.entries = [e for e in self.entries if not (e.key is not None and e.key == index)]
        from dataclasses import replace

        self.entries.append(replace(entry, key=index))

    def __delitem__(self, index: Any) -> None:
        if isinstance(index, slice) or (isinstance(index, int) and not isinstance(index, bool) and index not in self.keys()):
            del self.entries[index]
            return
        self.entries.remove(self._by_key(index))

    def setdefault(self, key: Any, item: Any = None) -> Any:
        found = self.get(key, _NOTHING)
        if found is not _NOTHING:
            return found
        self[key] = item
        return self._by_key(key)

    def update(self, items: Any = (), **more: Any) -> None:
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        for key, item in pairs + list(more.items()):
            self[key] = item

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self._by_key(key)
        except KeyError:
            return default

    def keys(self) -> List[Any]:
        return [e.key for e in self.entries if e.key is not None]

    def values(self) -> List[DeadLetter]:
        return list(self.entries)

    def items(self) -> List[Tuple[Any, DeadLetter]]:
        return [(e.key, e) for e in self.entries if e.key is not None]

    def _by_key(self, key: Any) -> DeadLetter:
        for entry in self.entries:
            if entry.key is not None and entry.key == key:
                return entry
        raise KeyError(key)

    @staticmethod
    def _matches(entry: DeadLetter, item: Any) -> bool:
        return item is entry or entry == item or (entry.sent is _NOTHING and item == entry.message)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __contains__(self, item: Any) -> bool:
        return any(item is e or item == e or item == e.message for e in self.entries)

    def patch(self, target: Any, attribute: Optional[str] = None) -> None:
        """Replace a publish function with this capture until ``restore()`` (the fixture restores
        at teardown): ``patch("myapp.queue.send_to_dlq")`` or ``patch(queue_object, "send")``."""
        __tracebackhide__ = True
        if attribute is None:
            if not isinstance(target, str) or "." not in target:
                raise ValueError(f"patch() takes 'package.module.function' or (object, 'attribute'), got {target!r}")
            module_name, attribute = target.rsplit(".", 1)
            try:
                target = importlib.import_module(module_name)
            except ImportError as exc:
                raise ValueError(f"cannot patch {module_name}.{attribute}: {exc}") from None
        if not hasattr(target, attribute):
            raise ValueError(f"{target!r} has no attribute {attribute!r} to replace with the dead-letter capture")
        self._undo.append((target, attribute, getattr(target, attribute)))
        setattr(target, attribute, self.send)

    def restore(self) -> None:
        while self._undo:
            target, attribute, original = self._undo.pop()
            setattr(target, attribute, original)

    def clear(self) -> None:
        self.entries = []

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[DeadLetter]:
        return iter(self.entries)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self.entries[index]
        if isinstance(index, int) and not isinstance(index, bool) and index not in self.keys():
            return self.entries[index]
        return self._by_key(index)  # a dict-style DLQ

    @property
    def messages(self) -> List[Any]:
        return [e.message for e in self.entries]

    def assert_context(self, *, messages: Optional[Sequence[Any]] = None, attempts: Optional[int] = None) -> None:
        """Each dead letter carries the original message, failure reason, attempt count and
        first-received time. ``messages``: exactly these originals were dead-lettered (any
        order). ``attempts``: each entry reports this attempt count."""
        __tracebackhide__ = True
        from .assertions import RetryCheckFailed

        if not self.entries:
            from .trace import swallowed_note

            raise RetryCheckFailed("dead letters: nothing was sent to the dead-letter queue\n" + swallowed_note())
        problems = []
        for i, entry in enumerate(self.entries, 1):
            missing = entry.missing()
            if missing:
                problems.append(f"  dead letter #{i} lacks: {', '.join(missing)}\n    sent: {_describe_send(entry)}")
            elif attempts is not None and _as_count(entry.attempts) != attempts:
                problems.append(f"  dead letter #{i} says {entry.attempts!r} attempts, expected {attempts}\n    sent: {_describe_send(entry)}")
        if messages is not None:
            expected, got = list(messages), self.messages
            unmatched = list(got)
            lost = []
            for message in expected:
                if message in unmatched:
                    unmatched.remove(message)
                else:
                    lost.append(message)
            if lost or unmatched:
                problems.append(f"  originals expected {expected!r}, dead-lettered {got!r}")
        if problems:
            raise RetryCheckFailed(
                "dead letters without context (each needs the original message, the failure reason, the attempt count and "
                "the first-received time, so that someone can investigate and replay it):\n"
                + "\n".join(problems)
            )


def _describe_send(entry: DeadLetter) -> str:
    parts = [repr(a) for a in entry.args] + [f"{k}={v!r}" for k, v in entry.kwargs.items()]
    text = f"send({', '.join(parts)})"
    return text if len(text) <= 300 else text[:297] + "..."
