"""Bad situations the command line meets: one clear message and the right exit code, never a
traceback (an unreadable folder, a file --fix cannot write, a closed pipe, nothing to check,
--fix on standard input, explain given check's location, an unknown option)."""

from __future__ import annotations

import io
import os
import pathlib
import subprocess
import sys

import pytest

from .conftest import FIXED_FOREVER, codes

FIXABLE = """
import tenacity


@tenacity.retry(
    stop=tenacity.stop_after_attempt(6),
    wait=tenacity.wait_exponential(max=20),
    retry=tenacity.retry_if_exception_type(ConnectionError),
)
def fetch(url): ...
"""


def _deny(monkeypatch, target: pathlib.Path, function: str = "scandir") -> None:
    """Make ``os.<function>`` refuse ``target`` as a folder without read permission would
    (chmod alone cannot: the tests may run as root)."""
    original = getattr(os, function)

    def refusing(path=".", *args, **kwargs):
        if os.path.abspath(path) == str(target):
            raise PermissionError(13, "Permission denied", str(path))
        return original(path, *args, **kwargs)

    monkeypatch.setattr(os, function, refusing)


def test_an_unreadable_folder_is_an_error_and_the_rest_is_checked(project, run, monkeypatch):
    project.write("src/app.py", FIXED_FOREVER)
    project.write("secret/app.py", FIXED_FOREVER)
    _deny(monkeypatch, project.root / "secret")
    code, out, err = run("check", ".")
    assert code == 2
    assert "retrylint: error: secret: cannot read directory: Permission denied" in err
    assert codes(out) == ["RTY101", "RTY202"]  # src/app.py was still checked
    assert "Traceback" not in err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a user that chmod can refuse")
def test_an_unreadable_folder_for_real(project, run):
    project.write("secret/app.py", FIXED_FOREVER)
    (project.root / "secret").chmod(0)
    try:
        code, _, err = run("check", ".")
    finally:
        (project.root / "secret").chmod(0o755)
    assert code == 2 and "cannot read directory" in err


def _refuse_writes(monkeypatch, target: pathlib.Path) -> None:
    original = pathlib.Path.write_bytes

    def refusing(self, data):
        if self.absolute() == target.absolute():
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, data)

    monkeypatch.setattr(pathlib.Path, "write_bytes", refusing)


def test_fix_on_a_file_that_cannot_be_written_is_one_error_exit_2(project, run, monkeypatch):
    path = project.write("client.py", FIXABLE)
    before = path.read_text()
    _refuse_writes(monkeypatch, path)
    code, out, err = run("check", "--fix", "--unsafe-fixes", "client.py")
    assert code == 2
    assert "retrylint: error: client.py: cannot write the fixed file: Permission denied" in err
    assert "Traceback" not in err
    assert path.read_text() == before
    assert "RTY203" in out  # what the file still holds is reported, not "Fixed 1 error."
    assert "Fixed" not in out


def test_add_noqa_on_a_file_that_cannot_be_written_is_one_error_exit_2(project, run, monkeypatch):
    path = project.write("app.py", FIXED_FOREVER)
    _refuse_writes(monkeypatch, path)
    code, _, err = run("check", "--add-noqa", "app.py")
    assert code == 2
    assert "retrylint: error: app.py: cannot write the noqa directives: Permission denied" in err
    assert "Added 0 noqa directives." in err
    assert "Traceback" not in err


def test_a_closed_pipe_exits_quietly(project):
    for index in range(40):
        project.write(f"pkg/app{index}.py", FIXED_FOREVER)
    process = subprocess.Popen(
        [sys.executable, "-m", "retrylint", "check", "--no-cache", "--jobs", "1", "pkg"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    first = process.stdout.readline()
    process.stdout.close()  # as `| head -1` does
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=120)
    assert first.startswith(b"pkg")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert "Exception ignored" not in stderr
    assert code == 1  # the run's own exit code: it found something


def test_no_python_file_found_is_a_warning(project, run):
    (project.root / "empty").mkdir()
    code, out, err = run("check", "empty")
    assert code == 0
    assert "retrylint: warning: No Python files found under the given path(s)" in err


def test_a_folder_of_link_loops_is_a_warning_not_a_hang(project, run):
    folder = project.root / "loops"
    folder.mkdir()
    (folder / "down").symlink_to(folder, target_is_directory=True)
    code, _, err = run("check", "loops")
    assert code == 0
    assert "No Python files found" in err


def test_fix_on_standard_input_reports_what_remains_on_stderr(project, run, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((FIXABLE + FIXED_FOREVER).encode())))
    code, out, err = run("check", "--fix", "--unsafe-fixes", "--stdin-filename", "client.py", "-")
    assert "wait_random_exponential(max=20)" in out  # standard output is the fixed source, only
    assert "RTY101" not in out and "Found" not in out
    assert "client.py:15:5: RTY101" in err
    assert "Fixed 1 error." in err and "Found 2 errors remaining." in err
    assert code == 1


def test_explain_accepts_the_location_check_prints(project, run):
    project.write("app.py", FIXED_FOREVER)
    _, out, _ = run("check", "app.py")
    location = out.split(": RTY101")[0]  # app.py:4:5
    assert location == "app.py:4:5"
    for target in (location, location + ":"):
        code, text, err = run("explain", target)
        assert code == 0, err
        assert text.startswith("app.py:4:5: ")
        assert "schedule:" in text


def test_an_unknown_option_prints_the_subcommands_usage(project):
    process = subprocess.run([sys.executable, "-m", "retrylint", "check", "--bogus"], capture_output=True, text=True)
    assert process.returncode == 2
    assert process.stderr.startswith("usage: retrylint check ")
    assert "unrecognized arguments: --bogus" in process.stderr


def test_every_option_has_help_text():
    import argparse

    from retrylint.cli import build_parser

    parser = build_parser()
    parsers = [parser] + [a for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                          for a in action.choices.values()]
    missing = [
        f"{p.prog} {'/'.join(action.option_strings) or action.dest}"
        for p in parsers
        for action in p._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) and not action.help
    ]
    assert not missing, missing


def test_an_unreadable_folder_under_diff_is_reported_too(project, run, monkeypatch):
    project.write("src/client.py", FIXABLE)
    project.write("secret/app.py", FIXED_FOREVER)
    _deny(monkeypatch, project.root / "secret")
    code, out, err = run("check", "--diff", "--unsafe-fixes", ".")
    assert code == 2
    assert "retrylint: error: secret: cannot read directory: Permission denied" in err
    assert "+    wait=tenacity.wait_random_exponential(max=20)," in out


def test_a_closed_pipe_on_both_streams_exits_quietly(project):
    # 5,000 warnings (a noqa naming no rule): far more than a pipe holds, on standard error.
    project.write("app.py", "".join(f"x{i} = {i}  # noqa: RTY999\n" for i in range(5000)))
    process = subprocess.Popen(
        [sys.executable, "-m", "retrylint", "check", "--no-cache", "app.py"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,  # as `2>&1 | head -1`
    )
    first = process.stdout.readline()
    process.stdout.close()
    code = process.wait(timeout=120)
    assert first.startswith(b"retrylint: warning: app.py:1: noqa directive names unknown code RTY999")
    assert code == 0  # the run's own exit code, not a BrokenPipeError's
