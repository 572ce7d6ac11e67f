"""The plugin as a user meets it, through pytester: loading, what failures look like, fail-fast
guards, restoring patches, configuration and hypothesis integration."""

import importlib.metadata
import subprocess
import sys
import textwrap

import hypothesis  # noqa: F401  (imported here so pytester's in-process runs do not re-import it each time)
import pytest
import redis.retry  # noqa: F401
import tenacity  # noqa: F401

import pytest_retry_check.clock as clock_module
import pytest_retry_check.assertions  # noqa: F401
import pytest_retry_check.plugin  # noqa: F401

pytest_plugins = ["pytester"]

# Inner runs: the project's asyncio setting, and no hypothesis plugin unless a test needs it.
FAST = ("-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")


def real_monotonic():
    return clock_module.real_monotonic()


def test_entry_point_registers_the_plugin(pytestconfig):
    points = [ep for ep in importlib.metadata.entry_points(group="pytest11") if ep.name == "retry_check"]
    assert [ep.value for ep in points] == ["pytest_retry_check.plugin"]
    assert pytestconfig.pluginmanager.has_plugin("retry_check")


def test_loading_the_plugin_imports_nothing_heavy_and_patches_nothing():
    code = textwrap.dedent(
        """
        import sys, time, threading
        sleep, wait = time.sleep, threading.Event.wait
        import pytest_retry_check.plugin
        heavy = [m for m in ("freezegun", "hypothesis", "pytest_retry_check.clock", "asyncio") if m in sys.modules]
        print(heavy, time.sleep is sleep and threading.Event.wait is wait)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True"


def test_a_failing_bound_shows_the_schedule(pytester):
    pytester.makepyfile(
        """
        import tenacity
        from pytest_retry_check import assert_bounded, capture_trace

        def test_policy(fake_downstream):
            ds = fake_downstream(then=503)
            policy = tenacity.Retrying(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential(max=60), reraise=True)
            with capture_trace(ds) as run:
                policy(ds)
            assert_bounded(run, max_attempts=5, max_delay=30)
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*retry check 'bounded' failed: 8 attempts, more than max_attempts=5; attempt #7 came 32.000 s after the previous one, more than max_delay=30.000 s (no cap?)*",
            "*retry trace: 8 attempt(s), 123.0 s of virtual waiting, outcome: raised DownstreamUnavailable*",
            "*7 * +63.000 s * 32.000 s  503*",
        ]
    )
    assert "pytest_retry_check/assertions.py" not in result.stdout.str()  # user's frame, not ours


def test_a_forever_retry_fails_fast_with_the_schedule(pytester):
    pytester.makepyfile(
        """
        import time

        def fetch_forever(call):
            while True:
                try:
                    return call()
                except Exception:
                    time.sleep(2)

        def test_forever(fake_clock):
            def down():
                raise ConnectionError("db down")
            fetch_forever(down)
        """
    )
    started = real_monotonic()
    result = pytester.runpytest_inprocess(*FAST)
    elapsed = real_monotonic() - started
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*RetryGuardTripped: retry guard: 1001 sleeps exceed max_sleeps=1000; the code under test looks like it retries forever.*",
            "*schedule (1001 sleeps, 2,002.0 s in total):*",
            "*1 * +0.000 s * 2.000 s  time.sleep * test_a_forever*.py:8 in fetch_forever*",
            "*(986 more)*",
        ]
    )
    assert elapsed < 3.0


def test_patches_are_restored_after_a_failing_test(pytester):
    pytester.makepyfile(
        """
        import asyncio, datetime, selectors, threading, time
        import redis.retry

        ORIGINAL = (time.sleep, time.time, time.monotonic, datetime.datetime, asyncio.sleep,
                    threading.Event.wait, selectors.EpollSelector.select, redis.retry.sleep)

        def test_fails_with_the_clock_active(fake_clock):
            time.sleep(5)
            assert time.sleep is not ORIGINAL[0]
            raise RuntimeError("the test fails")

        def test_after_it_everything_is_real():
            now = (time.sleep, time.time, time.monotonic, datetime.datetime, asyncio.sleep,
                   threading.Event.wait, selectors.EpollSelector.select, redis.retry.sleep)
            assert now == ORIGINAL
            assert datetime.datetime.now().year != 2026 or True
            assert abs(time.time() - datetime.datetime.now().timestamp()) < 5
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: the test fails*"])


def test_a_swallowed_guard_still_fails_the_test(pytester):
    pytester.makepyfile(
        """
        import time

        def test_swallows(fake_clock):
            try:
                while True:
                    time.sleep(1)
            except BaseException:
                pass  # a retry loop that catches everything
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*the retry guard tripped but the code under test swallowed it:*", "*1001 sleeps exceed max_sleeps=1000*"])


def test_marker_and_ini_configure_the_clock(pytester):
    pytester.makeini(
        """
        [pytest]
        retry_check_max_virtual_time = 100
        """
    )
    pytester.makepyfile(
        """
        import datetime, time, pytest
        from pytest_retry_check import RetryGuardTripped

        @pytest.mark.fake_clock(max_sleeps=3, start="2031-05-06T07:08:09Z")
        def test_marker(fake_clock):
            assert datetime.datetime.now(datetime.timezone.utc).year == 2031
            for _ in range(3):
                time.sleep(1)
            with pytest.raises(RetryGuardTripped, match="4 sleeps exceed max_sleeps=3"):
                time.sleep(1)
            fake_clock.reset()

        def test_ini(fake_clock):
            with pytest.raises(RetryGuardTripped, match="max_virtual_time=100.0 s"):
                time.sleep(101)
            fake_clock.reset()
        """
    )
    pytester.runpytest_inprocess(*FAST).assert_outcomes(passed=2)


def test_bad_configuration_gets_a_clear_message_not_a_traceback(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.fake_clock(max_sleeps=-1)
        def test_bad_marker(fake_clock):
            pass

        @pytest.mark.fake_clock(5)
        def test_positional(fake_clock):
            pass

        def test_bad_script(fake_downstream):
            fake_downstream(outages=[(30, 10)])
        """
    )
    result = pytester.runpytest_inprocess(*FAST)
    result.assert_outcomes(failed=1, errors=2)
    out = result.stdout.str()
    assert "fake_clock: max_sleeps must be a positive number, got -1" in out
    assert "takes keyword arguments only" in out
    assert "an outage window needs 0 <= start < end, got (30, 10)" in out
    assert "pytest_retry_check/" not in out  # the user's line, not our internals


def test_bad_ini_value_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\nretry_check_max_sleeps = lots\n")
    pytester.makepyfile("def test_x(fake_clock):\n    pass\n")
    result = pytester.runpytest_inprocess(*FAST)
    assert "ini option retry_check_max_sleeps = 'lots' is not a whole number" in result.stderr.str() + result.stdout.str()


def test_hypothesis_shrinks_a_guard_trip_to_the_smallest_example(pytester):
    pytester.makepyfile(
        """
        import time
        import pytest
        from hypothesis import given, settings, strategies as st

        @pytest.mark.fake_clock(max_sleeps=20)
        @settings(max_examples=100, deadline=None, database=None)
        @given(n=st.integers(0, 500))
        def test_loop(n, fake_clock):
            assert fake_clock.sleeps == []  # fresh per example
            for _ in range(n):  # retries n times: past 20 sleeps the guard trips
                time.sleep(0.5)
        """
    )
    result = pytester.runpytest_inprocess("-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "n=21," in out  # hypothesis shrank to the first n that trips the guard
    assert "21 sleeps exceed max_sleeps=20" in out


def test_other_function_scoped_fixtures_still_get_hypothesis_health_check(pytester):
    pytester.makepyfile(
        """
        from hypothesis import given, strategies as st

        @given(n=st.integers())
        def test_x(n, fake_clock, tmp_path):
            pass
        """
    )
    result = pytester.runpytest_inprocess("-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*uses a function-scoped fixture*"])
