"""asyncio under the fake clock: sleeps and timers jump, deadlines expire at virtual time,
and real I/O with the HTTP downstream is waited for (pytest-asyncio runs these tests)."""

import asyncio
import random
import time

import backoff
import httpx
import pytest
import redis.asyncio.retry
import redis.backoff
import stamina
import tenacity

from pytest_retry_check import (
    DownstreamUnavailable,
    FakeClock,
    RetryCheckFailed,
    assert_backs_off,
    assert_bounded,
    assert_gives_up,
    assert_honours_retry_after,
    assert_succeeded,
    capture_trace,
    rate_limited,
)
from pytest_retry_check.asyncio_loop import run
import pytest_retry_check.clock as clock_module

pytestmark = pytest.mark.fake_clock(seed=7)


def real_monotonic():
    # Through the module: a name bound here to the real monotonic is itself faked by freezegun.
    return clock_module.real_monotonic()


@pytest.mark.asyncio
async def test_asyncio_sleep_is_virtual_and_recorded(fake_clock):
    started = real_monotonic()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.sleep(3600)
    assert loop.time() - t0 == pytest.approx(3600, abs=1e-5)
    assert fake_clock.now() == pytest.approx(3600, abs=1e-5)
    assert time.monotonic() - (fake_clock.start_datetime.timestamp()) == pytest.approx(3600, abs=1e-5)
    assert [(s.kind, s.seconds) for s in fake_clock.sleeps] == [("asyncio.sleep", 3600)]
    assert real_monotonic() - started < 0.5


@pytest.mark.asyncio
async def test_concurrent_sleeps_overlap_like_real_time(fake_clock):
    await asyncio.gather(asyncio.sleep(10), asyncio.sleep(30), asyncio.sleep(20))
    assert fake_clock.now() == pytest.approx(30, abs=1e-5)


@pytest.mark.asyncio
async def test_wait_for_timeout_expires_at_virtual_time(fake_clock):
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.Event().wait(), timeout=45)
    assert fake_clock.now() == pytest.approx(45, abs=1e-5)
    assert fake_clock.sleeps == []  # a timer, not a sleep


@pytest.mark.asyncio
async def test_tenacity_async_deadline(fake_downstream):
    ds = fake_downstream(then=503)
    policy = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_delay(60), wait=tenacity.wait_random_exponential(multiplier=1, max=20), reraise=True
    )
    with capture_trace(ds) as trace_run:
        await policy(ds.acall)
    assert_gives_up(trace_run, raises=DownstreamUnavailable)
    assert_bounded(trace_run, max_total_wait=60 + 20, max_delay=20)


@pytest.mark.asyncio
async def test_backoff_async_max_time(fake_downstream):
    ds = fake_downstream(then=503)
    fetch = backoff.on_exception(backoff.expo, ConnectionError, max_time=30, max_value=10)(ds.acall)
    with capture_trace(ds) as trace_run:
        await fetch()
    assert_gives_up(trace_run, raises=DownstreamUnavailable)
    assert_bounded(trace_run, max_total_wait=30 + 10, max_delay=10)


@pytest.mark.asyncio
async def test_stamina_async_timeout(fake_downstream, fake_clock):
    ds = fake_downstream(then=503)
    fetch = stamina.retry(on=ConnectionError, attempts=None, timeout=45)(ds.acall)
    with capture_trace(ds) as trace_run:
        await fetch()
    assert_gives_up(trace_run, raises=DownstreamUnavailable)
    assert_bounded(trace_run, max_total_wait=45 + 5)  # stamina can overshoot by one backoff


@pytest.mark.asyncio
async def test_redis_asyncio_retry(fake_downstream):
    ds = fake_downstream(fail_first=3)
    retry = redis.asyncio.retry.Retry(redis.backoff.ExponentialWithJitterBackoff(base=1, cap=8), 5, supported_errors=(ConnectionError,))

    async def fail(error):
        return None

    with capture_trace(ds) as trace_run:
        assert await retry.call_with_retry(ds.acall, fail) == "ok"
    assert_succeeded(trace_run)
    assert_bounded(trace_run, max_attempts=4, max_delay=8)


async def async_fetch(client, url, *, attempts=6, base=0.5, cap=20):
    """A hand-written async retry over HTTP: full jitter, cap, Retry-After, 4xx is final."""
    for attempt in range(attempts):
        response = await client.get(url)
        if response.status_code < 400 or (400 <= response.status_code < 500 and response.status_code not in (408, 429)):
            return response
        if attempt == attempts - 1:
            response.raise_for_status()
        delay = random.uniform(0, min(cap, base * 2**attempt))
        retry_after = response.headers.get("Retry-After")
        if retry_after is not None and retry_after.isdigit():
            delay = max(delay, int(retry_after))
        await asyncio.sleep(delay)


@pytest.mark.asyncio
async def test_httpx_async_client_against_the_http_downstream(fake_downstream, fake_clock):
    ds = fake_downstream(outcomes=[503, rate_limited(9), 502, 504])
    started = real_monotonic()
    async with httpx.AsyncClient(timeout=5) as client:
        with capture_trace(ds) as trace_run:
            response = await async_fetch(client, ds.url + "/orders")
    assert response.status_code == 200
    assert_succeeded(trace_run)
    assert_honours_retry_after(trace_run)
    assert_bounded(trace_run, max_attempts=6, max_delay=20)
    # the 5 s client timeout never fired although virtual time passed it: I/O was awaited
    assert fake_clock.now() > 9
    assert real_monotonic() - started < 2


@pytest.mark.asyncio
async def test_async_fixed_delay_is_caught(fake_downstream):
    traces = []
    for _ in range(3):
        ds = fake_downstream(then=503)
        with capture_trace(ds) as trace_run:
            for _ in range(4):
                try:
                    await ds.acall()
                    break
                except ConnectionError:
                    await asyncio.sleep(3)
        traces.append(trace_run.trace)
    with pytest.raises(RetryCheckFailed, match="a fixed delay"):
        assert_backs_off(*traces)


@pytest.mark.asyncio
async def test_asyncio_sleep_zero_is_a_yield_not_a_retry(fake_clock):
    await asyncio.sleep(0)
    assert fake_clock.sleeps == []


def test_run_helper_outside_pytest_asyncio():
    async def main():
        await asyncio.sleep(120)
        return asyncio.get_running_loop().time()

    started = real_monotonic()
    clock = FakeClock()
    run(main(), clock=clock)
    assert clock.now() == pytest.approx(120, abs=1e-5)
    assert real_monotonic() - started < 0.5
