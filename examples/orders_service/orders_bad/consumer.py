"""The consumer of the incident: "immediately, up to 100 times, every 100 ms"."""

from __future__ import annotations

import time
from typing import Any

from kombu import Connection

from orders_api import OrdersApi, TransientError

QUEUE = "orders"
DEAD_LETTER_QUEUE = "orders.dlq"


class OrdersConsumer:
    def __init__(self, connection: Connection, api: OrdersApi) -> None:
        self.queue = connection.SimpleQueue(QUEUE)
        self.dead_letters = connection.SimpleQueue(DEAD_LETTER_QUEUE)
        self.api = api

    def handle(self, message: Any) -> str:
        order = message.payload
        outcome = "submitted"
        for attempt in range(100):  # RTY202, RTY301: every 100 ms, whatever the error (404s too)
            try:
                self.api.submit(order)
                break
            except Exception:
                time.sleep(0.1)
        else:
            self.dead_letters.put(order)  # RTY402: no reason, no attempt count, no first-received time
            outcome = "dead-lettered"
        message.ack()
        return outcome


def confirm(api: OrdersApi, order: Any) -> None:
    """Tell the API the order is paid, "until it works"."""
    while True:  # RTY101, RTY201: forever, and without a pause
        try:
            api.submit({"confirm": order["id"]})
            return
        except TransientError:
            continue


def submit_patiently(api: OrdersApi, order: Any) -> Any:
    """Exponential, but every client waits the same 1, 2, 4 … s, and up to 34 min."""
    for attempt in range(12):  # RTY203, RTY204: no jitter, no cap
        try:
            return api.submit(order)
        except TransientError:
            time.sleep(2 ** attempt)
    raise RuntimeError("gave up")
