"""The defaults the library extractors assume are the installed libraries' real defaults.

If a library changes a default, these tests fail and the extractor must follow.
"""

from __future__ import annotations

import inspect

import pytest

from retrylint.extract.libraries import backoff as backoff_ext
from retrylint.extract.libraries import coredis_retry as coredis_ext
from retrylint.extract.libraries import google_api_core as google_ext
from retrylint.extract.libraries import http_clients as http_ext
from retrylint.extract.libraries import redis_retry as redis_ext
from retrylint.extract.libraries import retry_package as retry_ext
from retrylint.extract.libraries import stamina as stamina_ext
from retrylint.extract.libraries import task_queues as queues_ext
from retrylint.extract.libraries import tenacity as tenacity_ext


def default(function, name):
    return inspect.signature(function).parameters[name].default


def test_tenacity_defaults():
    import tenacity

    d = tenacity_ext.DEFAULTS
    assert default(tenacity.wait_random, "min") == d["wait_random.min"]
    assert default(tenacity.wait_random, "max") == d["wait_random.max"]
    assert default(tenacity.wait_incrementing, "start") == d["wait_incrementing.start"]
    assert default(tenacity.wait_incrementing, "increment") == d["wait_incrementing.increment"]
    assert default(tenacity.wait_exponential, "multiplier") == d["wait_exponential.multiplier"]
    assert default(tenacity.wait_exponential, "exp_base") == d["wait_exponential.exp_base"]
    assert default(tenacity.wait_exponential_jitter, "initial") == d["wait_exponential_jitter.initial"]
    assert default(tenacity.wait_exponential_jitter, "jitter") == d["wait_exponential_jitter.jitter"]
    # What "no stop", "no wait" and "no retry=" mean in tenacity.
    retrying = tenacity.Retrying()
    assert retrying.stop is tenacity.stop_never or isinstance(retrying.stop, type(tenacity.stop_never))
    assert isinstance(retrying.wait, tenacity.wait_none)
    assert isinstance(retrying.retry, tenacity.retry_if_exception_type)
    assert retrying.retry.exception_types == Exception  # type: ignore[attr-defined]
    # wait_exponential has no cap unless max= is given.
    assert default(tenacity.wait_exponential, "max") > 10**9


def test_backoff_defaults():
    import backoff

    d = backoff_ext.DEFAULTS
    assert default(backoff.expo, "base") == d["expo.base"]
    assert default(backoff.expo, "factor") == d["expo.factor"]
    assert default(backoff.expo, "max_value") is None
    assert default(backoff.constant, "interval") == d["constant.interval"]
    assert default(backoff.on_exception, "max_tries") is None
    assert default(backoff.on_exception, "max_time") is None
    assert default(backoff.on_exception, "jitter") is backoff.full_jitter


def test_stamina_defaults():
    import stamina

    for name, assumed in stamina_ext.DEFAULTS.items():
        assert default(stamina.retry, name) == assumed, name


def test_retry_package_defaults():
    import retry.api

    for name, assumed in retry_ext.DEFAULTS.items():
        assert default(retry.api.retry, name) == assumed, name
    assert default(retry.api.retry, "exceptions") is Exception


def test_urllib3_and_httpcore_defaults():
    import urllib3
    from httpcore._sync import connection

    d = http_ext.DEFAULTS
    assert default(urllib3.Retry.__init__, "total") == d["Retry.total"]
    assert default(urllib3.Retry.__init__, "backoff_factor") == d["Retry.backoff_factor"]
    assert urllib3.Retry.DEFAULT_BACKOFF_MAX == d["Retry.backoff_max"]
    assert default(urllib3.Retry.__init__, "backoff_jitter") == d["Retry.backoff_jitter"]
    assert connection.RETRIES_BACKOFF_FACTOR == d["httpcore.backoff_factor"]
    # The first retry waits nothing: the schedule's first_immediate.
    retry = urllib3.Retry(total=5, backoff_factor=1)
    assert retry.get_backoff_time() == 0


def test_celery_and_dramatiq_defaults():
    import celery.app.autoretry
    from celery.app.task import Task
    from dramatiq.middleware import retries

    d = queues_ext.DEFAULTS
    assert Task.max_retries == d["celery.max_retries"]
    assert Task.default_retry_delay == d["celery.default_retry_delay"]
    source = inspect.getsource(celery.app.autoretry)
    assert f"getattr(task, 'retry_backoff_max', {int(d['celery.retry_backoff_max'])})" in source
    assert f"getattr(task, 'retry_jitter', {d['celery.retry_jitter']})" in source
    assert default(retries.Retries.__init__, "max_retries") == d["dramatiq.max_retries"]
    assert retries.DEFAULT_MIN_BACKOFF == d["dramatiq.min_backoff_ms"]
    assert retries.DEFAULT_MAX_BACKOFF == d["dramatiq.max_backoff_ms"]


def test_redis_defaults():
    import redis.backoff

    for cls in (redis.backoff.ExponentialBackoff, redis.backoff.FullJitterBackoff,
                redis.backoff.EqualJitterBackoff, redis.backoff.ExponentialWithJitterBackoff):
        assert default(cls, "cap") == redis_ext.DEFAULTS["cap"], cls
        assert default(cls, "base") == redis_ext.DEFAULTS["base"], cls
    # compute(failures) starts at one failure: base * 2 ** 1 before the first retry.
    assert redis.backoff.ExponentialBackoff(cap=100, base=1).compute(1) == 2


def test_coredis_defaults():
    import math

    from coredis import retry

    assert default(retry.ConstantRetryPolicy.__init__, "delay") == coredis_ext.DEFAULTS["delay"]
    assert default(retry.ExponentialBackoffRetryPolicy.__init__, "base_delay") == coredis_ext.DEFAULTS["base_delay"]
    # No cap, no jitter and no deadline unless given: retries=None alone retries forever.
    assert default(retry.ExponentialBackoffRetryPolicy.__init__, "max_delay") == math.inf
    assert default(retry.ExponentialBackoffRetryPolicy.__init__, "jitter") is False
    assert default(retry.ConstantRetryPolicy.__init__, "deadline") == math.inf
    # retries counts retries: retries + 1 attempts.
    assert len(list(retry.ConstantRetryPolicy((ConnectionError,), 2, delay=0).attempts())) == 3
    # The pause after attempt n is base_delay * 2 ** (n - 1), capped: the first one is base_delay.
    policy = retry.ExponentialBackoffRetryPolicy((ConnectionError,), 5, base_delay=0.5, max_delay=3)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1, 2, 3, 3]


def test_coredis_schedule_is_the_one_coredis_waits():
    from coredis import retry

    from retrylint.engine import check_source, settings_with
    from retrylint.schedule import schedule

    code = ("from coredis.retry import ExponentialBackoffRetryPolicy\n"
            "p = ExponentialBackoffRetryPolicy((ConnectionError,), 5, base_delay=0.5, max_delay=3)\n")
    report = check_source(code, "client.py", settings_with(("RTY203",)), want_policies=True)
    (modelled,) = report.policies
    real = retry.ExponentialBackoffRetryPolicy((ConnectionError,), 5, base_delay=0.5, max_delay=3)
    laid_out = schedule(modelled)
    assert laid_out.complete and laid_out.retries == 5
    assert [float(r.high) for r in laid_out.ranges] == [real.delay(n) for n in range(1, 6)]


def test_google_api_core_defaults():
    from google.api_core import retry

    for name, assumed in google_ext.DEFAULTS.items():
        assert default(retry.Retry.__init__, name) == assumed, name


@pytest.mark.parametrize("module", [tenacity_ext, backoff_ext, stamina_ext, retry_ext, http_ext, queues_ext, redis_ext, coredis_ext, google_ext])
def test_every_library_module_has_a_trigger(module):
    # Narrowing skips files without the words and keeps only blocks with the calls.
    assert module.TRIGGER.text.words and module.TRIGGER.calls
