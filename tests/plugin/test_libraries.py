"""The real retry libraries under the fake clock: the checks pass the good shapes and catch the
bad ones of RULES.md at run time (forever loop, fixed delay, no jitter, no cap, retry on 404)."""

import random
import time

import backoff
import google.api_core.exceptions
import google.api_core.retry
import pytest
import redis.backoff
import redis.retry
import requests
import stamina
import tenacity
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry as Urllib3Retry

from pytest_retry_check import (
    DownstreamUnavailable,
    RetryCheckFailed,
    RetryGuardTripped,
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

from .policies import tenacity_good

pytestmark = pytest.mark.fake_clock(seed=20260101)

RUNS = 12  # runs compared by the jitter and backoff checks


def runs_against_dead_downstream(fake_downstream, call, runs=RUNS):
    """``call(downstream)`` ``runs`` times, each against a downstream that never recovers."""
    traces = []
    for _ in range(runs):
        ds = fake_downstream(then=503)
        with capture_trace(ds) as run:
            call(ds)
        traces.append(run.trace)
    return traces


# -- tenacity -------------------------------------------------------------------------------
def test_tenacity_good_policy_passes_every_check(fake_downstream):
    traces = runs_against_dead_downstream(fake_downstream, lambda ds: tenacity_good()(ds))
    for trace in traces:
        assert_bounded(trace, max_attempts=6, max_total_wait=60, max_delay=20)
        assert_gives_up(trace, raises=DownstreamUnavailable)
    assert_backs_off(*traces)
    assert_jittered(*traces)
    permanent = fake_downstream(permanent=404)
    with capture_trace(permanent) as run:
        tenacity_good()(permanent)
    assert_no_retry_on_permanent(run)
    recovering = fake_downstream(fail_first=3)
    with capture_trace(recovering) as run:
        tenacity_good()(recovering)
    assert_succeeded(run)


def test_tenacity_bare_retry_is_a_forever_loop_and_fails_fast(fake_downstream, fake_clock):
    ds = fake_downstream(then=503, max_calls=500)

    @tenacity.retry  # defaults: stop_never, wait_none, retry on any Exception
    def fetch():
        return ds()

    with pytest.raises(RetryGuardTripped, match="501 calls to downstream exceed max_calls=500"):
        fetch()
    fake_clock.reset()  # expected trip: do not fail the test at teardown


def test_tenacity_fixed_delay_is_caught(fake_downstream):
    policy = dict(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_fixed(2), reraise=True)
    traces = runs_against_dead_downstream(fake_downstream, lambda ds: tenacity.Retrying(**policy)(ds), runs=2)
    with pytest.raises(RetryCheckFailed, match="a fixed delay: waits 2.000 s, 2.000 s, 2.000 s, 2.000 s"):
        assert_backs_off(*traces)


def test_tenacity_exponential_without_jitter_is_caught(fake_downstream):
    policy = dict(stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_exponential(multiplier=1, max=20), reraise=True)
    traces = runs_against_dead_downstream(fake_downstream, lambda ds: tenacity.Retrying(**policy)(ds))
    assert_backs_off(*traces)  # it does back off ...
    with pytest.raises(RetryCheckFailed, match=r"wait #1 was nearly the same in all 12 runs .*clients that fail together"):
        assert_jittered(*traces)  # ... in lock-step


def test_tenacity_tiny_jitter_on_big_delays_is_caught(fake_downstream):
    # wait_exponential_jitter adds U(0, 1) s: at 16 s that is ~3 %, which spreads nobody.
    policy = dict(stop=tenacity.stop_after_attempt(7), wait=tenacity.wait_exponential_jitter(initial=1, max=60, jitter=1), reraise=True)
    traces = runs_against_dead_downstream(fake_downstream, lambda ds: tenacity.Retrying(**policy)(ds))
    with pytest.raises(RetryCheckFailed, match=r"wait #\d was nearly the same"):
        assert_jittered(*traces)


def test_tenacity_exponential_without_cap_is_caught(fake_downstream):
    policy = dict(stop=tenacity.stop_after_attempt(10), wait=tenacity.wait_random_exponential(multiplier=1, max=2**20), reraise=True)
    traces = runs_against_dead_downstream(fake_downstream, lambda ds: tenacity.Retrying(**policy)(ds), runs=3)
    with pytest.raises(RetryCheckFailed, match=r"more than max_delay=30.000 s \(no cap\?\)"):
        for trace in traces:
            assert_bounded(trace, max_delay=30)


def test_tenacity_retrying_a_404_is_caught(fake_downstream):
    ds = fake_downstream(permanent=404)
    with capture_trace(ds) as run:
        tenacity.Retrying(stop=tenacity.stop_after_attempt(4), wait=tenacity.wait_random_exponential(max=10), reraise=True)(ds)
    with pytest.raises(RetryCheckFailed, match="attempt #1 got 404, which cannot heal, and 3 more attempt"):
        assert_no_retry_on_permanent(run)


# -- backoff --------------------------------------------------------------------------------
def test_backoff_good_policy_passes(fake_downstream):
    def call(ds):
        backoff.on_exception(backoff.expo, ConnectionError, max_tries=6, max_time=60, max_value=20)(ds)()

    traces = runs_against_dead_downstream(fake_downstream, call)
    for trace in traces:
        assert_bounded(trace, max_attempts=6, max_total_wait=60, max_delay=20)
        assert_gives_up(trace, raises=DownstreamUnavailable)
    assert_backs_off(*traces)
    assert_jittered(*traces)


def test_backoff_max_time_deadline_holds_under_the_fake_clock(fake_downstream):
    # A no-op sleep breaks this (OverflowError after 1,025 attempts); a virtual one does not.
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        backoff.on_exception(backoff.expo, ConnectionError, max_time=30, max_value=8)(ds)()
    assert_bounded(run, max_total_wait=30 + 8, max_delay=8)
    assert_gives_up(run, raises=DownstreamUnavailable)
    assert run.trace.attempt_count < 20


def test_backoff_constant_is_a_fixed_delay(fake_downstream):
    def call(ds):
        backoff.on_exception(backoff.constant, ConnectionError, interval=5, jitter=None, max_tries=5)(ds)()

    traces = runs_against_dead_downstream(fake_downstream, call, runs=2)
    with pytest.raises(RetryCheckFailed, match="a fixed delay"):
        assert_backs_off(*traces)


def test_backoff_without_jitter_is_caught(fake_downstream):
    def call(ds):
        backoff.on_exception(backoff.expo, ConnectionError, jitter=None, max_tries=5, max_value=20)(ds)()

    traces = runs_against_dead_downstream(fake_downstream, call)
    with pytest.raises(RetryCheckFailed, match="nearly the same"):
        assert_jittered(*traces)


def test_backoff_without_a_stop_is_a_forever_loop(fake_downstream, fake_clock):
    ds = fake_downstream(then=503)
    fetch = backoff.on_exception(backoff.expo, Exception, max_value=10)(ds)  # no max_tries, no max_time
    with pytest.raises(RetryGuardTripped, match="1001 sleeps exceed max_sleeps=1000"):
        fetch()
    fake_clock.reset()


# -- stamina --------------------------------------------------------------------------------
def test_stamina_good_policy_passes(fake_downstream):
    def call(ds):
        stamina.retry(on=ConnectionError, attempts=6, timeout=60, wait_initial=1, wait_max=20, wait_jitter=1)(ds)()

    traces = runs_against_dead_downstream(fake_downstream, call)
    for trace in traces:
        assert_bounded(trace, max_attempts=6, max_total_wait=60, max_delay=20)
        assert_gives_up(trace, raises=DownstreamUnavailable)
    assert_backs_off(*traces)


def test_stamina_unbounded_is_a_forever_loop(fake_downstream, fake_clock):
    ds = fake_downstream(then=503)
    fetch = stamina.retry(on=ConnectionError, attempts=None, timeout=None, wait_max=1)(ds)
    with pytest.raises(RetryGuardTripped):
        fetch()
    fake_clock.reset()


# -- urllib3, through requests and directly, against the HTTP downstream ---------------------
def good_urllib3_retry(**changes):
    settings = dict(
        total=6,
        backoff_factor=1,
        backoff_max=20,
        backoff_jitter=1,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=None,
        respect_retry_after_header=True,
    )
    settings.update(changes)
    return Urllib3Retry(**settings)


def requests_session(retry):
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


def test_requests_with_urllib3_retry_honours_retry_after_and_recovers(fake_downstream):
    ds = fake_downstream(outcomes=[503, rate_limited(7), rate_limited(12, as_date=True), 502])
    with capture_trace(ds) as run, requests_session(good_urllib3_retry()) as session:
        assert session.get(ds.url + "/orders/7").status_code == 200
    assert_succeeded(run)
    assert_honours_retry_after(run)
    assert_bounded(run, max_attempts=7, max_delay=20)


def test_requests_ignoring_retry_after_is_caught(fake_downstream):
    ds = fake_downstream(outcomes=[rate_limited(30), 503])
    with capture_trace(ds) as run, requests_session(good_urllib3_retry(respect_retry_after_header=False)) as session:
        session.get(ds.url)
    with pytest.raises(RetryCheckFailed, match="attempt #2 came .* after a 429 that said Retry-After 30.000 s"):
        assert_honours_retry_after(run)


def test_requests_retrying_404_is_caught(fake_downstream):
    ds = fake_downstream(permanent=404)
    with capture_trace(ds) as run, requests_session(good_urllib3_retry(status_forcelist=(404, 503), total=3)) as session:
        session.get(ds.url)
    with pytest.raises(RetryCheckFailed, match="got 404, which cannot heal, and 3 more"):
        assert_no_retry_on_permanent(run)
    good = fake_downstream(permanent=404)
    with capture_trace(good) as run, requests_session(good_urllib3_retry()) as session:
        assert session.get(good.url).status_code == 404
    assert_no_retry_on_permanent(run)


def test_urllib3_directly_gives_up_when_the_downstream_never_recovers(fake_downstream):
    ds = fake_downstream(then=503)
    pool = urllib3.PoolManager(retries=good_urllib3_retry(total=4))
    with capture_trace(ds, catch=urllib3.exceptions.MaxRetryError) as run:
        pool.request("GET", ds.url + "/x")
    pool.clear()
    assert_gives_up(run, raises=urllib3.exceptions.MaxRetryError)
    assert_bounded(run, max_attempts=5, max_delay=20)
    assert run.trace.delays[0] < run.trace.delays[-1]


def test_urllib3_connection_drops_are_retried_and_bounded(fake_downstream):
    ds = fake_downstream(outcomes=["drop", "drop"])
    pool = urllib3.PoolManager(retries=good_urllib3_retry(total=4))
    with capture_trace(ds) as run:
        assert pool.request("GET", ds.url).status == 200
    pool.clear()
    assert_succeeded(run)
    assert run.trace.attempt_count == 3


# -- redis-py Retry (redis/retry.py does `from time import sleep`) ---------------------------
def test_redis_retry_good_and_bad(fake_downstream):
    def good(ds):
        retry = redis.retry.Retry(redis.backoff.ExponentialWithJitterBackoff(base=1, cap=10), 5, supported_errors=(ConnectionError,))
        retry.call_with_retry(ds, lambda error: None)

    def no_jitter(ds):
        retry = redis.retry.Retry(redis.backoff.ExponentialBackoff(cap=10, base=1), 5, supported_errors=(ConnectionError,))
        retry.call_with_retry(ds, lambda error: None)

    traces = runs_against_dead_downstream(fake_downstream, good)
    for trace in traces:
        assert_bounded(trace, max_attempts=6, max_delay=10)
        assert_gives_up(trace, raises=DownstreamUnavailable)
    assert_jittered(*traces)
    with pytest.raises(RetryCheckFailed, match="nearly the same"):
        assert_jittered(*runs_against_dead_downstream(fake_downstream, no_jitter))


def test_redis_retry_forever_fails_fast(fake_downstream, fake_clock):
    ds = fake_downstream(then=503)
    retry = redis.retry.Retry(redis.backoff.ConstantBackoff(0.1), -1, supported_errors=(ConnectionError,))
    with pytest.raises(RetryGuardTripped, match="max_sleeps=1000"):
        retry.call_with_retry(ds, lambda error: None)
    fake_clock.reset()


# -- google-api-core Retry ------------------------------------------------------------------
def test_google_api_core_retry_stops_at_its_timeout(fake_downstream):
    def call(ds):
        retry = google.api_core.retry.Retry(
            predicate=google.api_core.retry.if_exception_type(ConnectionError), initial=1, maximum=20, multiplier=2, timeout=60
        )
        retry(ds)()

    traces = runs_against_dead_downstream(fake_downstream, call)
    for trace in traces:
        assert_bounded(trace, max_total_wait=60, max_delay=20)
        assert_gives_up(trace, raises=google.api_core.exceptions.RetryError)
    assert_jittered(*traces)


def test_google_api_core_retry_without_timeout_fails_fast(fake_downstream, fake_clock):
    ds = fake_downstream(then=503)
    retry = google.api_core.retry.Retry(predicate=google.api_core.retry.if_exception_type(ConnectionError), maximum=5, timeout=None)
    with pytest.raises(RetryGuardTripped):
        retry(ds)()
    fake_clock.reset()


# -- hand-written loops ---------------------------------------------------------------------
def send_with_retry(call, message, dlq, *, attempts=5, base=1.0, cap=20.0):
    """A good hand-written retry: bounded, full jitter, capped, permanent exit, DLQ with context."""
    first_received = time.time()
    for attempt in range(1, attempts + 1):
        try:
            return call(message)
        except ConnectionError as error:
            reason = error
            if attempt == attempts:
                break
            time.sleep(random.uniform(0, min(cap, base * 2**attempt)))
        except Exception as error:  # permanent: do not spend attempts on it
            reason = error
            break
    dlq.send({"message": message, "error": str(reason), "attempts": attempt, "first_received_at": first_received})


def test_hand_written_loop_good_shape(fake_downstream, dead_letters):
    traces = []
    for n in range(RUNS):
        ds = fake_downstream(then=503)
        with capture_trace(ds, dead_letters=dead_letters) as run:
            send_with_retry(ds, f"order-{n}", dead_letters)
        traces.append(run.trace)
        assert_bounded(run, max_attempts=5, max_delay=20)
        assert_gives_up(run)
        assert run.trace.outcome == "dead-lettered"
    assert_backs_off(*traces)
    assert_jittered(*traces)
    dead_letters.assert_context(messages=[f"order-{n}" for n in range(RUNS)], attempts=5)
    dead_letters.clear()
    permanent = fake_downstream(permanent=422)
    with capture_trace(permanent, dead_letters=dead_letters) as run:
        send_with_retry(permanent, "bad-order", dead_letters)
    assert_no_retry_on_permanent(run)
    dead_letters.assert_context(messages=["bad-order"], attempts=1)


def test_hand_written_forever_loop_fails_fast(fake_downstream, fake_clock):
    ds = fake_downstream(then=503)

    def consume(message):
        while True:  # RTY101 + RTY202: forever, fixed 100 ms
            try:
                return ds(message)
            except Exception:
                time.sleep(0.1)

    with pytest.raises(RetryGuardTripped) as info:
        consume("order-1")
    assert "0.100 s" in str(info.value) and "in consume" in str(info.value)
    fake_clock.reset()


def test_hand_written_loop_that_swallows_the_failure_is_caught(fake_downstream):
    ds = fake_downstream(then=503)

    def fetch():
        for _ in range(3):
            try:
                return ds()
            except ConnectionError:
                time.sleep(1)
        return None  # gave up silently: no raise, no dead letter

    with capture_trace(ds) as run:
        fetch()
    with pytest.raises(RetryCheckFailed, match="returned normally without raising or dead-lettering"):
        assert_gives_up(run)


def test_dead_letter_without_context_is_caught(fake_downstream, dead_letters):
    ds = fake_downstream(then=503)
    for _ in range(3):
        try:
            ds("order-9")
            break
        except ConnectionError:
            time.sleep(1)
    else:
        dead_letters.send("order-9")  # RTY402: the original alone
    with pytest.raises(RetryCheckFailed, match="dead letter #1 lacks: failure reason, attempt count, first-received time"):
        dead_letters.assert_context()
