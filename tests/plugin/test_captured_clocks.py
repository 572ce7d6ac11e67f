"""Real clock and sleep functions captured before the fake clock started (issue 14).

``field(default_factory=time.time)``, ``now = time.monotonic`` in a class body, ``datetime.now``
as a default argument, ``Retrying(sleep=time.sleep)`` built at import: each holds the *real*
function, which freezegun and the fake sleep cannot reach. The fixture looks through the test's
module (and the project modules it names) when the clock starts, a fake downstream looks through
the callers' locals at its first call, and either reports a ``CapturedClockWarning`` naming
where each function is held. Nothing here sleeps for real: the captured functions are found,
never called for a wait.
"""

import time
import warnings

import pytest

from pytest_retry_check import CapturedClockWarning, FakeClock, FakeDownstream, RealClockCaptured, RealTimeWarning

pytest_plugins = ["pytester"]
# This module's own classes hold captured clocks on purpose (the fixture would report them).
pytestmark = pytest.mark.filterwarnings("ignore::pytest_retry_check.CapturedClockWarning")
# "-W default": the inner runs see the warning although this module ignores it (pytestmark).
FAST = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function", "-W", "default::pytest_retry_check.CapturedClockWarning")


def test_clocks_captured_in_the_test_module_are_named_when_the_fixture_starts(pytester):
    pytester.makepyfile(
        test_jobs="""
        import asyncio
        import time
        from dataclasses import dataclass, field
        from datetime import datetime

        import tenacity

        @dataclass
        class Job:
            created: float = field(default_factory=time.time)

        class Deadline:
            now = time.monotonic

        def expired(started, clock=datetime.now):
            return clock() > started

        async def poll(check, nap=asyncio.sleep):
            await nap(1)

        POLICY = tenacity.Retrying(sleep=time.sleep, stop=tenacity.stop_after_attempt(3))

        def test_one(fake_clock):
            assert fake_clock.now() == 0.0

        def test_two(fake_clock):  # reported once per session, not once per test
            pass
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert out.count("CapturedClockWarning:") == 1, out
    for where in (
        "the default_factory of dataclass field test_jobs.Job.created is the real time.time",
        "the class attribute test_jobs.Deadline.now is the real time.monotonic",
        "the default of argument 'clock' of test_jobs.expired() is the real datetime.datetime.now",
        "the default of argument 'nap' of test_jobs.poll() is the real asyncio.sleep",
        "the attribute .sleep of a tenacity.Retrying object (test_jobs.POLICY) is the real time.sleep",
    ):
        assert where in out, where


def test_clocks_in_a_project_module_the_test_imports_are_found(pytester):
    pytester.makepyfile(
        orders="""
        import time

        class Client:
            def __init__(self, now=time.monotonic):
                self.now = now
        """,
        test_orders="""
        from orders import Client

        def test_it(fake_clock):
            Client()
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*CapturedClockWarning*", "*the default of argument 'now' of orders.Client.__init__() is the real time.monotonic*"])


def test_the_warning_can_be_made_an_error(pytester):
    pytester.makepyfile(
        """
        import time
        from dataclasses import dataclass, field

        @dataclass
        class Job:
            created: float = field(default_factory=time.time)

        def test_it(fake_clock):
            pass
        """
    )
    result = pytester.runpytest_inprocess(*FAST, "-W", "error::pytest_retry_check.CapturedClockWarning")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CapturedClockWarning*", "*Job.created is the real time.time*"])


def test_lookups_at_call_time_are_not_reported(pytester):
    pytester.makepyfile(
        """
        import time
        from time import monotonic, sleep  # module names: patched while the clock runs
        from dataclasses import dataclass, field

        @dataclass
        class Job:
            created: float = field(default_factory=lambda: time.time())

        def wait(seconds, nap=None):
            (nap or time.sleep)(seconds)

        def test_it(fake_clock, fake_downstream):
            ds = fake_downstream(fail_first=1)
            try:
                ds()
            except ConnectionError:
                wait(1)
            assert ds() == "ok"
            assert Job().created == time.time()
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1)
    assert "CapturedClockWarning" not in result.stdout.str()


# -- objects under test that the module scan cannot see: the downstream's callers ---------------
class Poller:
    """Polls until a deadline computed from ``now``: with the real clock the deadline never
    comes on the fake clock, and the poll goes on until the call guard."""

    def __init__(self, now, sleep):
        self.now, self.sleep = now, sleep

    def poll(self, ds, timeout=5.0):
        deadline = self.now() + timeout
        ds()
        return deadline


@pytest.fixture
def real_poller():
    return Poller(time.monotonic, time.sleep)  # captured before the fake clock starts


def test_a_clock_held_by_an_object_from_a_fixture_is_named_at_the_first_call(real_poller, fake_downstream):
    ds = fake_downstream(then="ok")
    with pytest.warns(CapturedClockWarning) as warned:
        real_poller.poll(ds)
        real_poller.poll(ds)
    message = str(warned[0].message)
    assert len(warned) == 1
    assert "the attribute .now of a tests.plugin.test_captured_clocks.Poller object" in message
    assert "is the real time.monotonic" in message and "is the real time.sleep" in message
    assert issubclass(CapturedClockWarning, RealTimeWarning)


def test_a_clock_held_in_a_local_before_with_fake_clock_is_named_at_start():
    poller = Poller(time.monotonic, lambda seconds: time.sleep(seconds))
    with pytest.warns(CapturedClockWarning, match=r"the attribute \.now of a .*Poller object \(the local 'poller' of .*\) is the real time\.monotonic") as warned:
        with FakeClock():
            poller.poll(FakeDownstream(then="ok"))  # the same place, reached again: not reported twice
    assert len(warned) == 1


class Stopwatch:
    def __init__(self, clock=time.perf_counter):  # the default is the real perf_counter
        self.clock = clock

    def timed_call(self, ds):
        started = self.clock()
        ds()
        return self.clock() - started


def test_as_an_error_at_a_call_it_is_not_swallowed_by_the_retry_loop(fake_clock):
    watch = Stopwatch()
    ds = FakeDownstream(then="ok")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CapturedClockWarning)
        with pytest.raises(RealClockCaptured, match=r"(?s)Stopwatch object.*is the real time\.perf_counter"):
            try:
                watch.timed_call(ds)
            except Exception:  # a retry loop's catch-all does not hide it (a BaseException)
                pytest.fail("swallowed by except Exception")
    assert ds.call_count == 0
