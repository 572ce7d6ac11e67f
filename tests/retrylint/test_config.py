"""[tool.retrylint] in pyproject.toml: applied, validated, errors reported with exit 2."""

from __future__ import annotations

from .conftest import CLEAN, FIXED_FOREVER, codes

UNCAPPED = """
import random, time
def fetch(call):
    for attempt in range(9):
        try:
            return call()
        except ConnectionError:
            time.sleep(random.random() * 2 ** attempt)
"""

VALUE_ERROR = """
import random, time
from myapp.errors import StaleRead
def fetch(call):
    for attempt in range(5):
        try:
            return call()
        except (ValueError, StaleRead):
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
"""


def test_select_and_ignore_from_pyproject(project, run):
    project.write("app.py", FIXED_FOREVER)
    project.write("pyproject.toml", '[tool.retrylint]\nselect = ["RTY2"]\n')
    assert codes(run("check", "app.py")[1]) == ["RTY202"]
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY202"]\n')
    assert codes(run("check", "app.py")[1]) == ["RTY101"]


def test_command_line_overrides_the_file(project, run):
    project.write("app.py", FIXED_FOREVER)
    project.write("pyproject.toml", '[tool.retrylint]\nselect = ["RTY2"]\n')
    assert codes(run("check", "--select", "RTY1", "app.py")[1]) == ["RTY101"]


def test_config_is_found_from_a_subdirectory(project, run, monkeypatch):
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY101"]\n')
    project.write("pkg/sub/app.py", FIXED_FOREVER)
    monkeypatch.chdir(project.root / "pkg" / "sub")
    assert codes(run("check", "app.py")[1]) == ["RTY202"]


def test_pyproject_without_our_section_is_skipped(project, run, monkeypatch):
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY101"]\n')
    project.write("pkg/pyproject.toml", '[project]\nname = "pkg"\n')
    project.write("pkg/app.py", FIXED_FOREVER)
    monkeypatch.chdir(project.root / "pkg")
    assert codes(run("check", "app.py")[1]) == ["RTY202"]


def test_unknown_key_is_an_error_with_a_hint(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\nselct = ["RTY2"]\n')
    code, out, err = run("check", "app.py")
    assert code == 2
    assert "unknown key 'selct' (did you mean 'select'?)" in err
    assert "Traceback" not in err


def test_wrong_type_is_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\nmax-delay = "two minutes"\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "max-delay must be a positive number of seconds" in err


def test_unknown_code_in_the_file_is_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\nignore = ["RTY999"]\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "pyproject.toml [tool.retrylint] ignore: unknown rule code or prefix 'RTY999'" in err


def test_invalid_toml_is_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", "[tool.retrylint]\nselect = [\n")
    code, _, err = run("check", "app.py")
    assert code == 2 and "invalid TOML" in err


def test_explicit_config_file(project, run):
    project.write("app.py", FIXED_FOREVER)
    project.write("ci/retrylint.toml", 'select = ["RTY101"]\n')
    assert codes(run("check", "--config", "ci/retrylint.toml", "app.py")[1]) == ["RTY101"]
    code, _, err = run("check", "--config", "missing.toml", "app.py")
    assert code == 2 and "config file not found" in err


def test_per_file_ignores(project, run):
    project.write("tests/test_app.py", FIXED_FOREVER)
    project.write("app.py", FIXED_FOREVER)
    project.write("pyproject.toml", '[tool.retrylint.per-file-ignores]\n"tests/*" = ["RTY101", "RTY202"]\n')
    code, out, _ = run("check", ".")
    assert "tests/test_app.py" not in out
    assert "app.py:4:5: RTY101" in out


def test_max_delay_sets_rty204_threshold(project, run):
    project.write("app.py", UNCAPPED)  # reaches 2^7 = 128 s
    assert "RTY204" in codes(run("check", "app.py")[1])
    project.write("pyproject.toml", "[tool.retrylint]\nmax-delay = 300\n")
    assert "RTY204" not in codes(run("check", "app.py")[1])


def test_permanent_and_transient_exceptions(project, run):
    project.write("app.py", VALUE_ERROR)
    code, out, _ = run("check", "--select", "RTY303", "app.py")
    assert "`ValueError`" in out and "StaleRead" not in out
    project.write("pyproject.toml", '[tool.retrylint]\npermanent-exceptions = ["StaleRead"]\n'
                  'transient-exceptions = ["ValueError"]\n')
    code, out, _ = run("check", "--select", "RTY303", "app.py")
    assert "`myapp.errors.StaleRead`" in out and "ValueError" not in out


def test_exclude_and_gitignore(project, run):
    project.write("src/app.py", FIXED_FOREVER)
    project.write("generated/app.py", FIXED_FOREVER)
    project.write("vendored/app.py", FIXED_FOREVER)
    project.write(".venv/lib/app.py", FIXED_FOREVER)
    project.write(".gitignore", "vendored/\n")
    (project.root / ".git").mkdir()
    project.write("pyproject.toml", '[tool.retrylint]\nextend-exclude = ["generated"]\n')
    out = run("check", ".")[1]
    assert "src/app.py" in out
    assert "generated" not in out and "vendored" not in out and ".venv" not in out
    project.write("pyproject.toml", '[tool.retrylint]\nrespect-gitignore = false\n')
    out = run("check", ".")[1]
    assert "vendored/app.py" in out and "generated/app.py" in out


def test_a_named_directory_is_walked_although_excluded_above_it(project, run):
    # ruff's behaviour: `check build/tools` checks that folder though `build` is excluded and
    # though an enclosing repository ignores it (a Python installed under ~/.pyenv/versions).
    project.write("build/tools/app.py", FIXED_FOREVER)
    project.write("build/tools/build/app.py", FIXED_FOREVER)
    project.write("ignored/lib/app.py", FIXED_FOREVER)
    project.write(".gitignore", "ignored/\n")
    (project.root / ".git").mkdir()
    project.write("pyproject.toml", '[tool.retrylint]\nextend-exclude = ["build"]\n')
    out = run("check", ".")[1]
    assert "build" not in out and "ignored" not in out
    out = run("check", "build/tools")[1]
    assert "build/tools/app.py" in out
    assert "build/tools/build/app.py" not in out  # excluded parts below the named folder still count
    out = run("check", "ignored/lib")[1]
    assert "ignored/lib/app.py" in out


def test_force_exclude_applies_to_named_files(project, run):
    project.write("generated/app.py", FIXED_FOREVER)
    project.write("pyproject.toml", '[tool.retrylint]\nextend-exclude = ["generated"]\n')
    assert run("check", "generated/app.py")[0] == 1  # named explicitly: checked
    assert run("check", "--force-exclude", "generated/app.py")[0] == 0
