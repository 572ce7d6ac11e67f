"""RTY102: a retry-library policy with no stop."""

from __future__ import annotations

from typing import Iterable, Optional

from ..describe import delay_phrase
from ..fixes import Fix, Fixer
from ..model import RetryPolicy
from .library_fixes import DEFAULT_ATTEMPTS, add_tenacity_argument, call_of, set_argument
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid

#: How to bound a policy, in each library's own terms.
ADVICE = {
    "tenacity": "add `stop=stop_after_attempt(6)` (or `stop_after_delay(60)`)",
    "backoff": "add `max_tries=6` (or `max_time=60`)",
    "stamina": "keep `attempts=` or `timeout=` set (the defaults are 10 attempts, 45 s)",
    "retrying": "add `stop_max_attempt_number=6` (or `stop_max_delay=60000`)",
    "retry": "set `tries=6` (the default -1 means forever)",
    "urllib3": "set `total=` (e.g. `Retry(total=5, backoff_factor=0.5)`)",
    "celery": "set `max_retries` to a number (None means forever)",
    "dramatiq": "set `max_retries` to a number (None means forever)",
    "redis": "pass a non-negative number of retries (negative means forever)",
    "coredis": "pass a number of retries or a `deadline=` (retries=None with no deadline means forever)",
    "google-api-core": "set `timeout=` (None means forever)",
}


class UnboundedRetryPolicy(Rule):
    """
    ## What it does
    Finds retry-library policies that never stop: tenacity without `stop=` (or
    with `stop_never`), backoff without `max_tries` and `max_time`, stamina with
    `attempts=None, timeout=None`, retrying without a stop, the `retry`
    package's default `tries=-1`, urllib3 `Retry(total=None)` with no other
    limit, celery and dramatiq `max_retries=None`, redis `Retry(backoff, -1)`,
    google-api-core `Retry(timeout=None)`.

    The finding is reported on the call that configures the policy (the
    decorator, or the `Retry(...)`/`Retrying(...)` construction).

    ## Why is this bad?
    A policy that never gives up turns an outage of the downstream into an
    endless stream of retries from every caller, holds requests, workers and
    connections forever, and never hands the work to a dead-letter queue where
    someone would look at it.

    ## Example
    ```python
    @tenacity.retry(wait=tenacity.wait_random_exponential(max=20))
    def fetch(url): ...
    ```

    ## Use instead
    ```python
    @tenacity.retry(
        stop=tenacity.stop_after_attempt(6),
        wait=tenacity.wait_random_exponential(max=20),
    )
    def fetch(url): ...
    ```

    ## Fix safety
    Unsafe only (`--unsafe-fixes`): the limit is a number the code does not have,
    6 attempts (or 120 s for google-api-core's timeout) by default. tenacity gets
    `stop=stop_after_attempt(6)`, backoff `max_tries=6`, the retry package
    `tries=6`, stamina `attempts=10`, google-api-core `timeout=120.0`, celery and
    dramatiq `max_retries=5`.
    """

    code = "RTY102"
    name = "unbounded-retry-policy"
    summary = "Retry-library policy with no stop"

    VALID = [
        Valid(
            """
            from google.api_core import exceptions, retry
            policy = retry.Retry(retry.if_exception_type(exceptions.ServiceUnavailable), 1.0, 60.0, 2.0, 120.0, None)
            """,
            "google-api-core: the fifth positional argument is the timeout (the sixth is on_error)",
        ),
        Valid(
            """
            from tenacity import retry, stop_after_attempt, wait_random_exponential
            @retry(stop=stop_after_attempt(5), wait=wait_random_exponential(max=20))
            def fetch(): ...
            """,
            "tenacity with an attempt limit",
        ),
        Valid(
            """
            import tenacity
            @tenacity.retry(stop=tenacity.stop_after_delay(30) | tenacity.stop_after_attempt(10))
            def fetch(): ...
            """,
            "either of two stops",
        ),
        Valid(
            """
            import tenacity
            def call(fn, stop):
                return tenacity.Retrying(stop=stop)(fn)
            """,
            "a stop given as a parameter is a stop",
        ),
        Valid(
            """
            import backoff, requests
            @backoff.on_exception(backoff.expo, requests.ConnectionError, max_time=60)
            def fetch(): ...
            """,
            "backoff with max_time",
        ),
        Valid(
            """
            import stamina
            @stamina.retry(on=ConnectionError)
            def fetch(): ...
            """,
            "stamina's defaults are bounded",
        ),
        Valid(
            """
            from urllib3.util import Retry
            RETRIES = Retry(total=5, backoff_factor=0.5)
            """,
            "urllib3 with a total",
        ),
        Valid(
            """
            from celery import shared_task
            @shared_task(autoretry_for=(ConnectionError,), retry_backoff=True)
            def sync(): ...
            """,
            "celery's default max_retries is 3",
        ),
        Valid(
            """
            from redis.retry import Retry
            from redis.backoff import FullJitterBackoff
            policy = Retry(FullJitterBackoff(cap=5, base=0.1), 6)
            """,
            "redis with a number of retries",
        ),
        Valid(
            '''
            def doc():
                """@retry  # forever"""
            ''',
            "a docstring",
        ),
        Valid(
            """
            def retry(fn):
                return fn
            @retry
            def fetch(): ...
            """,
            "a local function named retry is not tenacity",
        ),
    ]
    INVALID = [
        Invalid(
            """
            from tenacity import retry
            @retry
            def fetch(): ...
            """,
            line=3,
            message="retries forever",
        ),
        Invalid(
            """
            import tenacity as t
            @t.retry(wait=t.wait_random_exponential(max=20))
            def fetch(): ...
            """,
            line=3,
            message="stop=stop_after_attempt(6)",
        ),
        Invalid(
            """
            from tenacity import Retrying, stop_never
            for attempt in Retrying(stop=stop_never):
                with attempt:
                    pass
            """,
            line=3,
        ),
        Invalid(
            """
            import backoff
            @backoff.on_exception(backoff.expo, ConnectionError)
            def fetch(): ...
            """,
            line=3,
            message="max_tries",
        ),
        Invalid(
            """
            import stamina
            @stamina.retry(on=ConnectionError, attempts=None, timeout=None)
            def fetch(): ...
            """,
            line=3,
        ),
        Invalid(
            """
            from retry import retry
            @retry(ConnectionError, delay=1, backoff=2, jitter=(0, 1), max_delay=30)
            def fetch(): ...
            """,
            line=3,
            message="tries=6",
        ),
        Invalid(
            """
            from celery import shared_task
            @shared_task(autoretry_for=(ConnectionError,), max_retries=None, retry_backoff=True)
            def sync(): ...
            """,
            line=3,
        ),
        Invalid(
            """
            from redis.retry import Retry
            from redis.backoff import FullJitterBackoff
            policy = Retry(FullJitterBackoff(), -1)
            """,
            line=4,
        ),
        Invalid(
            """
            from google.api_core import retry
            policy = retry.Retry(timeout=None)
            """,
            line=3,
        ),
        Invalid(
            """
            from google.api_core import exceptions, retry
            policy = retry.Retry(retry.if_exception_type(exceptions.ServiceUnavailable), 1.0, 60.0, 2.0, None)
            """,
            line=3,
            message="set `timeout=`",
        ),
    ]

    def fix(self, policy: RetryPolicy, fixer: Fixer) -> Optional[Fix]:
        n = DEFAULT_ATTEMPTS
        source = policy.source
        if source == "tenacity":
            return add_tenacity_argument(policy, fixer, "stop", "stop_after_attempt", str(n),
                                         f"stop after {n} attempts")
        simple = {
            "backoff": ("max_tries", str(n)),
            "retry": ("tries", str(n)),
            "stamina": ("attempts", "10"),
            "google-api-core": ("timeout", "120.0"),
            "celery": ("max_retries", str(n - 1)),
            "dramatiq": ("max_retries", str(n - 1)),
        }
        if source in simple:
            keyword, value = simple[source]
            call = call_of(policy)
            if source == "celery" and call is not None and fixer.keyword(call, "max_retries") is None:
                return None  # self.retry(...) without max_retries: the task's option decides
            return set_argument(policy, fixer, keyword, value, f"set `{keyword}={value}`")
        return None

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        if not policy.is_library or not policy.bound.unbounded:
            return
        advice = ADVICE.get(policy.source, "give it an attempt limit or a deadline")
        yield self.at(policy, f"{policy.description} retries forever {delay_phrase(policy.delay)}; {advice}")
