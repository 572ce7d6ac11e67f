"""Status predicates kept away from the retry (issue 12, "helpers that classify errors"):
``if self._should_retry(response): continue`` reads the statuses the predicate returns true
for. Shapes from generated SDK clients (Stainless ``_base_client.py``, Fern
``core/http_client.py``) and hand-written ones; a predicate we cannot read stays unknown."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from retrylint.classifiers import read_classifier
from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)


def _findings(source: str):
    report = check_source("import asyncio, time, random, httpx, logging\n" + textwrap.dedent(source), "case.py",
                          settings_with(CODES))
    assert report.error is None, report.error
    return report.findings


def _rty302(source: str):
    return [f.message for f in _findings(source) if f.code == "RTY302"]


STAINLESS = """
class BaseClient(Generic[T]):
    def _should_retry(self, response):
        should_retry_header = response.headers.get("x-should-retry")
        if should_retry_header == "true":
            return True
        if should_retry_header == "false":
            return False
        if response.status_code == 408:
            log.debug("Retrying due to status code %i", response.status_code)
            return True
        if response.status_code == {extra}:
            return True
        if response.status_code == 429:
            return True
        if response.status_code >= 500:
            return True
        return False


class SyncAPIClient(BaseClient[httpx.Client]):
    def request(self, input_options, max_retries):
        for retries_taken in range(max_retries + 1):
            options = model_copy(input_options)
            options = self._prepare_options(options)
            remaining = max_retries - retries_taken
            request = self._build_request(options)
            try:
                response = self._client.send(request)
            except httpx.TimeoutException:
                if remaining > 0:
                    time.sleep(random.uniform(0, 2 ** retries_taken))
                    continue
                raise
            try:
                response.raise_for_status()
            except httpx.HTTPStatusError as err:
                if remaining > 0 and self._should_retry(err.response):
                    if not err.response.is_closed:
                        err.response.close()
                    time.sleep(random.uniform(0, 2 ** retries_taken))
                    continue
                raise
            return response
"""


def test_an_inherited_predicate_that_retries_409_is_reported_with_its_statuses():
    (message,) = _rty302(STAINLESS.format(extra=409))
    assert "HTTP 409" in message and "_should_retry" in message


def test_the_same_predicate_without_a_permanent_status_is_silent():
    assert _rty302(STAINLESS.format(extra=503)) == []


FERN = """
def _should_retry(response):
    retryable_400s = [429, 408, {extra}]
    return response.status_code >= 500 or response.status_code in retryable_400s


class HttpClient:
    def request(self, path, retries=0, max_retries=2):
        response = self.httpx_client.request(url=path)
        if _should_retry(response=response):
            if retries < max_retries:
                time.sleep(random.uniform(0, 2 ** retries))
                return self.request(path=path, retries=retries + 1, max_retries=max_retries)
        return response
"""


def test_a_recursion_through_a_module_predicate_reports_the_permanent_status():
    (message,) = _rty302(FERN.format(extra=409))
    assert "HTTP 409" in message and "recursive" in message


def test_a_recursion_whose_predicate_retries_only_transient_statuses_is_silent():
    assert _rty302(FERN.format(extra=503)) == []


def test_a_predicate_we_cannot_read_stays_unknown():
    source = """
    def _should_retry(response):
        return response.json().get("retryable", False)

    def fetch(url):
        for attempt in range(4):
            response = httpx.get(url)
            if _should_retry(response):
                time.sleep(random.uniform(0, 2 ** attempt))
                continue
            return response
    """
    assert _rty302(source) == []


MIDDLEWARE = """
class Client:
    def _should_retry(self, response):
        if response.status_code in (408, {extra}, 429):
            return True
        return response.status_code >= 500

    def request(self, options, max_retries=2):
        for retries_taken in range(max_retries + 1):
            remaining = max_retries - retries_taken
            try:
                if self._chain is None:
                    response = self._attempt(options)
                    if response.is_success:
                        return self._process(response)
                else:
                    result = self._chain(options)
                    if not isinstance(result, APIResponse) or result.http_response.is_success:
                        return result
                    response = result.http_response
            except httpx.TransportError:
                if remaining <= 0:
                    raise
                time.sleep(random.uniform(0, 2 ** retries_taken))
                continue
            if remaining > 0 and self._should_retry(response):
                time.sleep(random.uniform(0, 2 ** retries_taken))
                continue
            raise StatusError(response)
"""


def test_a_success_test_behind_a_type_test_of_the_same_result_is_read():
    # Stainless with middleware: ``not isinstance(result, APIResponse) or result...is_success``
    # leaves on success whenever there is a status; the predicate decides what goes round
    findings = [f for f in _findings(MIDDLEWARE.replace("{extra}", "409")) if f.code == "RTY302"]
    (finding,) = findings
    assert "HTTP 409" in finding.message and "self._should_retry(response)" in finding.message
    assert finding.location.line == 2 + MIDDLEWARE.splitlines().index(
        "            if remaining > 0 and self._should_retry(response):")
    assert _rty302(MIDDLEWARE.replace("{extra}", "503")) == []


def test_a_status_test_joined_with_a_counter_check_is_read():
    # ``attempt < 3 and status in (...)``: the statuses in the list may go round, the rest leave
    source = """
    def fetch(url):
        for attempt in range(5):
            response = httpx.get(url)
            if attempt < 3 and response.status_code in ({extra}, 503):
                time.sleep(random.uniform(0, 2 ** attempt))
                continue
            return response
    """
    (message,) = _rty302(source.replace("{extra}", "403"))
    assert "HTTP 403" in message
    assert _rty302(source.replace("{extra}", "429")) == []


def test_a_predicate_in_another_module_of_the_tree(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/retrying.py", """
        RETRYABLE = (400, 408, 429)

        def is_recoverable(status):
            if status >= 400 and status < 500:
                return status in RETRYABLE
            return True
    """)
    project.write("pkg/events.py", """
        import time
        from .retrying import is_recoverable

        def post(http, uri, body):
            for attempt in range(3):
                r = http.request("POST", uri, body=body)
                if r.status < 300:
                    return r
                if not is_recoverable(r.status):
                    return r
                time.sleep(1)
    """)
    code, out, _ = run("check", "--no-cache", "--output-format", "json", "--select", "RTY302", "pkg")
    (finding,) = json.loads(out)
    assert code == 1 and finding["code"] == "RTY302" and "HTTP 400" in finding["message"]


@pytest.mark.parametrize("source, param, retried_4xx", [
    ("def f(status_code):\n    return status_code in (408, 409, 429) or (500 <= status_code < 600)",
     "status_code", [408, 409, 429]),
    ("def f(self, resp):\n    if resp.is_server_error:\n        return True\n    return resp.status_code == 429",
     "resp", [429]),
    ("def f(response):\n    codes = [429]\n    return response.status_code in codes", "response", [429]),
    ("def f(self, status):\n    return status is not None and status in (HTTPStatus.TOO_MANY_REQUESTS, 503)",
     "status", [429]),
])
def test_read_classifier_returns_the_statuses_a_predicate_accepts(source, param, retried_4xx):
    func = ast.parse(source).body[0]
    found = read_classifier(func, source.startswith("def f(self"), {})
    assert found is not None and found.param == param
    assert [s for s in found.statuses if 400 <= s < 500] == retried_4xx


@pytest.mark.parametrize("source", [
    "def f(response):\n    return response.json()['ok']",  # not a status test
    "def f(response):\n    for r in rules:\n        if r(response):\n            return True\n    return False",
    "def f(response):\n    family = response.status_code // 100\n    return family == 5",  # computed: unread
    "def f(response, retries):\n    return retries < 3",  # never looks at a status
])
def test_read_classifier_leaves_other_functions_alone(source):
    assert read_classifier(ast.parse(source).body[0], False, {}) is None


AGENTSTUDIO = """
def _should_retry(status_code, headers):
    if headers.get("x-should-retry") == "true":
        return True
    return status_code in (408, 409, 429) or status_code >= 500


class SyncTransport:
    def request(self, method, url, json=None):
        attempt = 0
        while attempt <= self.max_retries:
            try:
                req = self._client.build_request(method=method.upper(), url=url, json=json)
                resp = self._client.send(req)
            except httpx.TimeoutException as exc:
                if attempt >= self.max_retries:
                    raise
            else:
                if _should_retry(resp.status_code, resp.headers):
                    if attempt < self.max_retries:
                        time.sleep(random.uniform(0, min(8, 2 ** attempt)))
                        attempt += 1
                        continue
                return self._parse(resp)
            time.sleep(random.uniform(0, min(8, 2 ** attempt)))
            attempt += 1
"""


def test_a_status_retried_while_attempts_remain_and_a_request_built_each_pass():
    """dashscope's agentstudio transport: ``if attempt < self.max_retries: sleep; continue`` then
    ``return self._parse(resp)``: while attempts remain a 409 goes round (the return is the last
    attempt's give-up), and ``req = build_request(...)`` made afresh each pass before the send is
    the same request, not a change of it: RTY302 for 409. Its twin returns at once on a 409."""
    (message,) = _rty302(AGENTSTUDIO)
    assert "409" in message
    twin = AGENTSTUDIO.replace("(408, 409, 429)", "(408, 429)")
    assert _rty302(twin) == []


NOMIC = """
def is_backoff_status_code(code: int):
    if code == 429 or code >= {floor}:
        return True
    return False


def request_backoff(callable, init_backoff=1.0, ratio=2.0, max_retries=5, backoff_if=is_backoff_status_code):
    response = callable()
    for attempt in range(max_retries + 1):
        if attempt == max_retries:
            return response
        if backoff_if(response.status_code):
            delay = init_backoff * (ratio**attempt)
            time.sleep(delay)
            response = callable()
        else:
            break
    return response


def embed(url):
    return request_backoff(lambda: httpx.post(url){passes})
"""


def test_a_predicate_given_as_a_parameter_default_is_read():
    # nomic's ``request_backoff``: no caller passes ``backoff_if``, so the default decides
    codes = {f.code for f in _findings(NOMIC.format(floor=500, passes=""))}
    assert "RTY203" in codes and "RTY302" not in codes
    assert any("404" in m for m in _rty302(NOMIC.format(floor=404, passes="")))


def test_a_predicate_parameter_a_caller_passes_stays_unknown():
    source = NOMIC.format(floor=404, passes=", backoff_if=lambda code: code == 503")
    assert _rty302(source) == []


@pytest.mark.parametrize("test", ["response.status_code != 200", "response.status_code not in (200, 204)",
                                  "not 200 <= response.status_code < 300"])
def test_the_sleep_under_a_not_ok_test_is_the_status_paths_delay(test):
    # ``!= 200`` is taken by a 204 as well, but it is the way the failures go: its sleep is the
    # delay before the next attempt, not the wait of a success branch.
    source = f"""
    def fetch(url):
        for attempt in range(5):
            response = httpx.get(url)
            if {test}:
                time.sleep(2)
                continue
            return response
    """
    codes = {f.code for f in _findings(source)}
    assert "RTY202" in codes and "RTY201" not in codes, codes
