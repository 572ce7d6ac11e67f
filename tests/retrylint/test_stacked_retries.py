"""Retry decorators stacked on one function (issue 13, RTY501): the lower decorator is applied
first, so each attempt of the upper one runs all of the lower one's attempts. Reported when
the upper one catches what the lower one raises once it gives up."""

from __future__ import annotations

from retrylint.engine import check_source, settings_with

HEAD = "import backoff, requests, tenacity\n\n"
BACKOFF = "@backoff.on_exception(backoff.expo, requests.RequestException, max_tries=3, jitter=backoff.full_jitter)\n"
TENACITY = ("@tenacity.retry(stop=tenacity.stop_after_attempt(4), wait=tenacity.wait_random_exponential(max=10),"
            " retry=tenacity.retry_if_exception_type(requests.RequestException){reraise})\n")
BODY = "def fetch(url):\n    return requests.get(url, timeout=5)\n"


def _rty501(source: str):
    report = check_source(source, "client.py", settings_with(("RTY501",)))
    assert report.error is None, report.error
    return [f for f in report.findings if f.code == "RTY501"]


def test_a_retry_decorator_stacked_on_another_multiplies():
    (finding,) = _rty501(HEAD + BACKOFF + TENACITY.format(reraise=", reraise=True") + BODY)
    assert finding.location.line == 3  # the outer (upper) decorator
    assert "3 × 4 = 12 attempts per call" in finding.message and "stacked below it on `fetch`" in finding.message


def test_the_other_order_too():
    (finding,) = _rty501(HEAD + TENACITY.format(reraise=", reraise=True") + BACKOFF + BODY)
    assert "4 × 3 = 12 attempts per call" in finding.message


def test_an_inner_retry_that_raises_what_the_outer_does_not_catch_is_no_layer():
    # without reraise=True tenacity gives up with RetryError, which backoff does not retry
    assert _rty501(HEAD + BACKOFF + TENACITY.format(reraise="") + BODY) == []


def test_one_retry_decorator_is_no_layer():
    assert _rty501(HEAD + BACKOFF + BODY) == []


def test_decorators_stacked_for_different_errors_split_them():
    # Timeout above, connection and 5xx errors below (singer taps do this): a failure goes to
    # one of them, not through both (``ConnectTimeout`` deriving from both is not enough).
    source = HEAD + (
        "@backoff.on_exception(backoff.constant, requests.exceptions.Timeout, max_tries=5, interval=10, jitter=None)\n"
        "@backoff.on_exception(backoff.expo, (requests.ConnectionError, OSError), max_tries=7)\n"
    ) + BODY
    assert _rty501(source) == []
