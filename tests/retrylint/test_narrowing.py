"""Narrowing (skip files, blank definitions before libcst) changes no finding.

The comparison runs the engine with and without narrowing over every rule example, the
shipped examples and a deterministic sample of the running Python's standard library, and
requires identical findings. ``bench/narrowing_check.py`` runs the same comparison over
whole corpora (the standard library, site-packages, the labeled corpus).
"""

from __future__ import annotations

import ast
import hashlib
import sysconfig
import textwrap
from pathlib import Path

import pytest

from retrylint.engine import TRIGGERS, check_path, check_source, settings_with
from retrylint.narrowing import Source, active_triggers, narrow_source
from retrylint.rules import RULES

ALL_CODES = tuple(rule.code for rule in RULES)
SETTINGS = settings_with(ALL_CODES)
ROOT = Path(__file__).resolve().parents[2]


def _findings(report):
    return [(f.code, f.location, f.message, f.fix is not None) for f in report.findings], report.notice, report.error


def _same(text: str, name: str) -> None:
    narrowed = check_source(text, name, SETTINGS)
    whole = check_source(text, name, SETTINGS, narrowing=False)
    assert _findings(narrowed) == _findings(whole)


def _cases():
    for rule in RULES:
        for kind in ("VALID", "INVALID"):
            for index, case in enumerate(getattr(rule, kind)):
                yield pytest.param(textwrap.dedent(case.code), id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize("code", list(_cases()))
def test_rule_examples_give_the_same_findings_narrowed(code):
    _same(code, "case.py")


def _shipped():
    for path in sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "tests" / "retrylint" / "golden").rglob("*.py")):
        yield pytest.param(path, id=str(path.relative_to(ROOT)))


@pytest.mark.parametrize("path", list(_shipped()))
def test_shipped_examples_give_the_same_findings_narrowed(path):
    _same(path.read_text(encoding="utf-8"), path.name)


def _stdlib_sample(count: int = 80):
    """A fixed sample (by path hash) of the standard library: files narrowing analyses and
    files it skips, none over 60 KB so that the unnarrowed run stays quick."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and p.stat().st_size < 60_000]
    files.sort(key=lambda p: hashlib.sha1(str(p.relative_to(stdlib)).encode()).hexdigest())
    analysed, skipped = [], []
    for path in files:
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
            tree = ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        active = active_triggers(data, TRIGGERS)
        kept = narrow_source(Source(text, tree), active) if active else None
        (skipped if kept is None else analysed).append(path)
        if len(analysed) >= count // 2 and len(skipped) >= count // 2:
            break
    return [pytest.param(p, id=str(p.relative_to(stdlib))) for p in analysed[: count // 2] + skipped[: count // 2]]


@pytest.mark.parametrize("path", _stdlib_sample())
def test_standard_library_sample_gives_the_same_findings_narrowed(path):
    narrowed = check_path(path, path.name, SETTINGS)
    whole = check_path(path, path.name, SETTINGS, narrowing=False)
    assert _findings(narrowed) == _findings(whole)


# ---------------------------------------------------------------- what narrowing keeps


def _narrow(code: str):
    text = textwrap.dedent(code)
    return narrow_source(Source(text, ast.parse(text)), active_triggers(text.encode(), TRIGGERS))


def test_a_file_without_a_possible_site_is_not_parsed_by_libcst():
    assert _narrow(
        '''
        """A docstring that talks about retry loops: while True, except, time.sleep(1)."""
        def read(items):
            for item in items:  # walks items: not a retry
                try:
                    use(item)
                except ValueError:
                    continue
        '''
    ) is None


def test_definitions_without_sites_become_pass_on_the_same_lines():
    code = textwrap.dedent(
        '''
        import time

        DELAY = 1

        def unrelated(x):
            return x * 2

        class Client:
            timeout = 3

            def close(self):
                self.sock.close()

            def fetch(self):
                while True:
                    try:
                        return self.get()
                    except ConnectionError:
                        self._pause()

            def _pause(self):
                time.sleep(DELAY)
        '''
    )
    narrowed = _narrow(code)
    assert narrowed is not None and narrowed.count("\n") == code.count("\n")
    kept = narrowed.splitlines()
    original = code.splitlines()
    assert "def unrelated" not in narrowed and "def close" not in narrowed
    # a placeholder of the same height: an empty multi-line string (one token for libcst)
    assert kept[original.index("def unrelated(x):")] == '"""'
    assert kept[original.index("    def close(self):")] == '    """'
    assert kept[original.index("def unrelated(x):") + 1] == '"""'  # its last line closes the string
    assert "self.sock.close()" not in narrowed
    for line in ("import time", "DELAY = 1", "    timeout = 3", "    def fetch(self):", "    def _pause(self):",
                 "        time.sleep(DELAY)"):
        assert line in kept, line  # imports, constants, the site and the helper that sleeps
    ast.parse(narrowed)


def test_a_local_subclass_of_a_library_class_is_kept_with_its_uses():
    narrowed = _narrow(
        '''
        from urllib3.util.retry import Retry

        class LoggingRetry(Retry):
            def increment(self, *args, **kwargs):
                return super().increment(*args, **kwargs)

        def session():
            return LoggingRetry(total=None)
        '''
    )
    assert narrowed is not None and "class LoggingRetry(Retry):" in narrowed and "LoggingRetry(total=None)" in narrowed
    assert "def increment" not in narrowed


def test_a_self_call_outside_a_handler_is_no_recursive_retry():
    assert _narrow(
        '''
        def walk(node):
            try:
                children = node.children
            except AttributeError:
                return
            for child in children:
                walk(child)
        '''
    ) is None
    assert _narrow(
        '''
        def fetch(url, attempt=0):
            try:
                return get(url)
            except ConnectionError:
                return fetch(url, attempt + 1)
        '''
    ) is not None


def test_a_loop_whose_handler_always_leaves_or_that_never_leaves_on_success_is_no_candidate():
    # The handler raises: nothing goes round again.
    assert _narrow(
        '''
        def read(sock):
            while True:
                try:
                    return sock.recv(1024)
                except OSError:
                    raise
        '''
    ) is None
    # A server loop: the handler goes round, but success never leaves the loop.
    assert _narrow(
        '''
        def serve(sock):
            while True:
                try:
                    handle(sock.accept())
                except OSError:
                    continue
        '''
    ) is None
    # ``while result is None``: the attempt sets what the loop tests, so success leaves.
    assert _narrow(
        '''
        def fetch(url):
            result = None
            while result is None:
                try:
                    result = get(url)
                except ConnectionError:
                    pass
            return result
        '''
    ) is not None


def _candidate(code: str) -> bool:
    """Narrowed to something (a candidate), and with the same findings as the whole file."""
    _same(textwrap.dedent(code), "case.py")
    return _narrow(code) is not None


def test_a_handler_of_not_yet_exceptions_polls_and_is_no_candidate():
    assert not _candidate(
        '''
        import queue

        def drain(q):
            while True:
                try:
                    item = q.get(timeout=1)
                    return item
                except (queue.Empty, StopIteration):
                    continue
        '''
    )
    # ``Empty`` as an alias or a name the file assigns may be anything: the extractor decides.
    for binding in ("from mylib import TransientError as Empty", "Empty = (ConnectionError, TimeoutError)"):
        assert _candidate(
            f'''
            {binding}

            def fetch(url):
                while True:
                    try:
                        return get(url)
                    except Empty:
                        continue
            '''
        ), binding
    # An errno test of "not ready" is EINTR handling.
    assert not _candidate(
        '''
        import errno

        def send(sock, data):
            while True:
                try:
                    return sock.send(data)
                except OSError as e:
                    if e.errno == errno.EINTR:
                        continue
                    raise
        '''
    )


def test_a_for_loop_over_items_is_no_candidate_but_one_over_delays_is():
    assert not _candidate(
        '''
        import subprocess

        def version():
            for cmd in ("ver", "command /c ver", "cmd /c ver"):
                try:
                    return subprocess.check_output(cmd)
                except OSError:
                    continue
        '''
    )
    for header in ("for delay in (1, 2, 4, None):", "for delay in DELAYS:", "for i, delay in enumerate(BACKOFF):"):
        assert _candidate(
            f'''
            import time
            BASE = [0.5, 1, 2]
            DELAYS = BACKOFF = BASE

            def fetch(url):
                {header}
                    try:
                        return get(url)
                    except ConnectionError:
                        time.sleep(delay or 1)
            '''
        ), header


def test_a_try_inside_another_attempt_retries_only_by_continue():
    # The inner handler swallows a parsing failure of the response: no retry of its own.
    assert not _candidate(
        '''
        def read_all(stream):
            while True:
                try:
                    chunk = stream.read()
                    try:
                        parse(chunk)
                    except ValueError:
                        pass
                    if not chunk:
                        return
                except OSError:
                    raise
        '''
    )


def test_a_status_test_counts_only_on_what_the_loop_assigns():
    assert not _candidate(
        '''
        def poll(job):
            while True:
                if job.status == 200:
                    return job
                refresh(job)
        '''
    )
    assert _candidate(
        '''
        import time

        def fetch(url):
            while True:
                resp = get(url)
                if resp.status_code == 200:
                    return resp
                time.sleep(1)
        '''
    )


def test_a_call_word_in_a_docstring_or_a_longer_package_name_is_no_site():
    # ``delay()`` in a docstring is no celery call, and ``redistribute`` names no redis.
    assert not _candidate(
        '''
        """Redistribute freely. Screen updates are controlled via delay()."""

        def delay(self, delay=None):
            """Set the delay; see delay()."""
            self._delay = delay
        '''
    )
    assert _candidate(
        '''
        import redis

        client = redis.Redis()

        def replay():
            while True:
                message = client.rpop("orders-dlq")
                client.lpush("orders", message)
        '''
    )


def test_numbers_assigned_through_comments_and_names_count_and_a_comment_run_is_linear():
    text = "BASE = [  # seconds\n    0.5, 1]\nDELAYS = self.delays = BASE\nNAMES = ['a']\nX = [\n" + "#" * 40 + "\n 'a']\n"
    source = Source(text, ast.parse(text))
    assert source.assigns("BASE", numbers=True) and source.assigns("DELAYS", numbers=True)
    assert not source.assigns("NAMES", numbers=True)
    # ``##…`` after a bracket could once be split 2**n ways by the pattern: this returns at once.
    assert not source.assigns("X", numbers=True)


def test_an_exit_only_on_a_test_of_something_else_is_no_way_out_on_success():
    # ``if strict: return`` leaves on a flag, not because the attempt worked.
    assert not _candidate(
        '''
        import os

        def resolve(parts, strict):
            while parts:
                name = parts.pop()
                try:
                    st = os.lstat(name)
                except OSError:
                    pass
                if strict:
                    return None
        '''
    )
    # ``if data is not None: return data`` tests what the attempt assigned.
    assert _candidate(
        '''
        def fetch(url):
            while True:
                try:
                    data = get(url)
                except OSError:
                    pass
                if data is not None:
                    return data
        '''
    )
    # A status test on the response says it worked.
    assert _candidate(
        '''
        def fetch(client, url):
            while True:
                try:
                    client.resp = client.get(url)
                except OSError:
                    continue
                if client.resp.status_code == 200:
                    break
        '''
    )


def test_a_status_compared_with_text_is_no_status_test():
    assert not _candidate(
        '''
        def read_ops(data):
            while True:
                code = data.read(1)
                if code == b"":
                    return
                handle(code)
        '''
    )


def test_an_errno_test_polls_only_where_the_extractor_reads_it():
    # A bare ``except:`` never polls, and an errno test inside a loop of the handler is not
    # the handler's own: both stay candidates (with the same findings as the whole file).
    template = (
        "import errno\n\n"
        "def fetch(url):\n"
        "    while True:\n"
        "        try:\n"
        "            return get(url)\n"
        "{handler}"
    )
    for handler in (
        "        except:\n            if errno.EINTR:\n                pass\n",
        "        except OSError as e:\n            for _ in range(1):\n                if e.errno == errno.EINTR:\n"
        "                    pass\n",
    ):
        assert _candidate(template.format(handler=handler)), handler


def test_a_for_loop_that_waits_on_its_item_is_a_candidate_whatever_names_the_wait():
    for wait, target in (("wait_for(event.wait(), timeout=delay)", "delay"), ("time.sleep(self.delay)", "self.delay")):
        code = (
            "import time\nfrom asyncio import wait_for\n\n"
            "async def fetch(self, event, url):\n"
            f"    for {target} in backoff_delays():\n"
            "        try:\n"
            "            return await get(url)\n"
            "        except ConnectionError:\n"
            f"            await {wait}\n"
        )
        assert _candidate(code), wait
