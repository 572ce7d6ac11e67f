"""The command line as users meet it: output shapes, exit codes, bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from .conftest import CLEAN, FIXED_FOREVER, codes

LINE = re.compile(r"^(?P<path>[^:]+):(?P<row>\d+):(?P<col>\d+): (?P<code>RTY\d{3}) (?P<msg>.+)$")


def test_findings_are_printed_ruff_style_and_exit_1(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", "app.py")
    assert code == 1
    lines = [line for line in out.splitlines() if LINE.match(line)]
    assert {LINE.match(line)["code"] for line in lines} == {"RTY101", "RTY202"}
    assert all(LINE.match(line)["path"] == "app.py" for line in lines)
    assert "app.py:4:5: RTY101 `while True` retry loop retries forever with a fixed 5 s delay" in out
    assert out.rstrip().endswith("Found 2 errors.")


def test_clean_code_exits_0(project, run):
    project.write("app.py", CLEAN)
    code, out, _ = run("check", "app.py")
    assert code == 0
    assert "All checks passed!" in out


def test_default_path_is_the_current_directory(project, run):
    project.write("pkg/app.py", FIXED_FOREVER)
    project.write("pkg/ok.py", CLEAN)
    code, out, _ = run("check")
    assert code == 1
    assert sorted(set(re.findall(r"^(\S+?):\d+", out, re.M))) == [os.path.join("pkg", "app.py")]


def test_exit_zero(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, _ = run("check", "--exit-zero", "app.py")
    assert code == 0 and "RTY101" in out


def test_select_ignore_extend_select(project, run):
    project.write("app.py", FIXED_FOREVER)
    assert codes(run("check", "--select", "RTY2", "app.py")[1]) == ["RTY202"]
    assert codes(run("check", "--ignore", "RTY202", "app.py")[1]) == ["RTY101"]
    assert codes(run("check", "--select", "RTY101", "--extend-select", "fixed-delay-retry", "app.py")[1]) == [
        "RTY101",
        "RTY202",
    ]


def test_unknown_code_is_a_usage_error(project, run):
    project.write("app.py", CLEAN)
    code, out, err = run("check", "--select", "RTY999", "app.py")
    assert code == 2
    assert "unknown rule code or prefix 'RTY999'" in err
    assert "Traceback" not in err


def test_missing_path_is_a_usage_error(project, run):
    code, _, err = run("check", "nope.py")
    assert code == 2
    assert "path does not exist: nope.py" in err


def test_statistics(project, run):
    project.write("a.py", FIXED_FOREVER)
    project.write("b.py", FIXED_FOREVER)
    code, out, _ = run("check", "--statistics", ".")
    assert code == 1
    assert out.splitlines() == ["2\tRTY101\tunbounded-retry-loop", "2\tRTY202\tfixed-delay-retry"]


def test_quiet_prints_findings_only(project, run):
    project.write("a.py", FIXED_FOREVER)
    code, out, _ = run("check", "--quiet", "a.py")
    assert code == 1
    assert "Found" not in out and len(out.splitlines()) == 2


def test_json_output_uses_ruffs_fields(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, _ = run("check", "--output-format", "json", "app.py")
    assert code == 1
    items = json.loads(out)
    assert [i["code"] for i in items] == ["RTY101", "RTY202"]
    first = items[0]
    assert set(first) >= {"code", "message", "filename", "location", "end_location", "url", "noqa_row", "fix"}
    assert first["location"] == {"row": 4, "column": 5}
    assert first["end_location"]["row"] == 4 and first["end_location"]["column"] > 5
    assert first["filename"] == str(project.root / "app.py")
    assert first["url"].endswith("/docs/rules/RTY101.md")


def test_github_annotations(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, _ = run("check", "--output-format", "github", "app.py")
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("::warning file=app.py,line=4,col=5,endLine=4,endColumn=")
    assert "title=retrylint (RTY101)::RTY101 `while True` retry loop" in first


def test_stdin_with_filename(project, run, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXED_FOREVER.encode())))
    code, out, _ = run("check", "-", "--stdin-filename", "service/app.py")
    assert code == 1
    assert "service/app.py:5:5: RTY101" in out


def test_stdin_cannot_mix_with_paths(project, run):
    project.write("a.py", CLEAN)
    code, _, err = run("check", "-", "a.py")
    assert code == 2 and "cannot be combined" in err


def test_syntax_error_is_rty001_and_the_run_continues(project, run):
    project.write("broken.py", "def f(:\n    pass\n")
    project.write("app.py", FIXED_FOREVER)
    code, out, err = run("check", ".")
    assert code == 1
    assert re.search(r"^broken\.py:1:\d+: RTY001 SyntaxError: ", out, re.M)
    assert "app.py:4:5: RTY101" in out
    assert "Traceback" not in err


def test_binary_and_badly_encoded_files_get_one_line_each(project, run):
    (project.root / "blob.py").write_bytes(b"\x00\x01\x02binary")
    (project.root / "latin.py").write_bytes(b"x = '\xe9'\n")
    (project.root / "cookie.py").write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    code, out, err = run("check", ".")
    assert code == 1
    assert "blob.py:1:1: RTY001 binary file" in out
    assert "latin.py:1:1: RTY001 cannot decode as utf-8" in out
    assert "cookie.py:1:1: RTY001 bad encoding declaration" in out
    assert "Traceback" not in err


def test_latin1_cookie_is_honoured(project, run):
    (project.root / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    assert run("check", "latin.py")[0] == 0


def test_unreadable_file_is_reported(project, run):
    (project.root / "gone.py").symlink_to(project.root / "missing-target.py")
    code, out, err = run("check", ".")
    assert code == 1
    assert "gone.py:1:1: RTY001 cannot read file" in out


def test_valid_python_that_libcst_rejects_is_a_notice_not_a_syntax_error(project, run):
    # CPython accepts a parenthesized annotated target; libcst does not (test_grammar.py has it).
    # Next to a retry loop (the code libcst must read); elsewhere, ast's verdict is all it needs.
    project.write("grammar.py", "def poll():\n    (x): int = 1\n    while True:\n        try:\n            return f()\n"
                                "        except OSError:\n            continue\n")
    code, out, err = run("check", "grammar.py")
    assert code == 0, out
    assert "RTY001" not in out
    assert "grammar.py: could not analyse: libcst cannot parse this file" in err


def test_rule_docs(run):
    code, out, _ = run("rule", "RTY202")
    assert code == 0
    assert out.startswith("# fixed-delay-retry (RTY202)")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in out
    assert run("rule", "fixed-delay-retry")[1] == out


def test_rule_all_and_unknown(run):
    code, out, _ = run("rule", "--all")
    assert code == 0
    from retrylint.rules import RULES

    assert [line.split()[0] for line in out.splitlines()] == [r.code for r in RULES]
    code, _, err = run("rule", "RTY999")
    assert code == 2 and "unknown rule 'RTY999'" in err


def test_python_dash_m_and_console_script(project):
    project.write("app.py", FIXED_FOREVER)
    result = subprocess.run([sys.executable, "-m", "retrylint", "check", "app.py"], capture_output=True, text=True)
    assert result.returncode == 1 and "RTY101" in result.stdout
    script = os.path.join(os.path.dirname(sys.executable), "retrylint")
    result = subprocess.run([script, "check", "--select", "RTY202", "app.py"], capture_output=True, text=True)
    assert result.returncode == 1 and codes(result.stdout) == ["RTY202"]


def test_no_subcommand_is_a_usage_error():
    result = subprocess.run([sys.executable, "-m", "retrylint"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "usage: retrylint" in result.stderr


def test_shipped_example_shows_real_findings(run, monkeypatch):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    monkeypatch.chdir(root)
    code, out, _ = run("check", "examples/retry_smells.py")
    assert code == 1
    assert sorted(set(codes(out))) == ["RTY101", "RTY103", "RTY201", "RTY202", "RTY203", "RTY204", "RTY301", "RTY302", "RTY303"]
    # The last function is the shape to copy: nothing is reported inside it.
    rows = [int(m) for m in re.findall(r"retry_smells\.py:(\d+):", out)]
    assert max(rows) < 56
