"""Retry budgets: gRPC's token bucket (faithful to grpc-core's RetryThrottler), the guard users
wrap their attempts with, budget_check on the contention simulation, and the command's table."""

import asyncio

import pytest
import tenacity

from pytest_retry_check import Backoff, CapacityModel, RetryCheckFailed, simulate
from pytest_retry_check.budgets import RetryBudgetExhausted, TokenBucket, budget_check


def main(argv):
    from pytest_retry_check.simulate import main as command

    return command(argv)


POLICY = dict(
    stop=tenacity.stop_after_attempt(6),
    wait=tenacity.wait_random_exponential(multiplier=0.5, max=20),
    retry=tenacity.retry_if_exception_type(ConnectionError),
    reraise=True,
)


# -- the bucket ---------------------------------------------------------------------------------
def test_the_bucket_follows_grpc():
    bucket = TokenBucket(max_tokens=10, token_ratio=0.1)
    assert (bucket.tokens, bucket.threshold, bucket.allows_retry) == (10, 5, True)
    # Each failure takes a token; a retry is allowed while what is left is above max/2.
    assert [bucket.record_failure() for _ in range(6)] == [True, True, True, True, False, False]
    assert bucket.tokens == 4 and bucket.refused == 2
    for _ in range(13):
        bucket.record_success()
    assert bucket.tokens == 5.3  # thousandths, as grpc-core counts: no float drift
    assert bucket.allows_retry is False  # 4.3 after one more failure
    for _ in range(8):
        bucket.record_success()
    assert bucket.tokens == 6.1 and bucket.allows_retry
    assert bucket.record_failure() is True  # 5.1 > 5
    for _ in range(200):
        bucket.record_success()
    assert bucket.tokens == 10  # capped
    for _ in range(20):
        bucket.record_failure()
    assert bucket.tokens == 0  # never below 0
    bucket.reset()
    assert (bucket.tokens, bucket.failures, bucket.successes, bucket.refused) == (10, 0, 0, 0)


@pytest.mark.parametrize(
    "args, message",
    [((0, 0.1), "max_tokens must be a number above 0"), ((1001, 0.1), "at most 1000"), ((10, 0), "token_ratio must be a number above 0"),
     ((10, 0.0001), "at most three decimals"), ((True, 0.1), "max_tokens")],
)
def test_bad_buckets_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        TokenBucket(*args)


def test_the_guard_stops_a_tenacity_retry_and_keeps_the_cause(fake_downstream):
    orders = fake_downstream(then=503)
    bucket = TokenBucket(10, 0.1)

    @tenacity.retry(**POLICY)
    @bucket.guard
    def fetch():
        return orders("/orders/42")

    with pytest.raises(RetryBudgetExhausted) as exhausted:
        fetch()
    assert orders.call_count == 5  # four retries, then the fifth failure leaves 5 tokens: not above 5
    assert isinstance(exhausted.value.__cause__, ConnectionError)
    assert str(exhausted.value).startswith("retry budget exhausted: 5 of 10 tokens left, a retry needs more than 5 (token bucket 10/0.1")
    with pytest.raises(RetryBudgetExhausted):  # the next call gets no retry at all
        fetch()
    assert orders.call_count == 6


def test_successes_earn_retries_back(fake_downstream):
    bucket = TokenBucket(10, 1)
    orders = fake_downstream(outcomes=[503] * 5 + ["ok"] * 3, then=503)
    guarded = bucket.guard(orders, failures=ConnectionError)
    with pytest.raises(RetryBudgetExhausted):
        tenacity.retry(**POLICY)(guarded)()
    assert [tenacity.retry(**POLICY)(guarded)() for _ in range(3)] == ["ok"] * 3
    assert bucket.tokens == 8 and bucket.allows_retry


def test_the_guard_on_async_code(fake_clock, fake_downstream):
    orders = fake_downstream(then=503)
    bucket = TokenBucket(4, 0.1)

    @bucket.guard
    async def attempt():
        return await orders.acall()

    async def fetch():
        async for retry in tenacity.AsyncRetrying(**POLICY):
            with retry:
                return await attempt()

    with pytest.raises(RetryBudgetExhausted):
        asyncio.run(fetch())
    assert orders.call_count == 2  # 4 -> 3 (retry), 3 -> 2: not above 2


# -- budget_check on the simulation -----------------------------------------------------------------
@tenacity.retry(**POLICY)
def fetch(downstream):
    return downstream()


BUCKET = TokenBucket(10, 0.1)


@tenacity.retry(**POLICY)
@BUCKET.guard
def fetch_within_budget(downstream):
    return downstream()


def test_a_retry_policy_without_budget_fails_with_the_numbers():
    with pytest.raises(RetryCheckFailed) as failed:
        budget_check(fetch, clients=300)
    message = str(failed.value)
    assert message.startswith("retry budget check failed: the retries exceed the budget\n")
    # six attempts, 15.5 s of waiting at most: every retry falls inside the 30 s outage
    assert "- retries added 500% to the load: 1,500 retries on 300 requests is a retry ratio of 5.00, more than max_retry_ratio=0.1 (10% extra load)" in message
    assert "fetch: 300 clients, 1 run (no capacity limit, down 0-30 s," in message
    assert "retries sent, by retry number: #1 300, #2 300, #3 300, #4 300, #5 300" in message
    assert "bucket = TokenBucket(max_tokens=10, token_ratio=0.1)" in message


def test_the_same_policy_behind_a_token_bucket_passes():
    report = budget_check(fetch_within_budget, clients=300, budget=BUCKET)
    assert report.requests == 300 and report.retries == 4  # the bucket's 10 tokens allow four retries
    assert report.retry_ratio < 0.1 and report.throttled == 300
    assert "(300 failures the budget refused to retry)" in report.summary()


def test_an_async_client_and_a_peak_limit():
    async def afetch(downstream):
        async for attempt in tenacity.AsyncRetrying(**POLICY):
            with attempt:
                return await downstream.acall()

    report = budget_check.measure(afetch, clients=200, max_retry_ratio=None, max_peak=250)
    assert report.retries == 1000 and not report.passed
    assert report.peak_load > 250
    with pytest.raises(RetryCheckFailed, match=r"- peak load [\d,]+ calls per 1 s, more than max_peak=250"):
        budget_check(report)


def test_a_capacity_and_a_budget_for_a_policy_without_code():
    policy = Backoff("full", base=0.5, cap=20, max_attempts=12)
    free = budget_check.measure(policy, clients=1000, capacity=200, seed=1)
    bounded = budget_check.measure(policy, clients=1000, capacity=200, seed=1, budget=TokenBucket(10, 0.1))
    assert free.retry_ratio > 5 and not free.passed
    assert bounded.retries == 4 and bounded.passed and bounded.label == "full jitter + token bucket 10/0.1"
    assert bounded.peak_load < free.peak_load / 2


@pytest.mark.parametrize("tokens, retries", [(10, 4), (100, 49), (3, 1), (2, 0)])
def test_nothing_succeeds_so_the_bucket_allows_half_its_tokens(tokens, retries):
    # Down all the time: only the bucket's own tokens buy retries, max_tokens/2 (rounded up) - 1.
    model = CapacityModel(10**9, outages=((0, 10**6),))
    result = simulate(Backoff("full", base=0.5, cap=20, max_attempts=12), clients=500, model=model, budget=TokenBucket(tokens, 0.1), seed=2)
    assert result.retries == retries
    assert result.gave_up == 500 and result.throttled == 500  # every client's last failure was refused a retry


def test_a_budget_that_never_runs_out_changes_nothing():
    model = CapacityModel(100, outages=((0, 5),))
    policy = Backoff("full", base=0.5, cap=20, max_attempts=8)
    # 50 clients x 7 retries at most: fewer failures than the 500 tokens above the threshold
    plain = simulate(policy, clients=50, model=model, seed=4)
    roomy = simulate(policy, clients=50, model=model, seed=4, budget=TokenBucket(1000, 1000))
    assert plain.retries > 100
    assert plain.runs[0].call_times == roomy.runs[0].call_times and roomy.throttled == 0


def test_bad_options():
    with pytest.raises(ValueError, match="max_retry_ratio must be a number >= 0"):
        budget_check.measure(fetch, max_retry_ratio=-1)
    with pytest.raises(ValueError, match="needs a limit"):
        budget_check.measure(fetch, max_retry_ratio=None)
    with pytest.raises(TypeError, match="budget must be a TokenBucket"):
        budget_check.measure(fetch, budget=10)
    with pytest.raises(TypeError, match="either model= or capacity="):
        budget_check.measure(fetch, model=CapacityModel(5), capacity=5)


# -- the command -------------------------------------------------------------------------------------
def test_the_command_compares_no_budget_with_token_buckets(capsys):
    argv = ["--model", "capacity", "--capacity", "200", "--outage", "0:30", "--clients", "1000", "--strategies", "full",
            "--base", "0.5", "--cap", "20", "--max-attempts", "12", "--runs", "2", "--seed", "1", "--budget", "10:0.1", "--budget", "100:1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = out.split("retry budgets: ", 1)[1]
    rows = {line.split("  ")[0].strip(): line.split() for line in table.splitlines() if line.startswith("full jitter")}
    assert set(rows) == {"full jitter", "full jitter + token bucket 10/0.1", "full jitter + token bucket 100/1"}
    ratio = lambda label: float(rows[label][-6])  # noqa: E731
    assert ratio("full jitter") > 5 and ratio("full jitter + token bucket 10/0.1") < 0.01
    assert "strategy" in table and "retries sent" in table and "retry ratio" in table and "done after" in table and "refused" in table


def test_the_command_budget_errors(capsys):
    for argv in (["--budget", "10"], ["--budget", "0:0.1"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv + ["--runs", "1"])
        assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--budget takes MAX_TOKENS:TOKEN_RATIO" in err and "--budget 0:0.1: max_tokens must be a number above 0" in err
