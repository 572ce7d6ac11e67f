"""No false greens (issue 14): a broken test or broken code must never pass.

Each test here failed on the code before its fix: an assertion swallowed by capture_trace, a
vacuous check over zero calls, a herd check that hid the client's own exception, a sleep
captured before the clock started, a dead-letter capture used as a list, a cancelled sleep
counted in full.
"""

import asyncio
import time

import pytest
import tenacity

import pytest_retry_check.realtime as realtime
from pytest_retry_check import (
    DeadLetters,
    FakeClock,
    FakeDownstream,
    RetryCheckFailed,
    assert_backs_off,
    assert_bounded,
    assert_dispersed,
    assert_gives_up,
    assert_honours_retry_after,
    assert_jittered,
    assert_no_retry_on_permanent,
    assert_succeeded,
    capture_trace,
    measure_dispersion,
)
from pytest_retry_check.dispersion import failure_message

from .herd_clients import make_client

pytest_plugins = ["pytester"]
FAST = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")


# -- capture_trace lets assertions and pytest outcomes through -------------------------------
def test_an_assertion_inside_capture_trace_propagates(fake_downstream):
    ds = fake_downstream(then="ok")
    with pytest.raises(AssertionError, match="wrong body"):
        with capture_trace(ds) as run:
            assert ds() == "x", "wrong body"
    assert run.trace is not None and run.trace.attempt_count == 1


def test_pytest_fail_and_retry_checks_inside_capture_trace_propagate(fake_downstream):
    ds = fake_downstream(then=503)
    with pytest.raises(RetryCheckFailed):
        with capture_trace(ds, catch=BaseException):
            assert_succeeded(ds)  # a check inside the block, with catch=BaseException
    with pytest.raises(pytest.fail.Exception, match="stop here"):
        with capture_trace(ds, catch=BaseException):
            pytest.fail("stop here")


def test_capture_trace_still_records_a_give_up_by_raising(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        ds()
    assert run.trace.outcome == "raised"


def test_asking_for_assertion_errors_explicitly_still_catches_them(fake_downstream):
    ds = fake_downstream(then="ok")
    with capture_trace(ds, catch=AssertionError) as run:
        assert ds() == "x"
    assert isinstance(run.trace.error, AssertionError)


def test_a_swallowed_exception_is_shown_in_later_failures(pytester):
    pytester.makepyfile(
        """
        from pytest_retry_check import capture_trace

        def test_it(fake_downstream):
            ds = fake_downstream(then="ok")
            with capture_trace(ds) as run:
                ds.nonexistent_method()  # a bug in the block, recorded as "raised"
            assert run.trace.attempt_count == 1, "no attempt"
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*exceptions swallowed by capture_trace*", '*.py", line 6, in test_it', "*AttributeError*nonexistent_method*"]
    )


# -- zero calls is not a pass -----------------------------------------------------------------
def _never_called(clock):
    return FakeDownstream(then=503, clock=clock)


@pytest.mark.parametrize(
    "check",
    [
        lambda ds: assert_bounded(ds, max_attempts=6),
        lambda ds: assert_bounded(ds, max_total_wait=60, max_delay=20),
        lambda ds: assert_backs_off(ds),
        lambda ds: assert_jittered(ds, ds),
        lambda ds: assert_honours_retry_after(ds),
        lambda ds: assert_no_retry_on_permanent(ds),
        lambda ds: assert_succeeded(ds),
    ],
    ids=["bounded-attempts", "bounded-waits", "backs-off", "jittered", "retry-after", "permanent", "succeeded"],
)
def test_zero_attempts_fail_and_say_so(check, fake_clock):
    ds = _never_called(fake_clock)
    with pytest.raises(RetryCheckFailed, match="never called"):
        check(ds)


def test_zero_attempts_in_a_capture_fail_and_say_so(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        pass  # the code under test talks to another URL
    with pytest.raises(RetryCheckFailed, match="never called"):
        assert_bounded(run, max_attempts=6)
    with pytest.raises(RetryCheckFailed, match="never called"):
        assert_gives_up(run)


# -- the herd check shows the client's own exception ------------------------------------------
def _typo_client(downstream):
    return downstream.call_with_retry()  # AttributeError: the client is broken


def test_a_client_that_raises_is_reported_as_such_not_as_a_herd():
    report = measure_dispersion(_typo_client, clients=20)
    assert not report.passed
    message = failure_message(report)
    assert "the client under test raised" in message
    assert "AttributeError" in message and "call_with_retry" in message
    assert "_typo_client" in message  # the first one's traceback
    assert "thundering herd" not in message and "jitter every delay" not in message
    with pytest.raises(RetryCheckFailed, match="the client under test raised"):
        assert_dispersed(_typo_client, clients=20)


def test_a_type_error_after_some_calls_is_the_clients_bug_too():
    def client(downstream):
        for _ in range(3):
            try:
                return downstream()
            except ConnectionError:
                time.sleep("1")  # TypeError: the retry loop itself is broken

    with pytest.raises(RetryCheckFailed) as failed:
        assert_dispersed(client, clients=30)
    message = str(failed.value)
    assert "the client under test raised TypeError" in message
    assert "30 of 30" in message or "of the first" in message
    assert "thundering herd" not in message


def test_clients_that_give_up_by_raising_are_counted_in_the_report():
    report = measure_dispersion(make_client("full", attempts=3), clients=40, outages=[(0, 1000)])
    assert report.passed, report.problems
    assert "raised: 40 DownstreamUnavailable" in report.describe()


# -- a sleep captured before the clock started ------------------------------------------------
@pytest.fixture
def stand_in_real_sleep(monkeypatch):
    """A stand-in for the real ``time.sleep``, captured before the clock started: it moves the
    plugin's *real-time* source instead of blocking, so this test never sleeps for real."""
    moved = [0.0]
    real_idle = realtime.idle_seconds

    def stand_in(seconds):
        moved[0] += seconds

    monkeypatch.setattr(realtime, "idle_seconds", lambda: real_idle() + moved[0])
    monkeypatch.setattr(realtime, "REAL_WAITERS", (*realtime.REAL_WAITERS, stand_in))
    return stand_in


def test_a_sleep_captured_before_the_clock_is_detected_and_named(stand_in_real_sleep):
    policy = tenacity.Retrying(  # built "at import", with the real sleep bound
        sleep=stand_in_real_sleep, stop=tenacity.stop_after_attempt(5), wait=tenacity.wait_exponential(multiplier=2, max=20), reraise=True
    )
    with pytest.warns(realtime.CapturedClockWarning, match=r"the attribute \.sleep of a tenacity\.Retrying object"):
        with FakeClock() as clock:  # named when the clock starts, before it sleeps
            ds = FakeDownstream(then=503)
            with pytest.raises(BaseException) as caught:
                with capture_trace(ds):
                    policy(ds)
    message = str(caught.value)
    assert "slept for real" in message
    assert "Retrying" in message and ".sleep" in message  # where the captured function lives
    assert ds.call_count <= 3  # stopped at once, not after minutes of real sleeping
    assert clock.now() == 0.0


def test_real_time_without_virtual_time_fails_the_fixture_test(pytester):
    pytester.makepyfile(
        """
        import pytest_retry_check.realtime as realtime

        def test_it(fake_downstream, monkeypatch):
            moved = [0.0]
            real_idle = realtime.idle_seconds
            monkeypatch.setattr(realtime, "idle_seconds", lambda: real_idle() + moved[0])
            ds = fake_downstream(fail_first=2)
            for _ in range(3):
                try:
                    ds()
                except ConnectionError:
                    moved[0] += 2.0  # a real 2 s sleep the fake clock never saw
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*slept for real*2.0* real seconds*virtual*0.000 s*"])


def test_cpu_work_between_calls_is_not_mistaken_for_a_real_sleep(fake_downstream):
    ds = fake_downstream(fail_first=1)
    with pytest.raises(ConnectionError):
        ds()
    started = time.process_time()  # virtual: freezegun does not patch process_time
    total = 0
    while time.process_time() - started < 0.05:
        total += sum(range(1000))
    assert ds() == "ok"


# -- dead letters -----------------------------------------------------------------------------
def test_the_dead_letter_capture_works_as_a_list():
    dlq = DeadLetters()
    dlq.append({"message": {"order": 1}, "reason": "503", "attempts": 5, "first_received": "2026-01-01T00:00:00Z"})
    dlq.extend([{"message": {"order": 2}, "reason": "404", "attempts": 1, "first_received": 1767225600}])
    assert len(dlq) == 2 and dlq.messages == [{"order": 1}, {"order": 2}]
    assert {"order": 2} in dlq.messages and bool(dlq)
    dlq.assert_context()


def test_an_empty_original_is_recorded_as_itself():
    dlq = DeadLetters()
    dlq.send(message={}, reason="schema error", attempts=1, first_received="2026-01-01T00:00:00Z")
    dlq.send({"original": {}, "error": "schema error", "attempts": 1, "first_received": "2026-01-01T00:00:00Z"})
    assert dlq.messages == [{}, {}]
    dlq.assert_context(messages=[{}, {}])


# -- a cancelled asyncio.sleep counts what elapsed --------------------------------------------
@pytest.mark.asyncio
async def test_a_cancelled_sleep_counts_what_really_elapsed(fake_clock):
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.sleep(3600), timeout=600)
    assert fake_clock.now() == pytest.approx(600, abs=1e-3)
    assert fake_clock.total_slept == pytest.approx(600, abs=1e-3)
    record = fake_clock.sleeps[0]
    assert record.requested == 3600 and record.seconds == pytest.approx(600, abs=1e-3)
    assert "cancelled" in fake_clock.schedule()


def test_nothing_dead_lettered_names_the_exception_that_was_swallowed(fake_downstream, dead_letters):
    ds = fake_downstream(permanent=422)

    def handle(message, dlq):
        try:
            ds(message)
        except ConnectionError:
            raise
        except Exception as exc:
            dlq.push_message(message, reason=str(exc))  # not a method the capture has

    with capture_trace(ds, dead_letters=dead_letters):
        handle({"order": 1}, dead_letters)
    with pytest.raises(RetryCheckFailed, match=r"(?s)nothing was sent.*swallowed 1 exception.*AttributeError.*push_message"):
        dead_letters.assert_context()


def test_real_waiting_without_any_downstream_call_is_warned_about(pytester):
    pytester.makepyfile(
        """
        import pytest_retry_check.realtime as realtime

        def test_it(monkeypatch, fake_clock):  # monkeypatch first: undone after the clock's check
            real_idle = realtime.idle_seconds
            monkeypatch.setattr(realtime, "idle_seconds", lambda: real_idle() + 5.0)  # 5 real seconds pass

        def test_on_purpose(monkeypatch, fake_clock):
            real_idle = realtime.idle_seconds
            with fake_clock.real_waits():
                monkeypatch.setattr(realtime, "idle_seconds", lambda: real_idle() + 5.0)
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*RealTimeWarning: the test waited 5.0 real seconds while its fake clock moved 0.000 s*"])
    assert result.stdout.str().count("RealTimeWarning:") == 1


def test_an_async_client_that_raises_is_reported_as_such():
    async def client(downstream):
        return await downstream.acall_with_retry()  # AttributeError

    with pytest.raises(RetryCheckFailed, match="the client under test raised AttributeError") as failed:
        assert_dispersed(client, clients=20)
    assert "jitter every delay" not in str(failed.value)


def test_clients_that_all_raise_without_retrying_show_what_they_raised():
    def client(downstream):
        try:
            return downstream()
        except ConnectionError:
            raise ValueError("no retry here: the policy gives up at once")

    message = failure_message(measure_dispersion(client, clients=20))
    assert "raised ValueError" in message and "no retry here" in message
    assert "thundering herd" not in message and "jitter every delay" not in message


def test_nobody_retrying_gets_no_jitter_advice():
    message = failure_message(measure_dispersion(make_client("full"), clients=20, outages=[]))
    assert "no client retried" in message
    assert "thundering herd" not in message and "jitter every delay" not in message


def test_a_herd_check_whose_clients_never_call_the_fake_says_so():
    message = failure_message(measure_dispersion(lambda downstream: "called another URL", clients=20))
    assert "the downstream was never called by any of the 20 clients" in message
    assert "jitter every delay" not in message
