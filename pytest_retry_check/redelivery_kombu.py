"""kombu's in-memory transport with its queues in a :class:`~pytest_retry_check.redelivery.FakeBroker`.

kombu's own ``memory://`` transport has no visibility timeout: an unacked message stays with the
consumer until its channel closes. Code deployed on SQS or Redis (where kombu's transports take a
``visibility_timeout`` option) gets its messages back when the timeout runs out; this transport
does the same on the fake clock, so kombu consumers (``SimpleQueue``, ``Consumer``, celery
workers' plumbing) see redeliveries, receive counts and the dead-letter policy.

As in kombu's SQS transport, a message's delivery tag is its receipt handle: ``ack()`` deletes
it, ``reject(requeue=True)``/``requeue()`` makes it visible at once, ``reject()`` deletes it.
"""

from __future__ import annotations

import copy
from typing import Any, Dict

from kombu import Connection
from kombu.transport import memory, virtual

from .redelivery import FakeBroker, FakeQueue


class Channel(memory.Channel):
    do_restore = False

    @property
    def broker(self) -> FakeBroker:
        return self.connection.client.transport_options["fake_broker"]

    def _fake(self, queue: str) -> FakeQueue:
        broker = self.broker
        found = broker.get(queue)
        if found is None:
            options = self.connection.client.transport_options
            found = broker(queue, visibility_timeout=options.get("visibility_timeout", broker.visibility_timeout))
        return found

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        return self.broker.get(queue) is not None

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        self._fake(queue)

    def _put(self, queue: str, message: Dict[str, Any], **kwargs: Any) -> None:
        self._fake(queue).send(message)

    def _put_fanout(self, exchange: str, message: Dict[str, Any], routing_key: Any = None, **kwargs: Any) -> None:
        for queue in self._lookup(exchange, routing_key):
            self._put(queue, copy.deepcopy(message))

    def _get(self, queue: str, timeout: Any = None) -> Dict[str, Any]:
        delivery = self._fake(queue).receive_one()
        if delivery is None:
            raise virtual.Empty()
        payload = copy.deepcopy(delivery.body)
        properties = payload.setdefault("properties", {})
        properties["delivery_tag"] = delivery.receipt_handle
        info = properties.setdefault("delivery_info", {})
        info["fake_queue"] = queue
        info["receive_count"] = delivery.receive_count
        payload["redelivered"] = delivery.redelivered
        return payload

    def _size(self, queue: str) -> int:
        return self._fake(queue).visible

    def _purge(self, queue: str) -> int:
        return self._fake(queue).purge()

    def _delete(self, queue: str, *args: Any, **kwargs: Any) -> None:
        self.broker.queues.pop(queue, None)

    def _queue_of(self, delivery_tag: str) -> FakeQueue:
        return self._fake(self.qos.get(delivery_tag).delivery_info["fake_queue"])

    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        try:
            self._queue_of(delivery_tag).delete(delivery_tag)
        finally:
            super().basic_ack(delivery_tag, multiple)

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        if not requeue:  # discarded, as kombu's SQS transport does; else SQS would redeliver it
            try:
                self._queue_of(delivery_tag).delete(delivery_tag)
            except KeyError:
                pass
        super().basic_reject(delivery_tag, requeue=requeue)

    def _restore(self, message: Any) -> None:
        # reject(requeue=True): visible again at once (the message never left the queue).
        self._fake(message.delivery_info["fake_queue"]).nack(message.delivery_tag)

    _restore_at_beginning = _restore

    def close(self) -> None:
        virtual.Channel.close(self)  # not memory.Channel.close: it empties kombu's process-wide queues


class Transport(memory.Transport):
    Channel = Channel
    driver_type = driver_name = "retry-check-memory"


def connection(broker: FakeBroker, transport_options: Dict[str, Any]) -> Connection:
    options = dict(transport_options)
    options["fake_broker"] = broker
    return Connection(transport=Transport, transport_options=options)


def visibility(broker: FakeBroker, message: Any) -> Any:
    """The :class:`FakeQueue` and receipt of a kombu message from this transport."""
    return broker.get(message.delivery_info["fake_queue"]), message.delivery_tag
