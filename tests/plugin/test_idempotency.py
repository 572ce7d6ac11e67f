"""Ambiguous failures (applied, then the answer failed) and assert_idempotent, on real clients:
tenacity around httpx and requests, urllib3's Retry on POST, respx, responses, the callable."""

import asyncio
import uuid

import httpx
import pytest
from hypothesis import given, settings
import requests
import responses
import respx
import tenacity
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from pytest_retry_check import strategies as rs
from pytest_retry_check import (
    RetryCheckFailed,
    after_commit,
    assert_idempotent,
    capture_trace,
    drop,
    error_after_commit,
    reset_after_commit,
    timeout_after_commit,
)

PAYMENTS = "https://payments.example/payments"


# -- clients as a team writes them ---------------------------------------------------------------
def retrying(*errors):
    return tenacity.retry(
        stop=tenacity.stop_after_attempt(4),
        wait=tenacity.wait_random_exponential(multiplier=0.5, max=5),
        retry=tenacity.retry_if_exception_type(errors),
        reraise=True,
    )


@retrying(httpx.TransportError, httpx.HTTPStatusError)
def pay_httpx(client, order_id, idempotency_key=None):
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    response = client.post(PAYMENTS, json={"order_id": order_id, "amount": 1000}, headers=headers, timeout=5)
    response.raise_for_status()
    return response.json()


@retrying(httpx.TransportError, httpx.HTTPStatusError)
def pay_httpx_key_per_attempt(client, order_id):
    # The bug: a fresh key inside the retried function, so every attempt has its own.
    response = client.post(PAYMENTS, json={"order_id": order_id}, headers={"Idempotency-Key": str(uuid.uuid4())}, timeout=5)
    response.raise_for_status()
    return response.json()


@retrying(requests.ConnectionError, requests.HTTPError)
def pay_requests(session, url, order_id, idempotency_key=None):
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    response = session.post(f"{url}/payments", json={"order_id": order_id, "amount": 1000}, headers=headers, timeout=5)
    response.raise_for_status()
    return response.json()


def urllib3_session(allowed_methods):
    retry = Retry(total=3, backoff_factor=0.5, status_forcelist=(502, 503), allowed_methods=allowed_methods, raise_on_status=False)
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


# -- httpx + tenacity, in-process transport ------------------------------------------------------
def test_a_retry_after_a_timeout_after_commit_pays_twice(fake_downstream):
    payments = fake_downstream(outcomes=[timeout_after_commit()])
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx(client, 42)
    assert run.trace.succeeded  # the client thinks all went well ...
    with pytest.raises(RetryCheckFailed) as failed:
        assert_idempotent(run)  # ... but the customer paid twice
    message = str(failed.value)
    assert "retry check 'idempotent' failed: a retry applied the same operation again" in message
    assert 'POST /payments {"order_id":42,"amount":1000} was applied 2 times, by attempts #1 (+0.000 s, applied, then hang (no answer))' in message
    assert "and #2 (+5." in message and ", ok)" in message  # the 5 s timeout, then the jittered wait
    assert "no attempt carried an idempotency key" in message
    assert "1      +0.000 s             -  applied, then hang (no answer)" in message


def test_an_idempotency_key_made_once_is_honoured_and_passes(fake_downstream):
    payments = fake_downstream(outcomes=[timeout_after_commit(), error_after_commit(502)])
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx(client, 42, idempotency_key="order-42-payment")
    trace = assert_idempotent(run)
    assert [c.applied for c in payments.calls] == [True, False, False]
    assert [c.replay_of for c in payments.calls] == [None, 1, 1]
    assert "ok (same idempotency key as #1: not applied again)" in trace.schedule()
    assert len(payments.effects()) == 1


def test_a_key_made_per_attempt_deduplicates_nothing(fake_downstream):
    payments = fake_downstream(outcomes=[error_after_commit(502)])
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx_key_per_attempt(client, 7)
    with pytest.raises(RetryCheckFailed, match="different idempotency keys .*: a key made per attempt deduplicates nothing"):
        assert_idempotent(run)


def test_a_server_that_ignores_the_key_duplicates_and_says_so(fake_downstream):
    payments = fake_downstream(outcomes=[error_after_commit(502)], idempotency=None)
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx(client, 42, idempotency_key="order-42-payment")
    with pytest.raises(RetryCheckFailed, match="the server ignores it"):
        assert_idempotent(run)


def test_the_business_key_can_be_a_body_field_or_a_function(fake_downstream):
    # Two payments for two orders are two operations; a retried one is applied twice.
    payments = fake_downstream(outcomes=["ok", error_after_commit(503)])
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx(client, 1)
        pay_httpx(client, 2)
    assert sorted(payments.effects(key="order_id")) == [1, 2]
    assert [len(v) for v in payments.effects(key="order_id").values()] == [1, 2]
    with pytest.raises(RetryCheckFailed, match=r"order_id=2 was applied 2 times, by attempts #2 .* and #3"):
        assert_idempotent(run, key="order_id")
    with pytest.raises(RetryCheckFailed, match=r"'order 2' was applied 2 times"):
        assert_idempotent(run, key=lambda call: f"order {call.json['order_id']}")
    with pytest.raises(ValueError, match="has no keyword argument, JSON body field or query parameter 'customer'"):
        assert_idempotent(run, key="customer")


# -- requests: tenacity and urllib3's Retry over the local HTTP server ----------------------------
def test_requests_with_tenacity_over_http_pays_twice_after_a_502(fake_downstream):
    payments = fake_downstream(outcomes=[error_after_commit(502)], key="order_id")
    with capture_trace(payments) as run:
        pay_requests(requests.Session(), payments.url, 42)
    assert payments.calls[0].transport == "http" and payments.calls[0].json == {"order_id": 42, "amount": 1000}
    with pytest.raises(RetryCheckFailed, match=r"order_id=42 was applied 2 times, by attempts #1 \(\+0.000 s, applied, then 502\)"):
        assert_idempotent(run)  # key="order_id", the downstream's


def test_requests_with_an_idempotency_key_over_http_passes(fake_downstream):
    payments = fake_downstream(outcomes=[error_after_commit(502), reset_after_commit()])
    with capture_trace(payments) as run:
        pay_requests(requests.Session(), payments.url, 42, idempotency_key="pay-42")
    assert_idempotent(run)
    assert payments.calls[2].replay_of == 1


def test_urllib3_retry_on_post_pays_twice(fake_downstream):
    # allowed_methods including POST: urllib3 retries the 502 of a payment that went through.
    payments = fake_downstream(outcomes=[error_after_commit(502)])
    with capture_trace(payments) as run:
        urllib3_session(allowed_methods=None).post(f"{payments.url}/payments", json={"order_id": 42}, timeout=5)
    with pytest.raises(RetryCheckFailed, match=r"POST /payments .* was applied 2 times.* and #2 \(\+0.000 s, ok\)"):
        assert_idempotent(run)  # urllib3's first retry is immediate


def test_urllib3_retry_after_a_reset_on_post_pays_twice(fake_downstream):
    payments = fake_downstream(outcomes=[reset_after_commit()])
    with capture_trace(payments) as run:
        urllib3_session(allowed_methods=frozenset({"GET", "POST"})).post(f"{payments.url}/payments", json={"order_id": 42}, timeout=5)
    with pytest.raises(RetryCheckFailed, match=r"by attempts #1 \(\+0.000 s, applied, then dropped connection\)"):
        assert_idempotent(run)


def test_urllib3_default_methods_do_not_retry_post_and_pass(fake_downstream):
    payments = fake_downstream(outcomes=[error_after_commit(502)])
    with capture_trace(payments) as run:
        response = urllib3_session(allowed_methods=Retry.DEFAULT_ALLOWED_METHODS).post(f"{payments.url}/payments", json={"order_id": 42}, timeout=5)
    assert response.status_code == 502
    assert_idempotent(run)
    assert payments.call_count == 1


# -- respx, responses ----------------------------------------------------------------------------
def test_respx_route(fake_downstream):
    payments = fake_downstream(outcomes=[error_after_commit(504)])
    with respx.mock:
        respx.post(PAYMENTS).mock(side_effect=payments.httpx_handler)
        with capture_trace(payments) as run:
            pay_httpx(httpx.Client(), 42)
    with pytest.raises(RetryCheckFailed, match=r"applied, then 504"):
        assert_idempotent(run)


@responses.activate
def test_responses_callback_reset_after_commit(fake_downstream):
    payments = fake_downstream(outcomes=[reset_after_commit()])
    responses.add_callback(responses.POST, PAYMENTS, callback=payments.responses_callback)
    with capture_trace(payments) as run:
        pay_requests(requests.Session(), "https://payments.example", 42)
    assert payments.calls[0].header("content-type") == "application/json"
    with pytest.raises(RetryCheckFailed, match=r"applied, then dropped connection"):
        assert_idempotent(run)


@responses.activate
def test_responses_callback_with_an_idempotency_key_passes(fake_downstream):
    payments = fake_downstream(outcomes=[reset_after_commit()])
    responses.add_callback(responses.POST, PAYMENTS, callback=payments.responses_callback)
    with capture_trace(payments) as run:
        pay_requests(requests.Session(), "https://payments.example", 42, idempotency_key="k-42")
    assert_idempotent(run)
    assert [c.idempotency_key for c in payments.calls] == ["k-42", "k-42"]


# -- the callable, sync and async ----------------------------------------------------------------
def test_callable_with_a_business_key_and_an_idempotency_key(fake_downstream):
    script = dict(outcomes=[after_commit(drop()), after_commit(ConnectionError("reset"))], key="order_id")

    @retrying(ConnectionError)
    def create(orders, order_id, **extra):
        return orders("/orders", order_id=order_id, **extra)

    orders = fake_downstream(**script)
    with capture_trace(orders) as run:
        create(orders, 42)
    with pytest.raises(RetryCheckFailed, match=r"order_id=42 was applied 3 times"):
        assert_idempotent(run)
    orders = fake_downstream(**script)
    with capture_trace(orders) as run:
        create(orders, 43, idempotency_key="create-43")
    assert_idempotent(run)
    assert [c.replay_of for c in orders.calls] == [None, 1, 1]


def test_async_callable(fake_downstream):
    orders = fake_downstream(outcomes=[timeout_after_commit(), "ok"])

    async def create():
        async for attempt in tenacity.AsyncRetrying(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_random(0, 1), reraise=True):
            with attempt:
                return await asyncio.wait_for(orders.acall("/orders", order_id=42), timeout=2)

    with capture_trace(orders) as run:
        asyncio.run(create())
    with pytest.raises(RetryCheckFailed, match=r"call\('/orders', order_id=42\) was applied 2 times"):
        assert_idempotent(run)


# -- what is not judged --------------------------------------------------------------------------
def test_reads_never_take_effect(fake_downstream):
    orders = fake_downstream(outcomes=[error_after_commit(502)])
    client = httpx.Client(transport=orders.httpx_transport())
    for _ in tenacity.Retrying(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(httpx.HTTPStatusError)):
        with _:
            client.get("https://orders.example/orders/42").raise_for_status()
    assert [c.applied for c in orders.calls] == [False, False]
    assert_idempotent(orders)


def test_nothing_ambiguous_is_nothing_to_judge(fake_downstream):
    payments = fake_downstream(fail_first=2)
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx(client, 42)
    with pytest.raises(RetryCheckFailed, match="no answer failed after the request was applied"):
        assert_idempotent(run)
    with pytest.raises(RetryCheckFailed, match="never called"):
        assert_idempotent(fake_downstream())


def test_after_commit_needs_a_failure():
    with pytest.raises(ValueError, match="needs a failing answer"):
        after_commit("ok")
    with pytest.raises(ValueError, match="refused before it"):
        after_commit(404)
    assert error_after_commit().label == "applied, then 502"
    assert timeout_after_commit(30).label == "applied, then ok after 30.000 s"


# -- any run of ambiguous failures (hypothesis) ----------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(failures=rs.outcome_sequences(min_size=1, max_size=3, transient=False, rate_limited=False, ambiguous=True))  # pay_httpx makes 4 attempts
def test_whatever_fails_after_the_commit_a_key_made_once_pays_once(fake_downstream, failures):
    payments = fake_downstream(outcomes=failures)
    client = httpx.Client(transport=payments.httpx_transport())
    with capture_trace(payments) as run:
        pay_httpx(client, 42, idempotency_key="order-42")
    assert_idempotent(run)
    assert len(payments.effects()) == 1 and payments.calls[-1].ok
    plain = fake_downstream(outcomes=failures)
    client = httpx.Client(transport=plain.httpx_transport())
    with capture_trace(plain) as run:
        pay_httpx(client, 42)
    with pytest.raises(RetryCheckFailed, match=f"was applied {len(failures) + 1} times"):
        assert_idempotent(run)


def test_a_timeout_after_commit_over_real_sockets_trips_the_guard_as_a_hang_does(fake_clock, fake_downstream):
    payments = fake_downstream(outcomes=[timeout_after_commit()])
    with fake_clock.expect_trip() as trip:
        requests.post(f"{payments.url}/payments", json={"order_id": 42}, timeout=5)
    assert "hangs (scripted hang()) over the real HTTP server" in str(trip.value) and "in-process routes" in str(trip.value)
    assert payments.calls[0].applied  # the payment went through before the answer was lost
