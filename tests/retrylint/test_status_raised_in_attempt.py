"""A failed HTTP status raised inside the attempt and caught broadly (issue 12, helpers): RTY302.

``raise_for_status()`` in the try, or in a helper of the module the attempt calls, turns every
4xx into an exception; ``except Exception`` (or ``except requests.RequestException``) around it
retries them all with no look at the status. A helper that raises an error of the package's own
for a status that is not a success counts for a catch-all handler; one that raises for 5xx only
does not, and neither does a handler that cannot catch what is raised.
"""

from __future__ import annotations

import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)


def _codes(source: str):
    source = textwrap.dedent(source).lstrip("\n")
    compile(source, "case.py", "exec")
    report = check_source(source, "case.py", settings_with(CODES))
    assert report.error is None, report.error
    return {(f.code, f.location.line) for f in report.findings}


def _rty302_lines(source: str):
    return sorted(line for code, line in _codes(source) if code == "RTY302")


DIRECT = """
import time
import requests


def publish(endpoint, payload):
    for attempt in range(3):
        try:
            reply = requests.post(endpoint, json=payload, timeout=5)
            reply.raise_for_status()
            return reply.json()
        {handler}
            time.sleep(attempt + 1)
    raise RuntimeError(endpoint)
"""


@pytest.mark.parametrize("handler", ["except Exception:", "except:", "except BaseException:",
                                     "except requests.RequestException:"])
def test_a_broad_handler_around_raise_for_status_retries_4xx(handler):
    assert _rty302_lines(DIRECT.format(handler=handler)) == [11]


def test_the_catch_all_is_rty301_as_well_and_the_message_says_why_302():
    source = textwrap.dedent(DIRECT.format(handler="except Exception:")).lstrip("\n")
    findings = check_source(source, "case.py", settings_with(CODES)).findings
    assert {f.code for f in findings} >= {"RTY301", "RTY302"}
    (message,) = [f.message for f in findings if f.code == "RTY302"]
    assert "includes the error a failed HTTP status raises" in message


def test_a_status_filter_before_the_catch_all_is_an_exit():
    source = DIRECT.format(handler="""except requests.HTTPError as e:
            if e.response.status_code < 500:
                raise
            time.sleep(attempt + 1)
        except Exception:""")
    assert _rty302_lines(source) == []


def test_a_catch_all_around_an_attempt_that_raises_no_status_is_only_rty301():
    source = DIRECT.format(handler="except Exception:").replace("            reply.raise_for_status()\n", "")
    assert _rty302_lines(source) == []
    assert ("RTY301", 10) in _codes(source)  # one line up: the removed call


HELPER = """
import time
import requests


class Client:
    def _get_data(self, url):
        response = self.session.get(url, timeout=10)
        {check}
        return response.json()

    def fetch(self, url):
        for attempt in range(3):
            try:
                return self._get_data(url)
            {handler}
                time.sleep(attempt + 1)
        raise RuntimeError(url)
"""

RAISE_FOR_STATUS = "response.raise_for_status()"
OWN_ERROR = "if response.status_code != 200:\n            raise ApiError(response.text)"
OWN_ERROR_4XX = "if response.status_code >= 400:\n            raise ApiError(response.text)"
ONLY_5XX = "if response.status_code >= 500:\n            raise ApiError(response.text)"
WRAPPED = ("try:\n            response.raise_for_status()\n"
           "        except requests.HTTPError as e:\n            raise ApiError(str(e)) from e")


@pytest.mark.parametrize("check, handler, fires", [
    (RAISE_FOR_STATUS, "except Exception:", True),
    (RAISE_FOR_STATUS, "except requests.exceptions.RequestException:", True),
    (OWN_ERROR, "except Exception:", True),
    (OWN_ERROR_4XX, "except Exception:", True),
    (WRAPPED, "except Exception:", True),
    (WRAPPED, "except ApiError:", False),  # not a catch-all: which statuses it holds is not read
    (WRAPPED, "except requests.RequestException:", False),  # the HTTP error never leaves the helper
    # the VALID twins: 4xx never raise, or the handler cannot catch what is raised
    (ONLY_5XX, "except Exception:", False),
    (OWN_ERROR, "except requests.RequestException:", False),
    ("pass", "except Exception:", False),
])
def test_a_helper_of_the_module_that_raises_for_a_status(check, handler, fires):
    source = "class ApiError(Exception):\n    pass\n\n" + textwrap.dedent(HELPER).format(check=check, handler=handler)
    lines = _rty302_lines(source)
    assert bool(lines) is fires, lines


def test_recursion_around_raise_for_status_with_a_catch_all():
    source = """
import time
import requests


def fetch(url, retries=3):
    try:
        response = requests.get(url, timeout=10)
        response.raise_for_status()
        return response
    except Exception:
        if retries <= 0:
            raise
        time.sleep(4 - retries)
        return fetch(url, retries - 1)
"""
    assert _rty302_lines(source) == [10]


def test_sync_and_async_twins_alike():
    sync = """
import time
import httpx


def fetch(client, url):
    for attempt in range(3):
        try:
            response = client.get(url)
            response.raise_for_status()
            return response
        except Exception:
            time.sleep(attempt + 1)
    raise RuntimeError(url)
"""
    asynchronous = (sync.replace("import time", "import asyncio").replace("def fetch", "async def fetch")
                    .replace("client.get(", "await client.get(").replace("time.sleep(", "await asyncio.sleep("))
    assert _rty302_lines(sync) == _rty302_lines(asynchronous) == [11]


# ---------------------------------------------------------------- across modules

HTTP_HELPERS = """
import requests


def get_json(url):
    response = requests.get(url, timeout=10)
    response.raise_for_status()
    return response.json()


def get_json_5xx(url):
    response = requests.get(url, timeout=10)
    if response.status_code >= 500:
        raise RuntimeError(response.text)
    return response.json()


class BaseClient:
    def _request(self, url):
        response = requests.get(url, timeout=10)
        if response.status_code not in (200, 201):
            raise RuntimeError(response.text)
        return response
"""

CALLER = """
import time

from .http import BaseClient, get_json, get_json_5xx


def fetch(url):
    for attempt in range(3):
        try:
            return {call}
        except Exception:
            time.sleep(attempt + 1)
    raise RuntimeError(url)


class Client(BaseClient):
    def fetch(self, url):
        for attempt in range(3):
            try:
                return self._request(url)
            except Exception:
                time.sleep(attempt + 1)
        raise RuntimeError(url)
"""


def _across(project, run, call):
    import json

    project.write("pkg/__init__.py", "")
    project.write("pkg/http.py", HTTP_HELPERS)
    project.write("pkg/client.py", CALLER.format(call=call))
    code, out, err = run("check", "--no-cache", "--select", "RTY302", "--output-format", "json", "pkg")
    assert code in (0, 1), err
    return sorted(f["location"]["row"] for f in json.loads(out) if f["code"] == "RTY302")


def test_a_helper_of_another_module_and_a_base_class_method_raise_for_status(project, run):
    # line 10: get_json calls raise_for_status(); line 20: BaseClient._request raises for 4xx
    assert _across(project, run, "get_json(url)") == [10, 20]


def test_a_helper_of_another_module_raising_for_5xx_only_fires_nothing(project, run):
    assert _across(project, run, "get_json_5xx(url)") == [20]


def test_explain_says_where_the_status_is_raised(project, run):
    assert _across(project, run, "get_json(url)") == [10, 20]
    code, out, err = run("explain", "pkg/client.py:7")
    assert code == 0, err
    assert "`get_json` calls raise_for_status(), pkg/http.py:4" in out
    code, out, err = run("explain", "pkg/client.py:17")
    assert "`_request` raises its own error for 4xx, pkg/http.py:18" in out


def test_the_cache_misses_when_the_helper_module_changes(project, run):
    import json

    assert _across(project, run, "get_json(url)") == [10, 20]
    code, out, _ = run("check", "--select", "RTY302", "--output-format", "json", "pkg")  # cached
    assert sorted(f["location"]["row"] for f in json.loads(out)) == [10, 20]
    # the helper stops raising for a status: client.py itself is unchanged
    project.write("pkg/http.py", HTTP_HELPERS.replace("    response.raise_for_status()\n", ""))
    code, out, _ = run("check", "--select", "RTY302", "--output-format", "json", "pkg")
    assert sorted(f["location"]["row"] for f in json.loads(out)) == [20]


def test_a_branch_that_sets_the_give_up_before_raising_is_an_exit():
    # geonode's thumbnail tiles: a status above 400 spends the attempts, then raises
    source = """
import time
import requests


def tile(url, max_retries=3):
    retries = 0
    for _ in range(max_retries):
        try:
            resp = requests.get(url, timeout=10)
            if resp.status_code >= 400:
                retries = max_retries - 1
                resp.raise_for_status()
            return resp.content
        except Exception:
            if retries + 1 == max_retries:
                raise
            retries += 1
            time.sleep(2)
"""
    found = {(code, line) for code, line in _codes(source)}
    # neither the status test (line 10) nor the except (line 14) retries a 4xx, and the branch is
    # a permanent-error exit before the catch-all
    assert not {("RTY302", 10), ("RTY302", 14), ("RTY301", 14)} & found, found
    # the twin: the branch sets something the handler never reads; the 4xx are retried
    twin = source.replace("retries = max_retries - 1", "reason = resp.reason")
    assert {("RTY302", 10), ("RTY302", 14), ("RTY301", 14)} <= _codes(twin)
