"""``functools.partial`` of a sleep (issue 12, values that are not local): ``nap =
functools.partial(time.sleep, 2)`` bound once, then ``nap()`` in the handler, waits 2 s; the
delay may also be given at the call (``nap = partial(asyncio.sleep)``; ``await nap(3)``)."""

from __future__ import annotations

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)

LOOP = """
def get(url):
    while True:
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            {wait}
"""


def _findings(source: str):
    report = check_source(source, "client.py", settings_with(CODES))
    assert report.error is None, report.error
    return {f.code: f.message for f in report.findings}


def test_a_partial_of_time_sleep_waits_its_fixed_delay():
    found = _findings("import functools, time, requests\n\nnap = functools.partial(time.sleep, 2)\n"
                      + LOOP.format(wait="nap()"))
    assert "RTY201" not in found
    assert "the same 2 s" in found["RTY202"]


def test_the_delay_may_be_given_at_the_call():
    found = _findings("import asyncio, requests\nfrom functools import partial\n\nnap = partial(asyncio.sleep)\n"
                      + LOOP.format(wait="await nap(seconds=3)").replace("def get", "async def get"))
    assert "the same 3 s" in found["RTY202"]


def test_a_partial_of_something_else_is_no_sleep():
    found = _findings("import functools, time, requests\n\nnap = functools.partial(print, 2)\n"
                      + LOOP.format(wait="nap()"))
    assert "RTY201" in found  # nothing waits: an immediate retry


def test_a_name_bound_twice_is_not_read():
    found = _findings("import functools, time, requests\n\nnap = functools.partial(time.sleep, 2)\n"
                      "nap = functools.partial(time.sleep, 30)\n" + LOOP.format(wait="nap()"))
    assert "the same 2 s" not in found.get("RTY202", "") and "the same 30 s" not in found.get("RTY202", "")
