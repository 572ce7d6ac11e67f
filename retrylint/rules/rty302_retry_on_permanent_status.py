"""RTY302: retrying HTTP statuses that cannot heal."""

from __future__ import annotations

from typing import Iterable

from ..describe import status_list
from ..model import CatchKind, RetryPolicy
from ..settings import Settings
from .base import Diagnostic, Invalid, Rule, Valid


_NOTABLE = (400, 401, 403, 404, 409, 410, 422)


def _statuses_phrase(permanent) -> str:
    """A few well-known statuses when the set is large, the exact list when it is short."""
    if len(permanent) <= 4:
        return "HTTP " + status_list(permanent)
    notable = [s for s in _NOTABLE if s in permanent][:4] or list(permanent)[:4]
    return "HTTP 4xx such as " + ", ".join(str(s) for s in notable)


class RetryOnPermanentStatus(Rule):
    """
    ## What it does
    Finds retries of HTTP statuses that a retry cannot fix: a status test or
    status list that sends a 4xx other than 408 and 429 round again
    (`if resp.status_code != 200`, `>= 400`, `not resp.ok`, `in (404, 500)`,
    "return on 200, otherwise retry"), and handlers that retry an HTTP-status
    exception (`requests.HTTPError` after `raise_for_status()`,
    `httpx.HTTPStatusError`, `urllib.error.HTTPError`,
    `aiohttp.ClientResponseError`, botocore `ClientError`) without looking at
    its status first. Catch-alls are RTY301's business.

    ## Why is this bad?
    400, 401, 403, 404 and the other 4xx say the request itself is wrong; it
    fails the same way on every attempt. Retrying them wastes the retry budget,
    delays the real error by the whole backoff schedule and adds load for
    nothing. Retry 408, 429 (honouring `Retry-After`) and 5xx; send the rest to
    the dead-letter queue on the first failure.

    ## Example
    ```python
    for attempt in range(5):
        response = requests.get(url)
        if response.status_code == 200:
            return response
        time.sleep(random.uniform(0, 2 ** attempt))
    ```

    ## Use instead
    ```python
    RETRYABLE = {408, 429, 500, 502, 503, 504}
    for attempt in range(5):
        response = requests.get(url)
        if response.status_code not in RETRYABLE:
            response.raise_for_status()
            return response
        time.sleep(random.uniform(0, 2 ** attempt))
    ```
    """

    code = "RTY302"
    name = "retry-on-permanent-status"
    summary = "An HTTP status that cannot heal is retried"

    VALID = [
        Valid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code in (429, 500, 502, 503, 504):
                        time.sleep(random.uniform(0, 2 ** attempt))
                        continue
                    response.raise_for_status()
                    return response
            """,
            "only 429 and 5xx go round again",
        ),
        Valid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code >= 500:
                        time.sleep(random.uniform(0, 2 ** attempt))
                        continue
                    return response
            """,
            "5xx only",
        ),
        Valid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    try:
                        response = requests.get(url)
                        response.raise_for_status()
                        return response
                    except requests.HTTPError as exc:
                        status = exc.response.status_code
                        if status < 500 and status not in (408, 429):
                            raise
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "the handler re-raises permanent statuses",
        ),
        Valid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code < 500:
                        return response
                    time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "4xx are returned to the caller",
        ),
        Valid(
            """
            import time, requests
            def wait_for_export(url):
                for attempt in range(30):
                    job = requests.get(url).json()
                    if job["state"] == "done":
                        return job
                    time.sleep(10)
            """,
            "polling a job's state is not a status retry",
        ),
        Valid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    try:
                        response = requests.get(url)
                        response.raise_for_status()
                        return response
                    except requests.ConnectionError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "connection errors carry no status",
        ),
        Valid(
            """
            import time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code == 429:
                        time.sleep(float(response.headers.get("Retry-After", 1)))
                        continue
                    return response
            """,
            "only 429 is retried",
        ),
        Valid(
            """
            import random, time, requests
            from http import HTTPStatus
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code in (HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE):
                        time.sleep(random.uniform(0, 2 ** attempt))
                        continue
                    return response
            """,
            "HTTPStatus constants for 429 and 503",
        ),
        Valid(
            """
            import asyncio, random, httpx
            async def fetch(client, url):
                for attempt in range(5):
                    response = await client.get(url)
                    if response.is_server_error:
                        await asyncio.sleep(random.uniform(0, 2 ** attempt))
                        continue
                    return response
            """,
            "httpx is_server_error",
        ),
        Valid(
            """
            import backoff, requests

            def is_permanent(exc):
                return exc.response is not None and 400 <= exc.response.status_code < 500

            @backoff.on_exception(backoff.expo, requests.HTTPError, max_tries=5, max_value=20, giveup=is_permanent)
            def fetch(url):
                response = requests.get(url)
                response.raise_for_status()
                return response
            """,
            "backoff's `giveup=` lets 4xx out before a retry",
        ),
        Valid(
            '''
            def doc():
                """if response.status_code != 200: retry() -- don't"""
            ''',
            "code in a docstring",
        ),
        Valid(
            """
            import time, requests
            class Api:
                def _checked(self, response):
                    if response.status_code >= 500:
                        raise RuntimeError(response.text)
                    return response
                def fetch(self, url):
                    for attempt in range(3):
                        try:
                            return self._checked(requests.get(url))
                        except Exception:
                            time.sleep(2 ** attempt)
            """,
            "the helper raises for 5xx only: 4xx come back as responses (RTY301 speaks of the catch-all)",
        ),
        Valid(
            """
            import random, time, requests
            def download(self, request):
                attempts = 0
                while True:
                    sleep_time = self.limiter.next_slot()
                    if sleep_time == 0:
                        attempts += 1
                        response = requests.get(request.url)
                        if response.status_code == 429:
                            if attempts >= 5:
                                raise RuntimeError("out of attempts")
                            continue
                        response.raise_for_status()
                        return response
                    time.sleep(sleep_time)
            """,
            "only 429 goes round; the limiter's branch has no response at all",
        ),
        Valid(
            """
            import random, time, requests
            def render(url, max_retries=3):
                for attempt in range(max_retries + 1):
                    try:
                        response = requests.get(url)
                        if response.status_code == requests.codes.ok:
                            return response.content
                        if requests.codes.internal_server_error <= response.status_code and attempt < max_retries:
                            time.sleep(random.uniform(0, 2 ** attempt))
                            continue
                        raise ValueError(response.status_code)
                    except requests.RequestException:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            "the ValueError raised for a 4xx is no RequestException: it leaves the loop",
        ),
    ]

    INVALID = [
        Invalid(
            """
            import time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code != 200:
                        time.sleep(2 ** attempt)
                        continue
                    return response
            """,
            line=6,
            message="404",
        ),
        Invalid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code == 200:
                        return response
                    time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=6,
        ),
        Invalid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if not response.ok:
                        time.sleep(random.uniform(0, 2 ** attempt))
                        continue
                    return response
            """,
            line=6,
        ),
        Invalid(
            """
            import random, time, requests
            RETRY_STATUSES = {404, 500, 503}
            def fetch(url):
                for attempt in range(5):
                    response = requests.get(url)
                    if response.status_code in RETRY_STATUSES:
                        time.sleep(random.uniform(0, 2 ** attempt))
                        continue
                    return response
            """,
            line=7,
            message="404",
        ),
        Invalid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    try:
                        response = requests.get(url)
                        response.raise_for_status()
                        return response
                    except requests.exceptions.HTTPError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=9,
            message="without looking at its status",
        ),
        Invalid(
            """
            import asyncio, random, httpx
            async def fetch(client, url):
                for attempt in range(5):
                    try:
                        response = await client.get(url)
                        return response.raise_for_status()
                    except httpx.HTTPStatusError:
                        await asyncio.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=8,
        ),
        Invalid(
            """
            import random, time
            from urllib.request import urlopen
            from urllib.error import HTTPError
            def fetch(url):
                for attempt in range(5):
                    try:
                        return urlopen(url).read()
                    except HTTPError:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=9,
        ),
        Invalid(
            """
            import random, time, requests
            def fetch(url):
                for attempt in range(5):
                    try:
                        response = requests.get(url)
                        response.raise_for_status()
                        return response
                    except requests.RequestException:
                        time.sleep(random.uniform(0, 2 ** attempt))
            """,
            line=9,
        ),
        Invalid(
            """
            import time, requests
            def upload(url, data):
                for attempt in range(3):
                    try:
                        response = requests.put(url, data=data)
                        response.raise_for_status()
                        return response
                    except Exception:
                        time.sleep(attempt + 1)
            """,
            line=9,
        ),
    ]

    def check(self, policy: RetryPolicy, settings: Settings) -> Iterable[Diagnostic]:
        statuses = policy.statuses
        if statuses is not None and statuses.permanent:
            shown = f" (`{statuses.text}`)" if statuses.text else ""
            yield self.at(
                policy,
                f"{policy.description} retries {_statuses_phrase(statuses.permanent)}{shown}, which fail the same "
                "way on every attempt; retry only 408, 429 and 5xx and raise (or dead-letter) the rest",
                statuses.location,
            )
        for clause in policy.errors:
            if not clause.raises_http_status or clause.checks_status or clause.permanent_exit_before:
                continue
            caught = ", ".join(f"`{n}`" for n in clause.names) or "every exception"
            if clause.kind is CatchKind.CATCH_ALL:
                # ``except Exception`` around ``raise_for_status()``: the status errors are in it
                what = f"{caught}, which includes the error a failed HTTP status raises in the attempt,"
            else:
                what = caught
            yield self.at(
                policy,
                f"{policy.description} retries {what} without looking at its status, so 4xx responses are "
                "retried too; re-raise unless the status is 408, 429 or 5xx",
                clause.location,
            )
