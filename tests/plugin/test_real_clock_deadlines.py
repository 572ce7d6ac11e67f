"""A deadline computed from a real clock captured before the fake clock started (issue 14).

``deadline = clock() + 30; while clock() < deadline`` with ``clock`` the *real* ``time.monotonic``
(a default argument, an object's attribute, a dataclass ``default_factory`` bound at import):
the loop sleeps on the fake clock, virtual time runs, the real clock hardly moves, and the
deadline never comes. The guard then stops the loop; it must say that a real clock was read, name
it and where it is held, and say what to change, instead of "retries forever". Nothing here
sleeps for real: every sleep is the fake clock's.
"""

import time
from dataclasses import dataclass, field
from typing import Callable

import pytest
import tenacity

from pytest_retry_check import FakeClock, FakeDownstream, RealClockCaptured, RetryGuardTripped, assert_bounded, capture_trace

pytestmark = pytest.mark.filterwarnings("ignore::pytest_retry_check.CapturedClockWarning")


class DeadlineClient:
    """Retries until a deadline read from ``clock``: the real monotonic, bound at import."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock

    def fetch(self, ds, timeout=30.0, pause=1.0):
        deadline = self.clock() + timeout
        while True:
            try:
                return ds()
            except ConnectionError:
                if self.clock() >= deadline:
                    raise
                if pause:
                    time.sleep(pause)  # the fake sleep: virtual time runs, the real clock does not


def test_a_real_clock_deadline_that_never_comes_is_named_when_the_sleep_guard_trips():
    client = DeadlineClient()
    with FakeClock(max_sleeps=200) as clock:
        with pytest.raises(RealClockCaptured) as tripped:
            client.fetch(FakeDownstream(then=503))
    message = str(tripped.value)
    assert isinstance(tripped.value, RetryGuardTripped)
    assert "201 sleeps exceed max_sleeps=200" in message
    assert "looks like it retries forever" not in message
    assert "time.monotonic" in message and "test_real_clock_deadlines.py" in message and "in fetch" in message
    assert "the attribute .clock of a tests.plugin.test_real_clock_deadlines.DeadlineClient object" in message
    assert "fix: read the clock when it is called" in message
    assert clock.tripped is None  # expected by pytest.raises: the guard is fresh again


def test_a_real_clock_deadline_is_named_when_the_call_guard_trips(fake_clock):
    client = DeadlineClient()
    ds = FakeDownstream(then=503, max_calls=300)
    with pytest.raises(RealClockCaptured, match=r"(?s)301 calls to downstream exceed max_calls=300.*time\.monotonic"):
        client.fetch(ds, pause=0.5)


@dataclass
class Budget:
    """A time budget on the real clock, bound at import (a dataclass default and default_factory)."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default_factory=time.monotonic)

    def left(self):
        return self.started + self.seconds - self.clock()


def run_job(ds, budget):
    while budget.left() > 0:
        try:
            return ds()
        except ConnectionError:
            time.sleep(2)
    raise TimeoutError("job budget spent")


def test_a_dataclass_clock_is_named(fake_clock):
    with pytest.raises(RealClockCaptured, match=r"(?s)time\.monotonic .*in left.*Budget object.*fix:"):
        run_job(FakeDownstream(then=503), Budget(60))


class StopAfterRealSeconds:
    """A tenacity stop built at import on the real clock (as ``stop_after_delay`` would be with a
    clock of its own)."""

    def __init__(self, seconds, clock=time.monotonic):
        self.seconds, self.clock, self.started = seconds, clock, None

    def __call__(self, retry_state):
        if self.started is None:
            self.started = self.clock()
        return self.clock() - self.started > self.seconds


RETRYING = tenacity.Retrying(stop=StopAfterRealSeconds(30), wait=tenacity.wait_fixed(1), reraise=True)


def test_tenacity_stop_on_a_captured_clock_is_named(fake_clock):
    with pytest.raises(RealClockCaptured, match=r"(?s)time\.monotonic .*in __call__.*StopAfterRealSeconds object.*fix:"):
        RETRYING(FakeDownstream(then=503))


def test_a_failed_check_says_the_deadline_ran_on_a_real_clock(fake_downstream):
    # The downstream recovers before the guard: no trip, but the check fails on 41 attempts.
    # The first call's scan found the captured clock, so the reads were watched.
    client = DeadlineClient()
    ds = fake_downstream(fail_first=40)
    with capture_trace(ds) as run:
        client.fetch(ds, pause=1.0)
    with pytest.raises(AssertionError, match=r"(?s)41 attempts.*read a real clock.*time\.monotonic.*fix:"):
        assert_bounded(run, max_attempts=10)


def test_an_honest_forever_retry_keeps_the_plain_message(fake_clock):
    def forever(ds):
        while True:
            try:
                return ds()
            except ConnectionError:
                time.sleep(1)

    with pytest.raises(RetryGuardTripped) as tripped:
        forever(FakeDownstream(then=503))
    assert type(tripped.value).__name__ == "RetryGuardTripped"
    assert "looks like it retries forever" in str(tripped.value)
    assert "real clock" not in str(tripped.value)


def test_a_deadline_on_the_fake_clock_is_not_blamed(fake_clock):
    client = DeadlineClient(clock=None)
    client.clock = lambda: time.monotonic()  # looked up at call time: virtual
    with pytest.raises(ConnectionError):
        client.fetch(FakeDownstream(then=503))
    assert fake_clock.now() == pytest.approx(30.0)
    assert fake_clock.real_clock_note() is None


def test_the_watch_runs_only_from_half_way_to_the_guard_and_stops_on_reset():
    import sys

    clock = FakeClock(max_sleeps=10)
    clock.watch_on_scan = False  # this module holds captured clocks on purpose
    with clock:
        for _ in range(4):
            time.sleep(1)
        assert sys.getprofile() is None
        time.sleep(1)  # the fifth of ten: half way
        assert sys.getprofile() is not None
        clock.reset()  # the herd check's next client: not watched until half way again
        assert sys.getprofile() is None
        for _ in range(5):
            time.sleep(1)
        assert sys.getprofile() is not None
    assert sys.getprofile() is None
