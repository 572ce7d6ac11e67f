"""A fake downstream closer to real ones (issue 14): slow and hanging answers on the virtual
clock, per-route scripts, in-process routes for httpx/respx/responses users, and the herd check's
load in calls per second, fast enough for 2,000 clients."""

import asyncio
import time

import httpx
import pytest
import requests
import respx
import responses
import tenacity

import pytest_retry_check.clock as clock_module
from pytest_retry_check import (
    DownstreamTimeout,
    UntestedTimeoutWarning,
    RetryGuardTripped,
    assert_bounded,
    assert_dispersed,
    assert_gives_up,
    assert_honours_retry_after,
    assert_succeeded,
    capture_trace,
    hang,
    measure_dispersion,
    rate_limited,
    slow,
)

from .herd_clients import make_client


def real_monotonic():
    return clock_module.real_monotonic()


# -- slow and hanging answers -------------------------------------------------------------------
def test_a_slow_answer_meets_the_callers_timeout_in_virtual_time(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[slow(30), slow(30), slow(2)])
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_fixed(1), retry=tenacity.retry_if_exception_type(TimeoutError), reraise=True
    )
    started = real_monotonic()
    with capture_trace(ds) as run:
        assert policy(lambda: ds(timeout=5)) == "ok"
    assert_succeeded(run)
    # two 5 s timeouts, each followed by a 1 s wait, then a 2 s answer
    assert [a.at for a in run.trace.attempts] == pytest.approx([0, 6, 12], abs=1e-5)
    assert fake_clock.now() == pytest.approx(14, abs=1e-5)
    assert issubclass(DownstreamTimeout, TimeoutError)
    assert real_monotonic() - started < 1.0


def test_a_hang_without_a_timeout_trips_the_guard_and_says_why(fake_downstream):
    ds = fake_downstream(then=hang())
    with pytest.raises(RetryGuardTripped, match="hangs.*no timeout ended it") as tripped:
        ds()
    assert "The client set no timeout" in str(tripped.value)


@pytest.mark.asyncio
async def test_an_async_timeout_cancels_a_slow_answer_on_the_virtual_loop(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[hang(), slow(10), slow(1)])
    loop = asyncio.get_running_loop()
    started = loop.time()
    answers = []
    for _ in range(3):
        try:
            answers.append(await asyncio.wait_for(ds.acall(), timeout=3))
        except asyncio.TimeoutError:
            answers.append("timeout")
    assert answers == ["timeout", "timeout", "ok"]
    assert loop.time() - started == pytest.approx(7, abs=1e-3)
    assert fake_clock.sleeps == []  # the downstream's time is not the client's sleeping


@pytest.mark.asyncio
async def test_an_async_hang_without_a_timeout_trips_the_guard(fake_downstream):
    ds = fake_downstream(then=hang())
    with pytest.raises(RetryGuardTripped):
        await ds.acall()


def test_latency_over_the_real_http_server_costs_virtual_time(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[slow(3, 503)], then="ok")
    with pytest.warns(UntestedTimeoutWarning):  # a socket's timeout is real time: say so
        assert requests.get(ds.url, timeout=5).status_code == 503
    assert fake_clock.now() == pytest.approx(3, abs=1e-5)
    assert requests.get(ds.url, timeout=5).status_code == 200


def test_a_hang_over_the_real_http_server_says_to_use_an_in_process_route(fake_downstream):
    ds = fake_downstream(then=hang())
    with pytest.raises(RetryGuardTripped, match="in-process routes"):
        requests.get(ds.url, timeout=5)


# -- in-process routes --------------------------------------------------------------------------
def _fetch_with_httpx(client, url):
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(4),
        wait=tenacity.wait_random_exponential(max=20),
        retry=tenacity.retry_if_exception_type((httpx.TimeoutException, httpx.HTTPStatusError)),
        reraise=True,
    )

    def once():
        response = client.get(url, timeout=5)
        response.raise_for_status()
        return response.json()

    return policy(once)


def test_httpx_mock_transport_gets_timeouts_and_statuses(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[hang(), 503], then="ok")
    client = httpx.Client(transport=ds.httpx_transport())
    with capture_trace(ds) as run:
        body = _fetch_with_httpx(client, "https://orders.example.com/orders/42")
    assert body == {"ok": True, "call": 3}
    assert [c.outcome.kind for c in ds.calls] == ["hang", "transient", "ok"]
    assert [(c.method, c.path, c.transport) for c in ds.calls][0] == ("GET", "/orders/42", "in-process")
    # the hang cost exactly the read timeout before the first retry's wait
    assert run.trace.attempts[1].delay > 5
    assert_bounded(run, max_attempts=4, max_delay=25)


@pytest.mark.asyncio
async def test_httpx_async_client_with_the_mock_transport(fake_downstream):
    ds = fake_downstream(fail_first=2)
    async with httpx.AsyncClient(transport=ds.httpx_transport()) as client:
        async for attempt in tenacity.AsyncRetrying(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_random_exponential(max=10)):
            with attempt:
                response = await client.get("https://orders.example.com/orders/1")
                response.raise_for_status()
    assert ds.call_count == 3
    assert_succeeded(ds)


def test_respx_routes_the_production_url_to_the_fake(fake_downstream):
    ds = fake_downstream(then=503)
    with respx.mock:
        respx.get("https://orders.example.com/orders/42").mock(side_effect=ds.httpx_handler)
        with capture_trace(ds) as run:
            _fetch_with_httpx(httpx.Client(), "https://orders.example.com/orders/42")
    assert_bounded(run, max_attempts=4, max_total_wait=60)
    assert_gives_up(run, raises=httpx.HTTPStatusError)


@responses.activate
def test_responses_callback_for_requests_users(fake_downstream):
    ds = fake_downstream(outcomes=[rate_limited(retry_after=7)], then="ok")
    responses.add_callback(responses.GET, "https://orders.example.com/orders/42", callback=ds.responses_callback)

    def fetch():
        while True:
            response = requests.get("https://orders.example.com/orders/42", timeout=5)
            if response.status_code != 429:
                return response.json()
            time.sleep(float(response.headers["Retry-After"]))

    assert fetch() == {"ok": True, "call": 2}
    assert_honours_retry_after(ds)
    assert ds.calls[1].at == pytest.approx(7, abs=1e-5)


# -- per-route scripts --------------------------------------------------------------------------
def test_each_route_follows_its_own_script_over_http(fake_downstream):
    ds = fake_downstream(routes={"GET /orders/*": dict(fail_first=2), "/health": "ok", "POST /payments": 404}, then=503)
    session = requests.Session()
    got = [session.get(ds.url + path, timeout=5).status_code for path in ("/orders/1", "/health", "/orders/1", "/orders/2", "/other")]
    assert got == [503, 200, 503, 200, 503]
    assert session.post(ds.url + "/payments", timeout=5).status_code == 404
    assert [c.route for c in ds.calls] == ["GET /orders/*", "/health", "GET /orders/*", "GET /orders/*", "", "POST /payments"]
    assert ds.trace(route="GET /orders/*").attempt_count == 3
    with pytest.raises(KeyError, match="no route"):
        ds.calls_to("/nope")


def test_routes_apply_to_a_callable_called_with_a_path(fake_downstream):
    ds = fake_downstream(routes={"/orders/*": dict(outcomes=[503, 503])})
    with capture_trace(ds, route="/orders/*") as run:
        for _ in range(3):
            try:
                ds("/orders/42")
            except ConnectionError:
                pass
    assert [a.outcome.kind for a in run.trace.attempts] == ["transient", "transient", "ok"]
    assert ds("/health") == "ok"


def test_a_bad_route_key_is_a_clear_error(fake_downstream):
    with pytest.raises(ValueError, match="'METHOD /path'"):
        fake_downstream(routes={"FETCH orders": "ok"})


# -- the herd check's load ------------------------------------------------------------------------
def _most_in_one_second(report):
    instants = sorted(t for s in report.schedules for t in s)  # every call, as simulate() counts
    return max(sum(1 for u in instants if t <= u <= t + 1.0) for t in instants)


def test_the_herd_check_reports_peak_load_per_second():
    lockstep = measure_dispersion(make_client("none"), clients=200)
    jittered = measure_dispersion(make_client("full"), clients=200)
    for report in (lockstep, jittered):
        assert report.peak_load == _most_in_one_second(report)
        assert f"peak load {report.peak_load:,} calls per second" in report.describe()
    # every client's first attempt (t=0) and first retry (t=1) within one second: all calls count
    assert lockstep.peak_load == 2 * lockstep.clients
    assert "peak load" in str(pytest.raises(AssertionError, assert_dispersed, make_client("none"), clients=50).value)


def test_two_thousand_sync_clients_take_under_three_seconds():
    def client(downstream):
        return tenacity.Retrying(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_random_exponential(max=20), reraise=True)(downstream)

    import time as real_time  # process_time is not patched by the fake clock (and none runs here)

    started, cpu = real_monotonic(), real_time.process_time()
    report = measure_dispersion(client, clients=2000)
    elapsed, used = real_monotonic() - started, real_time.process_time() - cpu
    assert report.clients == 2000 and report.passed, report.problems
    # The work: CPU seconds of this process (about 1.1-1.6 s here), which other jobs on a shared
    # machine do not inflate; wall time only has to rule out real sleeping.
    assert used < 3.0, f"{used:.2f} CPU s"
    assert elapsed < 15.0, f"{elapsed:.2f} s"


def test_the_httpx_transport_answers_as_response_content_would(fake_clock, fake_downstream):
    # The transport builds its httpx.Response directly (faster than content=): the same headers
    # in the same order, the body already read, for a sync and an async client.
    ds = fake_downstream(outcomes=[rate_limited(retry_after=30)], then="ok")
    with httpx.Client(transport=ds.httpx_transport()) as client:
        limited = client.get("https://orders.example.com/orders/42")
        ok = client.get("https://orders.example.com/orders/42")
    assert list(limited.headers.items()) == [("content-type", "application/json"), ("retry-after", "30"), ("content-length", str(len(limited.content)))]
    assert limited.status_code == 429 and limited.json()["call"] == 1
    assert list(ok.headers.items()) == [("content-type", "application/json"), ("content-length", str(len(ok.content)))]
    assert ok.json() == {"ok": True, "call": 2} and ok.is_stream_consumed

    async def fetch():
        async with httpx.AsyncClient(transport=ds.httpx_transport()) as client:
            return await client.get("https://orders.example.com/orders/42")

    assert asyncio.run(fetch()).json() == {"ok": True, "call": 3}
