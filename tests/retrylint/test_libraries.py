"""Retry libraries, one table per library: what must fire and what must not.

Every snippet's imports are executed against the installed library first, so the
tests use the libraries' real import paths (and break if one moves).
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

ALL = tuple(rule.code for rule in RULES)

_COREDIS = "from coredis.retry import ConstantRetryPolicy, ExponentialBackoffRetryPolicy, NoRetryPolicy\n"

CASES = {
    "tenacity": [
        ("from tenacity import retry\n@retry\ndef f(): ...\n", {"RTY102", "RTY201", "RTY301"}),
        # llama-index's batch runner: wait_exponential(min=4, max=10) under stop_after_attempt(3)
        # waits max(4, 1) = 4 s, then max(4, 2) = 4 s: the floor makes it a fixed delay ...
        ("from tenacity import retry, stop_after_attempt, wait_exponential\n"
         "@retry(stop=stop_after_attempt(3), wait=wait_exponential(multiplier=1, min=4, max=10))\ndef f(): ...\n",
         {"RTY202", "RTY301"}),
        # ... with six attempts it grows past the floor (4, 4, 4, 8, 10 s): exponential, unjittered
        ("from tenacity import retry, stop_after_attempt, wait_exponential\n"
         "@retry(stop=stop_after_attempt(6), wait=wait_exponential(multiplier=1, min=4, max=10))\ndef f(): ...\n",
         {"RTY203", "RTY301"}),
        # langchain-core's create_base_retry_decorator(error_types, max_retries=1): no caller in
        # the package passes another count, so as shipped one attempt, nothing to judge ...
        ("from tenacity import retry, stop_after_attempt, wait_exponential, retry_if_exception_type\n"
         "def create_base_retry_decorator(error_types, max_retries=1):\n"
         "    return retry(stop=stop_after_attempt(max_retries), wait=wait_exponential(multiplier=1, min=4, max=10),\n"
         "                 retry=retry_if_exception_type(tuple(error_types)))\n", set()),
        # ... a caller here that asks for 6 makes it the unjittered exponential retry it is
        ("from tenacity import retry, stop_after_attempt, wait_exponential, retry_if_exception_type\n"
         "def create_base_retry_decorator(error_types, max_retries=1):\n"
         "    return retry(stop=stop_after_attempt(max_retries), wait=wait_exponential(multiplier=1, min=4, max=10),\n"
         "                 retry=retry_if_exception_type(tuple(error_types)))\n"
         "deco = create_base_retry_decorator([ConnectionError], max_retries=6)\n", {"RTY203"}),
        ("import tenacity as t\n@t.retry()\ndef f(): ...\n", {"RTY102", "RTY201", "RTY301"}),
        (
            "from tenacity import retry, stop_after_attempt, wait_random_exponential, retry_if_exception_type\n"
            "@retry(stop=stop_after_attempt(6), wait=wait_random_exponential(multiplier=1, max=20),\n"
            "       retry=retry_if_exception_type(ConnectionError))\ndef f(): ...\n",
            set(),
        ),
        (
            "from tenacity import retry, stop_after_attempt, wait_exponential, retry_if_exception_type as on\n"
            "@retry(stop=stop_after_attempt(7), wait=wait_exponential(max=20), retry=on((ConnectionError, TimeoutError)))\n"
            "def f(): ...\n",
            {"RTY203"},
        ),
        (
            "import tenacity\n"
            "@tenacity.retry(stop=tenacity.stop_after_attempt(30), wait=tenacity.wait_exponential(),\n"
            "                retry=tenacity.retry_if_exception_type(OSError))\ndef f(): ...\n",
            {"RTY203", "RTY204"},
        ),
        (
            "from tenacity import retry, stop_after_delay, wait_fixed, retry_if_exception_type\n"
            "@retry(stop=stop_after_delay(60), wait=wait_fixed(5), retry=retry_if_exception_type(ValueError))\n"
            "def f(): ...\n",
            {"RTY202", "RTY303"},
        ),
        (
            "from tenacity import retry, stop_after_attempt, wait_fixed, wait_random, retry_if_not_exception_type\n"
            "@retry(stop=stop_after_attempt(4), wait=wait_fixed(3) + wait_random(0, 2),\n"
            "       retry=retry_if_not_exception_type(ValueError))\ndef f(): ...\n",
            {"RTY202"},
        ),
        (
            "from tenacity import Retrying, stop_never, wait_exponential_jitter, retry_if_exception_type\n"
            "for attempt in Retrying(stop=stop_never, wait=wait_exponential_jitter(max=30),\n"
            "                        retry=retry_if_exception_type(ConnectionError)):\n"
            "    with attempt:\n        pass\n",
            {"RTY102", "RTY504"},  # jitter added before max=30: from retry 6 on, every wait is 30 s
        ),
        (
            "import requests\nfrom tenacity import retry, stop_after_attempt, wait_random_exponential, retry_if_exception_type\n"
            "@retry(stop=stop_after_attempt(5), wait=wait_random_exponential(max=20),\n"
            "       retry=retry_if_exception_type(requests.HTTPError))\ndef f(): ...\n",
            {"RTY302"},
        ),
        (
            "from tenacity import retry, stop_after_attempt, wait_random_exponential\n"
            "STOP = stop_after_attempt(5)\nWAIT = wait_random_exponential(max=20)\n"
            "@retry(stop=STOP, wait=WAIT, retry=lambda state: False)\ndef f(): ...\n",
            set(),
        ),
        (
            "from tenacity import AsyncRetrying, stop_after_attempt, wait_incrementing, retry_if_exception_type\n"
            "async def f():\n"
            "    async for attempt in AsyncRetrying(stop=stop_after_attempt(5), wait=wait_incrementing(1, 2),\n"
            "                                       retry=retry_if_exception_type(OSError)):\n"
            "        with attempt:\n            pass\n",
            set(),
        ),
        (
            "import tenacity\n"
            "def wrap(fn, stop, wait):\n"
            "    return tenacity.Retrying(stop=stop, wait=wait, retry=tenacity.retry_if_exception_type(OSError)).wraps(fn)\n",
            set(),
        ),
    ],
    "backoff": [
        ("import backoff\n@backoff.on_exception(backoff.expo, ConnectionError)\ndef f(): ...\n", {"RTY102", "RTY204"}),
        # tap-facebook's get_ads: on a generator function the decorator only wraps creating the
        # generator, which cannot fail; the requests run while the caller iterates: no retry
        ("import backoff\n@backoff.on_exception(backoff.expo, ConnectionError, max_tries=5, jitter=None)\n"
         "def ads(account):\n    yield from account.get_ads()\n", set()),
        ("import backoff\n@backoff.on_exception(backoff.expo, ConnectionError, max_tries=5, jitter=None)\n"
         "def ads(account):\n    return list(account.get_ads())\n", {"RTY203"}),
        ("import backoff\n@backoff.on_exception(backoff.expo, ConnectionError, max_tries=6, max_value=20)\ndef f(): ...\n", set()),
        ("import backoff\n@backoff.on_exception(backoff.expo, ConnectionError, max_tries=6, jitter=None)\ndef f(): ...\n",
         {"RTY203"}),
        ("import backoff\n@backoff.on_exception(backoff.expo, Exception, max_time=60)\ndef f(): ...\n", {"RTY301"}),
        ("import backoff\n@backoff.on_exception(backoff.expo, Exception, max_time=60, giveup=lambda e: e.fatal)\ndef f(): ...\n",
         set()),
        # gen3's ``**DEFAULT_BACKOFF_SETTINGS`` carries ``"giveup": exception_do_not_retry``: settings we cannot read may give up
        ("import backoff\ndef settings():\n    return {'giveup': lambda e: isinstance(e, ValueError)}\n"
         "@backoff.on_exception(backoff.expo, Exception, max_time=60, **settings())\ndef f(): ...\n", set()),
        ("from backoff import on_exception, constant\n@on_exception(constant, OSError, interval=5, max_tries=3)\ndef f(): ...\n",
         {"RTY202"}),
        ("import backoff, json\n@backoff.on_exception(backoff.expo, (json.JSONDecodeError, OSError), max_tries=5)\ndef f(): ...\n",
         {"RTY303"}),
        ("import backoff\n@backoff.on_predicate(backoff.fibo, max_tries=20, jitter=None)\ndef f(): ...\n",
         {"RTY203", "RTY204"}),
        ("import backoff\n@backoff.on_exception(backoff.runtime, OSError, value=lambda r: r.headers['Retry-After'], max_tries=5)\n"
         "def f(): ...\n", set()),
    ],
    "stamina": [
        # stamina's defaults: every wait from retry 7 on is exactly wait_max (RTY504).
        ("import stamina\n@stamina.retry(on=ConnectionError)\ndef f(): ...\n", {"RTY504"}),
        ("import stamina\n@stamina.retry(on=Exception, attempts=5)\ndef f(): ...\n", {"RTY301"}),
        ("import stamina\n@stamina.retry(on=OSError, attempts=None, timeout=None)\ndef f(): ...\n", {"RTY102", "RTY504"}),
        ("import stamina\ndef f():\n    for attempt in stamina.retry_context(on=KeyError):\n        with attempt:\n            pass\n",
         {"RTY303", "RTY504"}),
        ("import stamina\ncaller = stamina.RetryingCaller(attempts=5)\n", set()),
    ],
    "retrying": [
        ("from retrying import retry\n@retry\ndef f(): ...\n", {"RTY102", "RTY201", "RTY301"}),
        ("from retrying import retry\n@retry(stop_max_attempt_number=5, wait_fixed=2000, retry_on_exception=lambda e: True)\n"
         "def f(): ...\n", {"RTY202"}),
        ("from retrying import retry\n@retry(stop_max_attempt_number=20, wait_exponential_multiplier=1000,\n"
         "       retry_on_exception=lambda e: True)\ndef f(): ...\n", {"RTY203", "RTY204"}),
        ("from retrying import retry\n@retry(stop_max_delay=30000, wait_exponential_multiplier=500, wait_exponential_max=10000,\n"
         "       wait_jitter_max=1000, retry_on_exception=lambda e: True)\ndef f(): ...\n", set()),
    ],
    "retry": [
        ("from retry import retry\n@retry()\ndef f(): ...\n", {"RTY102", "RTY201", "RTY301"}),
        ("from retry import retry\n@retry(ConnectionError, tries=5, delay=1, backoff=2, max_delay=20, jitter=(0, 1))\n"
         "def f(): ...\n", set()),
        ("from retry import retry\n@retry(ConnectionError, tries=5, delay=2)\ndef f(): ...\n", {"RTY202"}),
        ("from retry.api import retry_call\nretry_call(print, exceptions=OSError, tries=4, delay=1, backoff=2)\n", {"RTY203"}),
    ],
    "urllib3": [
        ("from urllib3.util.retry import Retry\nr = Retry(total=5)\n", {"RTY201"}),
        ("from urllib3 import Retry\nr = Retry(total=5, backoff_factor=0.5, backoff_jitter=1.0)\n", set()),
        ("from urllib3.util import Retry\nr = Retry(total=5, backoff_factor=0.5)\n", {"RTY203"}),
        ("from urllib3.util import Retry\nr = Retry(total=5, backoff_factor=0.5, backoff_jitter=1, status_forcelist=[404, 502, 503])\n",
         {"RTY302"}),
        ("from urllib3.util import Retry\nr = Retry(total=5, backoff_factor=0.5, backoff_jitter=1, status_forcelist=(429, 502, 503))\n",
         set()),
        # dns-lexicon's DNSMadeEasy: a subclass whose increment() raises for every 400 but the
        # "Rate limit exceeded" one decides which responses are retried, not the list
        ("from urllib3.util import Retry\nclass RateLimitOnly(Retry):\n    def increment(self, *a, response=None, **k):\n"
         "        if response and b'Rate limit' in response.data:\n            return super().increment(*a, response=response, **k)\n"
         "        raise RuntimeError('400')\n"
         "r = RateLimitOnly(total=5, backoff_factor=0.6, backoff_jitter=1, status_forcelist=[400])\n", set()),
        # pretix's LogOnRetry only logs around super().increment (re-raising its error): the list decides
        ("from urllib3.util import Retry\nclass LogOnRetry(Retry):\n    def increment(self, *a, **k):\n        try:\n"
         "            return super().increment(*a, **k)\n        except Exception:\n            print('gave up')\n            raise\n"
         "r = LogOnRetry(total=5, backoff_factor=0.6, backoff_jitter=1, status_forcelist=[400])\n", {"RTY302"}),
        # urllib3 adds the jitter, then clamps to backoff_max=120: from retry 9 on every wait is exactly 120 s (RTY504)
        ("from urllib3.util import Retry\nr = Retry(total=None, backoff_factor=0.5, backoff_jitter=1)\n", {"RTY102", "RTY504"}),
        ("from urllib3.util import Retry\nnone = Retry(0)\noff = Retry(total=False)\n", set()),
        # airflow base_aws.py: every value from the user's connection extra
        ("from urllib3.util import Retry\ndef session(config):\n    return Retry(**config['retry_kwargs'])\n", set()),
        ("from urllib3.util import Retry\ndef session(config):\n    return Retry(total=5, **config['retry_kwargs'])\n",
         set()),
        # sentry transport.py: a default Retry() kept only to parse Retry-After headers
        ("import urllib3\nclass T:\n    def __init__(self):\n        self._retry = urllib3.util.Retry()\n"
         "    def delay(self, value):\n        return self._retry.parse_retry_after(value)\n", set()),
        ("import urllib3\nfrom requests.adapters import HTTPAdapter\nclass T:\n    def __init__(self):\n"
         "        self._retry = urllib3.util.Retry()\n    def mount(self, s):\n"
         "        s.mount('https://', HTTPAdapter(max_retries=self._retry))\n"
         "    def delay(self, value):\n        return self._retry.parse_retry_after(value)\n", {"RTY201"}),
    ],
    "requests": [
        ("from requests.adapters import HTTPAdapter\nadapter = HTTPAdapter(max_retries=5)\n", {"RTY201"}),
        ("from requests.adapters import HTTPAdapter\nadapter = HTTPAdapter(max_retries=1)\n", set()),
        # (pool_connections, pool_maxsize, max_retries, pool_block): the third is the retries
        ("from requests.adapters import HTTPAdapter\nadapter = HTTPAdapter(10, 10, 5)\n", {"RTY201"}),
        ("from requests.adapters import HTTPAdapter\nadapter = HTTPAdapter(10, 10, 0, 5)\n", set()),
        # geopy's RequestsAdapter: ``max_retries=2`` is the default of a parameter no caller in
        # the package passes, under an alias imported in ``try``: two immediate retries as shipped
        ("try:\n    from requests.adapters import HTTPAdapter as RequestsHTTPAdapter\nexcept ImportError:\n"
         "    RequestsHTTPAdapter = object\nclass Adapter:\n    def __init__(self, max_retries=2):\n"
         "        self.adapter = RequestsHTTPAdapter(max_retries=max_retries)\n", {"RTY201"}),
        # ... and when a caller here passes its own value, the user's choice stays unknown
        ("from requests.adapters import HTTPAdapter\nclass Adapter:\n    def __init__(self, max_retries=2):\n"
         "        self.adapter = HTTPAdapter(max_retries=max_retries)\n"
         "def make(n):\n    return Adapter(max_retries=n)\n", set()),
        ("from requests.adapters import HTTPAdapter\nfrom urllib3.util import Retry\n"
         "adapter = HTTPAdapter(max_retries=Retry(total=5, backoff_factor=0.5, backoff_jitter=1))\n", set()),
    ],
    "httpx": [
        ("import httpx\ntransport = httpx.HTTPTransport(retries=3)\n", {"RTY203"}),
        ("import httpx\ntransport = httpx.AsyncHTTPTransport(retries=1)\n", set()),
        ("import httpx\ntransport = httpx.HTTPTransport(retries=12)\n", {"RTY203", "RTY204"}),
    ],
    "celery": [
        ("from celery import shared_task\n@shared_task(autoretry_for=(ConnectionError,))\ndef f(): ...\n", {"RTY202"}),
        ("from celery import shared_task\n@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True)\ndef f(): ...\n", set()),
        ("from celery import shared_task\n@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, retry_jitter=False)\n"
         "def f(): ...\n", {"RTY203"}),
        ("from celery import shared_task\n@shared_task(autoretry_for=(Exception,), retry_backoff=True, max_retries=None)\n"
         "def f(): ...\n", {"RTY102", "RTY301"}),
        ("from celery import Celery\napp = Celery('x')\n@app.task(bind=True, max_retries=5)\ndef f(self):\n"
         "    try:\n        pass\n    except ConnectionError as exc:\n        raise self.retry(exc=exc, countdown=10)\n", {"RTY202"}),
        ("from celery import Celery\nimport random\napp = Celery('x')\n@app.task(bind=True, max_retries=5)\ndef f(self):\n"
         "    try:\n        pass\n    except ConnectionError as exc:\n"
         "        raise self.retry(exc=exc, countdown=random.uniform(0, min(600, 2 ** self.request.retries)))\n", set()),
        ("from celery import Celery\napp = Celery('x')\n@app.task(bind=True)\ndef f(self):\n"
         "    try:\n        pass\n    except Exception as exc:\n        raise self.retry(exc=exc, countdown=2 ** self.request.retries)\n",
         {"RTY203", "RTY301"}),
        ("from celery import shared_task\n@shared_task\ndef f(): ...\n", set()),
        # celery's chord_unlock: a task that polls a state at its own pace is no retry ...
        ("from celery import Celery\napp = Celery('x')\n@app.task(bind=True, max_retries=None)\ndef unlock(self, deps, interval=1):\n"
         "    try:\n        ready = deps.ready()\n    except Exception as exc:\n"
         "        raise self.retry(exc=exc, countdown=interval)\n    else:\n        if not ready:\n"
         "            raise self.retry(countdown=interval)\n", set()),
        # ... but one whose failures retry at another pace is judged as a retry.
        ("from celery import Celery\napp = Celery('x')\n@app.task(bind=True, max_retries=None)\ndef unlock(self, deps, interval=1):\n"
         "    try:\n        ready = deps.ready()\n    except Exception as exc:\n"
         "        raise self.retry(exc=exc, countdown=5)\n    else:\n        if not ready:\n"
         "            raise self.retry(countdown=interval)\n", {"RTY102", "RTY202", "RTY301"}),
    ],
    "dramatiq": [
        ("import dramatiq\n@dramatiq.actor(max_retries=None)\ndef f(): ...\n", {"RTY102", "RTY301"}),
        ("import dramatiq\n@dramatiq.actor(max_retries=5, throws=(ValueError,))\ndef f(): ...\n", set()),
        ("import dramatiq\n@dramatiq.actor\ndef f(): ...\n", set()),
    ],
    "redis": [
        ("from redis.retry import Retry\nfrom redis.backoff import NoBackoff\nr = Retry(NoBackoff(), 5)\n", {"RTY201"}),
        ("from redis.retry import Retry\nfrom redis.backoff import ConstantBackoff\nr = Retry(ConstantBackoff(1), 5)\n", {"RTY202"}),
        ("from redis.retry import Retry\nfrom redis.backoff import ExponentialBackoff\nr = Retry(ExponentialBackoff(), 5)\n", {"RTY203"}),
        ("from redis.retry import Retry\nfrom redis.backoff import FullJitterBackoff\nr = Retry(FullJitterBackoff(cap=5, base=0.1), 5)\n",
         set()),
        ("from redis.asyncio.retry import Retry\nfrom redis.backoff import EqualJitterBackoff\nr = Retry(EqualJitterBackoff(), -1)\n",
         {"RTY102"}),
    ],
    "coredis": [
        (_COREDIS + "p = ConstantRetryPolicy((ConnectionError,), 5)\n", {"RTY202"}),
        (_COREDIS + "p = ConstantRetryPolicy((ConnectionError,), 3, delay=0)\n", {"RTY201"}),
        # retries=None with the default deadline=math.inf retries forever; a deadline bounds it.
        (_COREDIS + "p = ConstantRetryPolicy((ConnectionError,), None)\n", {"RTY102", "RTY202"}),
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((ConnectionError,), None, deadline=30, max_delay=4, jitter=True)\n",
         set()),
        (_COREDIS + "p = ConstantRetryPolicy((ConnectionError,), 0)\n", set()),
        (_COREDIS + "p = NoRetryPolicy()\n", set()),
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((ConnectionError,), 5)\n", {"RTY203"}),
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((ConnectionError,), None)\n", {"RTY102", "RTY203", "RTY204"}),
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((ConnectionError,), 5, base_delay=0.1, max_delay=5, jitter=True)\n",
         set()),
        # coredis's own PubSub reconnect: only connection errors, capped and jittered, for as long as it runs.
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((ConnectionError,), None, max_delay=16, jitter=True)\n", set()),
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((Exception,), None, max_delay=16, jitter=True)\n",
         {"RTY102", "RTY301"}),
        (_COREDIS + "p = ExponentialBackoffRetryPolicy((ValueError,), 3, max_delay=5, jitter=True)\n", {"RTY303"}),
        (_COREDIS + "from coredis.retry import retryable\n\n@retryable(ConstantRetryPolicy((ConnectionError,), 5, delay=0))\n"
                    "async def f(): ...\n", {"RTY201"}),
    ],
    "google-api-core": [
        ("from google.api_core import retry\nr = retry.Retry()\n", set()),
        ("from google.api_core import retry\nr = retry.Retry(timeout=None)\n", {"RTY102"}),
        ("from google.api_core import retry, exceptions\n"
         "r = retry.Retry(predicate=retry.if_exception_type(exceptions.NotFound, exceptions.ServiceUnavailable))\n", {"RTY302"}),
        ("from google.api_core import retry\nr = retry.Retry(predicate=retry.if_exception_type(Exception), timeout=60)\n",
         {"RTY301"}),
    ],
    "botocore": [
        ("from botocore.config import Config\nc = Config(retries={'max_attempts': 10, 'mode': 'standard'})\n", set()),
        ("from botocore.config import Config\nc = Config(retries={'max_attempts': 10, 'mode': 'legacy'})\n", {"RTY204"}),
        ("from botocore.config import Config\nc = Config(retries={'max_attempts': 4})\n", set()),
    ],
}


def _params():
    for library, cases in CASES.items():
        for index, (code, expected) in enumerate(cases):
            yield pytest.param(code, expected, id=f"{library}-{index}")


def _run_imports(code: str) -> None:
    """Execute only the snippet's imports: the names must exist in the installed package."""
    tree = ast.parse(code)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    exec(compile(ast.Module(body=imports, type_ignores=[]), "<imports>", "exec"), {})


@pytest.mark.parametrize("code, expected", list(_params()))
def test_library_case(code, expected):
    _run_imports(code)
    report = check_source(textwrap.dedent(code), "case.py", settings_with(ALL))
    assert report.error is None, report.error
    found = {f.code for f in report.findings}
    assert found == expected, [(f.code, f.location.line, f.message) for f in report.findings]


def test_findings_are_reported_on_the_configuring_call():
    code = "import backoff\n\n@backoff.on_exception(\n    backoff.expo,\n    ConnectionError,\n)\ndef f(): ...\n"
    report = check_source(code, "case.py", settings_with(ALL))
    assert {(f.code, f.location.line) for f in report.findings} == {("RTY102", 3), ("RTY204", 3)}


def test_noqa_on_the_decorator_suppresses():
    code = "from tenacity import retry\n@retry  # noqa: RTY102, RTY201, RTY301\ndef f(): ...\n"
    assert check_source(code, "case.py", settings_with(ALL)).findings == []


@pytest.mark.parametrize("attempts", [3, 4, 6])
def test_a_floored_tenacity_schedule_matches_tenacity_itself(attempts):
    """``wait_exponential(multiplier=1, min=4, max=10)``: the delays retrylint reads for the
    retries a ``stop_after_attempt`` allows are the ones the installed tenacity computes."""
    import tenacity
    from retrylint.schedule import nominal_delay

    wait = tenacity.wait_exponential(multiplier=1, min=4, max=10)
    real = [float(wait(type("State", (), {"attempt_number": n})())) for n in range(1, attempts)]
    code = ("from tenacity import retry, stop_after_attempt, wait_exponential\n"
            f"@retry(stop=stop_after_attempt({attempts}), wait=wait_exponential(multiplier=1, min=4, max=10))\n"
            "def f(): ...\n")
    (policy,) = check_source(code, "case.py", settings_with(ALL), want_policies=True).policies
    read = [float(nominal_delay(policy.delay, k)) for k in range(1, attempts)]
    if len(set(real)) == 1:
        assert read == real  # every retry waits the floor: a fixed delay
    else:
        assert read[-1] >= real[-1] > real[0]  # it grows past the floor: read as exponential
