"""An exponential delay with a constant added or taken away (``0.1 * (2 ** n - 1)``,
``2 ** n + 1``) keeps the constant: the schedule ``explain`` prints is what the code waits,
not ``0.1 * 2 ** n``."""

from __future__ import annotations

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.model import DelayKind
from retrylint.rules import RULES
from retrylint.schedule import nominal_delay

CODES = tuple(rule.code for rule in RULES)

LOOP = """
import time, requests

def get(url):
    for attempt in range(6):
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            time.sleep({delay})
    raise RuntimeError(url)
"""


def _delay(expression: str):
    report = check_source(LOOP.format(delay=expression), "client.py", settings_with(CODES), want_policies=True)
    (policy,) = report.policies
    return policy.delay


@pytest.mark.parametrize("expression, expected", [
    ("0.1 * (2 ** attempt - 1)", [0.0, 0.1, 0.3, 0.7, 1.5]),
    ("(2 ** attempt - 1) * 0.1", [0.0, 0.1, 0.3, 0.7, 1.5]),
    ("2 ** attempt + 1", [2.0, 3.0, 5.0, 9.0, 17.0]),
    ("min(10, 2 ** attempt + 1)", [2.0, 3.0, 5.0, 9.0, 10.0]),
    ("2 ** attempt", [1.0, 2.0, 4.0, 8.0, 16.0]),
])
def test_the_schedule_keeps_the_constant(expression, expected):
    delay = _delay(expression)
    assert delay.kind is DelayKind.EXPONENTIAL
    assert [round(float(nominal_delay(delay, k)), 6) for k in range(1, 6)] == expected


def test_explain_shows_it(project, run):
    project.write("client.py", LOOP.format(delay="0.1 * (2 ** attempt - 1)"))
    code, out, _ = run("explain", "client.py:4")
    assert code == 0
    assert "−0.1 s each" in out and "0, 0.1, 0.3, 0.7, 1.5 s = 2.6 s" in out
