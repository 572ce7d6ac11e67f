"""RTY501: a retry around an operation that retries on its own (the attempts multiply)."""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

from ..model import RetryLayer, RetryPolicy, known
from ..schedule import format_seconds, schedule
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid

#: The incident of RETRY_DOCTRINE.md: 2,000 messages failed together.
FAILING_MESSAGES = 2000

_TURN_OFF = {
    "urllib3": "`Retry(0)` on the adapter",
    "requests": "`max_retries=0` on the adapter",
    "botocore": '`Config(retries={"total_max_attempts": 1})`',
    "redis": "`retry=Retry(NoBackoff(), 0)`",
    "google-api-core": "`retry=None`",
    "httpx": "`retries=0` on the transport",
}


def attempts_of(policy: RetryPolicy) -> Optional[int]:
    """The most calls a policy makes per operation: its attempt limit, or, for a policy bounded
    only by a known deadline (google-api-core ``Retry(timeout=120)``), the attempts that fit in
    it at the expected waits (:func:`estimated`); None when not known."""
    attempts = policy.bound.attempts
    if known(attempts):
        return int(attempts) if float(attempts) >= 2 else None  # type: ignore[arg-type]
    if estimated(policy):
        laid = schedule(policy)
        return len(laid.ranges) + 1 if len(laid.ranges) >= 1 else None
    return None


def estimated(policy: RetryPolicy) -> bool:
    """The attempt count is an estimate: only a deadline bounds the policy."""
    bound = policy.bound
    if bound.attempts is not None or not known(bound.deadline):
        return False
    laid = schedule(policy)
    return laid.complete and all(known(r.expected) for r in laid.ranges)


def amplified_text(policy: RetryPolicy) -> str:
    """``3 × 4 = 12 attempts per call; 2,000 failing messages make 24,000 calls`` ("" when there
    is no known product); ``~`` marks a count estimated from a deadline."""
    found = amplification(policy)
    if found is None:
        return ""
    layer, outer, inner = found
    shown_outer = f"~{outer}" if estimated(policy) else str(outer)
    shown_inner = f"~{inner}" if estimated(layer.policy) else str(inner)
    approx = "~" if estimated(policy) or estimated(layer.policy) else ""
    total = outer * inner
    return (f"{shown_outer} × {shown_inner} = {approx}{total} attempts per call; {FAILING_MESSAGES:,} failing messages "
            f"make {approx}{FAILING_MESSAGES * total:,} calls")


def _attempts_phrase(policy: RetryPolicy, count: int) -> str:
    if estimated(policy):
        return f"about {count} attempts in its {format_seconds(policy.bound.deadline)} deadline at the expected waits"
    return f"up to {count} attempts"


def amplification(policy: RetryPolicy) -> Optional[Tuple[RetryLayer, int, int]]:
    """The inner layer that multiplies ``policy``'s attempts most: (layer, outer, inner attempts)."""
    outer = attempts_of(policy)
    if outer is None:
        return None
    best = None
    for layer in policy.inner:
        inner = attempts_of(layer.policy)
        if inner is not None and (best is None or inner > best[2]):
            best = (layer, outer, inner)
    return best


class RetryAmplification(Rule):
    """
    ## What it does
    Finds a retry whose operation retries on its own: a tenacity, backoff or stamina
    policy, or a hand-written retry loop, around

    - a call on a `requests.Session` mounted with `HTTPAdapter(max_retries=Retry(...))`
      (or an integer), or on a `urllib3.PoolManager(retries=Retry(...))`;
    - a call on a boto3/botocore client built with `config=Config(retries={...})`
      (botocore's `max_attempts` counts *retries* in every mode: `{"max_attempts": 5,
      "mode": "standard"}` makes 6 attempts; `total_max_attempts` counts them all; with
      neither, standard and adaptive make 3 and legacy 5);
    - a call on an httpx client built with `transport=httpx.HTTPTransport(retries=N)`
      (it retries failed connections, then raises `httpx.ConnectError`/`ConnectTimeout`);
    - a call on a redis client built with `retry=Retry(...)`, or a call given
      `retry=` a google-api-core `Retry(...)`;
    - a call to a function of the same module (or a method of the same class) that has
      its own retry decorator, or to a function imported from another module of the
      checked tree that has one (`retrylint check` on the tree: the message and
      `explain` name the file and line of the inner decorator; standard input and the
      flake8 plugin see one file and do not report it);
    - another retry decorator stacked below it on the same function (the lower one is
      applied first: every outer attempt runs all of its attempts).

    Both layers must be known: the object is followed through a name bound once, a
    `self.` attribute that the class only ever sets to such an object (a method that sets
    it to something else, `def use(self, session): self.session = session`, makes it
    unknown), or a module-level name; a session's adapters count only when they are mounted
    wherever the session is built (`if USE_RETRIES: session.mount(...)` is not known); and
    both attempt limits must be numbers (a layer bounded only by a deadline, such
    as google-api-core's `Retry(timeout=120)`, counts the attempts that fit in it at the
    expected waits, shown with `~`). The outer retry must catch what the inner one raises
    when it gives up: a tenacity decorator without `reraise=True` raises `RetryError`,
    google-api-core's `Retry` raises `RetryError` once its timeout passes, requests raises
    its `ConnectionError`/`RetryError`/timeouts, a celery task called directly does not
    retry at all.

    ## Why is this bad?
    The attempts multiply: 3 outer attempts around a session that tries 4 times make
    3 × 4 = 12 calls for one failing request, and the waits add up the same way. When a
    dependency goes down, 2,000 failing messages then send 24,000 calls to it instead of
    6,000 — the amplification hits exactly when the downstream can least take it, and the
    worst-case latency of one call is the product of both schedules.

    ## Example
    ```python
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=Retry(total=3, backoff_factor=0.5)))

    @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
    def fetch(url):
        return session.get(url, timeout=5).json()
    ```

    ## Use instead
    Retry at one layer: keep the adapter's retries (they honour `Retry-After`) and drop
    the outer one, or keep the outer policy and turn the inner one off.
    ```python
    session.mount("https://", HTTPAdapter(max_retries=Retry(total=3, backoff_factor=0.5, backoff_jitter=1)))

    def fetch(url):
        return session.get(url, timeout=5).json()
    ```
    """

    code = "RTY501"
    name = "retry-amplification"
    summary = "A retry around an operation that retries on its own"

    VALID = [
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter

            class Client:
                def __init__(self):
                    self.session = requests.Session()
                    self.session.mount("https://", HTTPAdapter(max_retries=3))

                def use(self, session):
                    self.session = session

                @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
                def get(self, url):
                    return self.session.get(url, timeout=3)
            """,
            "`use` may replace the mounted session with any session: the inner layer is not known",
        ),
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter

            session = requests.Session()
            if USE_RETRIES:
                session.mount("https://", HTTPAdapter(max_retries=3))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
            def get(url):
                return session.get(url, timeout=3)
            """,
            "the adapter is mounted only when a flag read at run time says so: not known",
        ),
        Valid(
            """
            import requests, tenacity

            session = requests.Session()

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
            def fetch(url):
                return session.get(url, timeout=5)
            """,
            "the session has no retrying adapter mounted: one layer",
        ),
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=Retry(total=3, backoff_factor=0.5)))

            def fetch(url):
                return session.get(url, timeout=5)
            """,
            "only the adapter retries",
        ),
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=Retry(0)))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
            def fetch(url):
                return session.get(url, timeout=5)
            """,
            "`Retry(0)` turns the adapter's retries off",
        ),
        Valid(
            """
            import os, requests, tenacity
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            def make_retry(total):
                return Retry(total=total, backoff_factor=0.5)

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=make_retry(int(os.environ["HTTP_RETRIES"]))))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
            def fetch(url):
                return session.get(url, timeout=5)
            """,
            "the adapter's retries come from a helper given a value read at run time: not known",
        ),
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=Retry(total=3)))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(ValueError))
            def fetch(url):
                return session.get(url, timeout=5).json()
            """,
            "the outer retry only retries ValueError, which the session's give-up never raises",
        ),
        Valid(
            """
            import tenacity, backoff

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(ConnectionError))
            def fetch(url):
                return download(url)

            @backoff.on_exception(backoff.expo, ConnectionError, max_tries=4)
            def sync(url):
                return fetch(url)
            """,
            "tenacity raises RetryError when it gives up (no `reraise=True`): `sync` never retries it",
        ),
        Valid(
            """
            import boto3, tenacity
            from botocore.config import Config

            s3 = boto3.client("s3", config=Config(retries={"total_max_attempts": 1}))

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), retry=tenacity.retry_if_exception_type(Exception))
            def upload(body):
                s3.put_object(Bucket="b", Key="k", Body=body)
            """,
            "the client makes one attempt: one layer",
        ),
        Valid(
            """
            import boto3, tenacity
            from botocore.config import Config

            s3 = boto3.client("s3", config=Config(retries={"max_attempts": 4, "mode": "standard"}))

            @tenacity.retry(stop=tenacity.stop_after_attempt(5), retry=tenacity.retry_if_exception_type(Exception))
            def presign(key):
                return s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": key})
            """,
            "`generate_presigned_url` makes no request",
        ),
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter

            class Client:
                def __init__(self, session):
                    self.session = session
                    self.session.mount("https://", HTTPAdapter(max_retries=3))

                @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(Exception))
                def get(self, url):
                    return self.session.get(url)
            """,
            "the session is handed in: what it is is not known",
        ),
        Valid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=3))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(Exception))
            def fetch(url):
                def later():
                    return session.get(url)
                return later
            """,
            "the call is in a nested function that the retried operation does not run",
        ),
        Valid(
            """
            import tenacity
            from google.api_core import exceptions
            from google.api_core.retry import Retry

            RETRY = Retry(timeout=120)

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(exceptions.ServiceUnavailable))
            def read(blob):
                return blob.download_as_bytes(retry=RETRY)
            """,
            "google-api-core's Retry gives up with RetryError, which the outer retry does not catch",
        ),
        Valid(
            """
            from celery import shared_task

            @shared_task(autoretry_for=(ConnectionError,), max_retries=3)
            def sync_languages(pk):
                refresh(pk)

            @shared_task(autoretry_for=(ConnectionError,), max_retries=3)
            def sync_terminology(pk):
                sync_languages(pk)
            """,
            "a celery task called directly runs once: its `retry()` re-raises when called directly (weblate)",
        ),
        Valid(
            """
            import redis, tenacity
            from redis.retry import Retry
            from redis.backoff import NoBackoff

            r = redis.Redis(retry=Retry(NoBackoff(), 0))

            @tenacity.retry(stop=tenacity.stop_after_attempt(4), retry=tenacity.retry_if_exception_type(redis.ConnectionError))
            def read(key):
                return r.get(key)
            """,
            "a redis `Retry` with 0 retries does not retry",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import httpx, tenacity

            client = httpx.Client(transport=httpx.HTTPTransport(retries=3), timeout=5)

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(httpx.TransportError))
            def fetch(url):
                return client.get(url)
            """,
            line=6,
            message="3 × 4 = 12 attempts per call",
        ),
        Invalid(
            """
            import requests, tenacity
            from requests.adapters import HTTPAdapter
            from urllib3.util.retry import Retry

            session = requests.Session()
            session.mount("https://", HTTPAdapter(max_retries=Retry(total=3, backoff_factor=0.5)))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
            def fetch(url):
                return session.get(url, timeout=5).json()
            """,
            line=9,
            message="3 × 4 = 12 attempts per call; 2,000 failing messages make 24,000 calls",
        ),
        Invalid(
            """
            import time
            import requests
            from requests.adapters import HTTPAdapter

            class Client:
                def __init__(self):
                    self.http = requests.Session()
                    self.http.mount("https://", HTTPAdapter(max_retries=5))

                def fetch(self, url):
                    for attempt in range(4):
                        try:
                            return self.http.get(url, timeout=5)
                        except requests.ConnectionError:
                            time.sleep(2 ** attempt)
                    raise RuntimeError(url)
            """,
            line=12,
            message="4 × 6 = 24 attempts per call",
        ),
        Invalid(
            """
            import boto3, backoff
            from botocore.config import Config
            from botocore.exceptions import ClientError

            CONFIG = Config(retries={"max_attempts": 10, "mode": "standard"})
            sqs = boto3.client("sqs", config=CONFIG)

            @backoff.on_exception(backoff.expo, ClientError, max_tries=5)
            def send(url, body):
                sqs.send_message(QueueUrl=url, MessageBody=body)
            """,
            line=9,
            message="5 × 11 = 55 attempts per call; 2,000 failing messages make 110,000 calls",
        ),
        Invalid(
            """
            import redis, stamina
            from redis.retry import Retry
            from redis.backoff import ExponentialWithJitterBackoff

            cache = redis.Redis(host="cache", retry=Retry(ExponentialWithJitterBackoff(cap=1, base=0.01), 3))

            @stamina.retry(on=redis.ConnectionError, attempts=5)
            def read(key):
                return cache.get(key)
            """,
            line=8,
            message="5 × 4 = 20 attempts per call",
        ),
        Invalid(
            """
            import backoff, tenacity

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), reraise=True,
                            retry=tenacity.retry_if_exception_type(ConnectionError))
            def fetch(url):
                return download(url)

            @backoff.on_exception(backoff.expo, ConnectionError, max_tries=4)
            def sync(url):
                return fetch(url)
            """,
            line=9,
            message="4 × 3 = 12 attempts per call",
        ),
        Invalid(
            """
            import tenacity
            import urllib3

            http = urllib3.PoolManager(retries=urllib3.Retry(total=2, backoff_factor=1))

            def download(url):
                for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(6), wait=tenacity.wait_random_exponential(max=20)):
                    with attempt:
                        return http.request("GET", url).data
            """,
            line=8,
            message="6 × 3 = 18 attempts per call",
        ),
        Invalid(
            """
            import tenacity
            from google.api_core import exceptions
            from google.api_core.retry import Retry

            RETRY = Retry(timeout=120)

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(exceptions.GoogleAPIError))
            def read(blob):
                return blob.download_as_bytes(retry=RETRY)
            """,
            line=8,
            message="about 10 attempts in its 2 min deadline at the expected waits; `retry=RETRY`): 3 × ~10 = ~30 attempts per call",
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        found = amplification(policy)
        if found is None:
            return
        layer, outer, inner = found
        inner_policy = layer.policy
        turn_off = _TURN_OFF.get(inner_policy.source, "")
        if "retry decorator" in layer.via:
            # ``@gretry.Retry(...)`` on the callee: `retry=None` is for a call given `retry=`, not a decorator.
            advice = f"retry at one layer: drop this retry, or the retry decorator of `{layer.call}`"
        elif turn_off:
            advice = f"retry at one layer: drop this retry, or turn the inner one off with {turn_off}"
        else:
            advice = f"retry at one layer: drop this retry, or the one on `{layer.call}`"
        more = len([lay for lay in policy.inner if attempts_of(lay.policy)]) - 1
        also = f" ({more} more call{'s' if more > 1 else ''} in it retr{'y' if more > 1 else 'ies'} on its own too)" if more > 0 else ""
        yield self.at(
            policy,
            f"{policy.description} makes {_attempts_phrase(policy, outer)} around `{layer.call}` (line {layer.location.line}), "
            f"which retries on its own ({inner_policy.description}, {layer.where or f'line {inner_policy.location.line}'}: "
            f"{_attempts_phrase(inner_policy, inner)}; {layer.via}): {amplified_text(policy)}{also}; {advice}",
        )


__all__ = ["RetryAmplification", "amplification", "amplified_text", "attempts_of", "estimated"]
