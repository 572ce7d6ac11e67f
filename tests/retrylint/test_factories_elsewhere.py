"""Retry decorators built by a factory in another module (issue 12, "policies built away from
their use"): ``@retry_pattern(backoff.expo, ConnectionError, max_tries=5)`` where
``utils.retry_pattern`` returns ``backoff.on_exception(wait_gen, exception, jitter=None, **kwargs)``.
Each use is judged with the values it passes and reported where it is written, naming the
factory; the factory itself, applied only elsewhere, is not reported a second time."""

from __future__ import annotations

FACTORY = """
import backoff
from tenacity import retry, stop_after_attempt, wait_exponential


def retry_pattern(wait_gen, exception, **wait_gen_kwargs):
    def log_retry_attempt(details):
        pass

    return backoff.on_exception(wait_gen, exception, jitter={jitter}, on_backoff=log_retry_attempt, **wait_gen_kwargs)


def tenacious(attempts=5, *, cap=60):
    return retry(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=1, max=cap))
"""

STREAMS = """
import backoff
import requests
from .utils import retry_pattern, tenacious
from . import utils


class Stream:
    @retry_pattern(backoff.expo, requests.ConnectionError, max_tries=5, factor=5)
    def request(self, url):
        return requests.get(url)

    @utils.retry_pattern(backoff.constant, requests.Timeout, max_tries=3, interval=2)
    def poll(self, url):
        return requests.get(url)

    @tenacious(attempts=4)
    def other(self, url):
        return requests.get(url)

    @retry_pattern(*UNKNOWN)
    def unknown(self, url):
        return requests.get(url)
"""


def _package(project, jitter="None"):
    project.write("pkg/__init__.py", "")
    project.write("pkg/utils.py", FACTORY.format(jitter=jitter))
    project.write("pkg/streams.py", STREAMS)


def _lines(out):
    return [line for line in out.splitlines() if line.startswith("pkg/")]


def test_each_use_is_judged_with_its_values_where_it_is_written(project, run):
    _package(project)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 1
    lines = _lines(out)
    assert any(line.startswith("pkg/streams.py:8:") and "RTY203" in line
               and "built by `retry_pattern(...)` in pkg/utils.py:9" in line for line in lines), out
    assert any(line.startswith("pkg/streams.py:12:") and "RTY202" in line for line in lines), out
    assert any(line.startswith("pkg/streams.py:16:") and "RTY203" in line
               and "built by `tenacious(...)`" in line for line in lines), out
    assert not [line for line in lines if line.startswith("pkg/streams.py:20:")], out  # ``*UNKNOWN``: unread
    assert not [line for line in lines if line.startswith("pkg/utils.py")], out  # judged at its uses


def test_explain_gives_the_uses_schedule(project, run):
    _package(project)
    code, out, _ = run("explain", "pkg/streams.py")
    assert "built by `retry_pattern(...)` in pkg/utils.py:9" in out
    assert "5, 10, 20, 40 s" in out  # factor=5 from the use, max_tries=5
    assert "values from: `retry_pattern(backoff.expo, requests.ConnectionError, max_tries=5, factor=5)`: built by" in out


def test_a_use_follows_the_factory_when_it_changes(project, run):
    _package(project)
    _, out, _ = run("check", "pkg")
    assert "pkg/streams.py:8:" in out
    project.write("pkg/utils.py", FACTORY.format(jitter="backoff.full_jitter"))  # streams.py unchanged
    _, out, _ = run("check", "pkg")
    assert "pkg/streams.py:8:" not in out and "pkg/streams.py:12:" in out


def test_noqa_at_the_use_silences_it(project, run):
    _package(project)
    project.write("pkg/streams.py", STREAMS.replace(
        "max_tries=5, factor=5)", "max_tries=5, factor=5)  # noqa: RTY203"))
    _, out, _ = run("check", "--no-cache", "pkg")
    assert "pkg/streams.py:8:" not in out


def test_a_factory_applied_nowhere_else_is_judged_where_it_is_written(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/utils.py", FACTORY.format(jitter="None"))
    code, out, _ = run("check", "--no-cache", "pkg")
    # tenacious(): judged with its defaults where written (no use anywhere to give other values)
    assert any(line.startswith("pkg/utils.py:") and "RTY203" in line for line in _lines(out)), out
