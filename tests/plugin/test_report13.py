"""Report 13 (issue 13 audit) fixes on the plugin side.

Item 4: the ``PATH:LINE`` that ``retrylint check`` prints for a retry site (a decorator's line, a
multi-line decorator, the line a policy's arguments are built on) is accepted wherever the plugin
takes a retry site: ``policy_at``, ``simulate --policy``, ``replay_incident("f.py:L")`` and
``budget_check("f.py:L")``.
"""

from __future__ import annotations

import pytest

from pytest_retry_check import policy_at, replay_incident
from pytest_retry_check.budgets import budget_check

pytest_plugins = ["pytester"]

SITES = '''\
import backoff
import requests
import stamina
import tenacity


@tenacity.retry(stop=tenacity.stop_after_attempt(10), wait=tenacity.wait_exponential_jitter(initial=1, max=20, jitter=1))
def fetch_tenacity(url):
    return requests.get(url, timeout=5)


@tenacity.retry(
    stop=tenacity.stop_after_attempt(6),
    wait=tenacity.wait_fixed(2),
    retry=tenacity.retry_if_exception_type(requests.ConnectionError),
)
def fetch_multiline(url):
    return requests.get(url, timeout=5)


@backoff.on_exception(backoff.expo, requests.ConnectionError, max_tries=4, max_value=8)
def fetch_backoff(url):
    return requests.get(url, timeout=5)


@stamina.retry(on=requests.ConnectionError)
def fetch_stamina(url):
    return requests.get(url, timeout=5)


POLICY = dict(
    on=requests.ConnectionError,
    attempts=5,
    wait_initial=0.5,
    wait_max=3.0,
)


@stamina.retry(**POLICY)
def fetch_built(url):
    return requests.get(url, timeout=5)
'''

# the def line of each site -> (library, attempts, the lines that name it)
DEFS = {
    8: ("tenacity", 10, [7, 8, 9]),
    17: ("tenacity", 6, [12, 13, 14, 15, 16, 17, 18]),
    22: ("backoff", 4, [21, 22, 23]),
    27: ("stamina", 10, [26, 27, 28]),
    40: ("stamina", 5, [31, 32, 35, 36, 39, 40, 41]),
}


@pytest.fixture
def sites(tmp_path):
    path = tmp_path / "sites.py"
    path.write_text(SITES)
    return path


def _reported_lines(path):
    """(line, code) of every finding ``retrylint check`` reports for the file, by its engine."""
    from retrylint.codes import NAMES
    from retrylint.engine import check_source, decode_source, settings_with

    report = check_source(decode_source(path.read_bytes()), str(path), settings_with(tuple(NAMES)))
    return sorted({(f.location.line, f.code) for f in report.findings})


def test_every_line_retrylint_reports_for_a_site_is_accepted(sites):
    reported = _reported_lines(sites)
    # the decorator lines (7, 12, 26) and the line of the dict a stamina policy is built from (31)
    assert {line for line, _ in reported} >= {7, 12, 26, 31}, reported
    for line, code in reported:
        policy = policy_at(sites, line)  # before the fix: "no retry site contains sites.py:7 (...)"
        own = [d for d, (_, _, lines) in DEFS.items() if line in lines]
        assert own, (line, code)
        assert policy.location == policy_at(sites, own[0]).location, (line, code)


@pytest.mark.parametrize("def_line", sorted(DEFS))
def test_decorator_lines_name_the_same_site_as_the_def_line(sites, def_line):
    library, attempts, lines = DEFS[def_line]
    at_def = policy_at(sites, def_line)
    assert at_def.source == library and at_def.bound.attempts == attempts
    for line in lines:
        assert policy_at(sites, line).location == at_def.location, line


def test_lines_outside_every_site_still_fail_and_name_the_reported_lines(sites):
    with pytest.raises(ValueError, match=r"no retry site contains .*sites.py:1 \(retry sites found at lines: 7, 12, 21, 26, 31\)"):
        policy_at(sites, 1)


def test_replay_incident_takes_the_decorator_line_and_a_check_location(sites):
    by_def = replay_incident(f"{sites}:22")
    by_decorator = replay_incident(f"{sites}:21")  # backoff's decorator line
    by_location = replay_incident(f"{sites}:21:2")  # as `retrylint check` prints it
    assert by_def.peak == by_decorator.peak == by_location.peak and by_def.calls == by_decorator.calls
    assert by_decorator.calls > 2000  # it retried: 4 tries each while the downstream is down


def test_replay_incident_takes_a_multiline_tenacity_decorator(sites):
    by_def = replay_incident(f"{sites}:17", messages=200)
    for line in (12, 14, 16):
        assert replay_incident(f"{sites}:{line}", messages=200).calls == by_def.calls


def test_budget_check_takes_the_stamina_decorator_and_the_dict_line(sites):
    decorated = budget_check.measure(f"{sites}:26", clients=100, seed=1)
    assert decorated.retries == budget_check.measure(f"{sites}:27", clients=100, seed=1).retries > 0
    built = budget_check.measure(f"{sites}:31", clients=100, seed=1)
    assert built.retries == budget_check.measure(f"{sites}:40", clients=100, seed=1).retries > 0
    assert built.retries != decorated.retries  # two different policies (5 vs 10 attempts)


def test_the_command_takes_the_decorator_line(sites, capsys):
    from pytest_retry_check.simulate import main

    assert main(["--policy", f"{sites}:7", "--clients", "50", "--runs", "1", "--seed", "1"]) == 0
    assert "sites.py:7" in capsys.readouterr().out
    assert main(["--policy", f"{sites}:7:2", "--clients", "50", "--runs", "1", "--seed", "1"]) == 0
    assert "sites.py:7" in capsys.readouterr().out


# -- item 2: the incident with real sync code: one thread switch per event, same results --------
import random  # noqa: E402

from pytest_retry_check.population import ASYNC_START, SchedulerClock, ThreadScheduler  # noqa: E402
from pytest_retry_check.simulation import CapacityModel, Network, SimulatedDownstream  # noqa: E402


def _jittered(downstream, sleeps):
    import time

    for attempt in range(1, 6):
        try:
            return downstream()
        except ConnectionError:
            if attempt == 5:
                raise
            sleeps.append(attempt)
            time.sleep(random.uniform(0, min(20.0, 2.0 ** (attempt - 1))))


class _LegByLeg(SimulatedDownstream):
    """The downstream as it was: the client's thread waits out every leg itself."""

    def __call__(self, *args, **kwargs):
        wait = self._clock.scheduler.wait
        wait(self._leg())
        read_at = self._clock.now()
        if self.model.read_phase:
            wait(self._leg() + self._leg())
        ok = self._decide(read_at)
        wait(self._leg())
        return self._answer(ok)


def _run(downstream_class, clients, seed):
    model = CapacityModel(50, 1.0, ((0.0, 5.0),), Network(0.001, 0.0002))
    clock = SchedulerClock(ASYNC_START)
    downstream = downstream_class(model, random.Random(seed), clock)
    scheduler = ThreadScheduler(clock, horizon=3600.0, max_sleeps=100)
    clock.scheduler = scheduler
    sleeps = []
    random.seed(seed)
    with clock:
        results = scheduler.run(lambda d: _jittered(d, sleeps), clients, downstream)
    clock.scheduler = None
    return scheduler, downstream, results, sleeps


def test_a_call_to_the_simulated_downstream_wakes_the_client_thread_once():
    # Before: every network leg was a round trip through the scheduler's thread (two real
    # thread switches per leg, three legs a call); now the thread that sleeps hands over to the
    # next client due, and a call's legs and decision run in turn without waking the caller.
    scheduler, downstream, results, sleeps = _run(SimulatedDownstream, 200, seed=3)
    calls = len(downstream.calls)
    assert calls > 400 and len(sleeps) > 200
    assert {r.outcome for r in results} <= {"returned", "raised"}
    # one wake-up per client start, per call's answer and per sleep; at most
    assert scheduler.wakeups <= 200 + calls + len(sleeps)
    assert scheduler.events == 200 + 2 * calls + len(sleeps)  # the arrival (and decision), the answer


def test_waiting_through_the_legs_changes_nothing_in_the_schedule():
    for seed in (1, 2):
        _, by_steps, results, sleeps = _run(SimulatedDownstream, 150, seed)
        _, leg_by_leg, old_results, old_sleeps = _run(_LegByLeg, 150, seed)
        assert by_steps.calls == leg_by_leg.calls  # (time, client, ok) of every call, in order
        assert [(r.outcome, r.finished_at) for r in results] == [(r.outcome, r.finished_at) for r in old_results]
        assert sleeps == old_sleeps


def test_a_step_that_fails_raises_in_its_own_client():
    clock = SchedulerClock(ASYNC_START)
    scheduler = ThreadScheduler(clock, horizon=100.0, max_sleeps=10)

    def boom():
        raise ValueError("the step failed")

    def client(_):
        scheduler.wait_through(1.0, boom)

    with clock:
        results = scheduler.run(client, 2, None)
    assert [(r.outcome, str(r.error), r.finished_at) for r in results] == [("raised", "the step failed", 1.0)] * 2


# -- item 9: a heartbeat thread under the fake clock fails loudly --------------------------------
import threading  # noqa: E402
import time  # noqa: E402

from pytest_retry_check import FakeClock, RetryGuardTripped  # noqa: E402


def _heartbeat(stop, beats, clock):
    while not stop.wait(10):  # the usual heartbeat: extend the visibility every 10 s
        beats.append(clock.now())


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_heartbeat_thread_while_the_handler_sleeps_fails_loudly():
    stop, beats = threading.Event(), []
    with pytest.raises(RetryGuardTripped) as info:
        with FakeClock() as clock:
            time.sleep(1)  # the handler's first step of work
            beat = threading.Thread(target=_heartbeat, args=(stop, beats, clock), name="heartbeat", daemon=True)
            beat.start()
            with clock.real_waits():
                beat.join(5)  # (the test waits until the thread's first wait failed: no race)
            try:
                time.sleep(25)  # before: passed, the beats at the wrong times (or none)
            finally:
                stop.set()
    message = str(info.value)
    assert "'heartbeat' called Event.wait(10)" in message and "Heartbeats must be inline" in message
    assert beats == [] and not beat.is_alive()


def test_the_handler_sleeping_while_a_heartbeat_thread_waits_fails_loudly():
    # The other order: the heartbeat thread's wait first, then the handler's sleep.
    stop, beats, waiting = threading.Event(), [], threading.Event()

    def heartbeat(clock):
        waiting.set()
        with clock.real_waits():
            stop.wait(5)  # holds the thread alive (for real) once it has waited virtually
        beats.append(clock.now())

    with FakeClock() as clock:
        beat = threading.Thread(target=lambda: (_first_wait(clock), heartbeat(clock)), name="heartbeat", daemon=True)
        beat.start()
        with clock.real_waits():
            assert waiting.wait(5)
        with pytest.raises(RetryGuardTripped, match=r"'MainThread' called time.sleep\(25\).*'heartbeat'.*Heartbeats must be inline"):
            time.sleep(25)
        stop.set()
        beat.join(5)
        clock.tripped = None  # the trip was expected here


def _first_wait(clock):
    threading.Event().wait(10)


def test_waits_on_one_thread_at_a_time_stay_allowed():
    # A worker thread that retries while the test thread only joins it, then the test sleeps:
    # never two threads waiting at once.
    done = []

    def worker():
        for _ in range(3):
            threading.Event().wait(2)
            time.sleep(1)
        done.append(True)

    with FakeClock() as clock:
        thread = threading.Thread(target=worker, name="worker")
        thread.start()
        with clock.real_waits():
            thread.join(5)
        time.sleep(5)
        assert done and clock.now() == 14
    # the simulated clients of run_workers / the incident are not background threads either
    report = replay_incident(lambda downstream: _simulated_client(downstream), messages=20)
    assert report.calls >= 20


def _simulated_client(downstream):
    for _ in range(3):
        try:
            return downstream()
        except ConnectionError:
            threading.Event().wait(0.5)


def test_the_fixture_fails_a_test_whose_heartbeat_thread_lost_the_error(pytester):
    pytester.makepyfile(
        """
        import threading, time

        def test_handler_with_a_heartbeat_thread(fake_clock):
            stop = threading.Event()
            time.sleep(1)
            def beat():
                while not stop.wait(10):
                    pass
            t = threading.Thread(target=beat, name="heartbeat", daemon=True)
            t.start()
            with fake_clock.real_waits():
                t.join(5)   # its error is lost in the thread
            stop.set()
        """
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:hypothesispytest", "-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function",
        "-W", "ignore::pytest.PytestUnhandledThreadExceptionWarning",
    )
    result.assert_outcomes(passed=1, errors=1)
    assert "Heartbeats must be inline" in result.stdout.str()


# -- found while measuring item 2: a module of yours named queue_* slept for real -------------
def test_a_module_named_like_an_ignored_one_still_sleeps_in_virtual_time(tmp_path, monkeypatch):
    # bench/queue_bench.py imported as `queue_bench` slept for real under the clock: the real-time
    # modules were matched as prefixes ("queue" matched "queue_bench").
    (tmp_path / "queue_worker_r13.py").write_text(
        "import time\nfrom time import sleep\n\n"
        "def work():\n    time.sleep(3)\n    sleep(2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import queue_worker_r13

    started = time.perf_counter()
    with FakeClock() as clock:
        queue_worker_r13.work()
        assert clock.now() == 5 and [r.seconds for r in clock.sleeps] == [3, 2]
    assert time.perf_counter() - started < 2
    from pytest_retry_check.clock import ignored_module

    assert ignored_module("queue") and ignored_module("concurrent.futures.thread") and ignored_module("_hypothesis_pytestplugin")
    assert not ignored_module("queue_worker_r13") and not ignored_module("threading_helpers") and not ignored_module("coverage_report")


def test_the_check_for_background_waits_costs_nothing_per_simulated_client(monkeypatch):
    # Every sleep of every simulated client goes through the check: with no background thread it
    # must not look at the other threads (2,000 clients made the incident 4x slower).
    looked = []
    is_alive = threading.Thread.is_alive
    monkeypatch.setattr(threading.Thread, "is_alive", lambda self: looked.append(self.name) or is_alive(self))

    def client(downstream):
        for _ in range(3):
            try:
                return downstream()
            except ConnectionError:
                time.sleep(0.5)

    replay_incident(client, messages=200)
    assert [name for name in looked if name.startswith("retry-check-client")] == []
