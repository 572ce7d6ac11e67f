"""Fuzzing the engine with generated programs: it never raises and never reports an internal error.

hypothesmith writes programs from CPython's grammar (``from_grammar``) and from libcst's node
types (``from_node``). Each is checked with every rule enabled, with and without narrowing (which
skips files that cannot hold a retry site, so most generated programs would never reach the
extractors). The wrapped variants put the generated code inside a retry loop, so the loop,
delay, exception and bound extractors have to make sense of whatever it is.

A program the engine rejects is fine (RTY001, or a "could not analyse" notice); raising, or
returning ``report.error``, is not.
"""

from __future__ import annotations

import textwrap

import hypothesmith
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from retrylint.engine import check_source
from retrylint.rules import RULES
from retrylint.settings import Settings

#: Generated programs say odd things (``1()``): CPython's SyntaxWarnings are not ours to report.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

ALL_RULES = Settings(enabled=frozenset(rule.code for rule in RULES))

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

#: Retry shells; ``{body}`` is the generated code, indented to the marker's column.
SHELLS = {
    "while-true-try": (
        "import time\n"
        "def _fuzz():\n"
        "    while True:\n"
        "        try:\n"
        "{body:12}\n"
        "            return fetch()\n"
        "        except Exception:\n"
        "            time.sleep(1)\n"
    ),
    "while-true-handler": (
        "import time, requests\n"
        "def _fuzz(url):\n"
        "    while True:\n"
        "        try:\n"
        "            return requests.get(url)\n"
        "        except Exception as exc:\n"
        "{body:12}\n"
        "            time.sleep(1)\n"
    ),
    "for-range-loop-body": (
        "import random, time\n"
        "async def _fuzz(delay=1):\n"
        "    for attempt in range(5):\n"
        "{body:8}\n"
        "        try:\n"
        "            return await call()\n"
        "        except (OSError, ValueError):\n"
        "            time.sleep(delay * 2 ** attempt)\n"
    ),
    "module-level": (
        "import time\n"
        "while True:\n"
        "    try:\n"
        "{body:8}\n"
        "        connect()\n"
        "        break\n"
        "    except Exception:\n"
        "        time.sleep(5)\n"
    ),
}


def wrap(shell: str, code: str) -> str:
    """``code`` placed in ``shell`` at the marker's indentation (a ``pass`` when empty)."""
    template = SHELLS[shell]
    marker = next(line for line in template.splitlines() if line.startswith("{body"))
    width = int(marker[len("{body:"):-1])
    body = textwrap.indent(code if code.strip() else "pass\n", " " * width)
    if not body.endswith("\n"):
        body += "\n"
    return template.replace(marker + "\n", body)


def assert_never_fails(source: str) -> None:
    for narrowing in (True, False):
        report = check_source(source, "fuzz.py", ALL_RULES, narrowing=narrowing)
        assert report.error is None, (narrowing, report.error, source)
        if report.findings and report.findings[0].code == "RTY001":
            assert len(report.findings) == 1, report.findings


def compiles(source: str) -> bool:
    try:
        compile(source, "fuzz.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@FUZZ
@given(hypothesmith.from_grammar())
def test_grammar_programs_never_crash_the_engine(source):
    assert_never_fails(source)


@FUZZ
@given(hypothesmith.from_node())
def test_libcst_node_programs_never_crash_the_engine(source):
    assert_never_fails(source)


@FUZZ
@given(shell=st.sampled_from(sorted(SHELLS)), code=hypothesmith.from_grammar())
@example(shell="while-true-try", code="continue\n")
@example(shell="while-true-handler", code="raise\n")
@example(shell="for-range-loop-body", code="attempt = -1\n")
@example(shell="module-level", code="del time\n")
def test_grammar_programs_inside_a_retry_loop(shell, code):
    source = wrap(shell, code)
    assume(compiles(source))  # a `from __future__` or a `nonlocal` cannot move into a loop
    assert_never_fails(source)


@FUZZ
@given(shell=st.sampled_from(sorted(SHELLS)), code=hypothesmith.from_node())
def test_libcst_node_programs_inside_a_retry_loop(shell, code):
    source = wrap(shell, code)
    assume(compiles(source))
    assert_never_fails(source)


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_every_shell_is_a_retry_site_the_engine_reports(shell):
    # Guards the fuzz tests above: if a shell stopped being a retry site, they would fuzz
    # nothing but the parser.
    source = wrap(shell, "x = 1\n")
    assert compiles(source)
    report = check_source(source, "shell.py", ALL_RULES)
    assert report.error is None and report.notice is None
    assert report.findings, source
    assert all(f.code != "RTY001" for f in report.findings)
