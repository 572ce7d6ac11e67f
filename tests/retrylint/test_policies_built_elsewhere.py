"""Policies built away from their use (issue 12): ``@retry(**RETRY_ARGS)``, ``Retrying(**config)``,
``AsyncRetrying(**build_args())``, ``Retry(**kwargs)``, ``HTTPAdapter(max_retries=Retry(**opts))``,
wait/stop strategies returned by a helper or kept in a constant. Each pattern fires with the right
numbers where the whole mapping is visible, reported where it is built; each look-alike with an
unknown part (a parameter, a mutation, a second assignment, a ``**kwargs`` passthrough) is silent.

Every snippet is executed first against the installed tenacity/backoff/urllib3/redis/google-api-core,
so the patterns are real ones (a misspelled keyword would fail here).
"""

from __future__ import annotations

import json
import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)


def _run(source: str):
    source = textwrap.dedent(source).lstrip("\n")
    exec(compile(source, "case.py", "exec"), {"__name__": "case"})  # the patterns must be real
    report = check_source(source, "case.py", settings_with(CODES), want_policies=True)
    assert report.error is None, report.error
    return report


def _found(source: str):
    return {(f.code, f.location.line): f.message for f in _run(source).findings}


def _codes(source: str):
    return {code for code, _ in _found(source)}


# ---------------------------------------------------------------- tenacity


def test_module_constant_dict_reported_where_it_is_built():
    found = _found("""
        from tenacity import retry, wait_exponential, retry_if_exception_type

        RETRY_ARGS = {
            "wait": wait_exponential(multiplier=1, max=10),
            "retry": retry_if_exception_type(ConnectionError),
        }

        @retry(**RETRY_ARGS)
        def fetch():
            pass
    """)
    assert set(found) == {("RTY102", 3), ("RTY203", 3)}
    message = found[("RTY102", 3)]
    assert "built here (used by `@retry(**RETRY_ARGS)` at line 8)" in message
    assert "cap 10 s, no jitter" in message


def test_a_dict_used_twice_is_reported_once_naming_both_uses():
    report = _run("""
        from tenacity import retry, stop_after_attempt, wait_fixed, retry_if_exception_type

        RETRY_ARGS = dict(stop=stop_after_attempt(5), wait=wait_fixed(3), retry=retry_if_exception_type(OSError))

        @retry(**RETRY_ARGS)
        def a(): pass

        @retry(**RETRY_ARGS)
        def b(): pass
    """)
    fixed = [f for f in report.findings if f.code == "RTY202"]
    assert len(fixed) == 1 and fixed[0].location.line == 3
    assert "used by `@retry(**RETRY_ARGS)` at line 5 and `@retry(**RETRY_ARGS)` at line 8" in fixed[0].message
    assert "the same 3 s" in fixed[0].message and "at most 5 attempts" in fixed[0].message


def test_the_whole_dict_visible_without_stop_is_unbounded_but_an_unknown_part_is_not():
    visible = _found("""
        from tenacity import Retrying, wait_random_exponential, retry_if_exception_type

        def run():
            config = {"wait": wait_random_exponential(max=20), "retry": retry_if_exception_type(OSError)}
            for attempt in Retrying(**config):
                with attempt:
                    pass
    """)
    assert set(visible) == {("RTY102", 4)}
    assert "used by `Retrying(**config)` at line 5" in visible[("RTY102", 4)]
    unknown = _codes("""
        from tenacity import Retrying, wait_random_exponential, retry_if_exception_type

        def run(user_kwargs):
            config = {"wait": wait_random_exponential(max=20), "retry": retry_if_exception_type(OSError), **user_kwargs}
            for attempt in Retrying(**config):
                with attempt:
                    pass
    """)
    assert unknown == set()


def test_self_retry_args_set_once_in_init():
    found = _found("""
        from tenacity import Retrying, stop_after_attempt, wait_fixed, retry_if_exception_type

        class Client:
            def __init__(self):
                self.retry_args = {"stop": stop_after_attempt(5), "wait": wait_fixed(3),
                                   "retry": retry_if_exception_type(OSError)}

            def get(self):
                for attempt in Retrying(**self.retry_args):
                    with attempt:
                        pass
    """)
    assert set(found) == {("RTY202", 5)}
    assert "used by `Retrying(**self.retry_args)` at line 9" in found[("RTY202", 5)]
    assert "the same 3 s" in found[("RTY202", 5)]


def test_self_retry_args_from_a_parameter_or_set_twice_stays_unknown():
    assert _codes("""
        from tenacity import Retrying, stop_after_attempt, wait_fixed

        class Client:
            def __init__(self, retry_args):
                self.retry_args = retry_args

            def get(self):
                for attempt in Retrying(**self.retry_args):
                    with attempt:
                        pass
    """) == set()
    assert _codes("""
        from tenacity import Retrying, stop_after_attempt, wait_fixed

        class Client:
            def __init__(self):
                self.retry_args = {"wait": wait_fixed(3)}

            def configure(self, attempts):
                self.retry_args = {"wait": wait_fixed(3), "stop": stop_after_attempt(attempts)}

            def get(self):
                for attempt in Retrying(**self.retry_args):
                    with attempt:
                        pass
    """) == set()


def test_class_attribute_dict():
    found = _found("""
        from tenacity import retry, stop_after_attempt, wait_exponential, retry_if_exception_type

        class Client:
            RETRY = {"stop": stop_after_attempt(8), "wait": wait_exponential(multiplier=2),
                     "retry": retry_if_exception_type(ConnectionError)}

            def get(self):
                return retry(**self.RETRY)(self._get)()

            def _get(self):
                pass
    """)
    # 2 * 2 ** 6 = 128 s > 120 s with no cap, and no jitter.
    assert {("RTY203", 4), ("RTY204", 4)} <= set(found)
    assert "used by `retry(**self.RETRY)` at line 8" in found[("RTY204", 4)]


def test_async_retrying_with_a_builder_function_and_merged_defaults():
    found = _found("""
        from tenacity import AsyncRetrying, stop_after_attempt, wait_fixed, retry_if_exception_type

        DEFAULTS = {"retry": retry_if_exception_type(ConnectionError), "wait": wait_fixed(2)}

        def build_args():
            return {**DEFAULTS, "stop": stop_after_attempt(4)}

        async def run():
            async for attempt in AsyncRetrying(**build_args()):
                with attempt:
                    pass
    """)
    assert set(found) == {("RTY202", 6)}
    assert "the same 2 s" in found[("RTY202", 6)] and "at most 4 attempts" in found[("RTY202", 6)]
    assert "used by `AsyncRetrying(**build_args())` at line 9" in found[("RTY202", 6)]


def test_setdefault_and_union_merges():
    found = _found("""
        from tenacity import Retrying, retry, stop_after_attempt, wait_fixed, retry_if_exception_type

        DEFAULTS = {"retry": retry_if_exception_type(ConnectionError), "wait": wait_fixed(2)}
        MERGED = DEFAULTS | {"stop": stop_after_attempt(6), "wait": wait_fixed(9)}

        @retry(**MERGED)
        def a(): pass

        def run():
            kwargs = dict(DEFAULTS)
            kwargs.setdefault("stop", stop_after_attempt(3))
            kwargs["wait"] = wait_fixed(7)
            return Retrying(**kwargs)
    """)
    assert "the same 9 s" in found[("RTY202", 4)]
    assert "the same 7 s" in found[("RTY202", 10)] and "at most 3 attempts" in found[("RTY202", 10)]


def test_mutated_parameter_supplied_and_twice_assigned_dicts_are_silent():
    assert _codes("""
        from tenacity import Retrying, stop_after_attempt, wait_fixed, retry_if_exception_type

        def mutated(flag):
            args = {"wait": wait_fixed(2), "retry": retry_if_exception_type(OSError)}
            if flag:
                args["stop"] = stop_after_attempt(3)
            return Retrying(**args)

        def parameter(args):
            return Retrying(**args)

        def twice():
            args = {"wait": wait_fixed(2)}
            args = {"wait": wait_fixed(2), "stop": stop_after_attempt(3), "retry": retry_if_exception_type(OSError)}
            return Retrying(**args)

        def handed_over(configure):
            args = {"wait": wait_fixed(2), "retry": retry_if_exception_type(OSError)}
            configure(args)
            return Retrying(**args)
    """) == set()


def test_a_module_constant_mutated_elsewhere_is_silent():
    assert _codes("""
        from tenacity import retry, stop_after_attempt, wait_random_exponential, retry_if_exception_type

        RETRY_ARGS = {"wait": wait_random_exponential(max=20), "retry": retry_if_exception_type(OSError)}

        def configure(attempts):
            RETRY_ARGS["stop"] = stop_after_attempt(attempts)

        @retry(**RETRY_ARGS)
        def fetch(): pass
    """) == set()


def test_a_retry_engine_whose_policy_is_its_callers_is_silent():
    assert _codes("""
        from tenacity import Retrying, wait_fixed

        class RetryEngine:
            def __init__(self, **retry_kwargs):
                self.retry_kwargs = retry_kwargs
                self.with_default_wait = {"wait": wait_fixed(1), **retry_kwargs}

            def run(self, fn):
                Retrying(**self.with_default_wait)(fn)
                return Retrying(**self.retry_kwargs)(fn)
    """) == set()


def test_a_module_dict_assigned_twice_or_changed_through_an_alias_is_silent():
    assert _codes("""
        from tenacity import Retrying, retry, stop_after_attempt, wait_fixed, retry_if_exception_type

        ARGS = {"wait": wait_fixed(2), "retry": retry_if_exception_type(OSError)}
        ARGS = {"wait": wait_fixed(3), "retry": retry_if_exception_type(OSError)}

        @retry(**ARGS)
        def a(): pass

        def alias():
            args = {"wait": wait_fixed(2), "retry": retry_if_exception_type(OSError)}
            other = args
            other["stop"] = stop_after_attempt(3)
            return Retrying(**args)
    """) == set()


def test_a_builder_with_a_parameter_keeps_the_bound_unknown():
    found = _found("""
        from tenacity import AsyncRetrying, stop_after_attempt, wait_exponential, retry_if_exception_type

        def retry_args(attempts=3):
            return {"stop": stop_after_attempt(attempts), "wait": wait_exponential(),
                    "retry": retry_if_exception_type(OSError)}

        async def run():
            async for attempt in AsyncRetrying(**retry_args(40)):
                with attempt:
                    pass
    """)
    # No jitter whatever the bound. A policy's numbers are not read from the module's callers
    # (callers elsewhere may pass others; see DelayEnv.callers): 40 attempts is not read, and
    # no cap is judged without a known bound.
    assert set(found) == {("RTY203", 4)}


def test_a_kwargs_passthrough_wrapper_is_its_callers_policy():
    assert _codes("""
        from tenacity import Retrying, stop_after_attempt, wait_fixed

        def make_retrying(**kwargs):
            kwargs.setdefault("stop", stop_after_attempt(3))
            kwargs.setdefault("wait", wait_fixed(2))
            return Retrying(**kwargs)

        def also(*args, **kwargs):
            return Retrying(*args, **kwargs)
    """) == set()


def test_a_helper_returning_a_wait_strategy():
    report = _run("""
        from tenacity import retry, stop_after_attempt, wait_exponential, retry_if_exception_type

        def _wait():
            return wait_exponential(multiplier=1, max=10)

        @retry(stop=stop_after_attempt(3), wait=_wait(), retry=retry_if_exception_type(OSError))
        def fetch(): pass
    """)
    assert [(f.code, f.location.line) for f in report.findings] == [("RTY203", 6)]
    assert "wait_exponential(multiplier=1, max=10)" in report.findings[0].message
    (policy,) = report.policies
    assert policy.delay.cap == 10
    assert any("`_wait()`: builds `wait_exponential(multiplier=1, max=10)`, case.py:4" in o for o in policy.origins)


def test_a_helper_with_branches_or_parameters_stays_unknown():
    assert _codes("""
        from tenacity import retry, stop_after_attempt, wait_exponential, wait_random_exponential, retry_if_exception_type

        def _wait(jitter):
            if jitter:
                return wait_random_exponential(max=10)
            return wait_exponential(max=10)

        def _wait2(cap):
            return wait_exponential(max=cap)

        @retry(stop=stop_after_attempt(3), wait=_wait(True), retry=retry_if_exception_type(OSError))
        def fetch(): pass

        @retry(stop=stop_after_attempt(30), wait=_wait2(10), retry=retry_if_exception_type(OSError))
        def fetch2(): pass
    """) <= {"RTY203"}  # _wait2's exponential has no jitter whatever its cap


def test_a_strategy_set_once_on_self():
    found = _found("""
        from tenacity import Retrying, stop_after_attempt, wait_fixed, retry_if_exception_type

        class Client:
            def __init__(self):
                self.wait = wait_fixed(4)

            def get(self):
                for attempt in Retrying(stop=stop_after_attempt(5), wait=self.wait, retry=retry_if_exception_type(OSError)):
                    with attempt:
                        pass
    """)
    assert set(found) == {("RTY202", 8)}
    assert "the same 4 s" in found[("RTY202", 8)]


# ---------------------------------------------------------------- backoff


def test_backoff_kwargs_constant():
    found = _found("""
        import backoff

        BACKOFF = {"max_tries": 10, "jitter": None}

        @backoff.on_exception(backoff.expo, ConnectionError, **BACKOFF)
        def fetch(): pass
    """)
    assert set(found) == {("RTY203", 3), ("RTY204", 3)}
    assert "used by `@backoff.on_exception(…, **BACKOFF)` at line 5" in found[("RTY204", 3)]


def test_backoff_kwargs_with_an_unknown_part_is_silent():
    assert _codes("""
        import backoff

        def decorate(func, options):
            kwargs = {"jitter": None, **options}
            return backoff.on_exception(backoff.expo, ConnectionError, **kwargs)(func)
    """) == set()


# ---------------------------------------------------------------- urllib3 / requests


def test_urllib3_retry_kwargs_in_an_adapter():
    found = _found("""
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        RETRY_OPTIONS = {"total": 5, "backoff_factor": 2, "status_forcelist": [404, 500, 503]}

        def session():
            s = requests.Session()
            s.mount("https://", HTTPAdapter(max_retries=Retry(**RETRY_OPTIONS)))
            return s
    """)
    assert set(found) == {("RTY203", 5), ("RTY302", 5)}
    assert "used by `Retry(**RETRY_OPTIONS)` at line 9" in found[("RTY203", 5)]
    assert "404" in found[("RTY302", 5)]


def test_urllib3_conditional_extra_kwargs_stay_unknown():
    # mlflow's webhooks: backoff_jitter is added in a branch, so the jitter is not known.
    assert _codes("""
        import urllib3
        from urllib3.util.retry import Retry

        def make(max_retries, new):
            extra_kwargs = {}
            if new:
                extra_kwargs["backoff_jitter"] = 1.0
            return Retry(total=max_retries, backoff_factor=1.0, status_forcelist=[500], **extra_kwargs)
    """) == set()


# ---------------------------------------------------------------- redis / google-api-core


def test_redis_retry_kwargs():
    found = _found("""
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        RETRY_KWARGS = {"backoff": ExponentialBackoff(cap=10, base=1), "retries": -1}

        def client_retry():
            return Retry(**RETRY_KWARGS)
    """)
    assert {("RTY102", 4), ("RTY203", 4)} <= set(found)


def test_google_retry_kwargs():
    found = _found("""
        from google.api_core import retry

        def options():
            return {"initial": 1.0, "maximum": 30.0, "multiplier": 2.0, "timeout": None}

        POLICY = retry.Retry(**options())
    """)
    assert set(found) == {("RTY102", 4)}
    assert "used by `retry.Retry(**options())` at line 6" in found[("RTY102", 4)]


# ---------------------------------------------------------------- explain and another module


CONFIG = """
from tenacity import stop_after_attempt, wait_exponential, wait_fixed

MAX_ATTEMPTS = 4
RETRY_KWARGS = {{"stop": stop_after_attempt(MAX_ATTEMPTS), "wait": {wait}}}
WAIT = wait_exponential(multiplier=1, max=30)
"""

CLIENT = """
from tenacity import retry, retry_if_exception_type, stop_after_attempt
from .config import RETRY_KWARGS, WAIT


@retry(retry=retry_if_exception_type(ConnectionError), **RETRY_KWARGS)
def fetch():
    pass


@retry(stop=stop_after_attempt(3), wait=WAIT, retry=retry_if_exception_type(ConnectionError))
def fetch_again():
    pass
"""


def test_explain_shows_where_the_arguments_were_built(project, run):
    project.write("case.py", """
        from tenacity import retry, wait_fixed, stop_after_attempt, retry_if_exception_type

        RETRY_ARGS = {"stop": stop_after_attempt(5), "wait": wait_fixed(3), "retry": retry_if_exception_type(OSError)}

        @retry(**RETRY_ARGS)
        def fetch():
            pass
    """)
    code, out, _ = run("check", "--no-cache", "case.py")
    assert "case.py:3:" in out and "RTY202" in out
    code, out, _ = run("explain", "case.py:3")
    assert "values from: `retry(**RETRY_ARGS)`: arguments from `**RETRY_ARGS`, case.py:3" in out
    # Asked at the use (the decorator line, as a reader points at it), explain finds it too.
    code, used, _ = run("explain", "case.py:5")
    assert code == 0 and used == out


def test_arguments_and_strategies_imported_from_another_module(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/config.py", CONFIG.format(wait="wait_fixed(2)"))
    project.write("pkg/client.py", CLIENT)
    code, out, _ = run("check", "--no-cache", "pkg")
    lines = [line for line in out.splitlines() if "pkg/client.py" in line]
    # Built in config.py, reported at the use in client.py, naming config.py and its line.
    assert any(":5:" in line and "RTY202" in line and "pkg/config.py:4" in line for line in lines), out
    assert any(":10:" in line and "RTY203" in line for line in lines), out
    assert not any("pkg/config.py:" in line.split(" ")[0] for line in out.splitlines() if "RTY" in line)
    code, out, _ = run("explain", "--output-format", "json", "pkg/client.py")
    origins = [o for site in json.loads(out) for o in site.get("origins", [])]
    assert any("pkg/config.py:4" in o for o in origins), origins
    assert any("pkg/config.py:5" in o for o in origins), origins


def test_the_cache_misses_when_the_module_building_the_arguments_changes(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/config.py", CONFIG.format(wait="wait_fixed(2)"))
    project.write("pkg/client.py", CLIENT)
    code, out, _ = run("check", "pkg")
    assert "the same 2 s" in out
    project.write("pkg/config.py", CONFIG.format(wait="wait_fixed(6)"))
    code, out, _ = run("check", "pkg")
    assert "the same 6 s" in out and "the same 2 s" not in out


def test_noqa_where_the_dict_is_built_or_at_its_use_silences_it():
    template = """
        from tenacity import retry, stop_after_attempt, wait_fixed, retry_if_exception_type

        RETRY_ARGS = {{"stop": stop_after_attempt(5), "wait": wait_fixed(3), "retry": retry_if_exception_type(OSError)}}{built}

        @retry(**RETRY_ARGS){use}
        def fetch(): pass
    """
    assert _codes(template.format(built="", use="")) == {"RTY202"}
    assert _codes(template.format(built="  # noqa: RTY202", use="")) == set()
    assert _codes(template.format(built="", use="  # noqa: RTY202")) == set()


def test_the_unsafe_fix_adds_the_stop_where_the_dict_is_built(project, run):
    project.write("case.py", """
        from tenacity import retry, wait_random_exponential, retry_if_exception_type

        RETRY_ARGS = {"wait": wait_random_exponential(max=20), "retry": retry_if_exception_type(OSError)}

        @retry(**RETRY_ARGS)
        def a(): pass

        @retry(**RETRY_ARGS)
        def b(): pass
    """)
    code, out, _ = run("check", "--no-cache", "--unsafe-fixes", "--fix", "case.py")
    text = (project.root / "case.py").read_text()
    assert 'retry_if_exception_type(OSError), "stop": stop_after_attempt(6)}' in text
    assert text.count("@retry(**RETRY_ARGS)\n") == 2  # both uses fixed by the one edit
    code, out, _ = run("check", "--no-cache", "case.py")
    assert code == 0, out


def test_the_jitter_fix_replaces_the_key_in_the_dict(project, run):
    project.write("case.py", """
        from urllib3.util.retry import Retry

        OPTIONS = {
            "total": 5,
            "backoff_factor": 1,
            "backoff_jitter": 0,
        }

        RETRY = Retry(**OPTIONS)
    """)
    code, out, _ = run("check", "--no-cache", "case.py")
    assert "case.py:3:" in out and "RTY203" in out
    run("check", "--no-cache", "--unsafe-fixes", "--fix", "case.py")
    text = (project.root / "case.py").read_text()
    assert "RETRY = Retry(**OPTIONS)" in text and '"backoff_jitter": 0,' not in text
    code, out, _ = run("check", "--no-cache", "case.py")
    assert "RTY203" not in out, out


# ---------------------------------------------------------------- decorator factories


_FACTORY = """
    import backoff

    def retry_pattern(backoff_type, exception, **wait_gen_kwargs):
        def log_retry_attempt(details):
            print(details)

        return backoff.on_exception(
            backoff_type, exception, jitter=JITTER, on_backoff=log_retry_attempt, **wait_gen_kwargs
        )

    @retry_pattern(backoff.expo, ConnectionError, max_tries=5, factor=5)
    def fetch():
        pass

    @retry_pattern(backoff.constant, ConnectionError, max_tries=5, interval=2)
    def fetch_again():
        pass

    def unrelated():
        return 1
"""


def test_factory_judged_at_each_use_with_the_values_it_passes():
    found = _found(_FACTORY.replace("JITTER", "None"))
    assert set(found) == {("RTY203", 11), ("RTY202", 15)}
    assert "built by `retry_pattern(...)` at line 7" in found[("RTY203", 11)]
    assert "2 s" in found[("RTY202", 15)]
    report = _run(_FACTORY.replace("JITTER", "None"))
    policy = next(p for p in report.policies if p.location.line == 11)
    assert policy.bound.attempts == 5 and policy.delay.base == 5 and policy.operation == "fetch"


def test_factory_with_jitter_keeps_only_the_fixed_delay_use():
    # Full jitter disperses the exponential use; the constant one still never grows (RTY202).
    assert set(_found(_FACTORY.replace("JITTER", "backoff.full_jitter"))) == {("RTY202", 15)}


def test_tenacity_factory_reads_a_parameter_inside_a_strategy():
    found = _found("""
        import tenacity

        def my_retry(attempts=5):
            return tenacity.retry(
                stop=tenacity.stop_after_attempt(attempts),
                wait=tenacity.wait_exponential(multiplier=1, max=30),
                retry=tenacity.retry_if_exception_type(ConnectionError),
            )

        @my_retry(attempts=1)
        def once():
            pass

        @my_retry()
        def five_times():
            pass
    """)
    # attempts=1 never retries; the default 5 retries with exponential waits and no jitter.
    assert set(found) == {("RTY203", 14)}


def test_factory_whose_parameters_only_name_errors_is_judged_where_built():
    found = _found("""
        import backoff

        def retry_on(exc):
            return backoff.on_exception(backoff.expo, exc, max_tries=5, jitter=None)

        @retry_on(ConnectionError)
        def fetch():
            pass

        @retry_on(TimeoutError)
        def fetch_again():
            pass
    """)
    assert set(found) == {("RTY203", 4)}


def test_factory_nobody_here_calls_or_a_use_with_star_args_stays_unknown():
    assert _found("""
        import backoff

        def retry_pattern(backoff_type, exception, **kw):
            return backoff.on_exception(backoff_type, exception, jitter=None, **kw)
    """) == {}
    assert _found("""
        import backoff

        SETTINGS = (backoff.expo, ConnectionError)

        def retry_pattern(backoff_type, exception, **kw):
            return backoff.on_exception(backoff_type, exception, jitter=None, **kw)

        @retry_pattern(*SETTINGS)
        def fetch():
            pass
    """) == {}
