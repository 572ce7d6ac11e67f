"""RTY504 jitter-collapses-at-cap against the real stamina and tenacity: the retry the rule names
is the first one whose real waits are all exactly the cap."""

from __future__ import annotations

import inspect
import random
import textwrap
import time

import pytest
import stamina
import tenacity

from retrylint.engine import check_source, settings_with
from retrylint.explain import to_text
from retrylint.model import known
from retrylint.extract.libraries import stamina as stamina_extractor
from retrylint.rules.rty504_jitter_collapses_at_cap import collapse


def _check(source: str):
    report = check_source(textwrap.dedent(source), "c.py", settings_with(("RTY504",)), want_policies=True)
    assert report.error is None, report.error
    return report.findings, report.policies


def _recorded_waits(monkeypatch, fn, failures: int):
    """Run ``fn`` (a retrying callable) against an operation that always fails; the real waits."""
    waits = []
    monkeypatch.setattr(time, "sleep", waits.append)  # tenacity's nap calls time.sleep at call time
    with pytest.raises(Exception):
        fn()
    return waits


def test_stamina_defaults_are_what_the_extractor_assumes():
    signature = inspect.signature(stamina.retry)
    for name in ("attempts", "timeout", "wait_initial", "wait_max", "wait_jitter", "wait_exp_base"):
        assert float(signature.parameters[name].default) == stamina_extractor.DEFAULTS[name]


def test_stamina_defaults_collapse_from_retry_7_as_the_real_waits_do(monkeypatch):
    findings, policies = _check(
        """
        import stamina

        @stamina.retry(on=ConnectionError)
        def fetch():
            raise ConnectionError
        """
    )
    assert [f.location.line for f in findings] == [4]
    assert "from retry 7 on (the wait after attempt 7) every client waits exactly 5 s" in findings[0].message
    assert "3 of its 9 waits have no spread left" in findings[0].message
    assert collapse(policies[0]).retry == 7

    @stamina.retry(on=ConnectionError)
    def fetch():
        raise ConnectionError

    for _ in range(20):
        waits = _recorded_waits(monkeypatch, fetch, 10)
        assert len(waits) == 9
        assert waits[6:] == [5.0, 5.0, 5.0]  # retries 7-9: exactly the cap, for every client
        assert all(w < 5.0 for w in waits[:6])
    # explain lays out the same schedule.
    text = to_text(policies[0], "c.py")
    assert "schedule:    0.1–1.1, 0.2–1.2, 0.4–1.4, 0.8–1.8, 1.6–2.6, 3.2–4.2, 5, 5, 5 s = 27.3 s" in text
    assert "jitter:      clamped away at the 5 s cap: from retry 7 on every wait is exactly 5 s" in text


def test_stamina_stopping_before_the_cap_is_silent(monkeypatch):
    findings, _ = _check(
        """
        import stamina

        @stamina.retry(on=ConnectionError, attempts=7)
        def fetch(): ...
        """
    )
    assert findings == []

    @stamina.retry(on=ConnectionError, attempts=7)
    def fetch():
        raise ConnectionError

    for _ in range(20):
        assert all(w < 5.0 for w in _recorded_waits(monkeypatch, fetch, 7))  # never reaches the cap


def test_tenacity_wait_exponential_jitter_collapses_where_the_rule_says(monkeypatch):
    findings, policies = _check(
        """
        import tenacity

        @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential_jitter(multiplier=1, max=10, jitter=2))
        def fetch(): ...
        """
    )
    assert len(findings) == 1 and "from retry 5 on (the wait after attempt 5) every client waits exactly 10 s" in findings[0].message
    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential_jitter(multiplier=1, max=10, jitter=2))

    def fail():
        raise ConnectionError

    for _ in range(20):
        waits = _recorded_waits(monkeypatch, lambda: retrying(fail), 8)
        assert len(waits) == 7
        assert waits[4:] == [10.0, 10.0, 10.0]
        assert waits[3] < 10.0


def test_tenacity_wait_exponential_plus_wait_random_keeps_its_jitter(monkeypatch):
    findings, _ = _check(
        """
        import tenacity

        @tenacity.retry(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential(max=10) + tenacity.wait_random(0, 2))
        def fetch(): ...
        """
    )
    assert findings == []
    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(8), wait=tenacity.wait_exponential(max=10) + tenacity.wait_random(0, 2))

    def fail():
        raise ConnectionError

    lasts = {_recorded_waits(monkeypatch, lambda: retrying(fail), 8)[-1] for _ in range(10)}
    assert len(lasts) == 10 and all(10 <= w <= 12 for w in lasts)


@pytest.mark.parametrize(
    "expression, fires",
    [
        ("min(30, 0.5 * 2 ** attempt + random.uniform(0, 1))", True),
        ("random.uniform(0, min(30, 0.5 * 2 ** attempt))", False),
        ("min(30, 0.5 * 2 ** attempt) + random.uniform(0, 1)", False),
    ],
)
def test_hand_written_delays(expression, fires):
    findings, _ = _check(
        f"""
        import random, time
        def fetch(call):
            for attempt in range(10):
                try:
                    return call()
                except ConnectionError:
                    time.sleep({expression})
        """
    )
    assert bool(findings) is fires
    if fires:
        assert "from retry 7 on" in findings[0].message and "exactly 30 s" in findings[0].message
        # 0.5 * 2 ** 6 = 32 > 30: the 7th delay (attempt = 6) is clamped whatever the draw.
        assert all(min(30, 0.5 * 2 ** 6 + random.uniform(0, 1)) == 30 for _ in range(100))


@pytest.mark.parametrize("clamped", [True, False], ids=["full-jitter-then-cap", "full-jitter-under-cap"])
def test_hand_written_full_jitter_clamped_after_the_draw(clamped):
    """``min(10, uniform(0, 2 ** attempt))`` draws over a range that outgrows the cap: at the 6th
    retry (attempt = 5, range 0-32) 22/32 = 69 % of the draws are clamped to exactly 10 s, and
    the rule's shares are those of the real expression; ``uniform(0, min(10, 2 ** attempt))``
    draws under the cap and is silent."""
    expression = "min(10, random.uniform(0, 2 ** attempt))" if clamped else "random.uniform(0, min(10, 2 ** attempt))"
    findings, _ = _check(
        f"""
        import random, time
        def fetch(call):
            for attempt in range(8):
                try:
                    return call()
                except ConnectionError:
                    time.sleep({expression})
        """
    )
    assert bool(findings) is clamped
    if clamped:
        message = findings[0].message
        assert "from retry 6 on" in message and "69 % of them at retry 6" in message, message
        rng = random.Random(4)
        share = sum(min(10, rng.uniform(0, 2 ** 5)) == 10 for _ in range(20_000)) / 20_000
        assert abs(share - 0.69) < 0.02


def test_a_stamina_policy_in_a_module_dict_is_read_and_reported_where_it_is_built(monkeypatch):
    # gundi-action-runner services/gundi.py: ``@stamina.retry(**GUNDI_API_RETRY)``
    source = """
        import stamina

        API_RETRY = dict(on=ConnectionError, attempts=6, timeout=120, wait_initial=2, wait_jitter=5, wait_max=30)

        @stamina.retry(**API_RETRY)
        def send():
            raise ConnectionError
        """
    findings, _ = _check(source)
    assert [f.location.line for f in findings] == [4]  # the dict: where a reader fixes it
    assert "every client waits exactly 30 s" in findings[0].message and "line 6" in findings[0].message
    # The real waits agree: the fifth is exactly the cap (under the fake clock stamina honours).
    api_retry = dict(on=ConnectionError, attempts=6, timeout=None, wait_initial=2, wait_jitter=5, wait_max=30)

    @stamina.retry(**api_retry)
    def send():
        raise ConnectionError

    for _ in range(10):
        waits = _recorded_waits(monkeypatch, send, 6)
        assert waits[4] == 30.0 and all(w < 30.0 for w in waits[:4])


def test_a_stamina_mapping_that_cannot_be_read_assumes_no_defaults():
    # ``**settings.RETRY`` may set ``wait_max`` and ``attempts``: stamina's 5 s cap is not known.
    findings, policies = _check(
        """
        import stamina
        from app import settings

        @stamina.retry(on=ConnectionError, **settings.RETRY)
        def fetch(): ...
        """
    )
    assert findings == []
    assert policies and not known(policies[0].delay.cap) and not known(policies[0].bound.attempts)


# ---------------------------------------------------------------- urllib3 and redis-py (issue 13 audit, item 3)

URLLIB3_JITTER = """
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=Retry(total=TOTAL, backoff_factor=1, backoff_jitter=1.0, backoff_max=20,
                                                             status_forcelist=[503])))
    """


def _urllib3_waits(total: int):
    """The real waits of urllib3's ``Retry`` after each consecutive connection error."""
    from urllib3.exceptions import ConnectTimeoutError
    from urllib3.util.retry import Retry

    retry = Retry(total=total, backoff_factor=1, backoff_jitter=1.0, backoff_max=20)
    waits = []
    for _ in range(total):
        retry = retry.increment(method="GET", url="/", error=ConnectTimeoutError())
        waits.append(retry.get_backoff_time())
    return waits


def test_urllib3_adds_its_jitter_before_backoff_max_and_the_rule_names_the_retry(monkeypatch):
    findings, policies = _check(URLLIB3_JITTER.replace("TOTAL", "10"))
    assert len(findings) == 1
    message = findings[0].message
    assert "urllib3 `Retry(...)` adds its jitter before clamping to the 20 s cap" in message
    assert "from retry 6 on (the wait after attempt 6) every client waits exactly 20 s" in message
    assert "5 of its 10 waits have no spread left" in message
    assert "`total=5`" in message
    retry6 = collapse(policies[0]).retry
    for _ in range(50):
        waits = _urllib3_waits(10)
        assert waits[retry6 - 1:] == [20.0] * 5  # retries 6-10: exactly backoff_max, for every client
        assert waits[0] == 0 and all(w < 20.0 for w in waits[1:retry6 - 1])
    # explain: jitter clamped away, not 20–21.
    text = to_text(policies[0], "c.py")
    assert "schedule:    0, 2–3, 4–5, 8–9, 16–17, 20, 20, 20, 20, 20 s" in text
    assert "jitter:      clamped away at the 20 s cap: from retry 6 on every wait is exactly 20 s" in text


def test_urllib3_stopping_before_backoff_max_is_silent():
    findings, _ = _check(URLLIB3_JITTER.replace("TOTAL", "5"))
    assert findings == []
    for _ in range(50):
        assert all(w < 20.0 for w in _urllib3_waits(5))


@pytest.mark.parametrize("retry", [
    "Retry(total=10, backoff_factor=1, backoff_max=20)",  # no jitter: RTY203's business
    "Retry(total=10, backoff_factor=1, backoff_jitter=1.0, backoff_max=600)",  # 256 + 1 < 600
    "Retry(total=10, backoff_factor=30, backoff_jitter=1.0, backoff_max=20)",  # capped from the first wait: fixed
    "Retry(total=10, backoff_factor=1, backoff_jitter=1.0, backoff_max=limit)",  # a parameter: not known
])
def test_urllib3_look_alikes_are_silent(retry):
    findings, _ = _check(f"""
        from urllib3.util.retry import Retry
        def make(limit):
            return {retry}
        """)
    assert findings == []


REDIS_JITTER = """
    import redis
    from redis.retry import Retry
    from redis.backoff import BACKOFF

    cache = redis.Redis(host="cache", retry=Retry(BACKOFF(base=1, cap=10), RETRIES))
    """


def _redis_waits(monkeypatch, backoff, retries: int):
    import redis.retry
    from redis.exceptions import ConnectionError as RedisConnectionError

    waits = []
    monkeypatch.setattr(redis.retry, "sleep", waits.append)

    def fail():
        raise RedisConnectionError("down")

    with pytest.raises(RedisConnectionError):
        redis.retry.Retry(backoff, retries).call_with_retry(fail, lambda error: None)
    return waits


def test_redis_exponential_with_jitter_backoff_clamps_after_the_draw(monkeypatch):
    from redis.backoff import ExponentialWithJitterBackoff

    findings, policies = _check(REDIS_JITTER.replace("BACKOFF", "ExponentialWithJitterBackoff").replace("RETRIES", "10"))
    assert len(findings) == 1
    message = findings[0].message
    assert "draws its jitter before clamping to the 10 s cap" in message
    assert "from retry 5 on (the wait after attempt 5) most clients wait exactly 10 s: 69 % of them at retry 5, 99 % by retry 10" in message
    found = collapse(policies[0])
    assert (found.retry, found.last) == (5, 10)
    # The real waits: share at exactly the cap, per retry, over many clients.
    runs = [_redis_waits(monkeypatch, ExponentialWithJitterBackoff(base=1, cap=10), 10) for _ in range(2000)]
    assert all(len(w) == 10 for w in runs)
    at_cap = [sum(w[k] == 10.0 for w in runs) / len(runs) for k in range(10)]
    assert at_cap[:3] == [0.0, 0.0, 0.0]  # 2, 4, 8 s: under the cap
    assert at_cap[3] < 0.5 <= at_cap[4]  # retry 5 is the first where most clients wait exactly 10 s
    assert abs(at_cap[4] - found.share) < 0.05 and abs(at_cap[9] - found.last_share) < 0.02
    # explain: the expected total follows the clamp (not full jitter's 0–10 average).
    text = to_text(policies[0], "c.py")
    assert "schedule:    0–2, 0–4, 0–8, 0–10, 0–10, 0–10, 0–10, 0–10, 0–10, 0–10 s = 1.4 min" in text
    assert "expected 1.18 min" in text
    assert "jitter:      drawn before the 10 s cap: from retry 5 on most waits are exactly 10 s (69 % at retry 5, 99 % by retry 10)" in text
    mean_total = sum(sum(w) for w in runs) / len(runs)
    assert abs(mean_total - 70.8) < 2.0


def test_redis_full_jitter_backoff_and_few_retries_are_silent(monkeypatch):
    from redis.backoff import FullJitterBackoff

    findings, _ = _check(REDIS_JITTER.replace("BACKOFF", "FullJitterBackoff").replace("RETRIES", "10"))
    assert findings == []
    runs = [_redis_waits(monkeypatch, FullJitterBackoff(base=1, cap=10), 10) for _ in range(500)]
    assert sum(w[-1] == 10.0 for w in runs) == 0  # drawn under the cap: no client sits exactly on it
    # 3 retries draw over 2, 4 and 8 s: the 10 s cap clamps none of them.
    findings, _ = _check(REDIS_JITTER.replace("BACKOFF", "ExponentialWithJitterBackoff").replace("RETRIES", "3"))
    assert findings == []


def test_redis_own_default_retry_is_reported_as_the_installed_redis_computes_it(monkeypatch):
    """redis-py's default for ``Redis()`` (redis 8: ``redis/_defaults.py``) is
    ``Retry(ExponentialWithJitterBackoff(base=0.01, cap=1), 10)``: from retry 8 on most waits are exactly 1 s."""
    from redis import _defaults
    from redis.backoff import ExponentialWithJitterBackoff

    base, cap, retries = _defaults.DEFAULT_RETRY_BASE, _defaults.DEFAULT_RETRY_CAP, _defaults.DEFAULT_RETRY_COUNT
    findings, policies = _check(f"""
        import redis
        from redis.retry import Retry
        from redis.backoff import ExponentialWithJitterBackoff

        cache = redis.Redis(retry=Retry(ExponentialWithJitterBackoff(base={base}, cap={cap}), {retries}))
        """)
    found = collapse(policies[0])
    runs = [_redis_waits(monkeypatch, ExponentialWithJitterBackoff(base=base, cap=cap), retries) for _ in range(3000)]
    at_cap = [sum(w[k] == cap for w in runs) / len(runs) for k in range(retries)]
    assert at_cap[found.retry - 2] < 0.5 <= at_cap[found.retry - 1]
    assert abs(at_cap[-1] - found.last_share) < 0.03
    assert len(findings) == 1 and f"most clients wait exactly {cap} s" in findings[0].message
