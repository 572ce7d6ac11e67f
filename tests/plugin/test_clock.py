"""The fake clock: virtual sleeping, consistency of the time functions, the guard, restoring."""

import asyncio
import datetime
import importlib
import random
import sys
import threading
import time
import types

import pytest
import redis.retry

from pytest_retry_check import FakeClock, RetryGuardTripped, Timeline
import pytest_retry_check.clock as clock_module
from pytest_retry_check.clock import current_clock

# Read through the module at comparison time: while a clock is active, a name in *this* module
# bound to the real sleep is itself patched (that is the point of the alias walk).
real = clock_module

REAL_EVENT_WAIT = threading.Event.wait


def test_sleep_advances_virtual_time_and_all_time_functions_agree():
    with FakeClock(start="2026-03-01T12:00:00Z") as clock:
        wall0, mono0, perf0 = time.time(), time.monotonic(), time.perf_counter()
        time.sleep(90)
        assert clock.now() == 90
        assert time.time() - wall0 == pytest.approx(90)
        assert time.monotonic() - mono0 == pytest.approx(90)
        assert time.perf_counter() - perf0 == pytest.approx(90)
        assert datetime.datetime.now(datetime.timezone.utc) == datetime.datetime(2026, 3, 1, 12, 1, 30, tzinfo=datetime.timezone.utc)
        assert clock.utcnow() == datetime.datetime(2026, 3, 1, 12, 1, 30, tzinfo=datetime.timezone.utc)


def test_module_level_alias_of_sleep_is_virtual():
    # redis-py does `from time import sleep`; patching only time.sleep misses it.
    assert redis.retry.sleep is real.real_sleep
    with FakeClock() as clock:
        redis.retry.sleep(3600)
        assert clock.now() == 3600
        assert [s.kind for s in clock.sleeps] == ["time.sleep"]
    assert redis.retry.sleep is real.real_sleep


def test_every_sleep_is_recorded_with_virtual_time_and_the_callers_location():
    with FakeClock() as clock:
        time.sleep(1.5)
        time.sleep(0.25)
    first, second = clock.sleeps
    assert (first.seconds, first.at) == (1.5, 0.0)
    assert (second.seconds, second.at) == (0.25, 1.5)
    assert first.where.startswith("tests/plugin/test_clock.py:") and first.where.endswith("in test_every_sleep_is_recorded_with_virtual_time_and_the_callers_location")
    assert clock.total_slept == 1.75
    assert "1.500 s" in clock.schedule() and "test_clock.py" in clock.schedule()


def test_library_sleep_location_points_at_the_first_frame_outside_libraries():
    import tenacity

    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(2), wait=tenacity.wait_fixed(2), reraise=True)
    with FakeClock() as clock:
        with pytest.raises(ConnectionError):
            retrying(_always_fails)
    (record,) = clock.sleeps
    assert record.caller.startswith("tenacity/nap.py:")
    assert "test_clock.py" in record.where


def _always_fails():
    raise ConnectionError("down")


def test_event_wait_with_timeout_is_a_virtual_sleep():
    stop = threading.Event()
    with FakeClock() as clock:
        assert stop.wait(30) is False
        assert clock.now() == 30
        stop.set()
        assert stop.wait(30) is True  # set: returns at once, no time passes
        assert clock.now() == 30
    assert threading.Event.wait is REAL_EVENT_WAIT


def test_real_waits_lets_the_test_wait_for_another_thread():
    done = threading.Event()
    with FakeClock() as clock:
        worker = threading.Thread(target=done.set)
        with clock.real_waits():
            worker.start()
            assert done.wait(5)
        worker.join()
        assert clock.sleeps == []


def test_sleep_arguments_are_checked_like_time_sleep():
    with FakeClock() as clock:
        for bad, kind in ((-1, ValueError), (float("nan"), ValueError), (float("inf"), OverflowError), ("1", TypeError)):
            with pytest.raises(kind):
                time.sleep(bad)
        assert clock.sleeps == []


def test_guard_fails_a_forever_retry_fast_and_shows_the_schedule():
    calls = 0
    started = real_monotonic_seconds()
    with FakeClock(max_sleeps=50) as clock:
        with pytest.raises(RetryGuardTripped) as info:
            while True:  # the worst retry: forever, fixed interval, catches everything
                try:
                    calls += 1
                    raise ConnectionError("down")
                except Exception:
                    time.sleep(0.1)
    assert real_monotonic_seconds() - started < 1.0
    assert calls == 51
    message = str(info.value)
    assert "51 sleeps exceed max_sleeps=50" in message
    assert "schedule (51 sleeps" in message and "(36 more)" in message
    assert clock.tripped is None  # expected by pytest.raises: the guard is fresh for the rest of the test


def test_guard_on_virtual_time():
    with FakeClock(max_virtual_time=60) as clock:
        time.sleep(50)
        with pytest.raises(RetryGuardTripped, match=r"would pass max_virtual_time=60.000 s"):
            time.sleep(20)
        time.sleep(59)  # the trip was expected: virtual time counts afresh from here
        assert clock.now() == 109
    with pytest.raises(AssertionError, match="swallowed it"):
        with FakeClock(max_virtual_time=60):
            try:
                time.sleep(70)
            except BaseException:  # noqa: B036  a loop that swallows the guard
                pass
            # once tripped, a loop that caught it (except BaseException) is stopped again
            with pytest.raises(RetryGuardTripped, match="already tripped"):
                time.sleep(1)


def test_guard_is_not_swallowed_by_except_exception():
    with FakeClock(max_sleeps=3):
        with pytest.raises(RetryGuardTripped):
            for _ in range(100):
                try:
                    time.sleep(1)
                except Exception:  # a retry loop's broad except must not catch the guard
                    pass


@pytest.mark.filterwarnings("ignore::pytest_retry_check.CapturedClockWarning")  # holds the originals on purpose
def test_everything_is_restored_after_an_exception():
    patched_before = (time.sleep, time.time, time.monotonic, datetime.datetime, asyncio.sleep, threading.Event.wait)
    with pytest.raises(ZeroDivisionError):
        with FakeClock():
            assert time.sleep is not real.real_sleep
            1 / 0
    assert (time.sleep, time.time, time.monotonic, datetime.datetime, asyncio.sleep, threading.Event.wait) == patched_before
    assert current_clock() is None


def test_module_imported_while_active_gets_the_real_sleep_back(tmp_path, monkeypatch):
    (tmp_path / "late_sleeper.py").write_text("from time import sleep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with FakeClock():
        module = importlib.import_module("late_sleeper")
        assert module.sleep is not real.real_sleep
    assert module.sleep is real.real_sleep
    sys.modules.pop("late_sleeper", None)


def test_clocks_nest_and_the_innermost_moves():
    with FakeClock() as outer:
        time.sleep(1)
        with FakeClock(start="2030-01-01") as inner:
            time.sleep(5)
            assert datetime.datetime.now().year == 2030
        time.sleep(1)
    assert (outer.now(), inner.now()) == (2, 5)


def test_stopping_out_of_order_is_refused():
    outer, inner = FakeClock(), FakeClock()
    outer.start()
    inner.start()
    try:
        with pytest.raises(RuntimeError, match="reverse order"):
            outer.stop()
    finally:
        inner.stop()
        outer.stop()


def test_decorator_gives_each_call_a_fresh_clock():
    @FakeClock(max_sleeps=5)
    def job(seconds):
        time.sleep(seconds)
        return current_clock().now()

    assert job(3) == 3
    assert job(4) == 4
    assert current_clock() is None


def test_seed_makes_jitter_reproducible_and_restores_random():
    random.seed(99)
    expected_after = random.random()
    random.seed(99)
    with FakeClock(seed=7):
        first = [random.uniform(0, 1) for _ in range(3)]
    with FakeClock(seed=7):
        second = [random.uniform(0, 1) for _ in range(3)]
    assert first == second
    assert random.random() == expected_after


def test_reset_starts_afresh_without_time_going_backwards():
    with FakeClock() as clock:
        time.sleep(10)
        before = time.monotonic()
        clock.reset()
        assert clock.now() == 0 and clock.sleeps == [] and clock.tripped is None
        assert time.monotonic() == before


def test_a_timeline_alone_patches_nothing_and_is_cheap():
    started = real_monotonic_seconds()
    timelines = [Timeline() for _ in range(1000)]
    assert real_monotonic_seconds() - started < 0.5
    timelines[0].sleep(5)
    assert timelines[0].now() == 5 and timelines[1].now() == 0
    assert time.sleep is real.real_sleep


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_sleeps": 0}, "max_sleeps must be a positive number"),
        ({"max_virtual_time": -1}, "max_virtual_time must be a positive number"),
        ({"start": "yesterday"}, "is not an ISO-8601 date/time"),
        ({"seed": "x"}, "seed must be an int"),
        ({"io_grace": -1}, "io_grace must be a number"),
    ],
)
def test_bad_settings_get_a_clear_message(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        FakeClock(**kwargs)


def real_monotonic_seconds():
    from pytest_retry_check.clock import real_monotonic

    return real_monotonic()


def test_fake_clock_fixture_is_active_and_restored(fake_clock):
    assert current_clock() is fake_clock
    time.sleep(12)
    assert fake_clock.now() == 12
    assert isinstance(fake_clock.sleeps[0].where, str)


def test_no_fixture_no_patch():
    assert time.sleep is real.real_sleep and current_clock() is None
    assert isinstance(time.time(), float) and not isinstance(datetime.datetime.now(), types.FunctionType)
