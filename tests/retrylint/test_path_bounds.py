"""A bound bounds only the path it sits on (issue 12, "retries split across paths").

pdpyras's ``PDSession.request`` and chargebee's ``_process_response`` count network errors (or
5xx) against a limit, but the branch for HTTP 429 sleeps the server's ``Retry-After`` and goes
round with no count at all: while the server keeps answering 429 the loop never ends (RTY101).
A limit inside an ``except`` handler bounds that handler's retries; a limit inside the status
branch bounds the status retries; a limit on the shared path (the loop head, the code before the
attempt) bounds them all. Each case runs sync and async.
"""

from __future__ import annotations

import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)

SYNC = {"def": "def", "aw": "", "sleep": "time.sleep"}
ASYNC = {"def": "async def", "aw": "await ", "sleep": "await asyncio.sleep"}

UNCOUNTED_429 = """
import asyncio, random, time
import httpx


{def} fetch(client, url, max_attempts=3):
    attempts = 0
    while True:
        try:
            response = {aw}client.get(url, timeout=10)
        except httpx.TransportError:
            attempts += 1
            if attempts >= max_attempts:
                raise
            {sleep}(random.uniform(0, 2 ** attempts))
            continue
        if response.status_code == 429:
            {sleep}(float(response.headers.get("Retry-After", 5)))
            continue
        return response
"""

COUNTED_429 = UNCOUNTED_429.replace(
    "        if response.status_code == 429:\n",
    "        if response.status_code == 429:\n"
    "            attempts += 1\n"
    "            if attempts >= max_attempts:\n"
    "                raise RuntimeError(url)\n",
)

SHARED_LIMIT = UNCOUNTED_429.replace(
    "    while True:\n        try:\n",
    "    while True:\n        attempts += 1\n        if attempts > 10:\n            raise RuntimeError(url)\n        try:\n",
)

STATUS_ONLY_COUNTED = """
import asyncio, random, time
import httpx


{def} fetch(client, url):
    attempts = 0
    while True:
        response = {aw}client.get(url, timeout=10)
        if response.status_code in (429, 503):
            attempts += 1
            if attempts > 5:
                raise RuntimeError(url)
            {sleep}(random.uniform(0, 2 ** attempts))
            continue
        return response
"""


def _codes(source: str, flavour: dict):
    text = textwrap.dedent(source).format(**flavour)
    report = check_source(text, "case.py", settings_with(CODES))
    assert report.error is None, report.error
    return {f.code for f in report.findings}


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_status_branch_with_no_count_retries_forever(flavour):
    assert "RTY101" in _codes(UNCOUNTED_429, flavour)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("source", [COUNTED_429, SHARED_LIMIT, STATUS_ONLY_COUNTED],
                         ids=["counted-in-the-branch", "limit-on-the-shared-path", "status-loop-counted"])
def test_a_limit_on_the_status_path_bounds_it(source, flavour):
    assert source != UNCOUNTED_429
    assert "RTY101" not in _codes(source, flavour)
