"""Both consumers on a queue that redelivers (the fake queue, through kombu, as on SQS or Redis
with a 60 s visibility timeout) and in the incident (2,000 orders failing together).

What is true of this example: while the orders API times out, the bad consumer holds an order for
minutes (100 attempts of 5 s + 100 ms), so a second consumer receives it when its visibility runs
out and both submit it: the order is processed twice. The good one gives up within its 40 s worst
case, dead-letters the order once and acks it in time: one delivery. In the incident, the bad
policy makes 10 connection attempts per order per second (20,000/s for 2,000 orders); the good
consumer's jittered backoff stays under the API's capacity once it is back.
"""

from __future__ import annotations

import time

from pytest_retry_check import replay_incident
from pytest_retry_check.downstream import DownstreamUnavailable

import orders_bad.consumer as bad
import orders_good.consumer as good
from orders_api import TransientError

ORDER = {"id": 42, "sku": "tea", "quantity": 2}
VISIBILITY = 60  # seconds: the transport option, as for kombu's SQS and Redis transports


class TimingOutApi:
    """The orders API while it is down: every call times out after ``timeout`` seconds until it
    is back at ``back_at``; then every submit is applied (and recorded)."""

    def __init__(self, clock, *, back_at: float = 120.0, timeout: float = 5.0) -> None:
        self.clock = clock
        self.back_at = back_at
        self.timeout = timeout
        self.applied = []

    def submit(self, order):
        if self.clock.now() < self.back_at:
            time.sleep(self.timeout)  # waiting for an answer that does not come
            raise TransientError("no answer: timed out")
        self.applied.append((order["id"], self.clock.now()))
        return {"accepted": order["id"]}


def _competing(fake_queue, api, consumer_class, workers=2):
    """``workers`` consumers, each on its own kombu connection, polling the ``orders`` queue
    every second until it is empty."""
    orders = fake_queue("orders", visibility_timeout=VISIBILITY)
    consumers = [consumer_class(fake_queue.kombu_connection(visibility_timeout=VISIBILITY), api) for _ in range(workers)]
    consumers[0].queue.put(ORDER)

    def loop(consumer):
        def run():
            while not orders.idle():
                try:
                    message = consumer.queue.get_nowait()
                except consumer.queue.Empty:
                    time.sleep(1)
                    continue
                consumer.handle(message)

        return run

    fake_queue.run_concurrently(*(loop(c) for c in consumers))
    return orders


def test_the_bad_consumer_holds_an_order_past_its_visibility_and_it_is_processed_twice(fake_queue, fake_clock):
    api = TimingOutApi(fake_clock)
    orders = _competing(fake_queue, api, bad.OrdersConsumer)
    # worker-0 took it at 0 s; at 60 s it was visible again and worker-1 took it; the API was
    # back at 120 s and both submitted it.
    assert [order_id for order_id, _ in api.applied] == [42, 42]
    assert [(r.worker, r.at) for r in orders.deliveries] == [("worker-0", 0.0), ("worker-1", 60.0)]
    message = orders.describe_redeliveries()
    assert "delivery #1 at +0.000 s to worker-0, visible again at +60.000 s" in message


def test_the_good_consumer_gives_up_within_the_visibility_timeout_and_is_delivered_once(fake_queue, fake_clock):
    api = TimingOutApi(fake_clock)
    orders = _competing(fake_queue, api, good.OrdersConsumer)
    orders.assert_delivered_once()
    assert api.applied == []  # the API was still down: dead-lettered, once, for a human to replay
    assert len(fake_queue.get("orders.dlq")) == 1
    letter = fake_queue.kombu_connection().SimpleQueue("orders.dlq").get_nowait().payload
    assert letter["message"] == ORDER and letter["attempts"] == good.MAX_ATTEMPTS
    assert orders.deliveries[0].held() <= 5 * 5 + 15  # five 5 s timeouts and at most 15 s of backoff


# -- the incident ---------------------------------------------------------------------------------
class SimulatedApi:
    """The consumers' API client on the incident's simulated downstream."""

    def __init__(self, downstream) -> None:
        self.downstream = downstream

    def submit(self, order):
        try:
            return self.downstream()
        except DownstreamUnavailable as exc:
            raise TransientError(str(exc), exc.status) from None


class Taken:
    """An order as kombu hands it to the consumer."""

    def __init__(self, order) -> None:
        self.payload = order
        self.headers = {}

    def ack(self) -> None:
        pass


def _consumer(consumer_class, broker):
    made = {}

    def handle(downstream):
        consumer = made.get(id(downstream))
        if consumer is None:
            consumer = made[id(downstream)] = consumer_class(broker, SimulatedApi(downstream))
        return consumer.handle(Taken(dict(ORDER)))

    return handle


def test_in_the_incident_the_good_consumer_stays_under_the_capacity(broker):
    report = replay_incident(_consumer(good.OrdersConsumer, broker), messages=2_000, max_peak=5_000, recovers=True)
    # 2,000 first attempts and the first jittered retries fall in the first second; after that
    # the load falls, and the API that is back at +5 s is never over its 2,000 a second.
    assert report.peak < 5_000 and not report.knocked_over


def test_in_the_incident_the_bad_consumer_makes_ten_attempts_per_order_per_second(broker):
    # Its real code, at 100 orders (each attempt is a thread switch: 2,000 orders would take
    # 200,000); its policy at 2,000 orders is pytest_retry_check.incident.INCIDENT_POLICY: 20,000/s.
    report = replay_incident(_consumer(bad.OrdersConsumer, broker), messages=100, capacity=100)
    assert report.peak >= 950 and report.knocked_over
