"""--fix, --unsafe-fixes and --diff: what changes, what is left alone, and that fixing is stable."""

from __future__ import annotations

import ast
import io
import json
import sys
import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrylint.engine import settings_with
from retrylint.rules import RULES
from retrylint.runner import fix_source

from .conftest import codes

ALL = settings_with(tuple(rule.code for rule in RULES))


def fixed(code: str, unsafe: bool = False) -> str:
    return fix_source(textwrap.dedent(code).lstrip("\n"), "case.py", ALL, unsafe).fixed


def test_tenacity_wait_exponential_becomes_random_exponential_as_an_unsafe_fix():
    source = """
        from tenacity import retry, stop_after_attempt, wait_exponential
        @retry(stop=stop_after_attempt(5), wait=wait_exponential(multiplier=1, max=20), retry=lambda s: True)
        def f(): ...
    """
    # Full jitter halves the average delay (and drops `min` on tenacity < 9): never a safe fix.
    assert fixed(source) == textwrap.dedent(source).lstrip("\n")
    out = fixed(source, unsafe=True)
    assert "wait=wait_random_exponential(multiplier=1, max=20)" in out
    # The old name is no longer used: it leaves the import instead of staying behind unused.
    assert "from tenacity import retry, stop_after_attempt, wait_random_exponential\n" in out


def test_tenacity_module_attribute_is_renamed_in_place():
    source = """
        import tenacity as t
        @t.retry(stop=t.stop_after_attempt(5), wait=t.wait_exponential(max=20), retry=lambda s: True)
        def f(): ...
    """
    out = fixed(source, unsafe=True)
    assert "wait=t.wait_random_exponential(max=20)" in out
    assert out.count("import") == 1


def test_aliased_import_is_left_alone():
    source = """
        from tenacity import retry, stop_after_attempt, wait_exponential as expo
        @retry(stop=stop_after_attempt(5), wait=expo(max=20), retry=lambda s: True)
        def f(): ...
    """
    assert fixed(source, unsafe=True) == textwrap.dedent(source).lstrip("\n")


def test_backoff_jitter_none_is_removed():
    source = """
        import backoff
        @backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)
        def f(): ...
    """
    assert "backoff.on_exception(backoff.expo, OSError, max_tries=5, max_value=20)" in fixed(source, unsafe=True)


def test_backoff_jitter_none_as_the_last_argument_of_a_multiline_call():
    source = """
        import backoff
        @backoff.on_exception(
            backoff.expo,
            OSError,
            max_tries=5,
            max_value=20,
            jitter=None,
        )
        def f(): ...
    """
    out = fixed(source, unsafe=True)
    assert "jitter" not in out
    ast.parse(out)
    assert "    max_value=20,\n)" in out


def test_redis_exponential_backoff_becomes_full_jitter():
    source = """
        from redis.retry import Retry
        from redis.backoff import ExponentialBackoff
        r = Retry(ExponentialBackoff(cap=5, base=0.1), 5)
    """
    assert fixed(source) == textwrap.dedent(source).lstrip("\n")
    out = fixed(source, unsafe=True)
    assert "Retry(FullJitterBackoff(cap=5, base=0.1), 5)" in out
    assert "from redis.backoff import FullJitterBackoff\n" in out


def test_coredis_exponential_policy_gets_jitter():
    source = """
        from coredis.retry import ExponentialBackoffRetryPolicy
        p = ExponentialBackoffRetryPolicy((ConnectionError,), 5, max_delay=10)
    """
    assert fixed(source) == textwrap.dedent(source).lstrip("\n")
    out = fixed(source, unsafe=True)
    assert "ExponentialBackoffRetryPolicy((ConnectionError,), 5, max_delay=10, jitter=True)" in out
    from retrylint.engine import check_source

    assert [f.code for f in check_source(textwrap.dedent(source).lstrip("\n"), "case.py", ALL).findings] == ["RTY203"]
    assert [f.code for f in check_source(out, "case.py", ALL).findings] == []


def test_unsafe_fixes_need_the_flag():
    source = """
        import time
        def fetch(call):
            for attempt in range(5):
                try:
                    return call()
                except ConnectionError:
                    time.sleep(2 ** attempt)
    """
    assert fixed(source) == textwrap.dedent(source).lstrip("\n")
    out = fixed(source, unsafe=True)
    assert "time.sleep(random.uniform(0, 2 ** attempt))" in out
    assert out.startswith("import random\nimport time\n")  # sorted into the block, as isort would


def test_unsafe_caps_and_limits():
    source = """
        import backoff
        @backoff.on_exception(backoff.expo, OSError)
        def f(): ...
    """
    out = fixed(source, unsafe=True)
    # An attempt limit comes first; with six tries the delay stays under the cap, so no cap is added.
    assert "@backoff.on_exception(backoff.expo, OSError, max_tries=6)" in out
    assert fix_source(out, "case.py", ALL, True).report.findings == []


def test_bare_tenacity_decorator_gets_stop_and_wait():
    source = """
        from tenacity import retry
        @retry
        def f(): ...
    """
    out = fixed(source, unsafe=True)
    assert "@retry(stop=stop_after_attempt(6), wait=wait_random_exponential(multiplier=0.5, max=20))" in out
    assert "from tenacity import retry, stop_after_attempt, wait_random_exponential" in out


def test_diff_does_not_write_and_exits_1(project, run):
    path = project.write("app.py", """
        import backoff
        @backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)
        def f(): ...
    """)
    before = path.read_text()
    code, out, err = run("check", "--diff", "--unsafe-fixes", "app.py")
    assert code == 1
    assert out.startswith("--- app.py\n+++ app.py\n")
    assert "-@backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)" in out
    assert path.read_text() == before
    assert run("check", "--diff", "--unsafe-fixes", "app.py")[0] == 1


def test_fix_writes_and_reports_what_remains(project, run):
    path = project.write("app.py", """
        import backoff
        @backoff.on_exception(backoff.expo, Exception, max_tries=5, jitter=None, max_value=20)
        def f(): ...
    """)
    code, out, _ = run("check", "--fix", "--unsafe-fixes", "app.py")
    assert "jitter" not in path.read_text()
    assert codes(out) == ["RTY301"]
    assert "Fixed 1 error." in out and "Found 1 error remaining." in out
    assert code == 1
    code, out, _ = run("check", "--fix", "--unsafe-fixes", "app.py")
    assert "Fixed" not in out


def test_fix_keeps_bom_and_crlf(project, run):
    source = "import backoff\r\n@backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)\r\ndef f(): ...\r\n"
    path = project.root / "app.py"
    path.write_bytes(b"\xef\xbb\xbf" + source.encode())
    run("check", "--fix", "--unsafe-fixes", "app.py")
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"jitter" not in data and data.count(b"\r\n") == 3


def test_markers_and_json_fix(project, run):
    project.write("app.py", """
        import backoff
        @backoff.on_exception(backoff.expo, OSError, jitter=None)
        def f(): ...
    """)
    code, out, _ = run("check", "app.py")
    # Every fix changes the delays, so none is offered by plain ``--fix``.
    assert ": RTY203 backoff" in out and ": RTY102 backoff" in out and "[*]" not in out
    assert "(3 hidden fixes can be enabled with the `--unsafe-fixes` option.)" in out
    code, out, _ = run("check", "--unsafe-fixes", "app.py")
    assert ": RTY203 [*] " in out and ": RTY102 [*] " in out and "[*] 3 fixable" in out
    code, out, _ = run("check", "--output-format", "json", "app.py")
    items = {i["code"]: i for i in json.loads(out)}
    assert items["RTY203"]["fix"]["applicability"] == "unsafe"
    assert items["RTY203"]["fix"]["edits"][0]["location"]["row"] == 2
    assert items["RTY204"]["fix"]["applicability"] == "unsafe"


def test_fix_from_stdin_prints_the_fixed_source(project, run, monkeypatch):
    source = "import backoff\n@backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)\ndef f(): ...\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
    code, out, _ = run("check", "--fix", "--unsafe-fixes", "-", "--stdin-filename", "app.py")
    assert out == source.replace(", jitter=None", "")
    assert code == 0


def test_diff_from_stdin_says_how_many_fixes_would_be_applied(project, run, monkeypatch):
    source = "import backoff\n@backoff.on_exception(backoff.expo, OSError, max_tries=5, jitter=None, max_value=20)\ndef f(): ...\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
    code, out, err = run("check", "--diff", "--unsafe-fixes", "-", "--stdin-filename", "app.py")
    assert code == 1 and out.startswith("--- app.py\n+++ app.py\n")
    assert "1 fix would be applied to 1 file." in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x = 1\n")))
    code, out, err = run("check", "--diff", "-")
    assert code == 0 and out == "" and "0 fixes would be applied to 0 files." in err


# ---------------------------------------------------------------- properties

WAITS = st.sampled_from([
    "wait_exponential()", "wait_exponential(multiplier=0.5)", "wait_exponential(max=30)", "wait_random_exponential()",
    "wait_fixed(2)", "wait_exponential_jitter(max=10)", "wait_none()",
])
STOPS = st.sampled_from(["", "stop=stop_after_attempt(4), ", "stop=stop_after_attempt(40), ", "stop=stop_never, "])
JITTERS = st.sampled_from(["", ", jitter=None", ", jitter=backoff.full_jitter"])
LIMITS = st.sampled_from(["", ", max_tries=3", ", max_time=60", ", max_value=20", ", max_tries=12"])
SLEEPS = st.sampled_from(["2 ** attempt", "min(20, 2 ** attempt)", "5", "random.uniform(0, 2 ** attempt)", "0.1 * (1 << attempt)"])
FACTORS = st.sampled_from(["", ", backoff_factor=0.5", ", backoff_factor=1, backoff_jitter=0.5", ", status_forcelist=[404, 503]"])


@st.composite
def programs(draw) -> str:
    parts = [
        "import random",
        "import time",
        "import backoff",
        "from urllib3.util import Retry",
        "from tenacity import retry, stop_after_attempt, stop_never, wait_exponential, wait_random_exponential,"
        " wait_fixed, wait_exponential_jitter, wait_none",
        "",
    ]
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["tenacity", "backoff", "urllib3", "loop"]))
        if kind == "tenacity":
            parts.append(f"@retry({draw(STOPS)}wait={draw(WAITS)}, retry=lambda state: True)\ndef t{i}(): ...\n")
        elif kind == "backoff":
            parts.append(f"@backoff.on_exception(backoff.expo, OSError{draw(LIMITS)}{draw(JITTERS)})\ndef b{i}(): ...\n")
        elif kind == "urllib3":
            parts.append(f"r{i} = Retry(total=5{draw(FACTORS)})\n")
        else:
            parts.append(
                f"def l{i}(call):\n    for attempt in range({draw(st.integers(2, 30))}):\n        try:\n"
                f"            return call()\n        except OSError:\n            time.sleep({draw(SLEEPS)})\n"
            )
    return "\n".join(parts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.booleans())
def test_fixing_parses_and_is_stable(source, unsafe):
    once = fix_source(source, "case.py", ALL, unsafe).fixed
    ast.parse(once)
    twice = fix_source(once, "case.py", ALL, unsafe).fixed
    assert twice == once
    remaining = fix_source(once, "case.py", ALL, unsafe).report.findings
    assert not [f for f in remaining if f.fix is not None and (f.fix.safety == "safe" or unsafe)]
