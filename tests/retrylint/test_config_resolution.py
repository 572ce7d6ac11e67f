"""Configuration as ruff resolves it: the nearest configuration per file, whatever order paths
come in; the command line's --select over the file's ignore; one precedence between
.retrylint.toml, retrylint.toml and pyproject.toml; --stdin-filename for discovery and
--force-exclude; --show-settings, --output-file, --exclude/--extend-exclude; noqa directives
that name no rule are warned about."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from .conftest import FIXED_FOREVER, codes


def by_file(out: str):
    found = {}
    for path, code in re.findall(r"^(\S+?):\d+:\d+: (RTY\d{3}) ", out, re.M):
        found.setdefault(path.replace("\\", "/"), []).append(code)
    return found


def test_a_nested_pyproject_applies_to_its_own_files_in_any_order(project, run):
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY202"]\n')
    project.write("tests/pyproject.toml", '[tool.retrylint]\nignore = ["RTY101"]\n')
    project.write("a.py", FIXED_FOREVER)
    project.write("tests/t.py", FIXED_FOREVER)
    expected = {"a.py": ["RTY101"], "tests/t.py": ["RTY202"]}
    assert by_file(run("check", "--no-cache", "a.py", "tests/t.py")[1]) == expected
    assert by_file(run("check", "--no-cache", "tests/t.py", "a.py")[1]) == expected
    assert by_file(run("check", "--no-cache", ".")[1]) == expected
    assert by_file(run("check", ".")[1]) == expected  # with the cache: one per configuration
    assert by_file(run("check", ".")[1]) == expected


def test_a_nested_configuration_excludes_below_itself(project, run):
    project.write("pkg/pyproject.toml", '[tool.retrylint]\nextend-exclude = ["generated"]\n')
    project.write("pkg/generated/g.py", FIXED_FOREVER)
    project.write("other/generated/g.py", FIXED_FOREVER)
    assert set(by_file(run("check", "--no-cache", ".")[1])) == {"other/generated/g.py"}


def test_select_on_the_command_line_reenables_a_rule_the_file_ignores(project, run):
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY202"]\n')
    project.write("app.py", FIXED_FOREVER)
    assert codes(run("check", "app.py")[1]) == ["RTY101"]
    assert codes(run("check", "--select", "RTY202", "app.py")[1]) == ["RTY202"]
    assert codes(run("check", "--extend-select", "RTY202", "app.py")[1]) == ["RTY101", "RTY202"]
    assert codes(run("check", "--select", "RTY2", "--ignore", "RTY202", "app.py")[1]) == []


@pytest.mark.parametrize(
    "present, winner",
    [
        ((".retrylint.toml", "retrylint.toml", "pyproject.toml"), ".retrylint.toml"),
        (("retrylint.toml", "pyproject.toml"), "retrylint.toml"),
        ((".retrylint.toml", "pyproject.toml"), ".retrylint.toml"),
    ],
)
def test_one_precedence_between_the_files_of_a_folder(project, run, present, winner):
    ignores = {".retrylint.toml": "RTY101", "retrylint.toml": "RTY202", "pyproject.toml": "RTY301"}
    for name in present:
        body = f'ignore = ["{ignores[name]}"]\n'
        project.write(name, "[tool.retrylint]\n" + body if name == "pyproject.toml" else body)
    project.write("app.py", FIXED_FOREVER)
    _, out, _ = run("check", "--show-settings", "app.py")
    assert re.search(r"^Settings path: .*[/\\]" + re.escape(winner) + "$", out, re.M), out
    assert ignores[winner] not in json.loads(re.search(r"^select = (.*)$", out, re.M).group(1))


def test_stdin_filename_finds_that_files_configuration(project, run, monkeypatch):
    project.write("service/pyproject.toml", '[tool.retrylint]\nignore = ["RTY101"]\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXED_FOREVER.encode())))
    code, out, _ = run("check", "--stdin-filename", "service/app.py", "-")
    assert codes(out) == ["RTY202"] and code == 1


def test_stdin_filename_with_force_exclude(project, run, monkeypatch):
    project.write("pyproject.toml", '[tool.retrylint]\nextend-exclude = ["migrations"]\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXED_FOREVER.encode())))
    code, out, _ = run("check", "--force-exclude", "--stdin-filename", "migrations/0001.py", "-")
    assert code == 0 and codes(out) == []
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FIXED_FOREVER.encode())))
    code, out, _ = run("check", "--force-exclude", "--stdin-filename", "app/0001.py", "-")
    assert code == 1 and codes(out) == ["RTY101", "RTY202"]


def test_show_settings(project, run):
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY202"]\nmax-delay = 60\n')
    project.write("app.py", FIXED_FOREVER)
    code, out, _ = run("check", "--show-settings", "--extend-exclude", "gen", "app.py")
    assert code == 0
    assert out.startswith("Resolved settings for: app.py\n")
    assert str(project.root / "pyproject.toml") in out
    assert "max-delay = 60.0" in out
    select = json.loads(re.search(r"^select = (.*)$", out, re.M).group(1))
    assert "RTY202" not in select and "RTY101" in select
    assert json.loads(re.search(r"^extend-exclude = (.*)$", out, re.M).group(1)) == ["gen"]


def test_output_file(project, run):
    project.write("app.py", FIXED_FOREVER)
    code, out, _ = run("check", "--output-format", "json", "--output-file", "report.json", "app.py")
    assert code == 1 and out == ""
    data = json.loads((project.root / "report.json").read_text())
    assert [item["code"] for item in data] == ["RTY101", "RTY202"]


def test_exclude_and_extend_exclude_on_the_command_line(project, run):
    project.write("src/app.py", FIXED_FOREVER)
    project.write("gen/app.py", FIXED_FOREVER)
    project.write("build/app.py", FIXED_FOREVER)
    assert set(by_file(run("check", "--no-cache", ".")[1])) == {"src/app.py", "gen/app.py"}
    assert set(by_file(run("check", "--no-cache", "--extend-exclude", "gen", ".")[1])) == {"src/app.py"}
    # --exclude replaces the default list: build is checked again.
    assert set(by_file(run("check", "--no-cache", "--exclude", "gen", ".")[1])) == {"src/app.py", "build/app.py"}


def test_command_line_exclude_patterns_are_read_from_the_current_directory(project, run, monkeypatch):
    """As ruff: in ``src/`` under a ``pyproject.toml`` one level up, ``--extend-exclude
    'vendor/*'`` skips ``src/vendor/``, and ``src/vendor/app.py`` names nothing there (it would
    be ``src/src/vendor/app.py``); from the project root ``src/vendor/*`` does."""
    project.write("pyproject.toml", "[tool.retrylint]\n")
    project.write("src/app.py", FIXED_FOREVER)
    project.write("src/vendor/app.py", FIXED_FOREVER)
    assert set(by_file(run("check", "--no-cache", "--extend-exclude", "src/vendor/*", ".")[1])) == {"src/app.py"}
    monkeypatch.chdir(project.root / "src")
    assert set(by_file(run("check", "--no-cache", "--extend-exclude", "vendor/*", ".")[1])) == {"app.py"}
    assert set(by_file(run("check", "--no-cache", "--extend-exclude", "src/vendor/app.py", ".")[1])) == {
        "app.py", "vendor/app.py"}
    assert set(by_file(run("check", "--no-cache", "--extend-exclude", "vendor", ".")[1])) == {"app.py"}


def test_a_noqa_with_an_unknown_or_partial_code_is_warned_about(project, run):
    source = FIXED_FOREVER.replace("while True:", "while True:  # noqa: RTY10, E501").replace(
        "time.sleep(5)", "time.sleep(5)  # noqa: RTY999")
    project.write("app.py", source)
    code, out, err = run("check", "app.py")
    assert codes(out) == ["RTY101", "RTY202"] and code == 1
    assert ("retrylint: warning: app.py:4: noqa directive names unknown code RTY10: a partial code matches "
            "nothing; write the full code (RTY101, RTY102, RTY103)") in err
    assert "retrylint: warning: app.py:8: noqa directive names unknown code RTY999" in err
    assert "E501" not in err
    assert "unknown code" not in run("check", "--quiet", "app.py")[2]


def test_file_level_noqa(project, run):
    project.write("app.py", "# retrylint: noqa\n" + FIXED_FOREVER.lstrip())
    assert run("check", "app.py")[0] == 0
    project.write("app.py", "# retrylint: noqa: RTY202\n" + FIXED_FOREVER.lstrip())
    assert codes(run("check", "app.py")[1]) == ["RTY101"]


def test_flake8_file_level_noqa_under_the_plugin(project):
    pytest.importorskip("flake8")
    project.write("app.py", "# flake8: noqa\n" + FIXED_FOREVER.lstrip())
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "RTY", "app.py"],
                          cwd=project.root, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == ""
