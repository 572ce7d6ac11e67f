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


@dataclass(frozen=True)
class DeadLetter:
    """One dead letter, with the four context fields found in whatever was sent."""

    message: Any
    reason: Any
    attempts: Any
    first_received: Any
    at: Optional[float]  # virtual time of the send, when a fake clock was active
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)

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
        self.entries.append(DeadLetter(message, values["reason"], values["attempts"], values["first_received"], clock.now() if clock else None, tuple(args), dict(kwargs)))

    __call__ = put = publish = send

    # The list protocol: code that collects dead letters in a list (``dlq.append(msg)``) can be
    # handed this capture as that list.
    append = send

    def extend(self, items: Iterable[Any]) -> None:
        for item in items:
            self.send(item)

    def insert(self, index: int, item: Any) -> None:
        self.send(item)
        self.entries.insert(index, self.entries.pop())

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

    def __getitem__(self, index: int) -> DeadLetter:
        return self.entries[index]

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
