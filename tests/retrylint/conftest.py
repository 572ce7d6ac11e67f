"""Helpers for the checker's tests: write files, run the CLI in-process."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from retrylint.cli import main


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project directory as the working directory; write(name, code) adds files."""
    monkeypatch.chdir(tmp_path)

    class Project:
        root = tmp_path

        def write(self, name: str, code: str) -> Path:
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
            return path

    return Project()


@pytest.fixture
def run(capsys):
    """Run ``retrylint ARGS`` in-process: (exit code, stdout, stderr)."""

    def _run(*args: str) -> Tuple[int, str, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return _run


FIXED_FOREVER = """
import time, requests

def fetch(url):
    while True:
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            time.sleep(5)
"""

CLEAN = """
import random, time, requests

def fetch(url):
    for attempt in range(6):
        try:
            return requests.get(url, timeout=5)
        except requests.ConnectionError:
            time.sleep(random.uniform(0, min(20, 2 ** attempt)))
    raise RuntimeError("gave up")
"""


def codes(out: str) -> List[str]:
    import re

    return re.findall(r":\d+:\d+: (RTY\d{3}) ", out)
