"""Benchmark of pytest_retry_check (the pytest plugin): real time of property tests under the fake
clock, and the plugin suite's own real time and real sleeping.

    python bench/plugin_bench.py [--runs 5] [--suite-runs 3] [--json out.json]

1. A hypothesis property test, 100 examples, of a tenacity policy whose worst case is 60 s of
   waiting (wait_random_exponential(max=20), stop_before_delay(60) | stop_after_attempt(7)),
   against scripted failure scenarios, run by pytest in a subprocess. Timed per test from
   pytest's junit XML (setup + call + teardown; interpreter start-up excluded), median of
   ``--runs`` runs. Variants measured in the same run:
     - fixtures: the recipe of docs/plugin.md (fake_downstream, a fresh clock per example);
     - plain-clock: ``with FakeClock():`` inside each example;
     - noop-sleep: baseline, what suites do today: the same policy with its sleep replaced by
       a no-op (no virtual time; deadline stops would busy-loop, so the attempt stop bounds it);
     - empty: baseline, the same @given with an empty body (hypothesis' own cost).
   Also reported: the virtual seconds waited over the 100 examples, i.e. what the run would
   cost with real sleeping.
2. The plugin suite (tests/plugin): wall time (median of ``--suite-runs``), also with
   ``-p xdist -n 2``; a baseline of the same pytest start-up and collection (``--collect-only``);
   and, through a small plugin loaded first, every *real* ``time.sleep``/``Event.wait(timeout)``
   the suite performs and the virtual time it simulates.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function"]

PROPERTY_TESTS = '''
import json, os
import tenacity
from hypothesis import given, settings
from pytest_retry_check import (FakeClock, FakeDownstream, Timeline, assert_bounded, capture_trace,
                                DownstreamError, DownstreamPermanentError)
from pytest_retry_check import strategies as rs

SCENARIOS = rs.scenarios(recovers=None, permanent=True)
SETTINGS = settings(max_examples=100, deadline=None, database=None, derandomize=True)
VIRTUAL = []


def policy(**changes):
    options = dict(
        stop=tenacity.stop_before_delay(60) | tenacity.stop_after_attempt(7),
        wait=tenacity.wait_random_exponential(multiplier=1, max=20),
        retry=tenacity.retry_if_exception_type(DownstreamError) & tenacity.retry_if_not_exception_type(DownstreamPermanentError),
        reraise=True,
    )
    options.update(changes)
    return tenacity.Retrying(**options)


@SETTINGS
@given(scenario=SCENARIOS)
def test_fixtures(scenario, fake_downstream):
    ds = fake_downstream(scenario)
    with capture_trace(ds) as run:
        policy()(ds)
    assert_bounded(run, max_total_wait=60, max_delay=20)
    VIRTUAL.append(run.trace.total_wait)


WORST = []


@SETTINGS
@given(scenario=rs.scenarios(recovers=False, rate_limited=False))
def test_fixtures_never_recovers(scenario, fake_downstream):
    ds = fake_downstream(scenario)  # every example runs the policy to its 60 s limit
    with capture_trace(ds) as run:
        try:
            policy()(ds)
        except DownstreamError:
            pass
    assert_bounded(run, max_total_wait=60, max_delay=20)
    WORST.append(run.trace.total_wait)


@SETTINGS
@given(scenario=SCENARIOS)
def test_plain_clock(scenario):
    with FakeClock():
        ds = FakeDownstream(scenario)
        with capture_trace(ds) as run:
            policy()(ds)
        assert_bounded(run, max_total_wait=60, max_delay=20)


@SETTINGS
@given(scenario=SCENARIOS)
def test_noop_sleep(scenario):
    ds = FakeDownstream(scenario, clock=Timeline())  # no patching: time never moves
    with capture_trace(ds) as run:
        policy(sleep=lambda seconds: None)(ds)
    assert run.trace.attempt_count <= 7


@SETTINGS
@given(scenario=SCENARIOS)
def test_empty(scenario):
    pass


def teardown_module():
    with open(os.environ["BENCH_VIRTUAL_OUT"], "w") as out:
        json.dump({"mixed": VIRTUAL, "never_recovers": WORST}, out)
'''

SLEEP_COUNTER = '''
"""Loaded with -p before everything else: counts real sleeps and simulated virtual time."""
import json, os, threading, time

_real_sleep, _real_wait = time.sleep, threading.Event.wait
_perf = time.perf_counter
STATS = {"real_sleeps": 0, "real_sleep_seconds": 0.0, "real_event_waits": 0, "real_event_wait_seconds": 0.0, "virtual_seconds": 0.0}


def sleep(seconds):
    started = _perf()
    try:
        return _real_sleep(seconds)
    finally:
        STATS["real_sleeps"] += 1
        STATS["real_sleep_seconds"] += _perf() - started


def wait(self, timeout=None):
    if timeout is None:
        return _real_wait(self, timeout)
    started = _perf()
    try:
        return _real_wait(self, timeout)
    finally:
        STATS["real_event_waits"] += 1
        STATS["real_event_wait_seconds"] += _perf() - started


time.sleep = sleep
threading.Event.wait = wait

from pytest_retry_check import timeline as _timeline  # light: no patching at import

_advance = _timeline.Timeline._advance_us


def _counting_advance(self, delta_us):
    STATS["virtual_seconds"] += delta_us / 1e6
    return _advance(self, delta_us)


_timeline.Timeline._advance_us = _counting_advance


def pytest_sessionfinish(session):
    out = os.environ.get("BENCH_SLEEP_OUT")
    if out and not hasattr(session.config, "workerinput"):
        with open(out, "w") as handle:
            json.dump(STATS, handle)
    elif out:  # an xdist worker: one file each
        with open(out + "." + session.config.workerinput["workerid"], "w") as handle:
            json.dump(STATS, handle)
'''


def run_pytest(args, env=None, cwd=ROOT):
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0,):
        raise SystemExit(f"pytest {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def bench_property(runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        test_file = Path(tmp) / "test_property_bench.py"
        test_file.write_text(PROPERTY_TESTS)
        times: dict = {}
        virtual: dict = {}
        for _ in range(runs):
            junit = Path(tmp) / "junit.xml"
            env = dict(os.environ, BENCH_VIRTUAL_OUT=str(Path(tmp) / "virtual.json"))
            run_pytest([*PYTEST_ARGS, "-p", "no:xdist", "-p", "no:randomly", f"--junitxml={junit}", "--rootdir", tmp, str(test_file)], env=env, cwd=tmp)
            for case in ET.parse(junit).getroot().iter("testcase"):
                times.setdefault(case.get("name"), []).append(float(case.get("time")))
            virtual = json.loads((Path(tmp) / "virtual.json").read_text())
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "runs": runs,
        "median_seconds": medians,
        "all_seconds": times,
        "virtual_wait_seconds_100_examples": sum(virtual["mixed"]),
        "virtual_wait_seconds_never_recovers": sum(virtual["never_recovers"]),
        "examples": len(virtual["mixed"]),
    }


def bench_suite(runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bench_sleep_counter.py").write_text(SLEEP_COUNTER)
        out = Path(tmp) / "sleeps.json"
        env = dict(os.environ, PYTHONPATH=tmp + os.pathsep + os.environ.get("PYTHONPATH", ""), BENCH_SLEEP_OUT=str(out))
        counted = ["-p", "bench_sleep_counter", *PYTEST_ARGS, "tests/plugin"]
        serial, parallel, collect = [], [], []
        stats = {}
        for _ in range(runs):
            collect.append(run_pytest([*PYTEST_ARGS, "--collect-only", "-p", "no:xdist", "tests/plugin"])[0])
            elapsed, stdout = run_pytest([*counted, "-p", "no:xdist"], env=env)
            serial.append(elapsed)
            stats = json.loads(out.read_text())
            parallel.append(run_pytest([*PYTEST_ARGS, "-p", "xdist", "-n", "2", "tests/plugin"])[0])
        passed = stdout.strip().splitlines()[-1]
    return {
        "runs": runs,
        "serial_wall_seconds_median": statistics.median(serial),
        "xdist_n2_wall_seconds_median": statistics.median(parallel),
        "collect_only_wall_seconds_median": statistics.median(collect),
        "serial_all": serial,
        "xdist_all": parallel,
        "collect_all": collect,
        "last_summary": passed,
        "sleep_stats_last_serial_run": stats,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--suite-runs", type=int, default=3)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    if args.runs < 1 or args.suite_runs < 1:
        parser.error("--runs and --suite-runs must be at least 1")

    prop = bench_property(args.runs)
    m = prop["median_seconds"]
    print(f"1. hypothesis property test, 100 examples, policy with a 60 s worst-case wait (median of {args.runs} runs)")
    for name in ("test_fixtures", "test_fixtures_never_recovers", "test_plain_clock", "test_noop_sleep", "test_empty"):
        print(f"   {name:<29} {m[name]:7.3f} s real   ({m[name] / m['test_empty']:5.2f}x the empty-body baseline, {m[name] / m['test_noop_sleep']:5.2f}x the no-op-sleep baseline)")
    virtual = prop["virtual_wait_seconds_100_examples"]
    print(f"   virtual waiting simulated by the fixtures run: {virtual:,.0f} s over {prop['examples']} examples "
          f"= {virtual / m['test_fixtures']:,.0f}x faster than real sleeping")
    worst = prop["virtual_wait_seconds_never_recovers"]
    print(f"   never-recovering scenarios: {worst:,.0f} s of virtual waiting in {m['test_fixtures_never_recovers']:.3f} s real "
          f"= {worst / m['test_fixtures_never_recovers']:,.0f}x faster than real sleeping")
    slowest = max(m["test_fixtures"], m["test_fixtures_never_recovers"])
    print(f"   target < 2 s real for the fixtures runs: {'PASS' if slowest < 2.0 else 'FAIL'} ({slowest:.3f} s)")

    suite = bench_suite(args.suite_runs)
    s = suite["sleep_stats_last_serial_run"]
    print(f"2. plugin suite tests/plugin ({suite['last_summary']}), median of {args.suite_runs} runs")
    print(f"   serial:      {suite['serial_wall_seconds_median']:6.2f} s wall (incl. interpreter start-up and collection)")
    print(f"   -n 2 xdist:  {suite['xdist_n2_wall_seconds_median']:6.2f} s wall")
    print(f"   baseline, same start-up + --collect-only: {suite['collect_only_wall_seconds_median']:6.2f} s "
          f"-> the tests themselves: {suite['serial_wall_seconds_median'] - suite['collect_only_wall_seconds_median']:.2f} s")
    print(f"   real time.sleep calls: {s['real_sleeps']} ({s['real_sleep_seconds']:.3f} s); real Event.wait(timeout): "
          f"{s['real_event_waits']} ({s['real_event_wait_seconds']:.3f} s); virtual time simulated: {s['virtual_seconds']:,.0f} s "
          f"({s['virtual_seconds'] / 3600:,.1f} h)")
    if args.json:
        Path(args.json).write_text(json.dumps({"property": prop, "suite": suite}, indent=2))


if __name__ == "__main__":
    main()
