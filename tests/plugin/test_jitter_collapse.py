"""The herd check catches jitter that a cap clamps away (RTY504's finding, at test time).

stamina computes ``min(wait_max, wait_initial * 2 ** (n - 1) + uniform(0, wait_jitter))``: with
its defaults every wait from the 7th attempt on is exactly 5 s. The clients' retry *instants*
still differ (the jitter of the first six waits), so the instant-based measures pass; the check
must still say that the waits collapsed to the cap, and from which retry.
"""

import logging
import random
import time

import pytest
import stamina
import tenacity

from pytest_retry_check import RetryCheckFailed, assert_dispersed, measure_dispersion

CLIENTS = 150


@pytest.fixture(autouse=True)
def _quiet_stamina():
    logging.disable(logging.WARNING)  # stamina logs every scheduled retry
    yield
    logging.disable(logging.NOTSET)


def _stamina_defaults(ds):
    return stamina.retry(on=ConnectionError)(ds)()


def test_stamina_defaults_collapse_to_the_cap_from_retry_7():
    report = measure_dispersion(_stamina_defaults, clients=CLIENTS)
    # What stamina really did: waits 7-9 exactly 5 s for every client, the earlier ones spread.
    waits = [[b - a for a, b in zip(s, s[1:])] for s in report.schedules]
    assert all(len(w) == 9 for w in waits)
    assert {round(w[k], 6) for w in waits for k in (6, 7, 8)} == {5.0}
    assert len({round(w[5], 6) for w in waits}) > CLIENTS // 2
    collapse = [p for p in report.problems if "collapsed to the cap" in p]
    assert collapse == [
        f"retries #7-#9: {CLIENTS} of {CLIENTS} clients waited exactly 5.000 s before retry #7: the waits collapsed to the cap "
        "from retry #7 (the wait after attempt 7) on; the jitter is added before the cap and clamped away, so past the cap "
        "every client waits the same. Jitter under the cap (full jitter `random.uniform(0, min(cap, base * 2 ** attempt))`) "
        "or add it after the cap"
    ], report.describe()


def test_assert_dispersed_fails_with_the_collapse():
    with pytest.raises(RetryCheckFailed, match=r"collapsed to the cap from retry #7 \(the wait after attempt 7\)"):
        assert_dispersed(_stamina_defaults, clients=CLIENTS)


def test_tenacity_wait_exponential_jitter_collapses_from_retry_5():
    def client(ds):
        wait = tenacity.wait_exponential_jitter(initial=1, max=10, jitter=2)
        return tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=wait, reraise=True)(ds)()

    report = measure_dispersion(client, clients=CLIENTS, outages=[(0, 120)])
    assert any("collapsed to the cap from retry #5" in p and "exactly 10.000 s" in p for p in report.problems), report.describe()


def _loop(delay):
    def client(ds):
        for attempt in range(10):
            try:
                return ds()
            except ConnectionError:
                time.sleep(delay(attempt))
        raise ConnectionError("gave up")

    return client


def test_hand_written_jitter_then_cap_collapses():
    report = measure_dispersion(_loop(lambda n: min(4, 0.5 * 2 ** n + random.uniform(0, 1))), clients=CLIENTS, outages=[(0, 300)])
    # 0.5 * 2 ** 3 = 4: from the 4th retry on, everyone waits exactly 4 s.
    assert any("retries #4-#9" in p and "collapsed to the cap from retry #4" in p for p in report.problems), report.describe()


@pytest.mark.parametrize(
    "delay",
    [
        lambda n: random.uniform(0, min(4, 0.5 * 2 ** n)),  # full jitter under the cap
        lambda n: min(4, 0.5 * 2 ** n) + random.uniform(0, 1),  # jitter added after the cap
    ],
    ids=["full jitter under the cap", "jitter after the cap"],
)
def test_jitter_that_survives_the_cap_is_not_a_collapse(delay):
    report = measure_dispersion(_loop(delay), clients=CLIENTS, outages=[(0, 300)])
    assert not any("collapsed" in p for p in report.problems), report.describe()


def test_decorrelated_jitter_piling_at_its_cap_is_not_a_collapse():
    # min(cap, uniform(base, previous * 3)) puts about 2/3 of the late draws exactly at the cap:
    # spread enough, and below the check's COLLAPSE_SHARE (0.8).
    def client(ds):
        sleep = 0.5
        for _ in range(12):
            try:
                return ds()
            except ConnectionError:
                sleep = min(4, random.uniform(0.5, sleep * 3))
                time.sleep(sleep)
        raise ConnectionError("gave up")

    report = measure_dispersion(client, clients=300, outages=[(0, 300)])
    assert report.passed, report.describe()


@pytest.mark.parametrize("expression, at_cap", [
    ("min(10, random.uniform(0, 2 ** attempt))", 22 / 32),  # jitter drawn, then clamped
    ("random.uniform(0, min(10, 2 ** attempt))", 0.0),  # jitter under the cap
])
def test_a_simulated_site_clamps_after_the_draw_as_the_code_does(tmp_path, expression, at_cap):
    """The simulation's strategy for a retry site (``PolicyStrategy``) draws a jitter-then-cap
    delay over the uncapped range and clamps it: at retry 6 (``2 ** 5`` = 32) the real code waits
    exactly 10 s in 22 of 32 draws. Drawing over the clamped range 0-10 put nobody on the cap."""
    from pytest_retry_check.backoffs import PolicyStrategy, policy_at

    site = tmp_path / "site.py"
    site.write_text(
        "import random, time\n\n"
        "def fetch(call):\n"
        "    for attempt in range(8):\n"
        "        try:\n"
        "            return call()\n"
        "        except ConnectionError:\n"
        f"            time.sleep({expression})\n"
    )
    strategy = PolicyStrategy(policy_at(site, 4))
    rng = random.Random(7)
    sampled = [strategy.sampler(rng)(6) for _ in range(4000)]
    real = [eval(expression, {"random": rng, "min": min}, {"attempt": 5}) for _ in range(4000)]  # noqa: S307
    share = sum(d == 10 for d in sampled) / len(sampled)
    assert abs(share - at_cap) < 0.03
    assert abs(share - sum(d == 10 for d in real) / len(real)) < 0.04
    assert max(sampled) <= 10
