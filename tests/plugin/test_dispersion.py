"""The herd check: many clients that failed together, run against the same failure, must not
retry together. Hand-written loops with each doctrine jitter, then the real libraries.

Statistics without flakiness: nothing here seeds ``random`` (the code under test draws its own
jitter, as in production). The defaults (40 % of a retry in a window of 10 % of its delay;
spread >= 0.15) sit far from every case: over 30 repetitions of 300 clients the jittered kinds
peaked at <= 23 % with spread >= 0.28, and at 100 clients <= 28 % / >= 0.23; no jitter and ±1 %
give 100 % and <= 0.01 every time. Passing cases run 200-300 clients; failing ones need fewer,
because a lock-step herd is 100 % whatever the count.
"""

import asyncio
import random
import re
import time
from pathlib import Path

import backoff
import pytest
import redis.backoff
import redis.retry
import requests
import stamina
import tenacity
import urllib3
from hypothesis import Phase, given, settings
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry as Urllib3Retry

from pytest_retry_check import (
    DispersionLimits,
    DownstreamUnavailable,
    RetryCheckFailed,
    Scenario,
    assert_dispersed,
    capture_trace,
    dispersion_of,
    measure_dispersion,
)
from pytest_retry_check.dispersion import herd_scenarios

from .herd_clients import FAILING, PASSING, make_async_client, make_client

pytest_plugins = ["pytester"]

PASS_CLIENTS = 150
FAIL_CLIENTS = 60


def assert_herd(report, *, share=None):
    """The check failed because clients retried together (not for some other reason)."""
    assert not report.passed, report.describe()
    assert report.peak_share > report.limits.max_peak_share, report.describe()
    if share is not None:
        assert report.peak_share == pytest.approx(share), report.describe()


def assert_spread(report):
    assert report.passed, report.describe()
    assert report.peak_share < 0.35 and report.spread > 0.2, report.describe()  # well inside the limits


# -- hand-written loops ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", PASSING)
def test_jittered_loops_pass(kind):
    report = measure_dispersion(make_client(kind), clients=300)
    assert_spread(report)
    assert report.clients == 300 and report.retrying_clients == 300
    assert report.identical == 1  # nobody shares a schedule with anybody
    # Down from 0 to 30 s: clients retried until the downstream was back and succeeded, or
    # (full jitter's short draws) ran out of their 10 attempts before and raised.
    assert set(report.outcomes) <= {"succeeded", "raised"} and report.outcomes.count("succeeded") > 150
    for schedule, outcome in zip(report.schedules, report.outcomes):
        assert schedule[0] == 0 and (schedule[-1] >= 30) == (outcome == "succeeded")


@pytest.mark.parametrize("kind", FAILING)
def test_unjittered_and_token_jitter_loops_fail(kind):
    report = measure_dispersion(make_client(kind), clients=FAIL_CLIENTS)
    assert_herd(report, share=1.0)
    assert report.spread < 0.02
    if kind == "none":
        assert report.identical == FAIL_CLIENTS and report.common_schedule[1:] == (1.0, 3.0, 7.0, 15.0, 31.0)
    else:  # ±1 %: no two schedules are the same, and yet it is a herd
        assert report.identical == 1


def test_the_failure_shows_a_histogram_the_peak_window_and_the_fix():
    with pytest.raises(RetryCheckFailed) as failure:
        assert_dispersed(make_client("none"), clients=FAIL_CLIENTS)
    message = str(failure.value)
    assert message.startswith("herd check failed: clients that failed together retry together")
    assert f"{FAIL_CLIENTS} of {FAIL_CLIENTS} clients followed exactly the same schedule (retries at +1.000 s, +3.000 s" in message
    assert f"retry #1: {FAIL_CLIENTS} of {FAIL_CLIENTS} clients (100%) retried within 0.100 s of each other at +1.000 s" in message
    assert "scenario: down 0-30 s; then ok" in message
    assert "retry sleeps from: tests/plugin/herd_clients.py:" in message  # the user's line, not a library's
    # The picture: one row per time slot, the herd as full bars with gaps between them.
    rows = [line for line in message.splitlines() if line.strip().startswith("+") and "|" in line]
    full = [row for row in rows if row.rstrip().endswith(str(FAIL_CLIENTS)) or "<- peak" in row]
    assert len(full) == 5 and len(rows) > 10
    assert "<- peak: retry #1 of 60/60 clients within 0.100 s" in message
    assert "fix: jitter every delay: full jitter `delay = random.uniform(0, min(cap, base * 2 ** attempt))`" in message
    assert "  tenacity: wait=wait_random_exponential(multiplier=..., max=...)" in message


def test_a_token_jitter_is_named_as_too_small():
    report = measure_dispersion(make_client("token"), clients=FAIL_CLIENTS)
    text = "\n".join(report.problems)
    assert "retried within" in text and "the jitter is too small to matter" in text
    assert "same schedule" not in text


def test_a_narrow_band_fails_and_the_limits_are_adjustable():
    # ±10 %: about half of each retry lands in a 10 % window. Too little by default ...
    def narrow(ds):
        for attempt in range(1, 8):
            try:
                return ds()
            except ConnectionError:
                time.sleep(2 ** (attempt - 1) * random.uniform(0.9, 1.1))

    assert not measure_dispersion(narrow, clients=300).passed
    # ... acceptable to a team that decides so (and the report says what it measured).
    loose = measure_dispersion(narrow, clients=300, max_peak_share=0.9, min_spread=0.05)
    assert loose.passed, loose.describe()
    assert loose.limits == DispersionLimits(max_peak_share=0.9, min_spread=0.05)


def test_the_report_tables_every_retry_number():
    report = measure_dispersion(make_client("equal"), clients=100)
    table = report.table()
    assert table.splitlines()[0].split() == ["retry", "clients", "median", "delay", "window", "most", "in", "one", "window", "spread", "judged"]
    assert [r.retry for r in report.retries] == list(range(1, len(report.retries) + 1))
    first = report.retries[0]
    assert first.clients == 100 and 0.5 <= first.median_delay <= 1.0 and first.window == pytest.approx(0.1 * first.median_delay)
    assert "peak: retry #" in report.summary() and "histogram" not in report.summary()
    assert str(report) == report.describe()


# -- what counts and what does not ----------------------------------------------------------
def test_a_forever_retry_is_caught_in_milliseconds():
    def forever(ds):
        while True:
            try:
                return ds()
            except ConnectionError:
                time.sleep(random.uniform(0, 1))

    report = measure_dispersion(forever, clients=50, outages=[(0, float("inf"))], max_attempts=100)
    assert not report.passed
    assert report.problems[0].startswith("client #0 never stopped retrying: retry guard:")
    assert report.outcomes == ("guard",)  # stopped at the first one: the verdict is in


def test_nothing_to_judge_fails_rather_than_passing_silently():
    report = measure_dispersion(make_client("full"), clients=20, outages=[])  # never fails: nobody retries
    assert report.problems == ("no client retried (of 20): script a failure that every client meets, e.g. outages=[(0, 30)]",)
    few = measure_dispersion(make_client("full"), clients=20, from_retry=50)
    assert "no retry number from #50 on was made by enough clients to judge" in few.problems[0]


def test_a_tail_of_a_few_clients_is_not_judged():
    # 290 clients retry once, spread out; 10 go on in lock-step. Retry #2 is made by 3 % of the
    # clients: it is shown, but a few clients retrying together are not a herd.
    runs = [[0.0, random.uniform(0, 2)] for _ in range(290)] + [[0.0, 1.0, 3.0, 7.0]] * 10
    report = dispersion_of(runs)
    assert report.passed, report.describe()
    assert [(r.retry, r.clients, r.judged) for r in report.retries] == [(1, 300, True), (2, 10, False), (3, 10, False)]
    assert "too few" in report.table()
    assert not dispersion_of(runs[:100] + [[0.0, 1.0, 3.0, 7.0]] * 20).passed  # 17 % of the clients: judged


def test_scripts_other_than_an_outage_work_per_client():
    # fail_first counts calls per client: every client fails 3 times, whatever ran before it.
    report = measure_dispersion(make_client("full"), clients=50, fail_first=3)
    assert all(len(s) == 4 for s in report.schedules)
    assert report.scenario == "first 3 calls fail; then ok"
    never = measure_dispersion(make_client("full", attempts=4), clients=50, scenario=Scenario(then=503))
    assert set(never.outcomes) == {"raised"} and never.passed


def test_an_http_client_meets_the_same_server_each_client_with_fresh_call_numbers():
    def client(ds):
        session = requests.Session()
        session.mount("http://", HTTPAdapter(max_retries=Urllib3Retry(total=3, backoff_factor=1, status_forcelist=[503])))
        try:
            return session.get(ds.url + "/orders/42", timeout=5)
        finally:
            session.close()

    report = measure_dispersion(client, clients=12, fail_first=2)
    assert [len(s) for s in report.schedules] == [3] * 12
    assert set(report.outcomes) == {"succeeded"}


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: measure_dispersion(make_client("full"), clients=5), "clients must be a whole number >= 10"),
        (lambda: measure_dispersion(make_client("full"), window=0), "window must be a fraction in (0, 1]"),
        (lambda: measure_dispersion(make_client("full"), min_spread=-1), "min_spread must be a number >= 0"),
        (lambda: measure_dispersion(make_client("full"), from_retry=0), "from_retry must be a retry number >= 1"),
        (lambda: measure_dispersion(make_client("full"), down=[(0, 1)]), "unknown keyword(s) ['down']"),
        (lambda: measure_dispersion(make_client("full"), scenario=Scenario(), fail_first=1), "either a Scenario or script keywords"),
        (lambda: measure_dispersion("fetch"), "client must be a function taking the downstream"),
        (lambda: dispersion_of([[0, 1]]), "pass many runs"),
        (lambda: dispersion_of([[0, 2, 1], [0, 1]]), "must not go backwards"),
        (lambda: dispersion_of(["abc", "def"]), "a run is a Trace"),
        (lambda: assert_dispersed(measure_dispersion(make_client("full"), clients=10), clients=20), "takes no keywords"),
        (lambda: herd_scenarios(min_outage=5, max_outage=1), "need 0 < min_outage <= max_outage"),
    ],
)
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises((TypeError, ValueError), match=None) as error:
        call()
    assert message in str(error.value)


def test_an_async_client_handed_over_as_sync_code_is_refused():
    async def fetch(ds):
        return await ds.acall()

    with pytest.raises(TypeError, match="pass an `async def` client"):
        measure_dispersion(lambda ds: fetch(ds), clients=10)


# -- runs collected by hand, and hypothesis -------------------------------------------------
def test_dispersion_of_traces_downstreams_and_times(fake_downstream):
    traces, downstreams = [], []
    client = make_client("none", attempts=4)
    for _ in range(20):
        ds = fake_downstream(then=503)
        with capture_trace(ds) as run:
            client(ds)
        traces.append(run)
        downstreams.append(ds)
    # Runs one after another on one clock: their times differ, but each counts from its own start.
    assert not dispersion_of(traces).passed
    assert dispersion_of(downstreams).common_schedule == (0.0, 1.0, 3.0, 7.0)
    assert dispersion_of([[10 + t for t in (0, 1, 3)]] * 20).identical == 20
    spread = [[0.0, random.uniform(0, 2)] for _ in range(100)]
    assert dispersion_of(spread).passed


@settings(max_examples=8, deadline=None)
@given(scenario=herd_scenarios(max_outage=120))
def test_hypothesis_friendly_full_jitter_never_herds_whatever_the_outage(scenario):
    report = assert_dispersed(make_client("full"), clients=60, scenario=scenario)
    assert report.retrying_clients == 60


def test_under_hypothesis_a_herd_is_a_plain_falsifying_example():
    tried = []

    @settings(max_examples=3, deadline=None, database=None, phases=[Phase.generate])
    @given(scenario=herd_scenarios(max_outage=60))
    def check(scenario):
        tried.append(scenario)
        assert_dispersed(make_client("none"), clients=20, scenario=scenario)

    with pytest.raises(RetryCheckFailed, match="followed exactly the same schedule"):
        check()
    assert len(tried) == 2  # the first example failed; hypothesis replayed it to report it


def test_the_fixture_nests_inside_the_tests_own_clock(herd_check, fake_clock):
    # The check runs on its own clock, nested: the test's clock is left as it was.
    fake_clock.advance(5)
    report = herd_check(make_client("full"), clients=100)
    assert report.passed and fake_clock.now() == 5 and fake_clock.sleeps == []
    with pytest.raises(RetryCheckFailed):
        herd_check(make_client("none"), clients=20)
    assert herd_check.measure(make_client("none"), clients=20, fail_first=2).common_schedule == (0.0, 1.0, 3.0)


@pytest.mark.herd_check(clients=30, max_peak_share=1.0, min_spread=0, max_identical_share=1.0)
def test_a_marker_sets_the_fixture_defaults(herd_check):
    report = herd_check(make_client("none"))  # every limit switched off
    assert report.clients == 30 and report.passed


@settings(max_examples=4, deadline=None)
@given(scenario=herd_scenarios(max_outage=40))
def test_the_fixture_is_allowed_under_given(herd_check, scenario):
    herd_check(make_client("band"), clients=50, scenario=scenario)


# -- async code on the virtual loop ---------------------------------------------------------
@pytest.mark.parametrize("kind, passes", [("full", True), ("decorrelated", True), ("none", False), ("token", False)])
def test_async_loops_run_concurrently_on_the_virtual_loop(kind, passes):
    report = measure_dispersion(make_async_client(kind), clients=PASS_CLIENTS if passes else FAIL_CLIENTS)
    if passes:
        assert_spread(report)
    else:
        assert_herd(report, share=1.0)
    assert set(report.outcomes) <= {"succeeded", "raised"} and "succeeded" in report.outcomes


@pytest.mark.asyncio
async def test_the_check_works_from_inside_an_async_test():
    # Loops do not nest: the check runs its own virtual loop in a helper thread.
    report = measure_dispersion(make_async_client("none"), clients=FAIL_CLIENTS)
    assert_herd(report, share=1.0)
    await asyncio.sleep(0)


def test_async_tenacity_full_jitter_passes_and_plain_exponential_fails():
    def retrying(wait):
        async def client(ds):
            async for attempt in tenacity.AsyncRetrying(stop=tenacity.stop_after_attempt(7), wait=wait, reraise=True):
                with attempt:
                    return await ds.acall()

        return client

    assert_spread(measure_dispersion(retrying(tenacity.wait_random_exponential(multiplier=1, max=20)), clients=PASS_CLIENTS))
    assert_herd(measure_dispersion(retrying(tenacity.wait_exponential(multiplier=1, max=20)), clients=FAIL_CLIENTS), share=1.0)


def test_an_async_forever_retry_is_caught():
    async def forever(ds):
        while True:
            try:
                return await ds.acall()
            except ConnectionError:
                await asyncio.sleep(random.uniform(0, 0.5))

    report = measure_dispersion(forever, clients=20, then=503, max_attempts=50)
    assert not report.passed and "never stopped retrying" in report.problems[0]


# -- the real libraries ---------------------------------------------------------------------
def tenacity_client(wait):
    return lambda ds: tenacity.Retrying(stop=tenacity.stop_after_attempt(7), wait=wait, retry=tenacity.retry_if_exception_type(ConnectionError), reraise=True)(ds)


def doubling(rs):
    return min(20, 2 ** (rs.attempt_number - 1))


@pytest.mark.parametrize(
    "wait",
    [
        tenacity.wait_random_exponential(multiplier=1, max=20),  # full jitter
        lambda rs: doubling(rs) * random.uniform(0.5, 1.5),  # a ±50 % band, as a custom wait
        # Equal jitter from tenacity's own parts: d/2 + uniform(0, d/2).
        tenacity.wait_exponential(multiplier=0.5, max=10) + tenacity.wait_random_exponential(multiplier=0.5, max=10),
    ],
    ids=["wait_random_exponential", "band", "equal"],
)
def test_tenacity_jittered_waits_pass(wait):
    assert_spread(measure_dispersion(tenacity_client(wait), clients=PASS_CLIENTS))


@pytest.mark.parametrize(
    "wait",
    [
        tenacity.wait_exponential(multiplier=1, max=20),
        lambda rs: doubling(rs) * random.uniform(0.99, 1.01),
        # Adds uniform(0, 1) s: fine next to a 1 s delay, nothing next to 16 s (retry #5 herds).
        tenacity.wait_exponential_jitter(initial=1, max=20, jitter=1),
    ],
    ids=["wait_exponential", "token", "wait_exponential_jitter"],
)
def test_tenacity_unjittered_waits_fail(wait):
    assert_herd(measure_dispersion(tenacity_client(wait), clients=PASS_CLIENTS))


def backoff_client(**options):
    return lambda ds: backoff.on_exception(backoff.expo, ConnectionError, max_tries=7, max_value=20, **options)(ds)()


@pytest.mark.parametrize(
    "options",
    [{}, {"jitter": lambda v: v / 2 + random.uniform(0, v / 2)}, {"jitter": lambda v: v * random.uniform(0.5, 1.5)}],
    ids=["default full_jitter", "equal", "band"],
)
def test_backoff_jittered_passes(options):
    assert_spread(measure_dispersion(backoff_client(**options), clients=PASS_CLIENTS))


@pytest.mark.parametrize(
    "options, share",
    [({"jitter": None}, 1.0), ({"jitter": lambda v: v * random.uniform(0.99, 1.01)}, 1.0), ({"jitter": backoff.random_jitter}, None)],
    ids=["jitter=None", "token", "random_jitter adds 0-1 s"],
)
def test_backoff_unjittered_fails(options, share):
    assert_herd(measure_dispersion(backoff_client(**options), clients=PASS_CLIENTS if share is None else FAIL_CLIENTS), share=share)


def stamina_client(**options):
    return lambda ds: stamina.retry(on=ConnectionError, **options)(ds)()


def test_stamina_jitter_comparable_to_its_cap_passes():
    # wait_max=16: the last backoff, 8 s + up to 8 s of jitter, stays under the cap. (With
    # wait_max=8 it is clamped to exactly 8 s for everyone: tests/plugin/test_jitter_collapse.py.)
    assert_spread(measure_dispersion(stamina_client(attempts=6, timeout=None, wait_initial=0.5, wait_max=16, wait_jitter=8), clients=PASS_CLIENTS))


@pytest.mark.parametrize(
    "options, share",
    [
        ({"wait_jitter": 0}, 1.0),
        # stamina's jitter is added seconds: 1 s next to a 16 s backoff does nothing.
        ({"wait_jitter": 1}, None),
    ],
    ids=["wait_jitter=0", "wait_jitter=1 next to 16 s"],
)
def test_stamina_small_or_no_jitter_fails(options, share):
    client = stamina_client(attempts=6, timeout=None, wait_initial=1, wait_max=20, **options)
    assert_herd(measure_dispersion(client, clients=FAIL_CLIENTS if share else PASS_CLIENTS), share=share)


def redis_client(strategy):
    return lambda ds: redis.retry.Retry(strategy, 6, supported_errors=(ConnectionError,)).call_with_retry(ds, lambda error: None)


@pytest.mark.parametrize(
    "strategy",
    [
        redis.backoff.FullJitterBackoff(cap=20, base=1),
        redis.backoff.ExponentialWithJitterBackoff(cap=20, base=1),  # redis-py's client default shape
        redis.backoff.EqualJitterBackoff(cap=20, base=1),
    ],
    ids=["FullJitter", "ExponentialWithJitter", "EqualJitter"],
)
def test_redis_jittered_backoffs_pass(strategy):
    assert_spread(measure_dispersion(redis_client(strategy), clients=PASS_CLIENTS))


@pytest.mark.parametrize(
    "strategy",
    [redis.backoff.ExponentialBackoff(cap=20, base=1), redis.backoff.ConstantBackoff(2), redis.backoff.NoBackoff()],
    ids=["Exponential", "Constant", "NoBackoff"],
)
def test_redis_unjittered_backoffs_fail(strategy):
    assert_herd(measure_dispersion(redis_client(strategy), clients=FAIL_CLIENTS), share=1.0)


def test_redis_decorrelated_jitter_herds_on_its_first_retry():
    # DecorrelatedJitterBackoff starts from a previous backoff of 0: its first retry is
    # uniform(base, max(base, 0)) = exactly base in every client. From the second on it spreads.
    strategy = redis.backoff.DecorrelatedJitterBackoff(cap=20, base=1)
    report = measure_dispersion(redis_client(strategy), clients=PASS_CLIENTS)
    assert_herd(report, share=1.0)
    assert report.peak.retry == 1 and report.peak.peak_at == 1.0
    assert_spread(measure_dispersion(redis_client(strategy), clients=PASS_CLIENTS, from_retry=2))


def urllib3_client(retry):
    """urllib3's Retry driven as its connection pool drives it (is_retry, increment, sleep):
    the real backoff code and the real sleep, without a socket per attempt."""

    def client(ds):
        retries = retry
        while True:
            try:
                return ds()
            except DownstreamUnavailable as error:
                response = urllib3.HTTPResponse(body=b"", status=error.status, preload_content=False)
                if not retries.is_retry("GET", error.status):
                    raise
                retries = retries.increment(method="GET", url="/orders/42", response=response)
                retries.sleep(response)

    return client


def test_urllib3_backoff_jitter_passes_after_its_immediate_first_retry():
    retry = Urllib3Retry(total=6, backoff_factor=0.25, backoff_jitter=4, status_forcelist=[503])
    # Every urllib3 Retry retries the first failure at once, jitter or not: a herd at +0.
    first = measure_dispersion(urllib3_client(retry), clients=PASS_CLIENTS)
    assert_herd(first, share=1.0)
    assert first.peak.retry == 1 and first.peak.immediate
    assert "immediately after failing" in first.problems[0]
    assert "fix: wait before retrying" in str(pytest.raises(RetryCheckFailed, assert_dispersed, first).value)
    assert_spread(measure_dispersion(urllib3_client(retry), clients=PASS_CLIENTS, from_retry=2))


@pytest.mark.parametrize("jitter", [0.0, 0.02], ids=["no jitter", "token"])
def test_urllib3_unjittered_backoff_fails(jitter):
    retry = Urllib3Retry(total=6, backoff_factor=1, backoff_jitter=jitter, status_forcelist=[503])
    assert_herd(measure_dispersion(urllib3_client(retry), clients=FAIL_CLIENTS, from_retry=2), share=1.0)


def test_urllib3_through_requests_and_real_sockets_matches_the_driven_retry():
    retry = Urllib3Retry(total=5, backoff_factor=0.5, status_forcelist=[503])

    def client(ds):
        session = requests.Session()
        session.mount("http://", HTTPAdapter(max_retries=retry))
        try:
            return session.get(ds.url + "/orders/42", timeout=5)
        finally:
            session.close()

    over_http = measure_dispersion(client, clients=15)
    driven = measure_dispersion(urllib3_client(retry), clients=15)
    assert over_http.common_schedule == driven.common_schedule == (0.0, 0.0, 1.0, 3.0, 7.0, 15.0)
    assert_herd(over_http, share=1.0)
    assert set(over_http.outcomes) == {"raised"}  # RetryError after 6 attempts, before the outage ended


# -- as a user meets it ---------------------------------------------------------------------
def test_a_user_sees_the_histogram_and_the_fix_in_pytests_output(pytester):
    pytester.makepyfile(
        """
        import random
        import time

        def fetch(downstream, jitter):
            for attempt in range(1, 7):
                try:
                    return downstream()
                except ConnectionError:
                    delay = min(20, 2 ** attempt)
                    time.sleep(random.uniform(0, delay) if jitter else delay)

        def test_without_jitter(herd_check):
            herd_check(lambda ds: fetch(ds, jitter=False), clients=50)

        def test_with_jitter(herd_check):
            herd_check(lambda ds: fetch(ds, jitter=True), clients=50)
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:hypothesispytest", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*herd_check(lambda ds: fetch(ds, jitter=False), clients=50)*",  # pytest points at the user's line
            "E*herd check failed: clients that failed together retry together (a thundering herd)",
            "E*- 50 of 50 clients followed exactly the same schedule (retries at +2.000 s, +6.000 s, +14.000 s, +30.000 s)*",
            "E*+2 s |#*50  <- peak: retry #1 of 50/50 clients within 0.200 s",
            "E*fix: jitter every delay*",
        ]
    )
    assert "dispersion.py" not in result.stdout.str()  # our frames are hidden from the traceback


ORDERS = '''
import tenacity


@tenacity.retry(
    stop=tenacity.stop_after_attempt(8),
    wait=tenacity.wait_random_exponential(multiplier=1, max=20),
    retry=tenacity.retry_if_exception_type(ConnectionError),
    reraise=True,
)
def fetch_order(call, order_id):
    return call(order_id)
'''


def herd_doc_blocks():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "plugin.md").read_text()
    section = doc[doc.index("## Thundering herds") : doc.index("## Contention")]
    # The examples that use the service's code (the failing one shown with its output is run by
    # test_docs_examples.py).
    return [b for b in re.findall(r"```python\n(.*?)```", section, flags=re.S) if "myservice" in b]


def test_the_docs_herd_examples_run_as_written(pytester):
    blocks = herd_doc_blocks()
    assert len(blocks) == 2
    pytester.mkpydir("myservice")
    pytester.path.joinpath("myservice", "orders.py").write_text(ORDERS)
    pytester.makepyfile(test_herd=blocks[0], test_herd_recipe=blocks[1])
    # 100 clients instead of the fixture's 300: the same verdict, a third of the time.
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.herd_check(clients=100))\n"
    )
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=3)
