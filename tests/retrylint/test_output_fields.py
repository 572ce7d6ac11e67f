"""JSON output with ruff's rule-name and severity fields, and --statistics in JSON."""

from __future__ import annotations

import json

import pytest

from .conftest import FIXED_FOREVER


def test_json_findings_carry_the_rule_name_and_a_severity(project, run):
    project.write("app.py", FIXED_FOREVER)
    project.write("broken.py", "def f(:\n")
    _, out, _ = run("check", "--output-format", "json", ".")
    items = json.loads(out)
    by_code = {item["code"]: item for item in items}
    assert by_code["RTY101"]["name"] == "unbounded-retry-loop"
    assert by_code["RTY202"]["name"] == "fixed-delay-retry"
    assert by_code["RTY101"]["severity"] == "warning"
    assert by_code["RTY001"]["severity"] == "error"


def test_statistics_honour_the_json_output_format(project, run):
    project.write("app.py", FIXED_FOREVER)
    project.write("other.py", FIXED_FOREVER)
    code, out, _ = run("check", "--statistics", "--output-format", "json", ".")
    assert code == 1
    assert json.loads(out) == [
        {"code": "RTY101", "name": "unbounded-retry-loop", "count": 2, "fixable": False, "fixable_count": 0},
        {"code": "RTY202", "name": "fixed-delay-retry", "count": 2, "fixable": False, "fixable_count": 0},
    ]


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_statistics_in_a_format_that_cannot_hold_them_is_a_usage_error(project, run, fmt):
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "--statistics", "--output-format", fmt, "app.py")
    assert code == 2 and out == ""
    assert "--statistics prints text or json" in err
