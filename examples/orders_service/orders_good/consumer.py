"""Takes orders off the ``orders`` queue and submits them to the orders API.

The retry policy, sized from the total wait (doctrine §2): 5 attempts, full-jitter exponential
backoff from 1 s, doubling, capped at 20 s: at most 1 + 2 + 4 + 8 = 15 s of waiting before the
order goes to the dead-letter queue with what a human needs to investigate it.
"""

from __future__ import annotations

import datetime
import logging
import random
import time
from typing import Any, Optional

from kombu import Connection

from orders_api import OrdersApi, OrdersApiError, PermanentError, TransientError

log = logging.getLogger(__name__)

QUEUE = "orders"
DEAD_LETTER_QUEUE = "orders.dlq"
MAX_ATTEMPTS = 5
BASE_DELAY = 1.0
MAX_DELAY = 20.0
#: Header that carries when the order was first taken off the queue, across replays.
FIRST_RECEIVED = "x-first-received"


def utcnow() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class OrdersConsumer:
    def __init__(self, connection: Connection, api: OrdersApi) -> None:
        self.queue = connection.SimpleQueue(QUEUE)
        self.dead_letters = connection.SimpleQueue(DEAD_LETTER_QUEUE)
        self.api = api

    def drain(self) -> int:
        """Handle every order waiting on the queue; returns how many were handled."""
        handled = 0
        while True:
            try:
                message = self.queue.get_nowait()
            except self.queue.Empty:
                return handled
            self.handle(message)
            handled += 1

    def handle(self, message: Any) -> str:
        """Submit one order: ``"submitted"`` or ``"dead-lettered"``; the message is acked either way."""
        order = message.payload
        first_received = message.headers.get(FIRST_RECEIVED) or utcnow()
        outcome = "submitted"
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                self.api.submit(order)
                break
            except PermanentError as exc:
                # A 4xx fails the same way every time: dead-letter it without spending retries.
                self.dead_letter(order, exc, attempt, first_received)
                outcome = "dead-lettered"
                break
            except TransientError as exc:
                if attempt == MAX_ATTEMPTS:
                    self.dead_letter(order, exc, attempt, first_received)
                    outcome = "dead-lettered"
                    break
                delay = random.uniform(0, min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1)))
                log.info("order %s: attempt %d failed (%s); retrying in %.1f s", order.get("id"), attempt, exc, delay)
                # A 429 says when to come back: never earlier than that.
                time.sleep(max(delay, exc.retry_after or 0.0))
        message.ack()
        return outcome

    def dead_letter(self, order: Any, error: OrdersApiError, attempts: int, first_received: str) -> None:
        """The four things a dead letter carries (doctrine §4), next to where it came from."""
        self.dead_letters.put(
            {
                "message": order,
                "reason": str(error),
                "status": error.status,
                "attempts": attempts,
                "first_received": first_received,
                "failed_at": utcnow(),
                "queue": QUEUE,
            }
        )
        log.warning("order %s dead-lettered after %d attempt(s): %s", order.get("id"), attempts, error)


def main(broker_url: str, api_url: str, poll_interval: float = 1.0) -> None:  # pragma: no cover - a service's run loop
    """Run the consumer until interrupted (``python -m orders_good.consumer``)."""
    with Connection(broker_url) as connection:
        consumer = OrdersConsumer(connection, OrdersApi(api_url))
        while True:
            if not consumer.drain():
                time.sleep(poll_interval)


if __name__ == "__main__":  # pragma: no cover
    import os

    logging.basicConfig(level=logging.INFO)
    main(os.environ.get("ORDERS_BROKER_URL", "memory://"), os.environ.get("ORDERS_API_URL", "http://127.0.0.1:8080"))
