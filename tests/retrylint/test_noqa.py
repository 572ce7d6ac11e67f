"""Suppression comments."""

from __future__ import annotations

from .conftest import FIXED_FOREVER, codes

MULTILINE_HEADER = """
import time
def fetch(call, retry_intervals):
    for attempt in range(  # noqa: RTY202
        5
    ):
        try:
            return call()
        except ConnectionError:
            time.sleep(5)
"""


def test_noqa_with_code_on_the_reported_line(project, run):
    project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa: RTY202"))
    assert codes(run("check", "app.py")[1]) == ["RTY101"]


def test_noqa_for_another_code_does_not_suppress(project, run):
    project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa: RTY203"))
    assert codes(run("check", "app.py")[1]) == ["RTY101", "RTY202"]


def test_bare_noqa_suppresses_everything_on_the_line(project, run):
    project.write("app.py", FIXED_FOREVER.replace("while True:", "while True:  # noqa"))
    # RTY101 is reported on the header; RTY202 on the sleep, but the header's noqa covers the site.
    assert codes(run("check", "app.py")[1]) == []


def test_noqa_on_any_line_of_a_multiline_header(project, run):
    project.write("app.py", MULTILINE_HEADER)
    assert codes(run("check", "app.py")[1]) == []
    project.write("app.py", MULTILINE_HEADER.replace("  # noqa: RTY202", ""))
    assert codes(run("check", "app.py")[1]) == ["RTY202"]


def test_noqa_inside_a_string_does_not_count(project, run):
    source = FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5); note = '# noqa: RTY202'")
    project.write("app.py", source)
    assert "RTY202" in codes(run("check", "app.py")[1])


def test_file_level_noqa(project, run):
    project.write("app.py", "# retrylint: noqa: RTY101\n" + FIXED_FOREVER)
    assert codes(run("check", "app.py")[1]) == ["RTY202"]
    project.write("app.py", "# retrylint: noqa\n" + FIXED_FOREVER)
    assert codes(run("check", "app.py")[1]) == []
