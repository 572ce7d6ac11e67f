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


# -- report item 8: a file over the budget per file is never "All checks passed!" / exit 0 ------

MANY_SITES = "import time\n" + "".join(f"""
def f{i}(call):
    while True:
        try:
            return call()
        except ConnectionError:
            time.sleep(5)
""" for i in range(3000))

LITERAL_LOOP = ("import time\nimport requests\n\n\ndef send():\n    while True:\n        try:\n"
                "            return requests.post('https://x', json=["
                + ", ".join(str(i) for i in range(200_000)) + "])\n"
                "        except ConnectionError:\n            time.sleep(1)\n")


def test_a_file_over_the_time_budget_alone_exits_1_and_is_never_all_checks_passed(project, run):
    project.write("many.py", MANY_SITES)
    code, out, err = run("check", "--no-cache", "--file-timeout", "2", "many.py")
    assert code == 1
    assert "All checks passed!" not in out
    assert "No errors found in the files checked, but 1 file could not be analysed." in out
    assert "retrylint: warning: many.py: could not be analysed in 2 s" in err
    assert "1 could not be analysed" in err
    # -q still names it (it is why the run exits 1); --exit-zero exits 0 as with findings.
    code, out, err = run("check", "-q", "--no-cache", "--file-timeout", "2", "many.py")
    assert code == 1 and out == ""
    assert err == "retrylint: warning: many.py: could not be analysed in 2 s (the time budget per file: --file-timeout)\n"
    assert run("check", "--exit-zero", "--no-cache", "--file-timeout", "2", "many.py")[0] == 0


def test_a_file_over_the_budget_under_fix_exits_1(project, run):
    path = project.write("many.py", MANY_SITES)
    code, out, err = run("check", "--fix", "--no-cache", "--file-timeout", "2", "many.py")
    assert code == 1 and "All checks passed!" not in out and "could not be analysed" in out
    assert path.read_text() == MANY_SITES


def test_findings_and_a_file_over_the_budget_say_both(project, run):
    project.write("many.py", MANY_SITES)
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "--no-cache", "--file-timeout", "2", "many.py", "app.py")
    assert code == 1 and "Found 2 errors.\n1 file could not be analysed.\n" in out


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the memory budget is RLIMIT_AS")
@pytest.mark.parametrize("megabytes", ["1", "5", "20", "60"])
def test_a_small_memory_budget_gives_the_budget_reason_never_an_import_or_memory_error(project, run, megabytes):
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "--no-cache", "--file-memory", megabytes, "app.py")
    # retrylint's own code and libcst are loaded before the limit: a 10-line file fits.
    assert found(out) == ["RTY101", "RTY202"] and code == 1, err
    assert "Error" not in err and "internal error" not in err
    project.write("literal.py", LITERAL_LOOP)
    code, out, err = run("check", "--no-cache", "--file-memory", megabytes, "literal.py")
    assert err.startswith(f"retrylint: warning: literal.py: could not be analysed within {megabytes} MB of memory "
                          "(the memory budget per file: --file-memory)\n"), err
    assert "nested too deeply" not in err and "MemoryError" not in err and "ImportError" not in err
    assert code == 1 and "All checks passed!" not in out


def test_a_parser_limit_on_valid_code_is_still_a_notice_that_exits_0(project, run):
    # Not a budget: libcst cannot read valid Python; reported, never a finding (README).
    project.write("grammar.py", "def poll():\n    (x): int = 1\n    while True:\n        try:\n            return f()\n"
                                "        except OSError:\n            continue\n")
    code, out, err = run("check", "--no-cache", "grammar.py")
    assert code == 0 and "libcst cannot parse" in err


# -- report item 3 (c, d): `import random` before a def; the project's ruff line-length ---------

def _ruff(*args, cwd, isolated=True):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "ruff", *args, *(["--isolated"] if isolated else []), "--no-cache",
                           "."], cwd=cwd, capture_output=True, text=True)


def _assert_ruff_clean(root, isolated=True):
    checked = _ruff("check", "--select", "F,I", cwd=root, isolated=isolated)
    assert checked.returncode == 0, checked.stdout
    formatted = _ruff("format", "--check", "--diff", cwd=root, isolated=isolated)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


NO_IMPORT = '''def publish(client, event):
    import time

    delay = 1.0
    for _ in range(5):
        try:
            return client.publish(event)
        except ConnectionError:
            time.sleep(delay)
            delay *= 2
    raise RuntimeError("publish failed")
'''


@pytest.mark.parametrize("head", ["", "#!/usr/bin/env python\n", "# Copyright header.\n\n\n",
                                  "class Settings:\n    retries = 5\n\n\n", "@decorate\n"])
def test_import_random_before_a_def_leaves_two_blank_lines(project, run, head):
    pytest.importorskip("ruff")
    source = head + (NO_IMPORT if not head.startswith("@") else "def decorate(f):\n    return f\n\n\n@decorate\n"
                     + NO_IMPORT)
    if head.startswith("@"):
        source = source[len(head):]
    path = project.write("app.py", source)
    _assert_ruff_clean(project.root)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert "time.sleep(random.uniform(0, delay))" in out
    if head.startswith("#!"):
        assert out.startswith("#!/usr/bin/env python\nimport random\n\n\ndef publish")
    elif head.startswith("# Copyright"):
        assert out.startswith("# Copyright header.\n\n\nimport random\n\n\ndef publish")
    else:
        assert out.startswith("import random\n\n\n")
    _assert_ruff_clean(project.root)


TENACITY_97 = '''from tenacity import retry, retry_if_exception_type, wait_random_exponential


@retry(wait=wait_random_exponential(multiplier=1, max=9), retry=retry_if_exception_type(OSError))
def fetch(url):
    return url
'''


def test_the_projects_ruff_line_length_is_honoured_when_a_fix_lengthens_a_line(project, run):
    pytest.importorskip("ruff")
    project.write("pyproject.toml", "[tool.ruff]\nline-length = 120\n")
    path = project.write("app.py", TENACITY_97)
    _assert_ruff_clean(project.root, isolated=False)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert "stop=stop_after_attempt(6)" in out
    assert max(len(line) for line in out.splitlines()) <= 120
    _assert_ruff_clean(project.root, isolated=False)


def test_a_longer_ruff_line_length_keeps_a_call_on_one_line(project, run):
    pytest.importorskip("ruff")
    project.write("ruff.toml", "line-length = 140\n")
    source = TENACITY_97.replace("max=9)", "max=9), reraise=True")
    path = project.write("app.py", source)
    _assert_ruff_clean(project.root, isolated=False)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert "stop=stop_after_attempt(6))\ndef fetch" in out  # 136 columns: fits in 140
    assert "@retry(\n" not in out
    _assert_ruff_clean(project.root, isolated=False)


def test_line_length_is_read_as_ruff_finds_it(tmp_path):
    from retrylint.fixes import _line_length_in

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.ruff]: not ruff's
    (tmp_path / "ruff.toml").write_text("line-length = 100\n")
    assert _line_length_in(str(tmp_path)) == 100
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[tool.ruff]\nline-length = 79\n")
    assert _line_length_in(str(sub)) == 79
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text("[tool.ruff.lint]\nselect = ['F']\n")  # ruff's, no length: 88
    assert _line_length_in(str(other)) == 88


# -- report item 5: JSON fix.edits are the edits --fix applies ---------------------------------

def _apply_json_edits(data: bytes, findings) -> bytes:
    """Apply a JSON report's edits as a tool would: rows and columns over the file's own lines."""
    text = data.decode("utf-8")
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(row, column):
        return len(text) if row - 1 >= len(lines) else starts[row - 1] + column - 1

    spans = sorted(((offset(e["location"]["row"], e["location"]["column"]),
                     offset(e["end_location"]["row"], e["end_location"]["column"]), e["content"])
                    for f in findings if f["fix"] for e in f["fix"]["edits"]), reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text.encode("utf-8")


TENACITY_SWAP = """\
from tenacity import retry, stop_after_attempt, wait_exponential


@retry(stop=stop_after_attempt(5), wait=wait_exponential(min=4, max=10))
def fetch(url):
    return url
"""

SLEEP_LOOP = "import time\n\n" + LOOP


@pytest.mark.parametrize("source", [TENACITY_SWAP, SLEEP_LOOP, TENACITY_SWAP.replace("\n", "\r\n"),
                                    SLEEP_LOOP.replace("\n", "\r\n")],
                         ids=["tenacity", "sleep", "tenacity-crlf", "sleep-crlf"])
def test_json_edits_are_what_fix_writes(project, run, source):
    import json

    path = project.root / "app.py"
    path.write_bytes(source.encode())
    code, out, err = run("check", "--no-cache", "--output-format", "json", "app.py")
    findings = [f for f in json.loads(out) if f["fix"]]
    assert len(findings) == 1, out
    by_json = _apply_json_edits(source.encode(), findings)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    assert by_json == path.read_bytes()
    if "tenacity" in source:
        assert b"wait_exponential," not in by_json and b"wait_exponential\r" not in by_json
        assert b"import retry, stop_after_attempt, wait_random_exponential" in by_json
    if "\r\n" in source:
        assert by_json.count(b"\n") == by_json.count(b"\r\n")
        assert all("\n" not in e["content"] or "\r\n" in e["content"]
                   for f in findings for e in f["fix"]["edits"])


def test_json_edits_from_standard_input_are_what_fix_writes(project, run, monkeypatch):
    import io
    import json
    import sys

    source = TENACITY_SWAP.replace("\n", "\r\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode()), newline=""))
    code, out, err = run("check", "--no-cache", "--output-format", "json", "-")
    findings = json.loads(out)
    by_json = _apply_json_edits(source.encode(), findings)
    assert by_json == fix_source(source, "-", ALL, True).fixed.encode()


# -- report item 9 (minor): --output-file folders, --select '', retrylint --bogus --------------

def test_output_file_creates_its_folders(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "--no-cache", "--output-file", "reports/ci/out.json", "--output-format", "json",
                         "app.py")
    assert code == 1 and out == ""
    assert '"code": "RTY202"' in (project.root / "reports" / "ci" / "out.json").read_text()


def test_output_file_that_cannot_be_written_is_one_error(project, run):
    project.write("app.py", FIXED_FOREVER)
    project.write("taken", "a file, not a folder\n")
    code, out, err = run("check", "--no-cache", "--output-file", "taken/out.txt", "app.py")
    assert code == 2 and err.startswith("retrylint: error: cannot write --output-file taken/out.txt")


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
@pytest.mark.parametrize("value", ["", ",", " "])
def test_an_empty_rule_selector_is_an_error(project, run, option, value):
    project.write("app.py", FIXED_FOREVER)
    with pytest.raises(SystemExit) as exit_:
        run("check", "--no-cache", option, value, "app.py")
    assert exit_.value.code == 2


def test_an_empty_select_names_the_selector(project, capsys):
    from retrylint.cli import main

    project.write("app.py", FIXED_FOREVER)
    with pytest.raises(SystemExit):
        main(["check", "--select", "", "app.py"])
    assert "argument --select: unknown rule selector ''" in capsys.readouterr().err


@pytest.mark.parametrize("argv, usage", [
    (["--bogus"], "usage: retrylint [-h]"),
    (["explain", "--bogus"], "usage: retrylint explain"),
    (["explain", "--bogus=3"], "usage: retrylint explain"),
    (["rule", "--bogus"], "usage: retrylint rule"),
    (["check", "--bogus"], "usage: retrylint check"),
])
def test_an_unknown_option_is_named_with_its_commands_usage(capsys, argv, usage):
    from retrylint.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith(usage), err
    assert f"error: unrecognized arguments: {argv[-1]}\n" in err
    assert "the following arguments are required" not in err


@pytest.mark.parametrize("argv, missing", [([], "COMMAND"), (["explain"], "PATH[:LINE[:COL]]"),
                                           (["explain", "--output-f", "json"], "PATH[:LINE[:COL]]")])
def test_a_missing_argument_is_still_named(capsys, argv, missing):
    from retrylint.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert f"error: the following arguments are required: {missing}\n" in capsys.readouterr().err


def test_a_retrylint_toml_with_top_level_keys_and_a_table_is_an_error(project, run):
    project.write("retrylint.toml", 'ignore = ["RTY202"]\n\n[tool.retrylint]\nselect = ["RTY"]\n')
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "--no-cache", "app.py")
    assert code == 2
    assert "retrylint.toml: settings both at the top level ('ignore') and in [tool.retrylint]" in err
    project.write("retrylint.toml", '[tool.retrylint]\nignore = ["RTY202"]\n')
    code, out, err = run("check", "--no-cache", "app.py")
    assert found(out) == ["RTY101"]


# -- report item 9 (minor): comments when a fix removes or replaces an item --------------------

def test_a_removed_argument_takes_the_comment_lines_above_it():
    source = '''import backoff
import requests


@backoff.on_exception(
    backoff.expo,
    requests.ConnectionError,
    max_tries=5,
    # jitter off so the tests are deterministic
    jitter=None,
    max_value=30,
)
def get(url):
    return requests.get(url, timeout=3)
'''
    out = fixed(source)
    assert out == source.replace("    # jitter off so the tests are deterministic\n    jitter=None,\n", "")


def test_a_comment_above_the_previous_argument_stays():
    source = '''import backoff
import requests


@backoff.on_exception(
    backoff.expo,
    requests.ConnectionError,
    # five tries
    max_tries=5,
    jitter=None,
    max_value=30,
)
def get(url):
    return requests.get(url, timeout=3)
'''
    assert fixed(source) == source.replace("    jitter=None,\n", "")


def test_a_renamed_import_keeps_its_comment():
    source = '''from tenacity import (
    retry,
    stop_after_attempt,
    wait_exponential,  # backoff
)


@retry(stop=stop_after_attempt(3), wait=wait_exponential(max=10))
def f():
    pass
'''
    out = fixed(source)
    assert "    wait_random_exponential,  # backoff\n)" in out
    assert "wait_exponential," not in out


# -- report item 3 (a): a name that takes a one-line import past the line length ----------------

LONG_IMPORT = '''from tenacity import retry, retry_if_exception_type, wait_exponential_jitter


@retry(
    wait=wait_exponential_jitter(initial=1, max=20),
    retry=retry_if_exception_type(ConnectionError),
)
def fetch(url):
    return url
'''


def test_an_import_the_fix_takes_past_the_line_length_is_split_as_isort_splits_it(project, run):
    pytest.importorskip("ruff")
    path = project.write("app.py", LONG_IMPORT)
    _assert_ruff_clean(project.root)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert out.startswith("from tenacity import (\n    retry,\n    retry_if_exception_type,\n"
                          "    stop_after_attempt,\n    wait_exponential_jitter,\n)\n")
    assert "    stop=stop_after_attempt(6),\n" in out
    _assert_ruff_clean(project.root)


def test_an_import_that_still_fits_once_the_renamed_name_leaves_stays_on_its_line():
    # 64 columns; adding `, wait_random_exponential` would be 89, but `wait_exponential` goes.
    source = """from tenacity import retry, stop_after_attempt, wait_exponential


@retry(stop=stop_after_attempt(6), wait=wait_exponential(multiplier=1, min=2, max=20))
def fetch(url):
    return url
"""
    out = fixed(source)
    assert out.startswith("from tenacity import retry, stop_after_attempt, wait_random_exponential\n")


def test_a_rename_inside_a_call_too_long_for_one_line_splits_the_outer_call_per_argument(project, run):
    pytest.importorskip("ruff")
    path = project.write("app.py", '''from tenacity import retry, stop_after_attempt, wait_exponential


@retry(stop=stop_after_attempt(5), wait=wait_exponential(max=10), retry=lambda s: True)
def f(): ...
''')
    _assert_ruff_clean(project.root)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert ("@retry(\n    stop=stop_after_attempt(5),\n    wait=wait_random_exponential(max=10),\n"
            "    retry=lambda s: True,\n)\n") in out
    assert "wait=retry(" not in out
    _assert_ruff_clean(project.root)


# -- report item 3 (b): sleep(d) → sleep(random.uniform(0, d)) past the line length -------------

LONG_SLEEP = '''import time


class Provider:
    def make_request(self, method, params):
        for i in range(self.retry_configuration.retries):
            try:
                return self._request(method, params)
            except ConnectionError:
                if i < self.retry_configuration.retries - 1:
                    time.sleep(self.retry_configuration.backoff_factor * 2**i)
                    continue
                raise
'''


@pytest.mark.parametrize("length", [None, 79, 100])
def test_a_jittered_sleep_past_the_line_length_is_split_as_ruff_format_splits_it(project, run, length):
    pytest.importorskip("ruff")
    if length:
        project.write("pyproject.toml", f"[tool.ruff]\nline-length = {length}\n")
    path = project.write("app.py", LONG_SLEEP)
    _assert_ruff_clean(project.root, isolated=False)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert "random.uniform(" in out
    _assert_ruff_clean(project.root, isolated=False)
    if length == 100:
        assert "time.sleep(random.uniform(0, self.retry_configuration.backoff_factor * 2**i))\n" in out
    else:
        assert "time.sleep(\n" in out


SPLIT_SLEEP = '''import time


class Provider:
    def make_request(self, method, params):
        for attempt in range(self.exception_retry_configuration.retries):
            try:
                return self._request(method, params)
            except ConnectionError:
                if attempt < self.exception_retry_configuration.retries - 1:
                    time.sleep(
                        self.exception_retry_configuration.backoff_factor * 2**attempt
                    )
                    continue
                raise
'''


def test_a_jittered_sleep_in_a_call_already_split_is_split_further_as_ruff_format_does(project, run):
    pytest.importorskip("ruff")
    path = project.write("app.py", SPLIT_SLEEP)
    _assert_ruff_clean(project.root)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert ("                    time.sleep(\n                        random.uniform(\n"
            "                            0,\n"
            "                            self.exception_retry_configuration.backoff_factor\n"
            "                            * 2**attempt,\n                        )\n                    )\n") in out
    _assert_ruff_clean(project.root)


def test_import_random_follows_force_sort_within_sections():
    source = "from collections.abc import Iterable\nimport logging\nimport time\n\n" + LOOP + "\n\nX: Iterable = ()\n"
    out = fixed(source)
    assert out.startswith("from collections.abc import Iterable\nimport logging\nimport random\nimport time\n")


# -- report item 7: --statistics and fixes, as ruff counts them ---------------------------------

def test_statistics_count_only_the_fixes_this_run_would_apply(project, run):
    import json

    project.write("app.py", SLEEP_LOOP)  # RTY203, whose fix (a jitter draw) is unsafe
    code, out, _ = run("check", "--no-cache", "--statistics", "--output-format", "json", "app.py")
    entry = next(e for e in json.loads(out) if e["code"] == "RTY203")
    assert entry["fixable"] is False and entry["fixable_count"] == 0
    code, out, _ = run("check", "--no-cache", "--statistics", "--output-format", "json", "--unsafe-fixes", "app.py")
    entry = next(e for e in json.loads(out) if e["code"] == "RTY203")
    assert entry["fixable"] is True and entry["fixable_count"] == 1
    code, out, _ = run("check", "--no-cache", "--statistics", "app.py")
    assert "[*]" not in out and "[ ]" not in out  # nothing this run would fix: no markers (as ruff)
    code, out, _ = run("check", "--no-cache", "--statistics", "--unsafe-fixes", "app.py")
    assert "\tRTY203\t[*] backoff-without-jitter\n" in out


def test_an_unreadable_folder_is_not_counted_among_the_files(project, run, monkeypatch):
    from .test_never_a_traceback import _deny

    project.write("src/app.py", FIXED_FOREVER)
    project.write("secret/app.py", FIXED_FOREVER)
    _deny(monkeypatch, project.root / "secret")
    code, out, err = run("check", "--no-cache", ".")
    assert code == 2
    assert ("Checked 1 file: 1 with findings, 0 not parsed (RTY001), 0 could not be analysed, 0 failed. "
            "1 other path failed.\n") in err


def test_an_import_split_for_a_new_name_is_one_line_again_once_every_old_use_is_renamed(project, run):
    pytest.importorskip("ruff")
    path = project.write("app.py", '''from tenacity import retry, stop_after_attempt, wait_exponential


@retry(stop=stop_after_attempt(6), wait=wait_exponential(multiplier=1, min=4, max=10))
def first():
    return 1


@retry(stop=stop_after_attempt(6), wait=wait_exponential(multiplier=1, min=4, max=10))
def second():
    return 2
''')
    _assert_ruff_clean(project.root)
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert out.startswith("from tenacity import retry, stop_after_attempt, wait_random_exponential\n\n\n")
    assert out.count("wait=wait_random_exponential(multiplier=1, min=4, max=10)") == 2
    _assert_ruff_clean(project.root)


def test_a_parenthesised_import_the_user_wrote_stays_parenthesised():
    source = """from tenacity import (
    retry,
    stop_after_attempt,
    wait_exponential,
)


@retry(stop=stop_after_attempt(3), wait=wait_exponential(max=10))
def f():
    pass
"""
    assert fixed(source).startswith("from tenacity import (\n    retry,\n    stop_after_attempt,\n"
                                    "    wait_random_exponential,\n)\n")


def test_a_noqa_with_other_tools_codes_is_not_tokenized():
    # The cheap first look: only a directive that names an RTY code, or no code, is read.
    from retrylint.noqa_codes import _MAYBE

    assert not _MAYBE.search(b"import os  # noqa: E501\nx = 1  # noqa:F401\n")
    assert _MAYBE.search(b"x = 1  # noqa: fixed-delay-retry\n") and _MAYBE.search(b"x = 1  # noqa: RTY20\n")


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the memory budget is RLIMIT_AS")
def test_a_parser_memory_error_on_deep_nesting_is_not_called_the_memory_budget(project, run):
    # CPython's parser raises MemoryError on 100,000 unary minuses without using memory.
    project.write("deep.py", "import time\n\n\ndef f(call):\n    while True:\n        try:\n"
                             "            return call(" + "-" * 100_000 + "1)\n"
                             "        except OSError:\n            time.sleep(1)\n")
    code, out, err = run("check", "--no-cache", "--file-memory", "500", "deep.py")
    assert "deep.py: could not analyse: the file is nested too deeply for Python's parser" in err
    assert "memory budget" not in err and code == 0


def test_force_single_line_imports_get_a_line_of_their_own(project, run):
    pytest.importorskip("ruff")
    project.write("pyproject.toml", "[tool.ruff.lint.isort]\nforce-single-line = true\n")
    path = project.write("app.py", '''from tenacity import retry
from tenacity import retry_if_exception_type
from tenacity import wait_exponential


@retry(wait=wait_exponential(max=9), retry=retry_if_exception_type(OSError))
def fetch(url):
    return url
''')
    assert _ruff("check", "--select", "F,I", cwd=project.root, isolated=False).returncode == 0
    run("check", "--no-cache", "--fix", "--unsafe-fixes", "app.py")
    out = path.read_text()
    assert out.startswith("from tenacity import retry\nfrom tenacity import retry_if_exception_type\n"
                          "from tenacity import stop_after_attempt\nfrom tenacity import wait_random_exponential\n")
    checked = _ruff("check", "--select", "F,I", cwd=project.root, isolated=False)
    assert checked.returncode == 0, checked.stdout
