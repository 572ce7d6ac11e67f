"""The scripted downstream: callable, async and over real HTTP, on the fake clock."""

import email.utils
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from pytest_retry_check import (
    DownstreamConnectionDropped,
    DownstreamPermanentError,
    DownstreamRateLimited,
    DownstreamUnavailable,
    FakeClock,
    FakeDownstream,
    RetryGuardTripped,
    Scenario,
    drop,
    ok,
    permanent,
    rate_limited,
    transient,
)


def outcomes_of(downstream, calls, gap=0.0):
    seen = []
    for _ in range(calls):
        try:
            seen.append(downstream())
        except Exception as exc:
            seen.append(type(exc).__name__)
        if gap:
            time.sleep(gap)
    return seen


def test_fail_first_n_calls_then_succeed(fake_downstream):
    ds = fake_downstream(fail_first=2)
    assert outcomes_of(ds, 4) == ["DownstreamUnavailable", "DownstreamUnavailable", "ok", "ok"]
    assert ds.call_count == 4


def test_sequence_of_outcomes_then_the_default(fake_downstream):
    ds = fake_downstream(outcomes=[503, ConnectionResetError, rate_limited(5), 404, "ok"], then=transient(502))
    seen = outcomes_of(ds, 6)
    assert seen == ["DownstreamUnavailable", "ConnectionResetError", "DownstreamRateLimited", "DownstreamPermanentError", "ok", "DownstreamUnavailable"]


def test_exceptions_carry_status_and_retry_after(fake_downstream):
    ds = fake_downstream(outcomes=[rate_limited(7), transient(504), permanent(403), drop()])
    with pytest.raises(DownstreamRateLimited) as limited:
        ds()
    assert (limited.value.status, limited.value.retry_after) == (429, 7.0)
    with pytest.raises(DownstreamUnavailable) as unavailable:
        ds()
    assert unavailable.value.status == 504 and isinstance(unavailable.value, ConnectionError)
    with pytest.raises(DownstreamPermanentError) as rejected:
        ds()
    assert rejected.value.status == 403
    with pytest.raises(DownstreamConnectionDropped):
        ds()


def test_outage_window_on_the_virtual_clock(fake_downstream):
    ds = fake_downstream(outages=[(10, 30)])
    seen = outcomes_of(ds, 5, gap=10)  # calls at t = 0, 10, 20, 30, 40
    assert seen == ["ok", "DownstreamUnavailable", "DownstreamUnavailable", "ok", "ok"]
    assert ds.call_times == [0, 10, 20, 30, 40]


def test_permanent_error_on_every_call(fake_downstream):
    ds = fake_downstream(permanent=404)
    assert outcomes_of(ds, 3) == ["DownstreamPermanentError"] * 3


def test_capacity_limit_per_virtual_second(fake_downstream):
    ds = fake_downstream(capacity=3)
    burst = outcomes_of(ds, 5)  # five calls in the same virtual instant
    assert burst == ["ok", "ok", "ok", "DownstreamUnavailable", "DownstreamUnavailable"]
    time.sleep(1.0)
    assert outcomes_of(ds, 1) == ["ok"]
    assert ds.calls[3].outcome.reason == "overloaded"


@pytest.mark.asyncio
async def test_async_call(fake_downstream):
    ds = fake_downstream(fail_first=1)
    with pytest.raises(DownstreamUnavailable):
        await ds.acall("order-1")
    assert await ds.acall("order-1") == "ok"
    assert [c.transport for c in ds.calls] == ["acall", "acall"]
    assert ds.calls[0].args == ("order-1",)


def test_http_statuses_and_retry_after_seconds(fake_downstream):
    ds = fake_downstream(outcomes=[503, rate_limited(2.2), 404])
    statuses = []
    for _ in range(4):
        try:
            with urllib.request.urlopen(ds.url + "/orders/1") as response:
                statuses.append((response.status, json.load(response)["ok"]))
        except urllib.error.HTTPError as error:
            statuses.append((error.code, error.headers.get("Retry-After")))
    assert statuses == [(503, None), (429, "3"), (404, None), (200, True)]
    assert ds.calls[1].retry_after_until == 3.0  # whole seconds, rounded up, as sent
    assert [c.path for c in ds.calls] == ["/orders/1"] * 4 and ds.calls[0].method == "GET"


def test_http_retry_after_as_a_date_on_the_virtual_clock(fake_downstream, fake_clock):
    time.sleep(100.5)
    ds = fake_downstream(outcomes=[rate_limited(30, as_date=True)])
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(ds.url)
    sent = email.utils.parsedate_to_datetime(info.value.headers["Retry-After"])
    assert sent.timestamp() == int(fake_clock.epoch() + 30)  # one-second resolution, rounded down
    assert ds.calls[0].retry_after_until == pytest.approx(130.0)


def test_http_drop_closes_without_an_answer(fake_downstream):
    ds = fake_downstream(outcomes=[drop()])
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(ds.url)
    assert ds.calls[0].outcome.kind == "drop"


def test_http_server_stops_on_close(fake_clock):
    ds = FakeDownstream(fail_first=0)
    port = int(ds.url.rsplit(":", 1)[1])
    ds.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    with pytest.raises(RuntimeError, match="closed"):
        ds.url


def test_call_guard_stops_a_retry_loop_that_never_sleeps(fake_downstream, fake_clock):
    ds = fake_downstream(permanent=500 - 100, max_calls=100)
    with pytest.raises(RetryGuardTripped, match="101 calls to downstream exceed max_calls=100") as info:
        while True:  # immediate retry, forever: no sleep for the clock's guard to see
            try:
                ds()
            except Exception:
                continue
    assert "#1 at +0.000 s: 400" in str(info.value)
    fake_clock.reset()  # the test knows the guard tripped; do not fail it again at teardown


def test_call_guard_stops_a_retry_loop_that_never_sleeps_over_http(fake_downstream, fake_clock):
    # The guard trips in the server's thread; the loop swallows every HTTP error, so only an
    # exception raised in the test's own thread can stop it.
    ds = fake_downstream(then=503, max_calls=30)
    with pytest.raises(RetryGuardTripped, match="31 calls to downstream exceed max_calls=30"):
        while True:
            try:
                urllib.request.urlopen(ds.url, timeout=5).close()
            except Exception:
                continue
    assert ds.call_count == 30
    fake_clock.reset()  # the test knows the guard tripped


def test_without_a_clock_the_message_says_what_to_do():
    ds = FakeDownstream()
    with pytest.raises(RuntimeError, match="needs a fake clock"):
        ds()


def test_explicit_clock():
    with FakeClock() as clock:
        ds = FakeDownstream(outages=[(0, 5)], clock=clock)
        assert outcomes_of(ds, 2, gap=5) == ["DownstreamUnavailable", "ok"]


@pytest.mark.parametrize(
    "script, message",
    [
        ({"fail_first": -1}, "fail_first must be a whole number"),
        ({"outcomes": [700]}, "HTTP status 700 is not an outcome"),
        ({"outcomes": ["sometimes"]}, "unknown outcome 'sometimes'"),
        ({"outcomes": 503}, "outcomes must be a sequence"),
        ({"outages": [(30, 10)]}, "needs 0 <= start < end"),
        ({"outages": [5]}, "each outage is a \\(start, end\\) pair"),
        ({"permanent": 503}, "permanent= needs a permanent outcome"),
        ({"capacity": 0}, "capacity must be a whole number"),
        ({"retries": 3}, "unknown downstream script keyword"),
    ],
)
def test_bad_scripts_get_a_clear_message(script, message):
    with pytest.raises((TypeError, ValueError), match=message):
        FakeDownstream(**script)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: transient(404), "transient\\(\\) status must be 408 or 5xx"),
        (lambda: permanent(429), "a 4xx other than 408/429"),
        (lambda: rate_limited(-1), "retry_after must be a non-negative number"),
        (lambda: rate_limited(as_date=True), "needs retry_after seconds"),
        (lambda: transient(error="boom"), "error must be an exception"),
    ],
)
def test_bad_outcomes_get_a_clear_message(build, message):
    with pytest.raises((TypeError, ValueError), match=message):
        build()


def test_scenario_object_and_with_script(fake_downstream):
    ds = fake_downstream(Scenario(outcomes=(ok(), 503)))
    assert outcomes_of(ds, 2) == ["ok", "DownstreamUnavailable"]
    assert ds.with_script(outcomes=()).scenario.outcomes == ()
    assert Scenario(then=503).never_recovers and not Scenario(fail_first=3).never_recovers
