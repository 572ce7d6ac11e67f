"""A real kombu broker (its in-memory transport) with the example's two queues emptied around
each test; kombu's memory transport keeps queues for the whole process."""

from __future__ import annotations

import pytest
from kombu import Connection

QUEUES = ("orders", "orders.dlq")


@pytest.fixture
def broker():
    with Connection("memory://") as connection:
        _clear(connection)
        yield connection
        _clear(connection)


def _clear(connection: Connection) -> None:
    for name in QUEUES:
        queue = connection.SimpleQueue(name)
        queue.clear()
        queue.close()


def take(connection: Connection, order: dict, headers: dict = None):
    """Put an order on the ``orders`` queue and take it off again: a real kombu message."""
    queue = connection.SimpleQueue("orders")
    queue.put(order, headers=headers or {})
    return queue.get_nowait()


def drain(connection: Connection, name: str) -> list:
    """Every message on a queue, acked: ``[(payload, headers), ...]``."""
    queue = connection.SimpleQueue(name)
    out = []
    while True:
        try:
            message = queue.get_nowait()
        except queue.Empty:
            return out
        out.append((message.payload, message.headers))
        message.ack()
