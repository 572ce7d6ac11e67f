"""The flake8 plugin, driven through the real flake8 (``python -m flake8``) in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from retrylint import __version__
from retrylint.cli import main

from .conftest import CLEAN, FIXED_FOREVER

pytest.importorskip("flake8")

#: path:row:col:code — easy to compare exactly.
FORMAT = "--format=%(path)s:%(row)d:%(col)d:%(code)s"

MULTILINE_STRING = '''
import time, requests

def fetch(url, log):
    for attempt in range(5):
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            time.sleep(5); log("""retrying
            soon""")
'''


def write(directory: Path, name: str, code: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    return path


def flake8(cwd: Path, *args: str, stdin: str = None) -> Tuple[int, List[str], str]:
    """Run real flake8 (no user/project flake8 config): (exit code, output lines, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", FORMAT, *args],
        cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120,
    )
    return done.returncode, done.stdout.splitlines(), done.stderr


def test_fixed_delay_forever_loop_is_reported_with_exact_codes_lines_and_columns(tmp_path):
    write(tmp_path, "app.py", FIXED_FOREVER)
    rc, lines, _ = flake8(tmp_path, "--select", "RTY", "app.py")
    # The same places `retrylint check` prints (app.py:4:5 RTY101, app.py:8:13 RTY202).
    assert lines == ["app.py:4:5:RTY101", "app.py:8:13:RTY202"]
    assert rc == 1


def test_messages_are_retrylints_messages(tmp_path):
    write(tmp_path, "app.py", FIXED_FOREVER)
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "RTY", "app.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    first = done.stdout.splitlines()[0]
    assert first.startswith("app.py:4:5: RTY101 `while True` retry loop retries forever with a fixed 5 s delay")


def test_clean_file_gives_nothing(tmp_path):
    write(tmp_path, "app.py", CLEAN)
    assert flake8(tmp_path, "--select", "RTY", "app.py")[:2] == (0, [])


def test_plugin_is_registered(tmp_path):
    done = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True, timeout=120)
    assert f"retrylint: {__version__}" in done.stdout
    # --select=RTY picks the plugin's codes only: pyflakes' unused import (F401) is not shown.
    write(tmp_path, "app.py", "import os\n" + textwrap.dedent(FIXED_FOREVER).lstrip("\n"))
    assert flake8(tmp_path, "--select=RTY", "app.py")[1] == ["app.py:5:5:RTY101", "app.py:9:13:RTY202"]
    assert "app.py:1:1:F401" in flake8(tmp_path, "--select=RTY,F", "app.py")[1]


def test_extend_ignore(tmp_path):
    write(tmp_path, "app.py", FIXED_FOREVER)
    assert flake8(tmp_path, "--select", "RTY", "--extend-ignore", "RTY101", "app.py")[1] == ["app.py:8:13:RTY202"]
    assert flake8(tmp_path, "--select", "RTY", "--extend-ignore", "RTY", "app.py")[:2] == (0, [])


def test_noqa_with_a_code_is_honoured_by_flake8_and_by_retrylint(tmp_path, monkeypatch, capsys):
    write(tmp_path, "app.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa: RTY202"))
    assert flake8(tmp_path, "--select", "RTY", "app.py")[1] == ["app.py:4:5:RTY101"]
    monkeypatch.chdir(tmp_path)
    assert main(["check", "app.py"]) == 1
    assert "RTY202" not in capsys.readouterr().out
    # A noqa for another code suppresses nothing of ours.
    write(tmp_path, "app.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa: E501"))
    assert flake8(tmp_path, "--select", "RTY", "app.py")[1] == ["app.py:4:5:RTY101", "app.py:8:13:RTY202"]


def test_bare_noqa_and_retrylints_header_noqa(tmp_path):
    write(tmp_path, "bare.py", FIXED_FOREVER.replace("time.sleep(5)", "time.sleep(5)  # noqa"))
    assert flake8(tmp_path, "--select", "RTY", "bare.py")[1] == ["bare.py:4:5:RTY101"]
    # retrylint's own rule: a noqa on the loop header covers the site's findings (here RTY202,
    # reported on the sleep); the engine drops it before flake8 sees it.
    write(tmp_path, "header.py", FIXED_FOREVER.replace("while True:", "while True:  # noqa: RTY202"))
    assert flake8(tmp_path, "--select", "RTY", "header.py")[1] == ["header.py:4:5:RTY101"]


def test_noqa_at_the_end_of_a_multiline_string_counts_for_its_first_line(tmp_path, monkeypatch, capsys):
    write(tmp_path, "app.py", MULTILINE_STRING)
    assert flake8(tmp_path, "--select", "RTY", "app.py")[1] == ["app.py:8:13:RTY202"]
    write(tmp_path, "app.py", MULTILINE_STRING.replace('soon""")', 'soon""")  # noqa: RTY202'))
    assert flake8(tmp_path, "--select", "RTY", "app.py")[:2] == (0, [])
    monkeypatch.chdir(tmp_path)
    assert main(["check", "app.py"]) == 0, capsys.readouterr().out


def test_disable_noqa_shows_what_retrylints_noqa_hides(tmp_path):
    write(tmp_path, "header.py", FIXED_FOREVER.replace("while True:", "while True:  # noqa: RTY202"))
    write(tmp_path, "file.py", "# retrylint: noqa\n" + textwrap.dedent(FIXED_FOREVER).lstrip("\n"))
    _, lines, _ = flake8(tmp_path, "--select", "RTY", "--disable-noqa", "header.py", "file.py")
    assert sorted(lines) == ["file.py:5:5:RTY101", "file.py:9:13:RTY202", "header.py:4:5:RTY101", "header.py:8:13:RTY202"]
    assert flake8(tmp_path, "--select", "RTY", "header.py", "file.py")[1] == ["header.py:4:5:RTY101"]


def test_project_configuration_is_used(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.retrylint]\nignore = ["RTY202"]\nper-file-ignores = { "tests/*" = ["RTY101"] }\n', encoding="utf-8"
    )
    write(tmp_path, "app.py", FIXED_FOREVER)
    write(tmp_path, "tests/test_app.py", FIXED_FOREVER)
    assert flake8(tmp_path, "--select", "RTY", "app.py", "tests/test_app.py")[1] == ["app.py:4:5:RTY101"]
    # Run from elsewhere: the file's own project configuration still applies.
    assert flake8(tmp_path.parent, "--select", "RTY", str(tmp_path / "app.py"))[1] == [f"{tmp_path / 'app.py'}:4:5:RTY101"]


def test_broken_configuration_is_an_error_not_ignored(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.retrylint]\nmax-dealy = 30\n", encoding="utf-8")
    write(tmp_path, "app.py", FIXED_FOREVER)
    rc, lines, _ = flake8(tmp_path, "--select", "RTY", "app.py")
    assert rc == 1
    assert any("ConfigError" in line and "max-dealy" in line for line in lines), lines


def test_syntax_error_is_flake8s_e999_not_rty001(tmp_path):
    write(tmp_path, "broken.py", "def f(:\n    pass\n")
    rc, lines, _ = flake8(tmp_path, "--select", "RTY,E999", "broken.py")
    assert [line.split(":")[-1] for line in lines] == ["E999"]
    assert rc == 1


def test_standard_input(tmp_path):
    rc, lines, _ = flake8(tmp_path, "--select", "RTY", "-", stdin=textwrap.dedent(FIXED_FOREVER).lstrip("\n"))
    assert lines == ["stdin:4:5:RTY101", "stdin:8:13:RTY202"]


def test_importing_the_plugin_does_not_import_flake8():
    code = "import sys, retrylint.flake8_plugin; print('flake8' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
