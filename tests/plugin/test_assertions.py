"""The assertions on hand-built traces: each passes the good shape and names the bad one."""

import pytest

from pytest_retry_check import (
    RetryCheckFailed,
    Trace,
    assert_backs_off,
    assert_bounded,
    assert_gives_up,
    assert_honours_retry_after,
    assert_jittered,
    assert_no_retry_on_permanent,
    assert_succeeded,
    ok,
    permanent,
    rate_limited,
    transient,
)
from pytest_retry_check.downstream import CallRecord


def trace(times, outcomes=None, *, outcome=None, retry_after_until=None, error=None):
    outcomes = outcomes or [transient()] * len(times)
    until = retry_after_until or {}
    calls = [CallRecord(i + 1, t, o, "call", until.get(i + 1)) for i, (t, o) in enumerate(zip(times, outcomes))]
    return Trace.from_calls(calls, outcome=outcome, error=error)


def test_bounded_passes_and_reports_each_limit_with_the_schedule():
    good = trace([0, 1, 3, 7])
    assert_bounded(good, max_attempts=4, max_total_wait=7, max_delay=4)
    with pytest.raises(RetryCheckFailed) as info:
        assert_bounded(good, max_attempts=3, max_total_wait=5, max_delay=3)
    message = str(info.value)
    assert "4 attempts, more than max_attempts=3" in message
    assert "waited 7.000 s in total, more than max_total_wait=5.000 s" in message
    assert "attempt #4 came 4.000 s after the previous one, more than max_delay=3.000 s" in message
    assert "retry trace: 4 attempt(s)" in message and "+7.000 s" in message


def test_bounded_needs_a_limit_and_sane_numbers():
    with pytest.raises(ValueError, match="needs at least one of"):
        assert_bounded(trace([0]))
    with pytest.raises(ValueError, match="max_attempts must be a whole number"):
        assert_bounded(trace([0]), max_attempts=2.5)
    with pytest.raises(TypeError, match="expected a Trace, a capture_trace or a FakeDownstream"):
        assert_bounded([0, 1], max_attempts=3)


def test_backs_off_growth_fixed_immediate_and_too_short():
    assert assert_backs_off(trace([0, 1, 3, 7, 15])) == [1, 2, 4, 8]
    assert_backs_off(trace([0, 1, 3, 7, 15, 35, 55, 75]))  # capped at 20 still grows overall
    with pytest.raises(RetryCheckFailed, match="a fixed delay: waits 5.000 s, 5.000 s, 5.000 s"):
        assert_backs_off(trace([0, 5, 10, 15]))
    with pytest.raises(RetryCheckFailed, match="immediate retries"):
        assert_backs_off(trace([0, 0, 0]))
    with pytest.raises(RetryCheckFailed, match="needs at least two waits"):
        assert_backs_off(trace([0, 1]))
    with pytest.raises(ValueError, match="min_growth must be a number > 1"):
        assert_backs_off(trace([0, 1, 3]), min_growth=1)


def test_backs_off_uses_the_envelope_of_several_runs():
    # Full jitter: single runs wobble, but the per-retry maximum over runs doubles.
    runs = [trace([0, 0.9, 1.2, 4.0]), trace([0, 0.2, 2.1, 3.0]), trace([0, 0.5, 1.0, 8.5])]
    assert assert_backs_off(*runs) == pytest.approx([0.9, 1.9, 7.5])


def test_jittered_spread_and_lock_step():
    assert_jittered(trace([0, 0.4, 1.9]), trace([0, 0.9, 1.3]))
    with pytest.raises(RetryCheckFailed, match=r"wait #2 was nearly the same in all 2 runs .*spread 1.0% < 10%"):
        assert_jittered(trace([0, 1, 3.0]), trace([0, 0.5, 2.48]))
    with pytest.raises(ValueError, match="pass two or more"):
        assert_jittered(trace([0, 1]))
    with pytest.raises(RetryCheckFailed, match="nothing to compare"):
        assert_jittered(trace([0]), trace([0]))


def test_honours_retry_after():
    said = {1: 10.0}
    assert_honours_retry_after(trace([0, 10.0], [rate_limited(10), ok()], retry_after_until=said))
    with pytest.raises(RetryCheckFailed, match="attempt #2 came 4.000 s after a 429 that said Retry-After 10.000 s"):
        assert_honours_retry_after(trace([0, 4.0], [rate_limited(10), ok()], retry_after_until=said))
    assert_honours_retry_after(trace([0, 9.5], [rate_limited(10), ok()], retry_after_until=said), tolerance=0.5)
    with pytest.raises(RetryCheckFailed, match="nothing to check"):
        assert_honours_retry_after(trace([0, 1]))


def test_no_retry_on_permanent():
    assert_no_retry_on_permanent(trace([0, 1], [transient(), permanent(404)]))
    with pytest.raises(RetryCheckFailed, match="attempt #1 got 404, which cannot heal, and 2 more attempt"):
        assert_no_retry_on_permanent(trace([0, 1, 2], [permanent(404)] * 3))
    with pytest.raises(RetryCheckFailed, match="nothing to check"):
        assert_no_retry_on_permanent(trace([0, 1]))


def test_gives_up_and_succeeded():
    assert_gives_up(trace([0, 1], outcome="raised", error=ConnectionError("x")), raises=ConnectionError)
    assert_gives_up(trace([0, 1], outcome="dead-lettered"))
    with pytest.raises(RetryCheckFailed, match="returned normally without raising or dead-lettering"):
        assert_gives_up(trace([0, 1], outcome="returned"))
    with pytest.raises(RetryCheckFailed, match="answered successfully at attempt #2"):
        assert_gives_up(trace([0, 1], [transient(), ok()], outcome="raised"))
    with pytest.raises(RetryCheckFailed, match="expected the run to raise ConnectionError, but it ended: raised TypeError"):
        assert_gives_up(trace([0], outcome="raised", error=TypeError("bug")), raises=ConnectionError)
    with pytest.raises(RetryCheckFailed, match="without calling the downstream at all"):
        assert_gives_up(trace([], outcome="raised", error=ValueError("x")))
    with pytest.raises(ValueError, match="watch the run with capture_trace"):
        assert_gives_up(trace([0, 1]))
    assert_succeeded(trace([0, 1], [transient(), ok()]))
    with pytest.raises(RetryCheckFailed, match="did not succeed: raised"):
        assert_succeeded(trace([0], outcome="raised", error=ConnectionError("x")))


def test_capture_trace_lets_unexpected_exceptions_through(fake_downstream):
    from pytest_retry_check import capture_trace

    ds = fake_downstream()
    with pytest.raises(KeyError):
        with capture_trace(ds, catch=ConnectionError) as run:
            ds()
            raise KeyError("bug in the test")
    assert run.trace.outcome == "raised" and run.trace.attempt_count == 1
    with pytest.raises(ValueError, match="has not finished"):
        assert_succeeded(capture_trace(ds))
    with pytest.raises(TypeError, match="watches a FakeDownstream"):
        capture_trace(object())
