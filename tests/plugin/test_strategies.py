"""Hypothesis: the strategies, and property tests of real retry code with the fixtures (a fresh
clock, downstreams and dead letters per example; hypothesis' own timing stays real)."""

import time

import pytest
import tenacity
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_retry_check import (
    DownstreamError,
    FakeClock,
    FakeDownstream,
    Scenario,
    assert_bounded,
    assert_gives_up,
    assert_honours_retry_after,
    assert_no_retry_on_permanent,
    capture_trace,
)
from pytest_retry_check import strategies as rs

from .policies import tenacity_good as policy


@settings(max_examples=40, deadline=200)
@given(scenario=rs.scenarios(recovers=None, permanent=True))
def test_property_bounded_under_any_scenario_with_fixtures(scenario, fake_downstream, fake_clock):
    # Fresh per example: nothing recorded yet, no calls, time starts at 0 again.
    assert fake_clock.sleeps == [] and fake_clock.now() == 0
    ds = fake_downstream(scenario)
    with capture_trace(ds) as run:
        policy()(ds)
    assert_bounded(run, max_attempts=6, max_total_wait=60 + 20, max_delay=20)
    if run.trace.permanent_failures:
        assert_no_retry_on_permanent(run)
    elif not run.trace.succeeded:
        assert_gives_up(run, raises=Exception)


@settings(max_examples=25, deadline=None)
@given(scenario=rs.scenarios(transient=False, outages=False, max_failures=3), data=st.data())
def test_property_with_a_plain_clock_per_example(scenario, data):
    with FakeClock() as clock:
        ds = FakeDownstream(scenario)
        session_retry = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(5),
            wait=_retry_after_or_backoff,
            retry=tenacity.retry_if_exception_type(Exception),
            reraise=True,
        )
        with capture_trace(ds) as run:
            session_retry(ds)
        if any(a.retry_after_until is not None for a in run.trace.attempts):
            assert_honours_retry_after(run)
        assert clock.now() == run.trace.total_wait


def _retry_after_or_backoff(retry_state):
    error = retry_state.outcome.exception()
    retry_after = getattr(error, "retry_after", None)
    return retry_after if retry_after is not None else min(10, 2**retry_state.attempt_number)


@settings(max_examples=30, deadline=200, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=rs.scenarios(recovers=False, outages=True, capacity=True))
def test_property_never_recovering_always_gives_up(scenario, fake_downstream, dead_letters):
    ds = fake_downstream(scenario)
    with capture_trace(ds, dead_letters=dead_letters) as run:
        try:
            policy()(ds)
        except DownstreamError as error:  # 503s, outages, overload and 429s alike
            dead_letters.send("msg", reason=str(error), attempts=ds.call_count, first_received=0.0 + 1)
    assert run.trace.outcome == "dead-lettered"
    assert len(dead_letters) == 1  # cleared between examples
    dead_letters.assert_context(messages=["msg"])


@given(windows=rs.outage_windows(max_windows=4, horizon=100, max_length=30))
def test_outage_windows_are_sorted_and_disjoint(windows):
    for (a0, a1), (b0, b1) in zip(windows, windows[1:]):
        assert a0 < a1 < b0 < b1
    Scenario(outages=windows)  # always a valid script


@given(outcomes=rs.outcome_sequences(min_size=1, max_size=5, permanent=True, drops=True))
def test_outcome_sequences_mix_the_kinds(outcomes):
    assert 1 <= len(outcomes) <= 5
    assert all(o.kind in ("transient", "rate_limited", "permanent", "drop") for o in outcomes)


def test_strategies_reject_bad_arguments():
    with pytest.raises(ValueError, match="needs at least one of"):
        rs.outcomes(transient=False, rate_limited=False)
    with pytest.raises(ValueError, match="max_size must be a whole number >= 3"):
        rs.outcome_sequences(min_size=3, max_size=2)
    with pytest.raises(ValueError, match="horizon > 0"):
        rs.outage_windows(horizon=0)


def test_hypothesis_timing_stays_real_under_the_clock():
    # A 500 ms deadline, and every example sleeps an hour of virtual time: no DeadlineExceeded.
    @settings(max_examples=5, deadline=500)
    @given(st.integers(1, 10))
    def sleepy(n):
        time.sleep(3600 * n)

    with FakeClock():
        sleepy()
