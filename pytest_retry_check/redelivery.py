"""A fake message queue with SQS's redelivery semantics, on the fake clock.

What at-least-once delivery does to a consumer, without a broker and without real time:

- a received message is invisible for its **visibility timeout**, then visible again: a handler
  slower than the timeout gets its message delivered a second time (to another worker, or to
  itself on its next poll) unless it **extends the visibility** while it works (a heartbeat);
- **ack** (delete) ends a delivery; **nack** (visibility 0) makes the message visible at once;
- every receive counts; past ``max_receive_count`` receives the next receive moves the message to
  the **dead-letter queue** (SQS's redrive policy), with its receive count and first-received time;
- an ack with a receipt that is no longer the latest (the message was delivered again since)
  succeeds but deletes nothing, as in SQS; a visibility change on it raises ``MessageNotInflight``.

Time is the fake clock's (:func:`~pytest_retry_check.clock.current_clock` or ``clock=``): waiting
for a message (long polling) moves virtual time, never real time.

Drivers: :meth:`FakeBroker.kombu_connection` (kombu's in-memory transport with the queues here,
honouring the ``visibility_timeout`` transport option as kombu's SQS and Redis transports do) and
:meth:`FakeBroker.sqs_client` / :meth:`FakeBroker.attach_sqs` (a real botocore SQS client whose
requests are answered here: botocore validates, serialises and parses as it does against AWS).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .clock import current_clock
from .timeline import Timeline, format_seconds

__all__ = [
    "DeadLetteredMessage",
    "Delivery",
    "DeliveryRecord",
    "FakeBroker",
    "FakeQueue",
    "MessageNotInflight",
    "QueueError",
    "ReceiptHandleIsInvalid",
    "RedeliveryCheckFailed",
]

#: SQS: a message cannot stay invisible longer than 12 hours after it was received.
MAX_VISIBILITY = 12 * 3600.0
DEFAULT_VISIBILITY = 30.0  # SQS's default


class QueueError(Exception):
    """A request the real queue would refuse."""

    code = "InvalidParameterValue"


class ReceiptHandleIsInvalid(QueueError):
    """A receipt handle this queue never gave out."""

    code = "ReceiptHandleIsInvalid"


class MessageNotInflight(QueueError):
    """A visibility change for a delivery that is over: its visibility ran out, or the message
    was delivered again, acked or dead-lettered since."""

    code = "MessageNotInflight"


class RedeliveryCheckFailed(AssertionError):
    """A redelivery check failed; the message shows each message's deliveries."""


@dataclass
class DeliveryRecord:
    """One receive of one message, and how it ended."""

    number: int  # in the queue, from 1
    message_id: str
    receive_count: int  # this message's receives including this one
    at: float  # virtual seconds, when received
    visibility_timeout: float  # as received
    receipt_handle: str
    worker: str = ""  # the scheduled worker that received it (run_concurrently), else ""
    visible_until: float = 0.0  # the latest deadline (heartbeats move it)
    heartbeats: int = 0
    #: "acked", "acked-late" (after its visibility ran out, nobody else had it: deleted),
    #: "stale-ack" (after the message was delivered again: nothing deleted), "nacked",
    #: "expired" (visibility ran out and it was delivered again or dead-lettered), or "" (open).
    ended: str = ""
    ended_at: Optional[float] = None
    #: What happened to the message when this delivery's visibility ran out: "delivered again"
    #: or "dead-lettered" ("" while it did not).
    then: str = ""

    def held(self) -> Optional[float]:
        """How long the consumer held the message (receive to ack/nack)."""
        return None if self.ended_at is None or self.ended == "expired" else self.ended_at - self.at


@dataclass(frozen=True)
class DeadLetteredMessage:
    """A message the redrive policy moved to the dead-letter queue."""

    message_id: str
    body: Any
    receive_count: int
    first_received_at: Optional[float]  # virtual seconds
    moved_at: float  # virtual seconds
    reason: str
    attributes: Dict[str, Any] = field(default_factory=dict)


class _Message:
    __slots__ = ("message_id", "body", "attributes", "sent_at", "visible_at", "receive_count", "first_received_at", "receipt", "received_at", "version", "seq", "gone", "delivery")

    def __init__(self, message_id: str, body: Any, attributes: Dict[str, Any], sent_at: float, visible_at: float, seq: int) -> None:
        self.message_id = message_id
        self.body = body
        self.attributes = attributes
        self.sent_at = sent_at
        self.visible_at = visible_at
        self.receive_count = 0
        self.first_received_at: Optional[float] = None
        self.receipt: Optional[str] = None
        self.received_at: Optional[float] = None
        self.version = 0
        self.seq = seq
        self.gone = False  # deleted or dead-lettered
        self.delivery: Optional[DeliveryRecord] = None


class Delivery:
    """A received message: ``body``, ``attributes``, ``receive_count``, ``receipt_handle``;
    ``ack()``, ``nack(delay=0)``, ``heartbeat(seconds=None)``, ``change_visibility(seconds)``."""

    __slots__ = ("queue", "message_id", "body", "attributes", "receipt_handle", "receive_count", "first_received_at", "received_at", "record")

    def __init__(self, queue: "FakeQueue", message: _Message, record: DeliveryRecord) -> None:
        self.queue = queue
        self.message_id = message.message_id
        self.body = message.body
        self.attributes = message.attributes
        self.receipt_handle = record.receipt_handle
        self.receive_count = message.receive_count
        self.first_received_at = message.first_received_at
        self.received_at = record.at
        self.record = record

    @property
    def visible_until(self) -> float:
        return self.record.visible_until

    @property
    def redelivered(self) -> bool:
        return self.receive_count > 1

    def ack(self) -> None:
        self.queue.delete(self.receipt_handle)

    delete = ack

    def nack(self, delay: float = 0.0) -> None:
        self.queue.nack(self.receipt_handle, delay)

    def heartbeat(self, seconds: Optional[float] = None) -> None:
        self.queue.heartbeat(self.receipt_handle, seconds)

    def change_visibility(self, seconds: float) -> None:
        self.queue.change_visibility(self.receipt_handle, seconds)

    def __repr__(self) -> str:
        return f"<Delivery {self.message_id} #{self.receive_count} of {self.queue.name!r}: {self.body!r}>"


def _seconds(name: str, value: Any, *, upper: float = MAX_VISIBILITY) -> float:
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= upper:
        raise QueueError(f"{name} must be between 0 and {upper:g} seconds, got {value!r}")
    return float(value)


class FakeQueue:
    """One queue with SQS's delivery semantics on the fake clock.

    ``FakeQueue("orders", visibility_timeout=30, max_receive_count=3)``; the dead-letter queue is
    ``dead_letter_queue`` (a :class:`FakeQueue`, made as ``"<name>-dlq"`` when a
    ``max_receive_count`` is given without one). ``clock``: a timeline, else the active fake clock.
    """

    def __init__(
        self,
        name: str = "queue",
        *,
        visibility_timeout: float = DEFAULT_VISIBILITY,
        max_receive_count: Optional[int] = None,
        dead_letter_queue: Optional["FakeQueue"] = None,
        delay: float = 0.0,
        clock: Optional[Timeline] = None,
    ) -> None:
        __tracebackhide__ = True
        if not isinstance(name, str) or not name:
            raise TypeError(f"the queue name must be a non-empty string, got {name!r}")
        self.name = name
        self.visibility_timeout = _seconds("visibility_timeout", visibility_timeout)
        self.delay = _seconds("delay", delay, upper=900)
        if max_receive_count is not None and (isinstance(max_receive_count, bool) or not isinstance(max_receive_count, int) or not 1 <= max_receive_count <= 1000):
            raise QueueError(f"max_receive_count must be a whole number from 1 to 1000 (SQS's range), got {max_receive_count!r}")
        self.max_receive_count = max_receive_count
        if dead_letter_queue is None and max_receive_count is not None:
            dead_letter_queue = FakeQueue(f"{name}-dlq", visibility_timeout=visibility_timeout, clock=clock)
        self.dead_letter_queue = dead_letter_queue
        self._clock = clock
        self._lock = threading.RLock()
        self._heap: List[Tuple[float, int, int, _Message]] = []
        self._messages: Dict[str, _Message] = {}  # not yet deleted or dead-lettered
        self._by_receipt: Dict[str, _Message] = {}
        self._records_by_receipt: Dict[str, DeliveryRecord] = {}
        self._ids = itertools.count(1)
        #: Every receive, in order.
        self.deliveries: List[DeliveryRecord] = []
        #: What the redrive policy moved to the dead-letter queue.
        self.dead_letters: List[DeadLetteredMessage] = []
        self.sent = 0
        self.deleted = 0
        #: Set by the broker while scheduled workers run: how a worker waits (long polling).
        self._wait: Optional[Callable[[float], None]] = None
        self._worker: Callable[[], str] = lambda: ""

    # -- time -------------------------------------------------------------------------------
    @property
    def clock(self) -> Timeline:
        __tracebackhide__ = True
        clock = self._clock if self._clock is not None else current_clock()
        if clock is None:
            raise RuntimeError(f"queue {self.name!r} needs a fake clock: use the fake_queue fixture, `with FakeClock():`, or FakeQueue(clock=...)")
        return clock

    def _now(self) -> float:
        return self.clock.now()

    # -- sending ----------------------------------------------------------------------------
    def send(self, body: Any, *, attributes: Optional[Dict[str, Any]] = None, delay: Optional[float] = None, message_id: Optional[str] = None) -> str:
        """Put a message on the queue; returns its id. ``delay``: seconds before it is visible."""
        __tracebackhide__ = True
        wait = self.delay if delay is None else _seconds("delay", delay, upper=900)
        with self._lock:
            seq = next(self._ids)
            mid = message_id or f"{self.name}-{seq}"
            now = self._now()
            message = _Message(mid, body, dict(attributes or {}), now, now + wait, seq)
            self._messages[mid] = message
            heapq.heappush(self._heap, (message.visible_at, seq, 0, message))
            self.sent += 1
            return mid

    put = send

    def send_many(self, bodies: Iterable[Any]) -> List[str]:
        return [self.send(body) for body in bodies]

    # -- receiving --------------------------------------------------------------------------
    def receive(self, max_messages: int = 1, *, visibility_timeout: Optional[float] = None, wait_time: float = 0.0) -> List[Delivery]:
        """Up to ``max_messages`` visible messages, each invisible for ``visibility_timeout``
        (default: the queue's). With ``wait_time`` and nothing visible, waits (virtually) until a
        message becomes visible or ``wait_time`` has passed (SQS long polling)."""
        __tracebackhide__ = True
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
            raise QueueError(f"max_messages must be a whole number >= 1, got {max_messages!r}")
        timeout = self.visibility_timeout if visibility_timeout is None else _seconds("visibility_timeout", visibility_timeout)
        wait_time = _seconds("wait_time", wait_time, upper=3600)
        got = self._take(max_messages, timeout)
        if got or not wait_time:
            return got
        end = self._now() + wait_time
        while True:
            now = self._now()
            nxt = self.next_visible_at()
            if nxt is None or nxt > end:
                self._sleep(end - now)
                return self._take(max_messages, timeout)
            self._sleep(max(0.0, nxt - now))
            got = self._take(max_messages, timeout)
            if got or self._now() >= end:
                return got

    def receive_one(self, **options: Any) -> Optional[Delivery]:
        got = self.receive(1, **options)
        return got[0] if got else None

    get = receive_one

    def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self._wait is not None:
            self._wait(seconds)
        else:
            self.clock.advance(seconds)

    def next_visible_at(self) -> Optional[float]:
        """When the next message becomes visible (virtual seconds), or None when none will."""
        with self._lock:
            self._prune()
            return self._heap[0][0] if self._heap else None

    def _prune(self) -> None:
        heap = self._heap
        while heap and (heap[0][3].gone or heap[0][2] != heap[0][3].version):
            heapq.heappop(heap)

    def _take(self, max_messages: int, timeout: float) -> List[Delivery]:
        got: List[Delivery] = []
        with self._lock:
            now = self._now()
            heap = self._heap
            while heap and len(got) < max_messages:
                visible_at, _, version, message = heap[0]
                if message.gone or version != message.version:
                    heapq.heappop(heap)
                    continue
                if visible_at > now:
                    break
                heapq.heappop(heap)
                previous = message.delivery
                moved = self.max_receive_count is not None and message.receive_count >= self.max_receive_count
                if previous is not None and not previous.ended:
                    previous.ended, previous.ended_at = "expired", previous.visible_until
                    previous.then = "dead-lettered" if moved else "delivered again"
                if moved:
                    self._dead_letter(message, now)
                    continue
                got.append(self._deliver(message, now, timeout))
        return got

    def _deliver(self, message: _Message, now: float, timeout: float) -> Delivery:
        message.receive_count += 1
        if message.first_received_at is None:
            message.first_received_at = now
        message.version += 1
        message.visible_at = now + timeout
        message.received_at = now
        receipt = f"{message.message_id}#{message.receive_count}"
        if message.receipt is not None:
            self._by_receipt.pop(message.receipt, None)
        message.receipt = receipt
        self._by_receipt[receipt] = message
        record = DeliveryRecord(len(self.deliveries) + 1, message.message_id, message.receive_count, now, timeout, receipt, self._worker(), now + timeout)
        self.deliveries.append(record)
        self._records_by_receipt[receipt] = record
        message.delivery = record
        heapq.heappush(self._heap, (message.visible_at, message.seq, message.version, message))
        return Delivery(self, message, record)

    def _dead_letter(self, message: _Message, now: float) -> None:
        message.gone = True
        self._messages.pop(message.message_id, None)
        reason = f"received {message.receive_count} times, maxReceiveCount={self.max_receive_count} (visibility ran out or the message was nacked each time)"
        letter = DeadLetteredMessage(message.message_id, message.body, message.receive_count, message.first_received_at, now, reason, dict(message.attributes))
        self.dead_letters.append(letter)
        if self.dead_letter_queue is not None:
            attributes = dict(message.attributes)
            attributes.update(
                {"dead_letter_source": self.name, "receive_count": message.receive_count, "first_received_at": message.first_received_at, "dead_letter_reason": reason}
            )
            self.dead_letter_queue.send(message.body, attributes=attributes, message_id=message.message_id)

    # -- ending or extending a delivery -----------------------------------------------------
    def _lookup(self, receipt: Any) -> Tuple[Optional[_Message], DeliveryRecord]:
        __tracebackhide__ = True
        if isinstance(receipt, Delivery):
            receipt = receipt.receipt_handle
        record = self._records_by_receipt.get(receipt)
        if record is None:
            raise ReceiptHandleIsInvalid(f"queue {self.name!r}: the receipt handle {receipt!r} was never given out by this queue")
        return self._by_receipt.get(receipt), record

    def delete(self, receipt: Any) -> None:
        """Ack: delete the message. A receipt that is no longer the latest (the message was
        delivered again since) deletes nothing, as in SQS; it is recorded (``stale-ack``)."""
        __tracebackhide__ = True
        with self._lock:
            message, record = self._lookup(receipt)
            now = self._now()
            if message is None or message.gone:  # delivered again since, or already gone
                if not record.ended or record.ended == "expired":
                    record.ended, record.ended_at = "stale-ack", now
                return
            message.gone = True
            self._messages.pop(message.message_id, None)
            self._by_receipt.pop(message.receipt, None)
            record.ended = "acked" if now <= record.visible_until else "acked-late"
            record.ended_at = now
            self.deleted += 1

    ack = delete

    def change_visibility(self, receipt: Any, seconds: float) -> None:
        """The message becomes visible ``seconds`` from now (0: at once). Raises
        ``MessageNotInflight`` when the delivery is over (visibility ran out, delivered again,
        acked), as SQS does, and ``QueueError`` past 12 hours after the receive."""
        __tracebackhide__ = True
        seconds = _seconds("visibility timeout", seconds)
        with self._lock:
            message, record = self._lookup(receipt)
            now = self._now()
            if message is None or message.gone or record.ended or now >= record.visible_until:
                what = {"acked": "acked", "acked-late": "acked", "stale-ack": "acked", "nacked": "nacked", "expired": "delivered again"}.get(record.ended, "")
                why = what or (f"its visibility ran out at +{format_seconds(record.visible_until)}" if now >= record.visible_until else "over")
                raise MessageNotInflight(
                    f"queue {self.name!r}: delivery #{record.receive_count} of message {record.message_id} is not in flight "
                    f"at +{format_seconds(now)} ({why}): the visibility change came too late"
                )
            if now + seconds - record.at > MAX_VISIBILITY:
                raise QueueError(f"queue {self.name!r}: visibility cannot reach past 12 hours after the receive (received at +{format_seconds(record.at)})")
            message.version += 1
            message.visible_at = now + seconds
            heapq.heappush(self._heap, (message.visible_at, message.seq, message.version, message))
            if seconds == 0:
                record.ended, record.ended_at = "nacked", now
                message.delivery = None
            else:
                record.visible_until = now + seconds
                record.heartbeats += 1

    def nack(self, receipt: Any, delay: float = 0.0) -> None:
        """Give the message back: visible again after ``delay`` seconds (0: at once)."""
        __tracebackhide__ = True
        if delay:
            with self._lock:
                self.change_visibility(receipt, delay)
                message, record = self._lookup(receipt)
                record.heartbeats -= 1
                record.ended, record.ended_at = "nacked", self._now()
                if message is not None:
                    message.delivery = None  # delayed, not in flight
        else:
            self.change_visibility(receipt, 0)

    def heartbeat(self, receipt: Any, seconds: Optional[float] = None) -> None:
        """Extend the visibility: invisible for ``seconds`` (default: the queue's visibility
        timeout) from now."""
        __tracebackhide__ = True
        self.change_visibility(receipt, self.visibility_timeout if seconds is None else seconds)

    extend_visibility = heartbeat

    def purge(self) -> int:
        with self._lock:
            count = len(self._messages)
            for message in self._messages.values():
                message.gone = True
            self._messages.clear()
            self._heap.clear()
            return count

    # -- looking at it ----------------------------------------------------------------------
    def __len__(self) -> int:
        """Messages not yet deleted or dead-lettered (visible, delayed or in flight)."""
        return len(self._messages)

    @property
    def visible(self) -> int:
        now = self._now()
        return sum(1 for m in self._messages.values() if m.visible_at <= now)

    @property
    def in_flight(self) -> int:
        now = self._now()
        return sum(1 for m in self._messages.values() if m.visible_at > now and m.receipt is not None and m.delivery is not None)

    def idle(self) -> bool:
        """Nothing left: every message was deleted or dead-lettered."""
        return not self._messages

    def bodies(self) -> List[Any]:
        """The bodies of the messages still on the queue, in send order."""
        return [m.body for m in sorted(self._messages.values(), key=lambda m: m.seq)]

    def deliveries_of(self, message_id: str) -> List[DeliveryRecord]:
        return [r for r in self.deliveries if r.message_id == message_id]

    def redelivered(self) -> Dict[str, List[DeliveryRecord]]:
        """Messages received more than once: id -> their deliveries."""
        counts: Dict[str, List[DeliveryRecord]] = {}
        for record in self.deliveries:
            counts.setdefault(record.message_id, []).append(record)
        return {mid: records for mid, records in counts.items() if len(records) > 1}

    def late(self) -> List[DeliveryRecord]:
        """Deliveries the consumer held past their visibility (acked late, stale acks, or
        still held when the message was delivered again)."""
        out = []
        for record in self.deliveries:
            if record.ended in ("acked-late", "stale-ack"):
                out.append(record)
        return out

    # -- the checks -------------------------------------------------------------------------
    def assert_delivered_once(self) -> None:
        """Fails when a message was delivered more than once, or a consumer held a message past
        its visibility timeout (another consumer could have received it meanwhile)."""
        __tracebackhide__ = True
        if not self.sent:
            raise RedeliveryCheckFailed(
                f"redelivery check failed: nothing was sent to queue {self.name!r}, so there is nothing to judge: "
                "does the producer use this queue's name?"
            )
        if not self.deliveries:
            raise RedeliveryCheckFailed(
                f"redelivery check failed: {self.sent} message(s) sent to queue {self.name!r}, none was received, so there is "
                "nothing to judge: does the consumer read this queue, and did it run?"
            )
        redelivered = self.redelivered()
        late = [r for r in self.late() if r.message_id not in redelivered]
        if not redelivered and not late:
            return
        raise RedeliveryCheckFailed(self.describe_redeliveries(redelivered, late))

    def describe_redeliveries(self, redelivered: Optional[Dict[str, List[DeliveryRecord]]] = None, late: Sequence[DeliveryRecord] = ()) -> str:
        if redelivered is None:
            redelivered = self.redelivered()
        messages = len({r.message_id for r in self.deliveries})
        lines = [f"redelivery check failed on queue {self.name!r} (visibility timeout {format_seconds(self.visibility_timeout)}):"]
        if redelivered:
            lines.append(f"- {len(redelivered)} of {messages} message(s) were delivered more than once")
        if late:
            lines.append(f"- {len(late)} delivery(ies) were acked after their visibility ran out: another consumer could have received the message meanwhile")
        if self.dead_letters:
            lines.append(f"- {len(self.dead_letters)} message(s) went to the dead-letter queue after maxReceiveCount={self.max_receive_count} receives")
        shown = list(redelivered.items())[:5] + [(r.message_id, [r]) for r in late[:5]]
        for mid, records in shown:
            lines.append(f"message {mid} ({len(records)} deliveries):" if len(records) > 1 else f"message {mid}:")
            shown_records: List[Optional[DeliveryRecord]] = list(records)
            if len(records) > 6:
                shown_records = list(records[:4]) + [None] + list(records[-1:])
            for record in shown_records:
                lines.append(f"  ... {len(records) - 5} more" if record is None else "  " + describe_delivery(record))
        if len(redelivered) > 5:
            lines.append(f"  ... and {len(redelivered) - 5} more message(s) delivered more than once")
        lines.append(
            "fix: keep the handler shorter than the visibility timeout, or extend the visibility while working "
            "(a heartbeat: change_message_visibility every third of the timeout); and make the handler idempotent, "
            "since at-least-once queues redeliver anyway"
        )
        return "\n".join(lines)

    def report_line(self) -> str:
        """``orders: 1 message(s) sent, 3 deliveries, 1 redelivered, 1 dead-lettered, 0 left``
        (the ``--retry-check-report`` line)."""
        text = f"queue {self.name}: {self.sent} message(s) sent, {len(self.deliveries)} deliveries"
        redelivered, late = len(self.redelivered()), len(self.late())
        if redelivered:
            text += f", {redelivered} redelivered"
        if late:
            text += f", {late} acked after the visibility ran out"
        if self.dead_letters:
            text += f", {len(self.dead_letters)} dead-lettered"
        return text + f", {len(self)} left"

    def __repr__(self) -> str:
        return f"<FakeQueue {self.name!r}: {len(self)} message(s), {len(self.deliveries)} deliveries, {len(self.dead_letters)} dead-lettered>"


def describe_delivery(record: DeliveryRecord) -> str:
    who = f" to {record.worker}" if record.worker else ""
    text = f"delivery #{record.receive_count} at +{format_seconds(record.at)}{who}, visible again at +{format_seconds(record.visible_until)}"
    if record.heartbeats:
        text += f" ({record.heartbeats} heartbeat(s))"
    held = record.held()
    if record.ended == "expired":
        text += f": its visibility ran out while it was held, and it was {record.then or 'delivered again'}"
    elif record.ended == "acked":
        text += f": acked after {format_seconds(held or 0.0)}"
    elif record.ended == "acked-late":
        text += f": acked after {format_seconds(held or 0.0)}, {format_seconds(record.ended_at - record.visible_until)} after its visibility ran out"  # type: ignore[operator]
    elif record.ended == "stale-ack":
        text += f": acked after {format_seconds(held or 0.0)}, but the message had been {'moved to the dead-letter queue' if record.then == 'dead-lettered' else 'delivered again'}: that ack deleted nothing"
    elif record.ended == "nacked":
        text += f": nacked after {format_seconds(held or 0.0)}"
    else:
        text += ": not acked"
    return text


def _setting(queue: FakeQueue, key: str) -> Any:
    value = getattr(queue, key, None)
    return value.name if isinstance(value, FakeQueue) else value


def _setting_value(value: Any) -> Any:
    if isinstance(value, FakeQueue):
        return value.name
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value) if value else value
    return value


# -- many queues, concurrent workers, real client libraries -------------------------------------
class FakeBroker:
    """The queues of one test, by name. What the ``fake_queue`` fixture gives:
    ``fake_queue("orders", visibility_timeout=30, max_receive_count=3)`` makes (or returns) a
    :class:`FakeQueue`; ``kombu_connection()`` and ``sqs_client()`` reach the same queues."""

    def __init__(self, *, clock: Optional[Timeline] = None, visibility_timeout: float = DEFAULT_VISIBILITY) -> None:
        self._clock = clock
        self.visibility_timeout = visibility_timeout
        self.queues: Dict[str, FakeQueue] = {}
        self._undo: List[Callable[[], None]] = []

    def __call__(self, name: str = "queue", **options: Any) -> FakeQueue:
        __tracebackhide__ = True
        queue = self.queues.get(name)
        if queue is not None:
            differ = {key: value for key, value in options.items() if _setting(queue, key) != _setting_value(value)}
            if differ:  # as SQS's CreateQueue: the same attributes return the queue, others fail
                raise QueueError(f"queue {name!r} exists already with other settings ({', '.join(f'{k}={_setting(queue, k)!r}' for k in differ)})")
            return queue
        options.setdefault("visibility_timeout", self.visibility_timeout)
        dlq = options.get("dead_letter_queue")
        if isinstance(dlq, str):
            options["dead_letter_queue"] = self(dlq)
        elif dlq is None and options.get("max_receive_count") is not None:
            options["dead_letter_queue"] = self(f"{name}-dlq")
        queue = self.queues[name] = FakeQueue(name, clock=self._clock, **options)
        return queue

    queue = __call__

    def get(self, name: str) -> Optional[FakeQueue]:
        return self.queues.get(name)

    def heartbeat(self, message: Any, seconds: Optional[float] = None) -> None:
        """Extend the visibility of a received message: a :class:`Delivery`, or a kombu message
        from :meth:`kombu_connection` (kombu has no call for it; SQS code calls
        ``change_message_visibility``)."""
        __tracebackhide__ = True
        if isinstance(message, Delivery):
            message.heartbeat(seconds)
            return
        info = getattr(message, "delivery_info", None) or {}
        queue = self.get(info.get("fake_queue", ""))
        if queue is None:
            raise TypeError(f"heartbeat() takes a Delivery or a kombu message from this broker's kombu_connection(), got {message!r}")
        queue.heartbeat(message.delivery_tag, seconds)

    extend_visibility = heartbeat

    # -- concurrent workers on the fake clock ------------------------------------------------
    def run_concurrently(self, *workers: Callable[[], Any], until: float = 3600.0, names: Optional[Sequence[str]] = None, max_sleeps: int = 100_000) -> List[Any]:
        """Run each ``worker()`` in its own thread, one at a time in virtual-time order (the
        herd simulation's scheduler): a worker's ``time.sleep`` and its queues' long polls hand
        over to whichever worker is due next, so competing consumers interleave as they would
        for real. Workers still running ``until`` virtual seconds from now are stopped.
        Returns the ``ClientResult`` of each worker (``outcome``: "returned" or "unfinished");
        a worker's exception is raised once all have stopped. Virtual time ends where the last
        worker stopped."""
        __tracebackhide__ = True
        from .population import ThreadScheduler, current_client

        clock = self._clock if self._clock is not None else current_clock()
        if clock is None:
            raise RuntimeError("run_concurrently needs a fake clock (the fake_queue fixture brings one)")
        if not workers:
            raise TypeError("run_concurrently() needs at least one worker function")
        labels = list(names) if names is not None else [f"worker-{i}" for i in range(len(workers))]
        scheduler = ThreadScheduler(clock, horizon=clock.now() + until, max_sleeps=max_sleeps)  # type: ignore[arg-type]
        original_sleep = clock.sleep

        def scheduled_sleep(seconds: object, *, kind: str = "sleep", advance: bool = True, _depth: int = 1) -> Any:
            __tracebackhide__ = True
            if not scheduler.is_client_thread():
                return original_sleep(seconds, kind=kind, advance=advance, _depth=_depth + 1)
            from .timeline import validate_sleep

            value = validate_sleep(seconds)
            scheduler.count_sleep()
            scheduler.wait(value)
            return None

        def wait(seconds: float) -> None:
            if scheduler.is_client_thread():
                scheduler.wait(seconds)
            else:
                clock.advance(seconds)

        for queue in self.queues.values():
            queue._wait = wait
            queue._worker = lambda: labels[current_client()] if scheduler.is_client_thread() else ""
        clock.sleep = scheduled_sleep  # type: ignore[method-assign]
        try:
            results = scheduler.run(lambda _: workers[current_client()](), len(workers), None)
        finally:
            del clock.sleep
            for queue in self.queues.values():
                queue._wait = None
                queue._worker = lambda: ""
        for result in results:  # a worker that raised is a failure of the test, not a silent stop
            if result.error is not None:
                raise result.error
        return results

    def run_workers(self, queue: Union[str, FakeQueue], handler: Callable[[Delivery], Any], *, workers: int = 2, poll_interval: float = 1.0, wait_time: float = 0.0, until: float = 3600.0) -> List[Any]:
        """Competing consumers of ``queue``: each worker receives a message, calls
        ``handler(delivery)`` and acks it when the handler returns (an exception leaves it to be
        redelivered when its visibility runs out); polls every ``poll_interval`` virtual seconds
        when the queue is empty; stops when every message was deleted or dead-lettered."""
        __tracebackhide__ = True
        target = self(queue) if isinstance(queue, str) else queue

        def worker() -> None:
            while not target.idle():
                delivery = target.receive_one(wait_time=wait_time)
                if delivery is None:
                    target._sleep(poll_interval)
                    continue
                try:
                    handler(delivery)
                except Exception:
                    continue
                delivery.ack()

        return self.run_concurrently(*([worker] * workers), until=until)

    # -- real client libraries --------------------------------------------------------------
    def kombu_connection(self, **transport_options: Any) -> Any:
        """A ``kombu.Connection`` on kombu's in-memory transport whose queues are this broker's
        (``visibility_timeout`` as a transport option, as for kombu's SQS and Redis transports)."""
        from .redelivery_kombu import connection

        return connection(self, transport_options)

    def sqs_client(self, region_name: str = "us-east-1", **kwargs: Any) -> Any:
        """A real botocore SQS client answered by this broker (no network, no credentials)."""
        from .redelivery_sqs import make_client

        return make_client(self, region_name, kwargs)

    def attach_sqs(self, client: Any) -> Any:
        """Answer this (boto3 or botocore) SQS client's requests from this broker; undone when
        the fixture ends (or by ``close()``). Returns the client."""
        from .redelivery_sqs import attach

        self._undo.append(attach(self, client))
        return client

    def reset(self) -> None:
        """Forget every queue (a fresh start, as for each hypothesis example); attached SQS
        clients stay attached."""
        self.queues.clear()

    def close(self) -> None:
        while self._undo:
            self._undo.pop()()
