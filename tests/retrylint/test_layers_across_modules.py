"""Retry amplification across modules (issues 12 and 13): a retry around a function that another
module of the checked tree gives its own retry decorator multiplies the attempts (RTY501).

The program view reads the other module's ``ast`` for functions with a retry-like decorator, and
only then asks the extractors for that file's policy: only where both layers are known. Standard
input sees one file and so never reports it; the results cache misses when the other module
changes.
"""

from __future__ import annotations

import io
import json
import sys

CLIENT = """
from tenacity import retry, stop_after_attempt, wait_exponential_jitter


@retry(stop=stop_after_attempt(4), wait=wait_exponential_jitter(initial=1, max=30), reraise=True)
def fetch(url):
    return _session.get(url, timeout=5)
"""

WORKER = """
from tenacity import retry, stop_after_attempt, wait_exponential_jitter

from {import_from} import fetch


@retry(stop=stop_after_attempt(3), wait=wait_exponential_jitter(initial=1, max=30), reraise=True)
def handle(message):
    return fetch(message["url"])
"""


def _tree(project, client=CLIENT, import_from=".client"):
    project.write("pkg/__init__.py", "")
    project.write("pkg/client.py", client)
    project.write("pkg/worker.py", WORKER.format(import_from=import_from))


def _rty501(run, *paths):
    code, out, err = run("check", "--select", "RTY501", "--output-format", "json", *paths)
    assert code in (0, 1), err
    return [f for f in json.loads(out) if f["code"] == "RTY501"]


def test_a_retry_around_a_decorated_function_of_another_module_multiplies(project, run):
    _tree(project)
    (finding,) = _rty501(run, "pkg")
    assert finding["filename"].endswith("worker.py") and finding["location"]["row"] == 6
    assert "3 × 4 = 12" in finding["message"]
    assert "client.py:4" in finding["message"]  # where the inner policy is, to check it


def test_an_absolute_import_is_followed_too(project, run):
    _tree(project, import_from="pkg.client")
    (finding,) = _rty501(run, "pkg")
    assert "3 × 4 = 12" in finding["message"]


def test_a_function_without_a_retry_decorator_is_no_layer(project, run):
    _tree(project, client=CLIENT.replace("@retry(", "@cache(").replace(
        "from tenacity import", "from functools import cache\nfrom tenacity import"))
    assert _rty501(run, "pkg") == []


def test_a_task_queue_decorator_is_no_layer(project, run):
    # Calling a celery task function directly runs it once: the worker's redelivery retries it.
    task = """
from celery import shared_task


@shared_task(autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=5)
def fetch(url):
    return _session.get(url, timeout=5)
"""
    _tree(project, client=task)
    assert _rty501(run, "pkg") == []


def test_the_cache_misses_when_the_decorated_module_changes(project, run):
    _tree(project)
    assert len(_rty501(run, "pkg")) == 1
    assert len(_rty501(run, "pkg")) == 1  # warm: from the cache
    project.write("pkg/client.py", CLIENT.replace("@retry(", "# @retry(").replace(", reraise=True)", ""))
    assert _rty501(run, "pkg/worker.py") == []  # worker.py itself did not change


def test_standard_input_sees_one_file(project, run, monkeypatch):
    _tree(project)
    source = (project.root / "pkg" / "worker.py").read_text()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
    assert _rty501(run, "--stdin-filename", "pkg/worker.py", "-") == []


def test_explain_shows_the_other_file(project, run):
    _tree(project)
    code, out, _ = run("explain", "pkg/worker.py:6")
    assert code == 0
    assert "client.py:4" in out


def test_an_import_cycle_of_decorated_functions_ends(project, run):
    # a.fetch_a retries around b.fetch_b and the other way round: each file is read once
    # for the other's policy (no recursion without end), and both layers are reported.
    project.write("pkg/__init__.py", "")
    for name, other, attempts in (("a", "b", 3), ("b", "a", 2)):
        project.write(f"pkg/{name}.py", f"""
from tenacity import retry, stop_after_attempt, wait_random_exponential

from .{other} import fetch_{other}


@retry(stop=stop_after_attempt({attempts}), wait=wait_random_exponential(max=10), reraise=True)
def fetch_{name}(x):
    return fetch_{other}(x)
""")
    found = _rty501(run, "pkg")
    assert sorted(f["filename"].rsplit("/", 1)[-1] for f in found) == ["a.py", "b.py"]
    assert all("= 6 attempts per call" in f["message"] for f in found)
