"""Every rule's embedded VALID/INVALID cases, run through the whole engine."""

from __future__ import annotations

import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

ALL_CODES = tuple(rule.code for rule in RULES)


def _findings(code: str, rule_code: str):
    report = check_source(textwrap.dedent(code), "case.py", settings_with(ALL_CODES))
    assert report.error is None, report.error
    return [f for f in report.findings if f.code == rule_code]


def _cases(kind: str):
    for rule in RULES:
        for index, case in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, case, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize("rule, case", list(_cases("VALID")))
def test_valid_case_is_silent(rule, case):
    found = _findings(case.code, rule.code)
    assert not found, f"{rule.code} fired on a VALID case ({case.why}): {[(f.location.line, f.message) for f in found]}"


@pytest.mark.parametrize("rule, case", list(_cases("INVALID")))
def test_invalid_case_is_reported(rule, case):
    found = _findings(case.code, rule.code)
    assert found, f"{rule.code} did not fire on an INVALID case"
    if case.line is not None:
        assert case.line in [f.location.line for f in found], [(f.location.line, f.message) for f in found]
    if case.message is not None:
        assert any(case.message in f.message for f in found), [f.message for f in found]


@pytest.mark.parametrize("rule", [r for r in RULES])
def test_rule_has_enough_cases_and_docs(rule):
    assert len(rule.VALID) >= 8, f"{rule.code} needs at least 8 VALID cases"
    assert len(rule.INVALID) >= 4
    docs = rule.docs()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in docs, f"{rule.code} docs lack {heading!r}"
