"""Issue 15, audit report 15: fixes that never break the program, noqa directives that name
rules, files that could not be analysed, and what the CLI promises."""

from __future__ import annotations

import ast

import pytest

from retrylint.engine import settings_with
from retrylint.rules import RULES
from retrylint.runner import fix_source

ALL = settings_with(tuple(rule.code for rule in RULES))

LOOP = """
def publish(client, event):
    delay = 1.0
    for _ in range(5):
        try:
            return client.publish(event)
        except ConnectionError:
            time.sleep(delay)
            delay *= 2
    raise RuntimeError("publish failed")
"""


def fixed(source: str) -> str:
    return fix_source(source, "case.py", ALL, True).fixed


# -- report item 2: `random` bound at module level to something else -------------------------

SHADOWS = [
    "random = object()\n",
    "def random():\n    return 4\n",
    "class random:\n    pass\n",
    "from x import random\n",
    "import numpy.random as random\n",
    "if True:\n    random = 3\n",
    "for random in []:\n    pass\n",
    "try:\n    pass\nexcept OSError as random:\n    pass\n",
    "with open('f') as random:\n    pass\n",
    "def seed():\n    global random\n    random = 4\n",
]


@pytest.mark.parametrize("imported", ["", "import random\n"])
@pytest.mark.parametrize("after", [True, False])
@pytest.mark.parametrize("shadow", SHADOWS)
def test_random_uniform_is_never_written_where_random_is_bound_at_module_level(shadow, after, imported):
    head = imported + "import time\n\n"
    source = head + (LOOP + "\n\n" + shadow if after else shadow + "\n\n" + LOOP)
    out = fixed(source)
    assert "random.uniform" not in out, out
    assert out == source  # no fix is offered there (and no import is added)


def test_an_existing_alias_of_the_random_module_is_used_when_random_is_taken():
    source = "import random as rng\nimport time\n\nrandom = 3\n\n" + LOOP
    out = fixed(source)
    assert "time.sleep(rng.uniform(0, delay))" in out
    assert out.count("import random") == 1
    assert "random.uniform" not in out.replace("rng.uniform", "")


def test_an_alias_rebound_at_module_level_is_not_used_either():
    source = "import random as rng\nimport time\n\n" + LOOP + "\n\nrng = None\n"
    assert fixed(source) == source


def test_the_fix_still_applies_when_random_is_only_the_module():
    source = "import time\n\n" + LOOP + "\n\ndef other(random):\n    return random\n"
    out = fixed(source)
    assert "time.sleep(random.uniform(0, delay))" in out
    ast.parse(out)


# -- report item 4: noqa directives that name no code suppress nothing, and say so ------------

FIXED_FOREVER = """\
import time


def fetch(call):
    while True:
        try:
            return call()
        except ConnectionError:
            time.sleep(5)
"""


def found(out: str):
    import re

    return re.findall(r":\d+:\d+: (RTY\d{3}) ", out)


@pytest.mark.parametrize("directive, hint", [
    ("# noqa: RTY", "`RTY` is a prefix, not a code"),
    ("# noqa: rty", "`rty` is a prefix, not a code"),
    ("# noqa: fixed-delay-retry", "`fixed-delay-retry` is the name of RTY202"),
    ("# noqa: immediate-retry", "`immediate-retry` is the name of RTY201"),
    ("# noqa:", ""),
])
def test_a_noqa_naming_no_code_is_invalid_warned_about_and_suppresses_nothing(project, run, directive, hint):
    project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", f"time.sleep(5)  {directive}"))
    code, out, err = run("check", "--no-cache", "app.py")
    assert found(out) == ["RTY101", "RTY202"] and code == 1
    assert f"retrylint: warning: app.py:9: invalid noqa directive `{directive}`: expected rule codes" in err
    assert "it suppresses nothing" in err and hint in err


@pytest.mark.parametrize("directive", ["# retrylint: noqa: immediate-retry", "# retrylint: noqa: RTY",
                                       "# retrylint: noqa: fixed-delay-retry"])
def test_a_file_level_noqa_naming_no_code_suppresses_nothing(project, run, directive):
    project.write("app.py", directive + "\n" + FIXED_FOREVER)
    code, out, err = run("check", "--no-cache", "app.py")
    assert found(out) == ["RTY101", "RTY202"] and code == 1
    assert f"retrylint: warning: app.py:1: invalid `# retrylint: noqa` directive `{directive}`" in err


def test_valid_directives_still_suppress(project, run):
    for directive in ("# noqa", "# noqa: RTY202", "# NOQA: rty202", "# noqa: E501,RTY202", "# noqa : RTY202",
                      "# noqa: fixed-delay-retry  # noqa: RTY202"):
        project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", f"time.sleep(5)  {directive}"))
        code, out, err = run("check", "--no-cache", "app.py")
        assert found(out) == ["RTY101"], directive
        assert "invalid" not in err, directive
    project.write("app.py", "# retrylint: noqa: RTY101, RTY202\n" + FIXED_FOREVER)
    assert run("check", "--no-cache", "app.py")[0] == 0


def test_add_noqa_after_an_invalid_directive_adds_a_valid_one(project, run):
    path = project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa: fixed-delay-retry"))
    run("check", "--no-cache", "--add-noqa", "app.py")
    assert "time.sleep(5)  # noqa: fixed-delay-retry  # noqa: RTY202\n" in path.read_text()
    code, out, err = run("check", "--no-cache", "app.py")
    assert code == 0, out


def _flake8(cwd, *args):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--format=%(path)s:%(row)d:%(code)s",
                           "--select", "RTY", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.stdout.splitlines(), done.stderr


@pytest.mark.parametrize("directive", ["# noqa: RTY20", "# noqa: RTY", "# noqa: fixed-delay-retry"])
def test_the_flake8_plugin_reads_noqa_as_retrylint_check_does(project, run, directive):
    pytest.importorskip("flake8")
    project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", f"time.sleep(5)  {directive}"))
    lines, err = _flake8(project.root, "app.py")
    assert lines == ["app.py:5:RTY101", "app.py:9:RTY202"]
    assert "retrylint: warning: app.py:9:" in err
    code, out, _ = run("check", "--no-cache", "app.py")
    assert found(out) == ["RTY101", "RTY202"]


def test_the_flake8_plugin_still_honours_exact_codes_and_flake8s_own_file_noqa(project):
    pytest.importorskip("flake8")
    project.write("app.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa: RTY202"))
    assert _flake8(project.root, "app.py")[0] == ["app.py:5:RTY101"]
    project.write("app.py", "# flake8: noqa\n" + FIXED_FOREVER)
    assert _flake8(project.root, "app.py")[0] == []
