"""The shipped pre-commit hook works, tried with ``pre-commit try-repo`` on a throwaway repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CLEAN, FIXED_FOREVER

ROOT = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _snapshot(target: Path) -> Path:
    """The project as it is on disk (also files not committed yet), as a one-commit repo.

    ``pre-commit try-repo`` only sees tracked files; a snapshot makes the test judge the
    working tree, in CI and during development alike.
    """
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        if source.is_file() and not name.startswith(("bench/", "tests/")):
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    _git(target, "init", "-q")
    _git(target, "add", ".")
    _git(target, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "snapshot")
    return target


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed by pre-commit")
def test_pre_commit_try_repo(tmp_path):
    hook_repo = _snapshot(tmp_path / "retrylint")
    repo = tmp_path / "service"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "bad.py").write_text(FIXED_FOREVER.lstrip(), encoding="utf-8")
    (repo / "good.py").write_text(CLEAN.lstrip(), encoding="utf-8")
    (repo / "notes.txt").write_text("while True: retry()\n", encoding="utf-8")
    _git(repo, "add", ".")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "retrylint", "--all-files", "--color", "never"]
    result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "retrylint" in output and "Failed" in output
    assert "bad.py:4:5: RTY101" in output
    assert "good.py" not in output.split("Failed", 1)[1]
    assert "notes.txt" not in output  # types: [python] keeps other files out

    # Fix the file: the hook passes.
    (repo / "bad.py").write_text(CLEAN.lstrip(), encoding="utf-8")
    _git(repo, "add", ".")
    result = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout
