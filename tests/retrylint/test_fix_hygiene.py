"""Fixes that can be trusted: jitter swaps are unsafe; a fixed file keeps its imports sorted and
used, its layout, comments and line endings; and a file that ruff (F, I and format) found clean
is still clean after ``--fix --unsafe-fixes``.

The files in ``fix_corpus/`` are small, realistic clients in the styles of LLM SDKs, Google
clients and workers (tenacity, backoff, redis, urllib3, retry, retrying, hand-written loops),
ruff-formatted and isort-sorted."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrylint.engine import settings_with
from retrylint.rules import RULES
from retrylint.runner import fix_source

ALL = settings_with(tuple(rule.code for rule in RULES))
CORPUS = Path(__file__).parent / "fix_corpus"


def fixed(code: str, unsafe: bool = False) -> str:
    return fix_source(textwrap.dedent(code).lstrip("\n"), "case.py", ALL, unsafe).fixed


def ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args, "--isolated", "."], cwd=cwd,
                          capture_output=True, text=True)


def test_after_fix_ruff_finds_nothing_new(tmp_path, run, monkeypatch):
    pytest.importorskip("ruff")
    work = tmp_path / "corpus"
    shutil.copytree(CORPUS, work)
    crlf = work / "polling_crlf.py"
    crlf.write_bytes((work / "polling.py").read_bytes().replace(b"\n", b"\r\n"))
    before = {p.name: p.read_bytes() for p in work.glob("*.py")}
    assert ruff("check", "--select", "F,I", cwd=work).returncode == 0
    assert ruff("format", "--check", cwd=work).returncode == 0
    monkeypatch.chdir(work)
    code, out, err = run("check", "--no-cache", "--fix", "--unsafe-fixes", ".")
    assert "Traceback" not in err
    changed = sorted(name for name, data in before.items() if (work / name).read_bytes() != data)
    assert len(changed) >= 10, changed  # the fixes did run
    checked = ruff("check", "--select", "F,I", cwd=work)
    assert checked.returncode == 0, checked.stdout
    formatted = ruff("format", "--check", "--diff", cwd=work)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    data = crlf.read_bytes()
    assert b"import random\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


def test_jitter_swaps_are_unsafe():
    tenacity = """
        from tenacity import retry, stop_after_attempt, wait_exponential
        @retry(stop=stop_after_attempt(5), wait=wait_exponential(min=4, max=10), retry=lambda s: True)
        def f(): ...
    """
    redis = """
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry
        r = Retry(ExponentialBackoff(cap=5, base=0.1), 5)
    """
    for source in (tenacity, redis):
        assert fixed(source) == textwrap.dedent(source).lstrip("\n")
        assert fixed(source, unsafe=True) != fixed(source)


def test_backoff_jitter_removal_is_unsafe():
    source = """
        import backoff
        @backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)
        def f(): ...
    """
    assert fixed(source) == textwrap.dedent(source).lstrip("\n")


def test_a_renamed_name_leaves_the_import_and_the_new_one_is_sorted_in():
    out = fixed("""
        from tenacity import (
            retry,
            stop_after_attempt,
            wait_exponential,
        )

        @retry(stop=stop_after_attempt(5), wait=wait_exponential(max=10), retry=lambda s: True)
        def f(): ...
    """, unsafe=True)
    assert out.startswith("from tenacity import (\n    retry,\n    stop_after_attempt,\n    wait_random_exponential,\n)\n")


def test_a_name_still_used_elsewhere_stays_imported():
    out = fixed("""
        from tenacity import retry, stop_after_attempt, wait_exponential

        SLOW = wait_exponential(max=60)

        @retry(stop=stop_after_attempt(5), wait=wait_exponential(max=10), retry=lambda s: True)
        def f(): ...
    """, unsafe=True)
    # Both names stay; on one line they would take 89 columns: split as isort splits it (report 15).
    assert out.startswith("from tenacity import (\n    retry,\n    stop_after_attempt,\n    wait_exponential,\n"
                          "    wait_random_exponential,\n)\n")
    # The renamed call's decorator, too long on one line, is split one argument per line (it
    # used to become ``wait=retry(max=10, …)``).
    assert "@retry(\n    stop=stop_after_attempt(5),\n    wait=wait_random_exponential(max=10),\n" \
           "    retry=lambda s: True,\n)\n" in out


def test_an_argument_is_added_in_place_in_an_indented_multiline_call():
    source = """
        import tenacity


        class Client:
            @tenacity.retry(
                wait=tenacity.wait_random_exponential(max=20),  # keep this comment here
                retry=tenacity.retry_if_exception_type(OSError),
            )
            def fetch(self): ...
    """
    out = fixed(source, unsafe=True)
    expected = textwrap.dedent(source).lstrip("\n").replace(
        "        retry=tenacity.retry_if_exception_type(OSError),\n",
        "        retry=tenacity.retry_if_exception_type(OSError),\n        stop=tenacity.stop_after_attempt(6),\n")
    assert out == expected
    assert out.count("# keep this comment here") == 1


def test_a_removed_argument_takes_its_own_comment_and_nothing_else():
    source = """
        import backoff


        @backoff.on_exception(
            backoff.expo,
            OSError,  # transient only
            max_tries=5,
            jitter=None,  # deterministic delays
            max_value=20,
        )
        def f(): ...
    """
    out = fixed(source, unsafe=True)
    assert out == textwrap.dedent(source).lstrip("\n").replace("    jitter=None,  # deterministic delays\n", "")


def test_random_uniform_is_never_written_where_random_is_a_local_name():
    for header in ("def fetch(call, random):", "def fetch(call):\n    random = make_generator()"):
        source = "import random\nimport time\n\n\n" + header + """
    for attempt in range(5):
        try:
            return call()
        except ConnectionError:
            time.sleep(2**attempt)
"""
        out = fix_source(source, "case.py", ALL, True).fixed
        assert "random.uniform" not in out, out


def test_random_is_imported_sorted_into_its_section():
    out = fixed("""
        import logging
        import time

        import requests


        def fetch(url):
            for attempt in range(5):
                try:
                    return requests.get(url, timeout=5)
                except requests.ConnectionError:
                    logging.info("retrying")
                    time.sleep(2**attempt)
    """, unsafe=True)
    assert out.startswith("import logging\nimport random\nimport time\n\nimport requests\n")
    assert "time.sleep(random.uniform(0, 2**attempt))" in out


def test_crlf_stays_crlf_when_a_fix_adds_lines(project, run):
    source = "import time\r\n\r\n\r\ndef fetch(call):\r\n    for attempt in range(5):\r\n        try:\r\n" \
             "            return call()\r\n        except ConnectionError:\r\n            time.sleep(2**attempt)\r\n"
    path = project.root / "app.py"
    path.write_bytes(source.encode())
    run("check", "--fix", "--unsafe-fixes", "app.py")
    data = path.read_bytes()
    assert b"random.uniform" in data and b"import random\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")
