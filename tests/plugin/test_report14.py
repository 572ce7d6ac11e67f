"""Report 14 (the audit of issue 14): the false greens that were left, and the wrong messages.

Each test here failed on the code before its fix (checked by running it with the fix reverted).
"""

import asyncio
import sys
import time

import pytest
import tenacity

from pytest_retry_check import (
    RetryCheckFailed,
    assert_bounded,
    assert_gives_up,
    capture_trace,
)

pytest_plugins = ["pytester"]
FAST = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")


# -- 1: an assertion that comes wrapped still propagates --------------------------------------
@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.TaskGroup")
def test_an_assertion_inside_a_task_group_propagates(fake_downstream):
    ds = fake_downstream(then="ok")

    async def check():
        assert await ds.acall() == "x", "wrong body"

    async def main():
        with capture_trace(ds):
            async with asyncio.TaskGroup() as tg:
                tg.create_task(check())

    with pytest.raises(ExceptionGroup) as info:
        asyncio.run(main())
    assert info.group_contains(AssertionError, match="wrong body")


def test_an_assertion_inside_a_tenacity_polling_helper_propagates(fake_downstream):
    ds = fake_downstream(then="ok")

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_fixed(1))
    def eventually():
        assert ds() == "x", "wrong body"

    with pytest.raises(tenacity.RetryError):
        with capture_trace(ds):
            eventually()


def test_an_assertion_chained_into_another_exception_propagates(fake_downstream):
    ds = fake_downstream(then="ok")
    with pytest.raises(RuntimeError) as info:
        with capture_trace(ds):
            try:
                assert ds() == "x", "wrong body"
            except AssertionError as exc:
                raise RuntimeError("check failed") from exc
    assert isinstance(info.value.__cause__, AssertionError)


def test_a_give_up_raised_while_handling_an_error_is_still_recorded(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:  # a correct client: its give-up chains the downstream's error
        try:
            ds()
        except ConnectionError as exc:
            raise TimeoutError("gave up") from exc
    assert run.trace.outcome == "raised"


# -- 2: a crash is not giving up ----------------------------------------------------------------
class OrderUnavailable(Exception):
    def __init__(self, order_id, attempts):
        super().__init__(order_id, attempts)


def _fetch_with_a_broken_give_up(ds):
    for attempt in range(3):
        try:
            return ds("/orders/42")
        except ConnectionError:
            if attempt == 2:
                raise OrderUnavailable(42)  # noqa: the bug: TypeError, 'attempts' is missing
            time.sleep(2**attempt)


def test_a_give_up_path_that_crashes_fails_gives_up_and_bounded(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        _fetch_with_a_broken_give_up(ds)
    with pytest.raises(RetryCheckFailed, match=r"raised TypeError.*a bug, not giving up"):
        assert_gives_up(run)
    with pytest.raises(RetryCheckFailed, match=r"raised TypeError.*a bug, not giving up"):
        assert_bounded(run, max_attempts=3)


def test_a_dead_letter_write_the_capture_cannot_take_fails_gives_up(fake_downstream, dead_letters):
    def handle(api, dlq, msg):
        for attempt in range(3):
            try:
                return api("/orders")
            except ConnectionError:
                time.sleep(2**attempt)
        dlq.no_such_method(msg)  # an AttributeError on the capture

    api = fake_downstream(then=503)
    with capture_trace(api, dead_letters=dead_letters) as run:
        handle(api, dead_letters, {"id": 7})
    with pytest.raises(RetryCheckFailed, match="AttributeError"):
        assert_gives_up(run)


def test_a_bug_the_test_names_is_accepted(fake_downstream):
    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        _fetch_with_a_broken_give_up(ds)
    assert_gives_up(run, raises=TypeError)  # the test says so: not a surprise
    with capture_trace(ds, catch=TypeError) as run:
        _fetch_with_a_broken_give_up(ds)
    assert_bounded(run, max_attempts=3)


def test_a_give_up_by_a_domain_error_still_passes(fake_downstream):
    ds = fake_downstream(then=503)

    def fetch():
        for attempt in range(3):
            try:
                return ds("/orders/42")
            except ConnectionError as exc:
                if attempt == 2:
                    raise OrderUnavailable(42, 3) from exc
                time.sleep(2**attempt)

    with capture_trace(ds) as run:
        fetch()
    assert_bounded(run, max_attempts=3)
    assert_gives_up(run, raises=OrderUnavailable)
    assert_gives_up(run)


# -- 3 and 4: an expected trip resets the guard; a swallowed trip never passes -----------------
GUARD_CLIENTS = """
import time
import pytest
from pytest_retry_check import FakeClock, FakeDownstream, RetryGuardTripped


def old_client(ds):
    while True:
        try:
            return ds("/orders/42")
        except ConnectionError:
            time.sleep(1)


def fixed_client(ds):
    for attempt in range(5):
        try:
            return ds("/orders/42")
        except ConnectionError:
            if attempt == 4:
                raise
            time.sleep(2 ** attempt)


def swallowing_client(ds):
    try:
        return old_client(ds)
    except BaseException:  # legacy code's bare except
        return "cached"
"""


def test_after_an_expected_trip_the_guard_is_fresh(pytester):
    pytester.makepyfile(
        GUARD_CLIENTS
        + """
def test_expect_trip_of_a_bounded_client_fails(fake_clock, fake_downstream):
    with pytest.raises(RetryGuardTripped):
        old_client(fake_downstream(then=503))
    with fake_clock.expect_trip():
        fixed_client(fake_downstream(then=503, name="fixed"))


def test_a_later_swallowed_trip_fails(fake_downstream):
    with pytest.raises(RetryGuardTripped):
        old_client(fake_downstream(then=503))
    assert swallowing_client(fake_downstream(then=503, name="legacy")) == "cached"


def test_a_good_client_after_an_expected_trip_passes(fake_clock, fake_downstream):
    with pytest.raises(RetryGuardTripped):
        old_client(fake_downstream(then=503))
    assert fixed_client(fake_downstream(fail_first=1, name="good")) == "ok"
    assert fake_clock.tripped is None


def test_the_documented_pattern_exercises_both_blocks(fake_clock, fake_downstream):
    with pytest.raises(RetryGuardTripped):
        old_client(fake_downstream(then=503))
    second = fake_downstream(then=503, name="second")
    with fake_clock.expect_trip() as trip:
        old_client(second)
    assert "max_sleeps=1000" in str(trip.value)
    assert second.call_count == 1001
"""
    )
    result = pytester.runpytest_inprocess(*FAST, "-rA")
    result.assert_outcomes(passed=3, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*expected the retry guard to trip, but the code under test stopped on its own*"])
    result.stdout.fnmatch_lines(["ERROR*test_a_later_swallowed_trip_fails*"])
    result.stdout.fnmatch_lines(["FAILED*test_expect_trip_of_a_bounded_client_fails*"])


def test_a_swallowed_trip_under_given_fails_even_when_a_later_example_does_not_trip(pytester):
    pytester.makepyfile(
        GUARD_CLIENTS
        + """
from hypothesis import given, settings, strategies as st, Phase


@pytest.mark.fake_clock(max_sleeps=10)
@settings(max_examples=5, deadline=None, phases=[Phase.explicit, Phase.generate], database=None)
@given(n=st.sampled_from([15, 0, 0, 0, 0]))
def test_under_given(n, fake_downstream):
    assert swallowing_client(fake_downstream(fail_first=n)) in ("ok", "cached")
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the retry guard tripped but the code under test swallowed it*"])


def test_a_swallowed_trip_under_a_plain_fake_clock_fails():
    exec_globals = {}
    exec(compile(GUARD_CLIENTS, "clients", "exec"), exec_globals)
    FakeClock, FakeDownstream = exec_globals["FakeClock"], exec_globals["FakeDownstream"]
    with pytest.raises(AssertionError, match="swallowed it"):
        with FakeClock(max_sleeps=20):
            assert exec_globals["swallowing_client"](FakeDownstream(then=503)) == "cached"

    @FakeClock(max_sleeps=20)
    def decorated():
        return exec_globals["swallowing_client"](FakeDownstream(then=503))

    with pytest.raises(AssertionError, match="swallowed it"):
        decorated()
    with FakeClock(max_sleeps=20):  # expected: no complaint
        with pytest.raises(exec_globals["RetryGuardTripped"]):
            exec_globals["old_client"](FakeDownstream(then=503))


# -- 5 and 6: the herd check fails on crashing clients and on clients that swallow the guard ----
import random  # noqa: E402

from pytest_retry_check import herd_check  # noqa: E402


def _good(ds):
    for attempt in range(5):
        try:
            return ds("/orders/42")
        except ConnectionError:
            if attempt == 4:
                raise
            time.sleep(random.uniform(0, min(20, 2**attempt)))


DELAYS = [1, 2, 4]


def _short_table(ds):
    for attempt in range(6):
        try:
            return ds("/orders/42")
        except ConnectionError:
            time.sleep(DELAYS[attempt] * random.uniform(0.5, 1.5))  # IndexError at retry 4


def test_the_herd_check_fails_when_clients_crash_in_their_backoff():
    with pytest.raises(RetryCheckFailed, match=r"the client under test raised IndexError") as info:
        herd_check(_short_table, clients=60, outages=[(0, 60)])
    assert "list index out of range" in str(info.value) and "not a herd" in str(info.value)


def test_the_herd_check_fails_when_clients_crash_after_a_successful_answer():
    with pytest.raises(RetryCheckFailed, match=r"the client under test raised KeyError") as info:
        herd_check(lambda ds: {"status": _good(ds)}["order"], clients=60, outages=[(0, 5)])
    assert "after the downstream answered successfully" in str(info.value)


def test_the_herd_check_fails_when_clients_swallow_the_guard():
    def client(ds):
        try:
            while True:
                try:
                    return ds("/orders/42")
                except ConnectionError:
                    time.sleep(random.uniform(0, 2))
        except:  # noqa: E722  legacy bare except
            return "cached"

    with pytest.raises(RetryCheckFailed, match=r"client #0 never stopped retrying.*swallowed"):
        herd_check(client, clients=50, outages=[(0, 1e9)])


def test_the_herd_check_fails_when_async_clients_swallow_the_guard():
    async def client(ds):
        try:
            while True:
                try:
                    return await ds.acall("/orders/42")
                except ConnectionError:
                    await asyncio.sleep(random.uniform(0, 2))
        except BaseException:
            return "cached"

    with pytest.raises(RetryCheckFailed, match=r"never stopped retrying.*swallowed"):
        herd_check(client, clients=20, outages=[(0, 1e9)], max_attempts=30)


def test_a_good_herd_still_passes_with_clients_giving_up():
    report = herd_check(_good, clients=100, outages=[(0, 1e9)])
    assert report.passed and dict(report.raised) == {"DownstreamUnavailable": 100}


def test_the_herd_check_forever_message_names_a_knob_that_works():
    def long_poll(ds):  # legit: up to 1,500 attempts
        for _ in range(1500):
            try:
                return ds("/orders/42")
            except ConnectionError:
                time.sleep(random.uniform(0, 0.2))
        raise TimeoutError

    with pytest.raises(RetryCheckFailed, match=r"herd_check\(\.\.\., max_attempts=\.\.\.\) \(now 100\)"):
        herd_check(long_poll, clients=12, outages=[(0, 12)], max_attempts=100)
    assert herd_check(long_poll, clients=12, outages=[(0, 12)], max_attempts=1500).passed
    assert herd_check(long_poll, clients=12, outages=[(0, 12)], max_calls=1500).passed  # the call guard's word


# -- 20: pytest.raises(BaseException) around a trip is an expected trip ------------------------
def test_a_broad_pytest_raises_makes_the_trip_expected(pytester):
    pytester.makepyfile(
        GUARD_CLIENTS
        + """
def test_base_exception(fake_downstream):
    with pytest.raises(BaseException):
        old_client(fake_downstream(then=503))


def test_a_tuple(fake_downstream):
    with pytest.raises((ValueError, BaseException)):
        old_client(fake_downstream(then=503))
"""
    )
    pytester.runpytest_inprocess(*FAST).assert_outcomes(passed=2)


# -- 7: real sleeps below a second each, and a captured Event.wait, are caught and named ------
import threading  # noqa: E402

import pytest_retry_check.realtime as realtime  # noqa: E402
from pytest_retry_check import FakeDownstream, RealSleepDetected  # noqa: E402


class Worker:
    def __init__(self):
        self._stop = threading.Event()
        self._nap = self._stop.wait  # an interruptible sleep, bound before the clock started


def test_sub_second_real_sleeps_that_add_up_are_caught_and_the_holder_is_named(monkeypatch):
    # No real sleeping: idle time is advanced by hand while the captured Event.wait "sleeps".
    moved = [0.0]
    real_idle = realtime.idle_seconds
    monkeypatch.setattr(realtime, "idle_seconds", lambda: real_idle() + moved[0])
    worker = Worker()
    monkeypatch.setattr(worker, "_nap", lambda seconds: moved.__setitem__(0, moved[0] + seconds))
    held = Worker()  # what the message must name: an object holding a bound Event.wait

    from pytest_retry_check import FakeClock

    with pytest.warns(realtime.CapturedClockWarning, match=r"the attribute \._nap of a .*Worker object .* is the real threading\.Event\.wait"), FakeClock():
        ds = FakeDownstream(then=503)
        with pytest.raises(RealSleepDetected) as caught:
            for attempt in range(5):
                try:
                    ds("/orders/42")
                except ConnectionError:
                    worker._nap(0.1 * 2**attempt)  # 0.1 + 0.2 + 0.4 + 0.8 s, "really"
    message = str(caught.value)
    assert "1.5 real seconds passed over calls #1 to #5" in message
    assert "._nap (the real threading.Event.wait)" in message
    assert ds.call_count == 4
    del held


def test_busy_immediate_retries_are_not_taken_for_real_sleeps(fake_clock):
    ds = FakeDownstream(fail_first=2000)
    for _ in range(2001):
        try:
            ds()
        except ConnectionError:
            pass


def test_a_captured_event_wait_is_reported_when_the_clock_starts(pytester):
    pytester.makepyfile(
        """
        import threading

        class Worker:
            def __init__(self):
                self._stop = threading.Event()
                self._nap = self._stop.wait

        WORKER = Worker()

        def test_it(fake_clock):
            pass
        """
    )
    result = pytester.runpytest_inprocess(*FAST, "-W", "error::pytest_retry_check.CapturedClockWarning")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the attribute ._nap of a * object (*WORKER) is the real threading.Event.wait*"])


# -- 8: checks that would judge nothing fail and say so -----------------------------------------
from pytest_retry_check import replay_incident  # noqa: E402
from pytest_retry_check.incident import IncidentCheckFailed  # noqa: E402
from pytest_retry_check.redelivery import RedeliveryCheckFailed  # noqa: E402


def test_replaying_the_incident_with_a_consumer_that_never_calls_fails():
    with pytest.raises(IncidentCheckFailed, match="never called the downstream"):
        replay_incident(lambda downstream: "wired to another client", max_peak=5000, recovers=True, messages=50)


def test_delivered_once_on_a_queue_nothing_was_sent_to_fails(fake_queue):
    orders = fake_queue("orders")
    fake_queue("orderz").send({"id": 42})  # the producer used the wrong queue name
    with pytest.raises(RedeliveryCheckFailed, match="nothing was sent to queue 'orders'"):
        orders.assert_delivered_once()


def test_delivered_once_on_a_queue_nobody_received_from_fails(fake_queue):
    orders = fake_queue("orders")
    orders.send({"id": 42})
    with pytest.raises(RedeliveryCheckFailed, match="1 message.s. sent to queue 'orders', none was received"):
        orders.assert_delivered_once()


def test_herd_check_of_runs_asserts_and_measure_only_measures():
    lockstep = [(0, 1, 3, 7, 15)] * 50
    with pytest.raises(RetryCheckFailed, match="^herd check failed"):
        herd_check.of(lockstep)
    report = herd_check.measure(lockstep)  # runs collected by hand, only measured
    assert not report.passed
    spread = [(0, 1 + i / 50, 3 + i / 25) for i in range(50)]
    assert herd_check.of(spread).passed


# -- 9: max_total_wait measures the whole run, not first attempt to last attempt ----------------
import httpx  # noqa: E402

from pytest_retry_check import hang, slow  # noqa: E402

URL = "https://orders.example/orders/42"


def test_total_wait_counts_an_answer_that_took_an_hour(fake_downstream):
    ds = fake_downstream(outcomes=[slow(3600)])
    client = httpx.Client(transport=ds.httpx_transport(), timeout=None)  # no timeout
    with capture_trace(ds) as run:
        client.get(URL)
    assert run.trace.total_wait == 3600
    with pytest.raises(RetryCheckFailed, match=r"waited 3,600.0 s in total, more than max_total_wait=60.000 s"):
        assert_bounded(run, max_total_wait=60)


def test_total_wait_counts_the_last_attempts_timeout(fake_downstream):
    ds = fake_downstream(then=hang())
    client = httpx.Client(transport=ds.httpx_transport(), timeout=20)

    def fetch():
        for attempt in range(3):
            try:
                return client.get(URL)
            except httpx.TimeoutException:
                if attempt == 2:
                    raise
                time.sleep(1)

    with capture_trace(ds) as run:
        fetch()
    assert run.trace.total_wait == 62
    with pytest.raises(RetryCheckFailed, match=r"waited 62.000 s in total"):
        assert_bounded(run, max_total_wait=45)
    assert_bounded(run, max_total_wait=62)


def test_total_wait_counts_a_sleep_after_the_last_attempt(fake_downstream):
    def fetch(ds):
        for attempt in range(3):
            try:
                return ds("/orders/42")
            except ConnectionError:
                time.sleep(3600 if attempt == 2 else 1)
        raise TimeoutError

    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        fetch(ds)
    with pytest.raises(RetryCheckFailed, match=r"waited 3,602.0 s in total.*after the last attempt \(#3\) it slept 3,600.0 s before it ended, more than max_delay=20.000 s") as info:
        assert_bounded(run, max_total_wait=60, max_delay=20)
    assert "ended at +3,602.0 s, 3,600.0 s after the last attempt" in str(info.value)


def test_a_prompt_give_up_still_passes_the_same_bound(fake_downstream):
    def fetch(ds):
        for attempt in range(3):
            try:
                return ds("/orders/42")
            except ConnectionError:
                if attempt == 2:
                    raise TimeoutError("gave up") from None
                time.sleep(2**attempt)

    ds = fake_downstream(then=503)
    with capture_trace(ds) as run:
        fetch(ds)
    assert run.trace.total_wait == 3
    assert_bounded(run, max_total_wait=3, max_delay=2)


# -- 12: comparing runs, every run must have called its downstream -----------------------------
from pytest_retry_check import assert_backs_off, assert_jittered  # noqa: E402


def test_backs_off_and_jittered_fail_when_some_runs_never_called(fake_downstream):
    runs = []
    for i in range(10):
        ds = fake_downstream(then=503, name=f"d{i}")
        with capture_trace(ds) as run:
            if i < 2:
                try:
                    _good(ds)
                except ConnectionError:
                    pass
        runs.append(run)
    with pytest.raises(RetryCheckFailed, match=r"8 of 10 runs never called the downstream \(runs #3, #4, #5, #6, #7, ...\)"):
        assert_backs_off(*runs)
    with pytest.raises(RetryCheckFailed, match=r"8 of 10 runs never called the downstream"):
        assert_jittered(*runs)


# -- 13: the dead-letter capture works as the list, deque, dict or queue the code keeps --------
from collections import deque  # noqa: E402

from pytest_retry_check import DeadLetters  # noqa: E402

ENV = {"message": {"id": 1}, "reason": "503", "attempts": 3, "first_received": 1.0}


def test_the_capture_is_a_list_the_code_can_read_back():
    dlq = DeadLetters()
    dlq += [ENV]
    dlq.append(dict(ENV, message={"id": 2}))
    assert dlq[0] == ENV and dlq[0]["reason"] == "503" and dlq[0].message == {"id": 1}
    assert dlq == [ENV, dict(ENV, message={"id": 2})]
    assert dlq.index(ENV) == 0 and dlq.count(ENV) == 1 and ENV in dlq
    assert dlq.copy() == [ENV, dict(ENV, message={"id": 2})]
    dlq.reverse()
    assert dlq[0]["message"] == {"id": 2} and list(reversed(dlq))[0] == ENV
    dlq.sort(key=lambda env: env["message"]["id"])
    assert dlq.pop(0) == ENV and len(dlq) == 1
    dlq.remove(dict(ENV, message={"id": 2}))
    assert not dlq
    dlq.append(ENV)
    dlq[0] = dict(ENV, reason="timeout")
    assert dlq.entries[0].reason == "timeout"
    del dlq[0]
    assert len(dlq) == 0


def test_the_capture_is_a_deque_a_dict_or_a_queue():
    dlq = DeadLetters()
    dlq.appendleft(ENV)
    dlq.appendleft(dict(ENV, message={"id": 0}))
    assert dlq.popleft()["message"] == {"id": 0}
    dlq[7] = dict(ENV, message={"id": 7})  # dlq[msg_id] = envelope
    dlq.setdefault(8, dict(ENV, message={"id": 8}))
    dlq.put_nowait(dict(ENV, message={"id": 9}))
    assert dlq[7]["message"] == {"id": 7} and dlq.get(8)["message"] == {"id": 8} and dlq.get(99) is None
    assert 7 in dlq.keys() and len(dlq) == 4
    dlq.assert_context(messages=[{"id": 1}, {"id": 7}, {"id": 8}, {"id": 9}], attempts=3)


def test_a_dlq_dict_write_is_a_give_up(fake_downstream, dead_letters):
    def handle(api, dlq, msg):
        for attempt in range(3):
            try:
                return api("/orders")
            except ConnectionError as exc:
                error = exc
                time.sleep(2**attempt)
        dlq[msg["id"]] = {"message": msg, "reason": str(error), "attempts": 3, "first_received": 1.0}

    api = fake_downstream(then=503)
    with capture_trace(api, dead_letters=dead_letters) as run:
        handle(api, dead_letters, {"id": 7})
    assert_gives_up(run)
    assert run.trace.outcome == "dead-lettered"


# -- 15: every knob a hint names works --------------------------------------------------------
def test_the_marker_max_calls_also_limits_a_downstream_the_test_builds(pytester):
    pytester.makepyfile(
        """
        import pytest
        from pytest_retry_check import FakeDownstream, RetryGuardTripped

        def busy(ds):
            while True:
                try:
                    return ds("/orders/42")
                except ConnectionError:
                    pass

        @pytest.mark.fake_clock(max_calls=50)
        def test_lower(fake_clock):
            with pytest.raises(RetryGuardTripped, match="51 calls to downstream exceed max_calls=50"):
                busy(FakeDownstream(then=503))

        @pytest.mark.fake_clock(max_calls=12_000)
        def test_higher(fake_clock):
            assert busy(FakeDownstream(fail_first=10_500)) == "ok"

        def test_explicit_wins(fake_clock):
            assert FakeDownstream(max_calls=7).max_calls == 7 and FakeDownstream().max_calls == 10_000
        """
    )
    pytester.runpytest_inprocess(*FAST).assert_outcomes(passed=3)


# -- 16: a budget check with nothing to judge says so first, without budget advice -------------
def test_a_budget_check_of_a_client_that_never_calls_is_headed_as_such():
    from pytest_retry_check.budgets import budget_check

    with pytest.raises(RetryCheckFailed) as info:
        budget_check(lambda downstream: "wired to another client", clients=20)
    message = str(info.value)
    assert message.startswith("retry budget check failed: no client called the downstream")
    assert "exceed the budget" not in message and "token bucket" not in message and "nan" not in message


# -- 19: the docs say what the code does --------------------------------------------------------
import inspect  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "plugin.md"


def test_the_documented_simulate_signature_names_every_parameter():
    from pytest_retry_check.simulation import simulate

    line = next(l for l in DOC.read_text().splitlines() if l.startswith("`simulate(policy, *,"))
    documented = set(re.findall(r"(\w+)=", line))
    assert documented == set(inspect.signature(simulate).parameters) - {"policy"}


def test_stamina_defaults_fail_as_the_docs_say():
    import stamina

    text = " ".join(DOC.read_text().split())
    assert "defaults (0.1 s, max 5 s, jitter 1 s) fail" in text and "pass narrowly" not in text
    client = lambda ds: stamina.retry(on=ConnectionError, timeout=None)(ds)()  # noqa: E731
    with pytest.raises(RetryCheckFailed, match=r"waited exactly 5.000 s before retry #7"):
        herd_check(client, clients=100)


# -- 14: "sleep until cancelled" works under the clock ------------------------------------------
import math  # noqa: E402

from pytest_retry_check import RetryGuardTripped  # noqa: E402


@pytest.mark.parametrize("forever", [math.inf, 10**9])
def test_a_long_sleep_cut_short_by_a_timeout_counts_what_elapsed(fake_clock, forever):
    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.sleep(forever), timeout=600)

    asyncio.run(main())
    assert fake_clock.now() == pytest.approx(600, abs=1e-5) and fake_clock.total_slept == pytest.approx(600, abs=1e-5)
    assert fake_clock.sleeps[-1].requested == forever and fake_clock.tripped is None


def test_a_sleep_past_the_guard_that_nobody_cancels_still_trips(fake_clock):
    async def main():
        await asyncio.sleep(math.inf)

    with pytest.raises(RetryGuardTripped, match="would pass max_virtual_time"):
        asyncio.run(main())


# -- 18: --retry-check-report has a line for every downstream and herd check of every test ------
def test_the_report_covers_imported_checks_hand_built_downstreams_plain_clocks_and_given(pytester):
    pytester.makepyfile(
        test_more="""
        import time
        from hypothesis import given, settings, strategies as st, Phase
        from pytest_retry_check import FakeClock, FakeDownstream, herd_check

        def fetch(ds, n=3):
            for attempt in range(n):
                try:
                    return ds()
                except ConnectionError:
                    time.sleep(1)

        def test_imported_herd_check():
            herd_check(lambda ds: ds(), clients=20, outages=[]).passed or None

        def test_direct_downstream(fake_clock):
            fetch(FakeDownstream(fail_first=1, name="direct"))

        def test_plain_fakeclock():
            with FakeClock():
                fetch(FakeDownstream(fail_first=2, name="plain"))

        @settings(max_examples=5, deadline=None, phases=[Phase.generate], database=None)
        @given(n=st.integers(1, 3))
        def test_given(n, fake_downstream):
            fetch(fake_downstream(fail_first=n, name="given"), n=4)
        """
    )
    result = pytester.runpytest_inprocess("--retry-check-report", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*= retry check report =*",
            "test_more.py::test_imported_herd_check  herd check FAILED: 20 clients, 0 retried; nothing to judge",
            "test_more.py::test_direct_downstream  direct: 2 call(s) in 1.000 s; waits 1.000 s; last ok",
            "test_more.py::test_plain_fakeclock  plain: 3 call(s) in 2.000 s; waits 1.000 1.000 s; last ok",
            "test_more.py::test_given  given: [2-5] example(s), [2-4]-[2-4] call(s) each; last ok [2-5]",  # every example
        ]
    )


# -- 10: an async client's own deadline ends a slow or hanging in-process answer ----------------
def test_asyncio_timeout_around_async_httpx_fires_on_virtual_time(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[slow(30)])

    async def main():
        async with httpx.AsyncClient(transport=ds.httpx_transport(), timeout=None) as client:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(5):
                    await client.get(URL)

    asyncio.run(main())
    assert fake_clock.now() == pytest.approx(5, abs=1e-5)


def test_wait_for_around_a_hanging_async_httpx_call_times_out(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[hang()])

    async def main():
        async with httpx.AsyncClient(transport=ds.httpx_transport(), timeout=None) as client:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(client.get(URL), 3)

    asyncio.run(main())
    assert fake_clock.now() == pytest.approx(3, abs=1e-5) and fake_clock.tripped is None


def test_async_httpx_request_timeout_and_answers_still_work(fake_clock, fake_downstream):
    ds = fake_downstream(outcomes=[slow(30), slow(2)], then="ok")

    async def main():
        async with httpx.AsyncClient(transport=ds.httpx_transport(), timeout=5) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get(URL)
            assert (await client.get(URL)).status_code == 200
            return await client.get(URL)

    assert asyncio.run(main()).json()["call"] == 3
    assert fake_clock.now() == pytest.approx(7, abs=1e-5)


# -- 11: routes that could not measure what a bound is about ------------------------------------
import requests  # noqa: E402
import responses as responses_lib  # noqa: E402
from requests.adapters import HTTPAdapter  # noqa: E402
from urllib3.util.retry import Retry  # noqa: E402


def test_responses_replaying_urllib3_retry_now_waits_the_backoff_on_the_virtual_clock(fake_downstream):
    ds = fake_downstream(then=503)
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=Retry(total=4, backoff_factor=10, status_forcelist=[503], raise_on_status=False)))
    with responses_lib.RequestsMock() as mocked:
        mocked.add_callback(responses_lib.GET, URL, callback=ds.responses_callback)
        with capture_trace(ds) as run:
            session.get(URL, timeout=5)
    assert run.trace.delays == [0.0, 20.0, 40.0, 80.0]  # what urllib3 sleeps between the 5 attempts
    with pytest.raises(RetryCheckFailed, match=r"waited 140.0 s in total, more than max_total_wait=60.000 s"):
        assert_bounded(run, max_total_wait=60)


def test_responses_replaying_urllib3_retry_honours_retry_after(fake_downstream):
    from pytest_retry_check import rate_limited

    ds = fake_downstream(outcomes=[rate_limited(retry_after=7)], then="ok")
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=Retry(total=2, status_forcelist=[429])))
    with responses_lib.RequestsMock() as mocked:
        mocked.add_callback(responses_lib.GET, URL, callback=ds.responses_callback)
        with capture_trace(ds) as run:
            assert session.get(URL, timeout=5).status_code == 200
    assert run.trace.delays == [7.0]


def test_a_slow_answer_over_the_real_http_server_warns_that_the_timeout_was_not_tested(fake_downstream):
    from pytest_retry_check import UntestedTimeoutWarning

    ds = fake_downstream(outcomes=[slow(30)])
    with pytest.warns(UntestedTimeoutWarning, match=r"answered after 30.000 s of virtual time: a client timeout shorter than that could not fire \(a real socket's timeout"):
        assert requests.get(ds.url + "/orders/42", timeout=5).status_code == 200


def test_the_report_line_of_a_passing_herd_check_counts_what_the_clients_raised():
    from pytest_retry_check.report import herd_line

    report = herd_check(_good, clients=100, outages=[(0, 1e9)])
    assert herd_line(report).endswith("; clients that raised: 100 DownstreamUnavailable")


def test_idle_gaps_between_herd_clients_are_not_taken_for_real_sleeps(monkeypatch):
    # Each client starts on a fresh timeline: a pause between two clients (the machine busy
    # elsewhere) is no sleep of the code's, however many clients there are.
    ticks = [0.0]

    def idle():
        ticks[0] += 0.06
        return ticks[0]

    def client(ds):  # an immediate retry: no virtual time between its two calls
        try:
            return ds()
        except ConnectionError:
            return ds()

    monkeypatch.setattr(realtime, "idle_seconds", idle)
    report = herd_check.measure(client, clients=40, fail_first=1)
    assert report.clients == 40 and not report.forever and report.outcomes.count("succeeded") == 40
