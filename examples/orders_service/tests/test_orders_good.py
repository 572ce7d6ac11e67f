"""The good consumer, proved with pytest_retry_check against a real HTTP downstream and a real
kombu broker, in virtual time: these tests never sleep for real."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from kombu import Connection
from pytest_retry_check import (
    assert_backs_off,
    assert_bounded,
    assert_gives_up,
    assert_honours_retry_after,
    assert_jittered,
    assert_no_retry_on_permanent,
    assert_succeeded,
    capture_trace,
    rate_limited,
)
from pytest_retry_check import strategies as rs

from orders_api import OrdersApi
from orders_good import replay as replay_cli
from orders_good.consumer import FIRST_RECEIVED, MAX_ATTEMPTS, OrdersConsumer

from .conftest import drain, take

ORDER = {"id": 42, "sku": "tea", "quantity": 2}


def consumer_for(broker, downstream) -> OrdersConsumer:
    return OrdersConsumer(broker, OrdersApi(downstream.url))


def test_recovers_from_a_short_outage(broker, fake_downstream):
    api = fake_downstream(fail_first=3)
    consumer = consumer_for(broker, api)
    with capture_trace(api) as run:
        assert consumer.handle(take(broker, ORDER)) == "submitted"
    assert_succeeded(run)
    assert_bounded(run, max_attempts=4, max_total_wait=7, max_delay=4)  # 0–1 + 0–2 + 0–4 s
    assert drain(broker, "orders.dlq") == []


def test_gives_up_after_five_attempts_into_the_dlq_with_context(broker, fake_downstream, dead_letters):
    api = fake_downstream(then=503)
    consumer = consumer_for(broker, api)
    dead_letters.patch(consumer.dead_letters, "put")
    with capture_trace(api, dead_letters=dead_letters) as run:
        assert consumer.handle(take(broker, ORDER)) == "dead-lettered"
    assert_bounded(run, max_attempts=MAX_ATTEMPTS, max_total_wait=15, max_delay=20)
    assert_gives_up(run)
    dead_letters.assert_context(messages=[ORDER], attempts=MAX_ATTEMPTS)


def test_the_dead_letter_on_the_broker_carries_the_four_things(broker, fake_downstream, fake_clock):
    api = fake_downstream(then=503)
    consumer_for(broker, api).handle(take(broker, ORDER, headers={FIRST_RECEIVED: "2026-09-06T11:59:00+00:00"}))
    [(letter, _headers)] = drain(broker, "orders.dlq")
    assert letter["message"] == ORDER
    assert letter["reason"] == "HTTP 503" and letter["status"] == 503
    assert letter["attempts"] == MAX_ATTEMPTS
    assert letter["first_received"] == "2026-09-06T11:59:00+00:00"  # kept across replays
    assert letter["failed_at"] == fake_clock.utcnow().replace(tzinfo=datetime.timezone.utc).isoformat()


def test_a_permanent_error_is_dead_lettered_without_a_retry(broker, fake_downstream, dead_letters):
    api = fake_downstream(permanent=422)
    consumer = consumer_for(broker, api)
    dead_letters.patch(consumer.dead_letters, "put")
    with capture_trace(api, dead_letters=dead_letters) as run:
        consumer.handle(take(broker, ORDER))
    assert_no_retry_on_permanent(run)
    dead_letters.assert_context(messages=[ORDER], attempts=1)


def test_honours_retry_after(broker, fake_downstream):
    api = fake_downstream(outcomes=[rate_limited(retry_after=30), rate_limited(retry_after=12, as_date=True)])
    with capture_trace(api) as run:
        consumer_for(broker, api).handle(take(broker, ORDER))
    assert_succeeded(run)
    assert_honours_retry_after(run)


def test_backs_off_with_jitter(broker, fake_downstream):
    runs = []
    for _ in range(12):
        api = fake_downstream(then=503)
        with capture_trace(api) as run:
            consumer_for(broker, api).handle(take(broker, ORDER))
        runs.append(run)
    assert_backs_off(*runs)
    assert_jittered(*runs)


def test_clients_that_fail_together_do_not_retry_together(broker, herd_check):
    herd_check(lambda api: consumer_for(broker, api).handle(take(broker, ORDER)), clients=100)


@settings(max_examples=40, deadline=None)
@given(scenario=rs.scenarios(permanent=True, recovers=None, max_retry_after=60))
def test_any_failure_scenario_stays_bounded_and_ends_in_the_api_or_the_dlq(fake_downstream, dead_letters, scenario):
    """The recipe for property tests of one's own retry code (docs/plugin.md). The plugin's
    fixtures are fresh for every example; the broker is opened per example here."""
    api = fake_downstream(scenario)
    with Connection("memory://") as broker:
        consumer = consumer_for(broker, api)
        dead_letters.patch(consumer.dead_letters, "put")
        with capture_trace(api, dead_letters=dead_letters) as run:
            outcome = consumer.handle(take(broker, ORDER))
    trace = run.trace
    assert trace.attempt_count <= MAX_ATTEMPTS
    assert_bounded(run, max_delay=20)  # a longer Retry-After is honoured, not counted as a missing cap
    if trace.permanent_failures:
        assert_no_retry_on_permanent(run)
    if outcome == "submitted":
        assert_succeeded(run)
    else:
        dead_letters.assert_context(messages=[ORDER], attempts=trace.attempt_count)


# ---------------------------------------------------------------- the replay command


def _dead_letter(broker, order_id: int, failed_at: str) -> None:
    broker.SimpleQueue("orders.dlq").put(
        {
            "message": {"id": order_id},
            "reason": "HTTP 503",
            "status": 503,
            "attempts": 5,
            "first_received": "2026-09-06T11:00:00+00:00",
            "failed_at": failed_at,
            "queue": "orders",
        }
    )


def test_replay_moves_at_most_limit_letters_since_a_time_at_the_given_rate(broker, fake_clock, capsys):
    for n in range(5):
        _dead_letter(broker, n, "2026-09-06T11:30:00+00:00")  # before --since: stay in the DLQ
    for n in range(5, 45):
        _dead_letter(broker, n, "2026-09-06T12:10:00+00:00")
    argv = ["--queue", "orders", "--since", "2026-09-06T12:00", "--limit", "30", "--rate", "10"]

    assert replay_cli.main(argv, connection=broker) == 0

    replayed = drain(broker, "orders")
    assert [payload["id"] for payload, _ in replayed] == list(range(5, 35))
    assert all(headers[FIRST_RECEIVED] == "2026-09-06T11:00:00+00:00" for _, headers in replayed)
    left = sorted(letter["message"]["id"] for letter, _ in drain(broker, "orders.dlq"))
    assert left == list(range(5)) + list(range(35, 45))
    # 30 messages at 10 per second: 29 pauses of 0.1 s, nothing faster.
    assert [round(s.seconds, 6) for s in fake_clock.sleeps] == [0.1] * 29
    assert fake_clock.now() == pytest.approx(2.9)
    assert "replayed 30 letter(s) from orders.dlq to orders at 10/s" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, complaint",
    [
        (["--queue", "orders", "--since", "2026-09-06T12:00"], "--limit"),
        (["--queue", "orders", "--since", "yesterday", "--limit", "5"], "not an ISO date"),
        (["--queue", "orders", "--since", "2026-09-06", "--limit", "0"], "positive whole number"),
        (["--queue", "orders", "--since", "2026-09-06", "--limit", "5", "--rate", "0"], "between 0 and 1000"),
    ],
)
def test_replay_rejects_bad_arguments_with_exit_code_2(broker, argv, complaint, capsys):
    with pytest.raises(SystemExit) as exited:
        replay_cli.main(argv, connection=broker)
    assert exited.value.code == 2
    assert complaint in capsys.readouterr().err
