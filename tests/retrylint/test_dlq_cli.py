"""The DLQ rules end to end: ``retrylint check`` on each rule's first INVALID case, as files."""

from __future__ import annotations

import json
import textwrap

import pytest

from retrylint.rules import BY_CODE

from .conftest import codes

DLQ_RULES = ("RTY401", "RTY402", "RTY403")


def _write(project, code: str, noqa_line: int = 0) -> None:
    lines = textwrap.dedent(BY_CODE[code].INVALID[0].code).split("\n")
    if noqa_line:
        lines[noqa_line - 1] += f"  # noqa: {code}"
    (project.root / "service.py").write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.parametrize("code", DLQ_RULES)
def test_reported_at_the_case_line(project, run, code):
    _write(project, code)
    case = BY_CODE[code].INVALID[0]
    exit_code, out, _ = run("check", "--select", code, "service.py")
    assert exit_code == 1 and codes(out) == [code]
    assert f"service.py:{case.line}:" in out and case.message in out


@pytest.mark.parametrize("code", DLQ_RULES)
def test_noqa_on_the_reported_line(project, run, code):
    _write(project, code, noqa_line=BY_CODE[code].INVALID[0].line)
    exit_code, out, _ = run("check", "--select", code, "service.py")
    assert exit_code == 0, out


def test_noqa_on_the_publish_call_of_a_replay_loop(project, run):
    # RTY403 reports the loop header (line 6); the publish inside the loop (line 11) is a header line too.
    _write(project, "RTY403", noqa_line=11)
    assert codes(run("check", "--select", "RTY403", "service.py")[1]) == []


def test_json_output_and_rule_docs(project, run):
    _write(project, "RTY403")
    _, out, _ = run("check", "--select", "RTY403", "--output-format", "json", "service.py")
    [finding] = json.loads(out)
    assert finding["code"] == "RTY403" and finding["location"] == {"row": 6, "column": 5}
    assert finding["end_location"] == {"row": 6, "column": 15}  # `while True`
    _, out, _ = run("rule", "RTY402")
    assert "dead-letter-without-context" in out and "## Why is this bad?" in out
    _, out, _ = run("rule", "--all")
    assert all(code in out for code in DLQ_RULES)
