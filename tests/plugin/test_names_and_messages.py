"""One name per idea, and messages that cite only what ships (issue 14)."""

import pathlib
import re

import pytest

import pytest_retry_check
from pytest_retry_check import (
    DeadLetters,
    RetryCheckFailed,
    assert_dispersed,
    dispersion_of,
    herd_check,
    measure_dispersion,
)
from pytest_retry_check.dispersion import ALIASES, DispersionReport, failure_message

from .herd_clients import make_client

pytest_plugins = ["pytester"]

PACKAGE = pathlib.Path(pytest_retry_check.__file__).parent
DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "plugin.md"
# Documents that live beside the project, not in what a user installs.
OUTSIDE = re.compile(r"RETRY_DOCTRINE|DESIGN_NOTES|\b[A-Z_]+\.md\b")


def test_the_herd_check_has_one_name_and_the_old_ones_are_aliases():
    lockstep = make_client("none")
    with pytest.raises(RetryCheckFailed, match="^herd check failed"):
        herd_check(lockstep, clients=30)
    report = herd_check.measure(lockstep, clients=30)
    assert isinstance(report, DispersionReport) and not report.passed
    assert herd_check.measure(report.schedules).problems == report.problems  # runs collected by hand
    with pytest.raises(RetryCheckFailed, match="^herd check failed"):
        herd_check.of(report.schedules)  # the check of runs collected by hand asserts, like herd_check(client)
    # the earlier names do the same thing, and say they are aliases
    assert measure_dispersion(lockstep, clients=30).problems == report.problems
    assert dispersion_of(report.schedules).problems == report.problems
    with pytest.raises(RetryCheckFailed, match="^herd check failed"):
        assert_dispersed(lockstep, clients=30)
    assert set(ALIASES) == {"assert_dispersed", "measure_dispersion", "dispersion_of"}
    for alias, canonical in ALIASES.items():
        assert getattr(pytest_retry_check, alias).__doc__.startswith(f"Alias of ``{canonical}(")
        assert f"`{alias}`" in DOC.read_text() and "alias" in DOC.read_text()


def test_the_fixture_and_the_function_share_the_name(pytester):
    pytester.makepyfile(
        """
        from pytest_retry_check import herd_check as the_function

        def test_it(herd_check):
            assert type(herd_check) is type(the_function)
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:hypothesispytest", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=1)


def test_messages_cite_nothing_outside_the_package():
    herd = failure_message(measure_dispersion(make_client("none"), clients=30))
    dlq = DeadLetters()
    dlq.send({"order": 1})
    with pytest.raises(RetryCheckFailed) as dead:
        dlq.assert_context()
    for message in (herd, str(dead.value)):
        assert not OUTSIDE.search(message), message
    for path in sorted(PACKAGE.glob("*.py")):
        found = OUTSIDE.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.name} cites {found}"


def test_the_docs_cite_nothing_outside_what_ships():
    found = OUTSIDE.findall(DOC.read_text(encoding="utf-8"))
    assert not found, found


def test_the_default_virtual_start_is_documented():
    from pytest_retry_check.timeline import DEFAULT_START

    text = DOC.read_text(encoding="utf-8")
    assert DEFAULT_START.strftime("%Y-%m-%dT%H:%M:%SZ") in text
