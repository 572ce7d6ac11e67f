"""A time and memory budget per file: a pathological file is reported as "could not be
analysed" in bounded time and memory, and the other files of the run are still checked."""

from __future__ import annotations

import sys
import time

import pytest

from .conftest import FIXED_FOREVER, codes

SITE = """
def f{i}(call):
    while True:
        try:
            return call()
        except ConnectionError:
            time.sleep(5)
"""


def test_a_file_over_the_time_budget_is_a_notice_and_the_rest_is_checked(project, run):
    # 3,000 retry sites: about fifteen seconds of analysis.
    project.write("many.py", "import time\n" + "".join(SITE.format(i=i) for i in range(3000)))
    project.write("app.py", FIXED_FOREVER)
    started = time.monotonic()
    code, out, err = run("check", "--no-cache", "--file-timeout", "3", "many.py", "app.py")
    assert time.monotonic() - started < 30
    assert "retrylint: warning: many.py: could not be analysed in 3 s (the time budget per file: --file-timeout)" in err
    assert codes(out) == ["RTY101", "RTY202"] and code == 1, err  # app.py's findings
    assert "Checked 2 files: 1 with findings, 0 not parsed (RTY001), 1 could not be analysed, 0 failed." in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory budget is RLIMIT_AS, on Linux")
def test_a_file_over_the_memory_budget_is_a_notice(project, run):
    # libcst's native parser needs about 8 KB per item of this literal.
    project.write("literal.py", "import tenacity\nx = tenacity.Retrying(retry=tenacity.retry_if_exception_type(("
                  + ", ".join(str(i) for i in range(100_000)) + ")))\n")
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "--no-cache", "--file-memory", "200", "literal.py", "app.py")
    assert "retrylint: warning: literal.py: could not be analysed within 200 MB of memory" in err
    assert codes(out) == ["RTY101", "RTY202"] and code == 1
    assert "Traceback" not in err and "memory allocation" not in err


@pytest.mark.parametrize("option, value", [("--file-timeout", "soon"), ("--file-timeout", "-1"),
                                           ("--file-memory", "1.5"), ("--file-memory", "-2")])
def test_bad_budgets_are_usage_errors(project, run, option, value):
    project.write("app.py", FIXED_FOREVER)
    with pytest.raises(SystemExit) as exit_:
        run("check", option, value, "app.py")
    assert exit_.value.code == 2


def test_fix_keeps_to_the_budget_and_fixes_the_other_files(project, run):
    project.write("many.py", "import time\n" + "".join(SITE.format(i=i) for i in range(3000)))
    client = project.write("client.py", """
        import backoff


        @backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)
        def f(): ...
    """)
    before = (project.root / "many.py").read_bytes()
    code, out, err = run("check", "--fix", "--unsafe-fixes", "--file-timeout", "3", "many.py", "client.py")
    assert "retrylint: warning: many.py: could not be analysed in 3 s" in err
    assert "jitter" not in client.read_text() and "Fixed 1 error." in out
    assert (project.root / "many.py").read_bytes() == before


# ------------------------------------------------ explain, --add-noqa and standard input


def _many(project):
    return project.write("many.py", "import time\n" + "".join(SITE.format(i=i) for i in range(3000)))


def _stdin(monkeypatch, text):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_explain_keeps_to_the_time_budget(project, run):
    _many(project)
    started = time.monotonic()
    code, out, err = run("explain", "many.py", "--file-timeout", "2")
    assert time.monotonic() - started < 20
    assert err == "retrylint: error: many.py: could not be analysed in 2 s (the time budget per file: --file-timeout)\n"
    # Not "no retry site found", and not exit 0: the file asked about was not looked at.
    assert out == "" and code == 2


def test_explain_of_a_line_keeps_to_the_time_budget_and_json_stays_json(project, run):
    _many(project)
    code, out, err = run("explain", "many.py:7:9", "--file-timeout", "2", "--output-format", "json")
    assert "could not be analysed in 2 s" in err and "Traceback" not in err
    assert out == "[]\n" and code == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory budget is RLIMIT_AS, on Linux")
def test_explain_keeps_to_the_memory_budget(project, run):
    project.write("literal.py", "import tenacity\nx = tenacity.Retrying(retry=tenacity.retry_if_exception_type(("
                  + ", ".join(str(i) for i in range(100_000)) + ")))\n")
    code, out, err = run("explain", "literal.py", "--file-memory", "200")
    assert err.startswith("retrylint: error: literal.py: could not be analysed within 200 MB of memory")
    assert err.count("\n") == 1 and "memory allocation" not in err and code == 2


def test_explain_of_a_file_with_a_syntax_error_says_only_that(project, run):
    project.write("bad.py", "def f(:\n    pass\n")
    code, out, err = run("explain", "bad.py")
    assert code == 2 and out == ""  # not "no retry site found": it could not be read
    assert err == "retrylint: error: bad.py:1: SyntaxError: invalid syntax\n"


def test_explain_of_a_folder_shows_the_sites_it_could_analyse_and_exits_2(project, run):
    _many(project)
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("explain", ".", "--file-timeout", "2")
    assert code == 2 and "could not be analysed in 2 s" in err
    assert "bound:       forever" in out  # app.py was still explained


def test_explain_within_the_budget_is_unchanged(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("explain", "app.py:5", "--file-timeout", "20")
    assert code == 0 and err == ""
    assert out.startswith("app.py:4:5: ") and "bound:       forever" in out


def test_add_noqa_keeps_to_the_time_budget_and_does_the_other_files(project, run):
    many = _many(project)
    before = many.read_bytes()
    app = project.write("app.py", FIXED_FOREVER)
    started = time.monotonic()
    code, out, err = run("check", "--add-noqa", "--file-timeout", "3", "many.py", "app.py")
    assert time.monotonic() - started < 30
    assert "retrylint: warning: many.py: could not be analysed in 3 s (the time budget per file: --file-timeout)\n" in err
    assert "Added 2 noqa directives.\n" in err and code == 0
    assert many.read_bytes() == before
    assert app.read_text().count("# noqa: RTY") == 2
    assert run("check", "--no-cache", "app.py")[0] == 0


def test_add_noqa_quiet_says_nothing_of_the_budget(project, run):
    many = _many(project)
    before = many.read_bytes()
    code, out, err = run("check", "--add-noqa", "-q", "--file-timeout", "2", "many.py")
    assert err == "" and code == 0 and many.read_bytes() == before


def test_stdin_keeps_to_the_time_budget(project, run, monkeypatch):
    _stdin(monkeypatch, "import time\n" + "".join(SITE.format(i=i) for i in range(3000)))
    started = time.monotonic()
    code, out, err = run("check", "-", "--stdin-filename", "many.py", "--file-timeout", "2")
    assert time.monotonic() - started < 20
    assert "retrylint: warning: many.py: could not be analysed in 2 s (the time budget per file: --file-timeout)\n" in err
    # Never checked: exit 1, as for a finding (report 15 item 8).
    assert code == 1 and "Traceback" not in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory budget is RLIMIT_AS, on Linux")
def test_stdin_keeps_to_the_memory_budget(project, run, monkeypatch):
    _stdin(monkeypatch, "import tenacity\nx = tenacity.Retrying(retry=tenacity.retry_if_exception_type(("
           + ", ".join(str(i) for i in range(100_000)) + ")))\n")
    code, out, err = run("check", "-", "--file-memory", "200")
    assert "retrylint: warning: -: could not be analysed within 200 MB of memory" in err
    assert code == 1 and "Traceback" not in err and "memory allocation" not in err


def test_stdin_fix_keeps_to_the_time_budget_and_echoes_the_source(project, run, monkeypatch):
    source = "import time\n" + "".join(SITE.format(i=i) for i in range(3000))
    _stdin(monkeypatch, source)
    code, out, err = run("check", "-", "--fix", "--file-timeout", "2")
    assert out == source
    assert err == "retrylint: warning: -: could not be analysed in 2 s (the time budget per file: --file-timeout)\n"
    assert code == 1


def test_stdin_within_the_budget_is_unchanged(project, run, monkeypatch):
    _stdin(monkeypatch, FIXED_FOREVER)
    code, out, err = run("check", "-", "--file-timeout", "20")
    assert codes(out) == ["RTY101", "RTY202"] and code == 1
    _stdin(monkeypatch, FIXED_FOREVER)
    code, out, err = run("check", "-", "--fix", "--file-timeout", "20")
    assert "while True:" in out and codes(err) == ["RTY101", "RTY202"] and code == 1
