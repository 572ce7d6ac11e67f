"""The bad twin: each of its mistakes makes a pytest_retry_check assertion fail, quickly, in
virtual time. A check that passed here would be a check that cannot catch anything."""

from __future__ import annotations

import queue

import pytest
from pytest_retry_check import (
    RetryCheckFailed,
    RetryGuardTripped,
    assert_backs_off,
    assert_bounded,
    assert_jittered,
    assert_no_retry_on_permanent,
    capture_trace,
)

from orders_api import OrdersApi
from orders_bad.consumer import OrdersConsumer, confirm, submit_patiently
from orders_bad.redrive import redrive_forever, replay_all

from .conftest import drain, take

ORDER = {"id": 42, "sku": "tea", "quantity": 2}


def consumer_for(broker, downstream) -> OrdersConsumer:
    return OrdersConsumer(broker, OrdersApi(downstream.url))


def test_the_incident_policy_is_not_bounded_and_does_not_back_off(broker, fake_downstream):
    api = fake_downstream(then=503)
    with capture_trace(api) as run:
        consumer_for(broker, api).handle(take(broker, ORDER))
    assert run.trace.attempt_count == 100
    with pytest.raises(RetryCheckFailed, match="100 attempts"):
        assert_bounded(run, max_attempts=6)
    with pytest.raises(RetryCheckFailed, match="fixed delay"):
        assert_backs_off(run)


def test_a_404_is_retried_a_hundred_times(broker, fake_downstream):
    api = fake_downstream(permanent=404)
    with capture_trace(api) as run:
        consumer_for(broker, api).handle(take(broker, ORDER))
    with pytest.raises(RetryCheckFailed, match="permanent"):
        assert_no_retry_on_permanent(run)


def test_the_dead_letter_has_no_context(broker, fake_downstream, dead_letters):
    api = fake_downstream(then=503)
    consumer = consumer_for(broker, api)
    dead_letters.patch(consumer.dead_letters, "put")
    consumer.handle(take(broker, ORDER))
    with pytest.raises(AssertionError, match="reason"):
        dead_letters.assert_context(messages=[ORDER], attempts=100)


def test_a_forever_retry_without_a_pause_fails_fast(fake_downstream, fake_clock):
    api = fake_downstream(then=503, max_calls=50)
    with pytest.raises(RetryGuardTripped, match="max_calls=50"):
        confirm(OrdersApi(api.url), ORDER)
    assert api.call_count == 50
    assert {c.at for c in api.calls} == {0.0}  # every call at the same instant: no pause at all
    fake_clock.reset()  # the trip was the point of this test: do not report it as swallowed


def test_exponential_without_jitter_or_cap(fake_downstream):
    runs = []
    for _ in range(10):
        api = fake_downstream(then=503)
        with capture_trace(api) as run:
            submit_patiently(OrdersApi(api.url), ORDER)
        runs.append(run)
    assert_backs_off(*runs)  # it does grow …
    with pytest.raises(RetryCheckFailed):
        assert_jittered(*runs)  # … but every client waits the same
    with pytest.raises(RetryCheckFailed, match="max_delay"):
        assert_bounded(runs[0], max_delay=20)  # 1, 2, 4 … 1024 s: no cap


def test_clients_that_fail_together_retry_together(broker, herd_check):
    with pytest.raises(RetryCheckFailed, match="thundering herd"):
        herd_check(lambda api: consumer_for(broker, api).handle(take(broker, ORDER)), clients=20, outages=[(0, 2)])


def test_auto_redrive_sends_a_poison_order_round_and_round(broker, fake_downstream, fake_clock):
    api = fake_downstream(permanent=422)
    consumer = consumer_for(broker, api)
    broker.SimpleQueue("orders").put(ORDER)
    for _ in range(3):
        consumer.handle(broker.SimpleQueue("orders").get_nowait())
        # One pass of the redrive job: it moves the letter back, then waits for the next one.
        with pytest.raises(queue.Empty):  # kombu's blocking get gives up after 60 virtual seconds
            redrive_forever(broker)
    # The same order, submitted 100 times in each of three rounds, and never fixed.
    assert api.call_count == 300
    assert all(call.path == "/orders" for call in api.calls)


def test_replay_all_puts_everything_back_at_once(broker, fake_clock):
    dead_letters = broker.SimpleQueue("orders.dlq")
    for n in range(1000):
        dead_letters.put({"id": n})
    assert replay_all(broker) == 1000
    assert len(drain(broker, "orders")) == 1000
    assert fake_clock.now() == 0.0 and fake_clock.sleeps == []  # 1,000 messages in no time at all
