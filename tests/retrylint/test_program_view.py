"""Values a retry reads from elsewhere in the program (issue 12): ``self.x`` set in
``__init__``, class attributes, dataclass fields, settings objects, constants imported from
another module of the checked tree. Unknown stays unknown: a required parameter, a parameter a
caller passes, an attribute written twice, a subclass that overrides it."""

from __future__ import annotations

import json

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)

LOOP = """
    def get(self):
        while True:
            try:
                return requests.get(self.url)
            except requests.ConnectionError:
                time.sleep(self.delay)
"""


def _findings(source: str):
    report = check_source("import time, random, requests\n" + source, "case.py", settings_with(CODES))
    assert report.error is None, report.error
    return report.findings


def _messages(source: str, code: str):
    return [f.message for f in _findings(source) if f.code == code]


def test_a_delay_set_in_init_from_a_parameter_default_is_known():
    source = "class Client:\n    def __init__(self, url, delay=3):\n        self.url = url\n        self.delay = delay\n" + LOOP
    (message,) = _messages(source, "RTY202")
    assert "3 s" in message


def test_a_required_parameter_stays_unknown():
    source = "class Client:\n    def __init__(self, url, delay):\n        self.url = url\n        self.delay = delay\n" + LOOP
    (message,) = _messages(source, "RTY202")
    assert "3 s" not in message and "`self.delay`" in message


def test_a_default_a_caller_overrides_stays_unknown():
    source = ("class Client:\n    def __init__(self, url, delay=3):\n        self.url = url\n        self.delay = delay\n"
              + LOOP + "\nclient = Client('u', delay=settings_delay)\n")
    (message,) = _messages(source, "RTY202")
    assert "3 s" not in message


def test_a_positional_caller_also_overrides():
    source = ("class Client:\n    def __init__(self, url, delay=3):\n        self.url = url\n        self.delay = delay\n"
              + LOOP + "\nclient = Client('u', 9)\n")
    (message,) = _messages(source, "RTY202")
    assert "3 s" not in message and "9 s" not in message


def test_an_attribute_written_again_elsewhere_stays_unknown():
    source = ("class Client:\n    def __init__(self, url, delay=3):\n        self.url = url\n        self.delay = delay\n"
              "    def slow_down(self):\n        self.delay = 60\n" + LOOP)
    (message,) = _messages(source, "RTY202")
    assert "3 s" not in message and "60 s" not in message


def test_a_subclass_that_overrides_the_attribute_makes_it_unknown():
    source = "class Client:\n    delay = 3\n    url = 'u'\n" + LOOP + "\nclass Patient(Client):\n    delay = 30\n"
    (message,) = _messages(source, "RTY202")
    assert "3 s" not in message and "30 s" not in message


def test_class_attribute_dataclass_field_and_settings_object():
    class_attr = "class Client:\n    delay = 4\n    url = 'u'\n" + LOOP
    dataclass = ("import dataclasses\n@dataclasses.dataclass\nclass Client:\n    url: str = 'u'\n"
                 "    delay: float = dataclasses.field(default=2.5)\n" + LOOP)
    settings = ("class Settings:\n    RETRY_DELAY: int = 6\nsettings = Settings()\n\nclass Client:\n    url = 'u'\n"
                + LOOP.replace("self.delay", "settings.RETRY_DELAY"))
    assert "4 s" in _messages(class_attr, "RTY202")[0]
    assert "2.5 s" in _messages(dataclass, "RTY202")[0]
    assert "6 s" in _messages(settings, "RTY202")[0]


WAITER = """
import dataclasses

class WaitConfig:
    sleep: float
    backoff: float
    retries: int = 8


class Api:
    def __init__(self, url, sleep=0.5, backoff=BACKOFF):
        self.url = url
        self.wait_config = WaitConfig(sleep, backoff=backoff)

    def get(self):
        sleep = self.wait_config.sleep
        for _ in range(self.wait_config.retries):
            try:
                return requests.get(self.url)
            except requests.ConnectionError:
                time.sleep(sleep)
                sleep *= self.wait_config.backoff
"""


def test_a_settings_object_built_in_init_gives_its_fields():
    # awswrangler's RdsDataApi: ``self.wait_config = WaitConfig(sleep, backoff, retries)`` with
    # ``backoff=1.0``: the delay never grows, a fixed 0.5 s (not exponential backoff).
    flat = _findings(WAITER.replace("BACKOFF", "1.0"))
    assert [f.code for f in flat if f.code.startswith("RTY2")] == ["RTY202"]
    assert "0.5 s" in next(f.message for f in flat if f.code == "RTY202")
    assert "at most 8 attempts" in next(f.message for f in flat if f.code == "RTY202")  # the class's own default
    growing = _findings(WAITER.replace("BACKOFF", "2.0"))
    assert [f.code for f in growing if f.code.startswith("RTY2")] == ["RTY203"]


def test_a_settings_object_a_caller_fills_stays_unknown():
    source = WAITER.replace("BACKOFF", "1.0") + "\napi = Api('u', backoff=configured)\n"
    codes = [f.code for f in _findings(source)]
    assert "RTY202" not in codes  # the factor is the caller's: no longer known to be 1


def test_a_wrapper_handing_on_its_own_kwargs_keeps_the_defaults_as_shipped():
    # awswrangler's ``connect(resource_arn, **kwargs)`` returns ``RdsDataApi(resource_arn,
    # **kwargs)``: whatever its own caller passes; with nothing passed, the 1.0 default holds.
    wrapper = "\ndef connect(url, **kwargs):\n    return Api(url, **kwargs)\n"
    assert "RTY202" in [f.code for f in _findings(WAITER.replace("BACKOFF", "1.0") + wrapper)]
    # Keyword arguments it builds itself (not its own ``**kwargs``) may set the factor.
    built = "\ndef connect(url, options):\n    return Api(url, **options)\n"
    assert "RTY202" not in [f.code for f in _findings(WAITER.replace("BACKOFF", "1.0") + built)]


FETCHER = """
class Fetcher:
    def __init__(self, num_attempts=1):
        self._num_attempts = num_attempts

    def fetch(self, session, request):
        for i in range(self._num_attempts):
            try:
                return session.send(request)
            except ConnectionError:
                pass
"""


def test_a_default_that_switches_retries_off_is_judged_as_shipped():
    # ``num_attempts=1`` that no caller anywhere changes: one attempt as shipped, nothing to judge.
    assert "RTY201" not in {f.code for f in _findings(FETCHER)}


def test_a_decorator_factory_handing_on_its_own_default_keeps_the_retry_off():
    """ucloud's test scenario: ``def step(self, num_attempts=1, **kwargs)`` returns a ``deco``
    that builds ``Fetcher(num_attempts=num_attempts, **kwargs)``: the factory hands on its own
    parameter with the class's default (and its own ``**kwargs``), so as shipped one attempt.
    A factory whose own default is 3 switches the retry on."""
    factory = FETCHER + (
        "\n\nclass Scenario:\n    def step(self, num_attempts={n}, **kwargs):\n        def deco(fn):\n"
        "            return Fetcher(num_attempts=num_attempts, **kwargs)\n        return deco\n")
    assert "RTY201" not in {f.code for f in _findings(factory.replace("{n}", "1"))}
    assert "RTY201" in {f.code for f in _findings(factory.replace("{n}", "3"))}


def test_a_caller_or_subclass_that_may_switch_it_on_keeps_the_retry_judged():
    # botocore's IMDSFetcher(num_attempts=1) is built as InstanceMetadataFetcher(num_attempts=…)
    # in another module: the retry written for those callers is judged.
    subclass = FETCHER + "\n\nclass InstanceMetadataFetcher(Fetcher):\n    pass\n"
    assert "RTY201" not in {f.code for f in _findings(subclass)}  # it inherits the default too
    built = subclass + "\n\ndef build():\n    return InstanceMetadataFetcher(num_attempts=3)\n"
    assert "RTY201" in {f.code for f in _findings(built)}
    caller = FETCHER + "\n\ndef build():\n    return Fetcher(num_attempts=3)\n"
    assert "RTY201" in {f.code for f in _findings(caller)}


def test_a_class_another_module_names_keeps_the_retry_judged_only_when_it_passes_the_parameter(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/fetcher.py", FETCHER)
    code, out, _ = run("check", "--no-cache", "--select", "RTY201", "pkg")
    assert code == 0, out
    project.write("pkg/creds.py", "from .fetcher import Fetcher\nFETCH = Fetcher()\n")
    code, out, _ = run("check", "--no-cache", "--select", "RTY201", "pkg")
    assert code == 0, out  # built with the default: one attempt as shipped
    project.write("pkg/creds.py", "from .fetcher import Fetcher\nFETCH = Fetcher(num_attempts=4)\n")
    code, out, _ = run("check", "--no-cache", "--select", "RTY201", "pkg")
    assert code == 1 and "pkg/fetcher.py:6" in out, out
    # A subclass elsewhere that sets its own value switches it on too.
    project.write("pkg/creds.py", "from .fetcher import Fetcher\nclass Eager(Fetcher):\n    num_attempts = 4\n")
    code, out, _ = run("check", "--no-cache", "--select", "RTY201", "pkg")
    assert code == 1 and "pkg/fetcher.py:6" in out, out


def test_a_dataclass_field_default_is_judged_as_shipped_unless_a_caller_passes_it():
    field = """
import dataclasses, time

@dataclasses.dataclass
class Sender:
    retries: int = 1
    wait: float = 2.0

    def send(self, post, body):
        for _ in range(self.retries + 1):
            try:
                return post(body)
            except ConnectionError:
                time.sleep(self.wait)
"""
    assert "RTY202" not in {f.code for f in _findings(field)}  # one retry as shipped
    passed = field + "\n\ndef build():\n    return Sender(retries=5)\n"
    assert "RTY202" in {f.code for f in _findings(passed)}


def test_a_library_policy_reads_attributes_too():
    source = """
from urllib3.util.retry import Retry

class Transport:
    def __init__(self, retries=5, backoff=0.1):
        self.retries = retries
        self.backoff = backoff

    def adapter(self):
        return Retry(total=self.retries, backoff_factor=self.backoff)
"""
    (message,) = _messages(source, "RTY203")
    assert "backoff_factor=self.backoff" in message


def test_a_guard_that_goes_round_again_when_true_counts_the_attempts(run, project):
    # dashscope's shape: ``if try_count <= LIMIT: sleep; continue`` then ``raise``.
    project.write("app.py", """
        import time, requests

        class Transcription:
            MAX_QUERY_TRY_COUNT = 3

            def fetch(self, task):
                try_count = 0
                while True:
                    try:
                        response = requests.get(task)
                    except (requests.Timeout, requests.ConnectionError):
                        try_count += 1
                        if try_count <= Transcription.MAX_QUERY_TRY_COUNT:
                            time.sleep(2)
                            continue
                        raise
                    try_count = 0
                    break
                return response
    """)
    code, out, _ = run("explain", "app.py")
    assert "at most 4 attempts" in out and "2, 2, 2 s" in out
    assert "`Transcription.MAX_QUERY_TRY_COUNT` = 3: Transcription.MAX_QUERY_TRY_COUNT (class attribute), app.py:4" in out
    code, out, _ = run("check", "app.py")
    assert code == 1 and "RTY202" in out


CONFIG = """
MAX_RETRIES = 8
BASE_DELAY = 0.5
RETRY_WAIT = {wait}
"""

CLIENT = """
import time
import requests
from .config import RETRY_WAIT
from . import config


def fetch(url):
    while True:
        try:
            return requests.get(url)
        except requests.ConnectionError:
            time.sleep(RETRY_WAIT)


def fetch_backoff(url):
    for attempt in range(config.MAX_RETRIES):
        try:
            return requests.get(url)
        except requests.ConnectionError:
            time.sleep(config.BASE_DELAY * 4 ** attempt)
"""


def _package(project, wait: str = "2"):
    project.write("pkg/__init__.py", "")
    project.write("pkg/config.py", CONFIG.format(wait=wait))
    return project.write("pkg/client.py", CLIENT)


def test_constants_imported_from_another_module(project, run):
    _package(project)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 1
    assert "waits the same 2 s before every retry" in out
    # 0.5 * 4 ** 6 = 2,048 s: only the imported base and bound give RTY204 its numbers.
    assert "RTY204" in out and "34.1 min" in out
    code, out, _ = run("explain", "pkg/client.py")
    assert "values from: `RETRY_WAIT` = 2: pkg.config.RETRY_WAIT, pkg/config.py:3" in out
    assert "`config.MAX_RETRIES` = 8: pkg.config.MAX_RETRIES, pkg/config.py:1" in out
    code, out, _ = run("explain", "--output-format", "json", "pkg/client.py")
    origins = [site.get("origins", []) for site in json.loads(out)]
    assert any(o and "pkg.config.RETRY_WAIT" in o[0] for o in origins)


def test_the_cache_misses_when_a_dependency_changes(project, run):
    _package(project, wait="2")
    code, out, _ = run("check", "pkg")
    assert "the same 2 s" in out
    code, out, _ = run("check", "pkg")  # warm: from the cache
    assert "the same 2 s" in out
    project.write("pkg/config.py", CONFIG.format(wait="7"))  # client.py itself is unchanged
    code, out, _ = run("check", "pkg")
    assert "the same 7 s" in out and "the same 2 s" not in out


def test_standard_input_sees_one_file(project, run, monkeypatch):
    import io
    import sys

    _package(project)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLIENT.encode())))
    code, out, _ = run("check", "--stdin-filename", "pkg/client.py", "-")
    assert "RTY202" in out and "the same 2 s" not in out


# ---------------------------------------------------------------- delay helpers

HELPERS = """
MAX_BACKOFF = 60

def compute_delay(attempt, base=0.5):
    return min(MAX_BACKOFF, base * 2 ** attempt)

def full_jitter_delay(attempt):
    return random.uniform(0, min(30, 2 ** attempt))

class Client:
    url = "u"

    def __init__(self, base=2):
        self.base = base

    def _backoff(self, attempt):
        delay = self.base * 2 ** attempt
        time.sleep(delay)

    def get(self):
        for attempt in range(8):
            try:
                return requests.get(self.url)
            except requests.ConnectionError:
                {wait}
"""


def _helper_codes(wait: str, strategies: bool = False):
    """Findings at the retry (``strategies``: also those on unused delay helpers)."""
    return {f.code: f.message for f in _findings(HELPERS.replace("{wait}", wait))
            if strategies or "delay strategy" not in f.message}


def test_a_helper_that_sleeps_an_exponential_delay():
    found = _helper_codes("self._backoff(attempt)")
    assert "RTY203" in found and "RTY204" in found and "2.13 min" in found["RTY204"]


def test_a_helper_that_returns_a_capped_delay():
    found = _helper_codes("time.sleep(compute_delay(attempt))")
    assert "RTY203" in found and "RTY204" not in found  # min(60, …) caps it


def test_a_helper_that_returns_a_jittered_delay_is_not_reported():
    assert not {"RTY202", "RTY203", "RTY204"} & set(_helper_codes("time.sleep(full_jitter_delay(attempt))"))


def test_a_helper_with_branches_stays_unknown():
    source = HELPERS.replace("{wait}", "time.sleep(pick(attempt))") + """
def pick(attempt):
    if attempt > 3:
        return 5
    return 2 ** attempt
"""
    assert not {"RTY202", "RTY203", "RTY204"} & {f.code for f in _findings(source) if "delay strategy" not in f.message}


BUDGET_HELPER = """
def backoff_delay(attempt, start_time, max_wait_time):
    elapsed = time.time() - start_time
    if elapsed >= max_wait_time:
        return None
    delay = min(2 ** attempt, 30)
    return min(delay, start_time + max_wait_time - time.time())

def request_with_retries(func, max_wait_time=300):
    start = time.time()
    attempt = 0
    while True:
        try:
            return func()
        except ConnectionError:
            delay = backoff_delay(attempt, start, max_wait_time)
            if delay is None:
                raise
            attempt += 1
            time.sleep(delay)
"""


def test_a_helper_that_gives_up_with_none_and_clamps_to_the_budget_returns_its_schedule():
    """fireworks' ``_backoff_delay``: ``return None`` once the budget is spent (the caller's
    bound), else ``min(min(2 ** attempt, 30), start + budget - time.time())``: the clamp to the
    time left changes only the last wait; the schedule is 1, 2, 4 … 30 s without jitter. With
    ``random.uniform(0, …)`` around it the clients spread out."""
    assert "RTY203" in {f.code for f in _findings(BUDGET_HELPER)}
    jittered = BUDGET_HELPER.replace("delay = min(2 ** attempt, 30)", "delay = random.uniform(0, min(2 ** attempt, 30))")
    assert "RTY203" not in {f.code for f in _findings(jittered)}


def test_a_local_variable_named_like_a_helper_is_not_inlined():
    source = HELPERS.replace("{wait}", "compute_delay = lambda n: 1\n                time.sleep(compute_delay(attempt))")
    assert "RTY203" not in {f.code for f in _findings(source)}


def test_a_delay_helper_in_another_module(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/backoff.py", """
        import random
        CAP = 20

        def next_delay(attempt, base=1):
            return min(CAP, base * 3 ** attempt)
    """)
    project.write("pkg/client.py", """
        import time
        import requests
        from .backoff import next_delay


        def fetch(url):
            for attempt in range(6):
                try:
                    return requests.get(url)
                except requests.ConnectionError:
                    time.sleep(next_delay(attempt))
    """)
    code, out, _ = run("check", "pkg")
    assert code == 1 and "RTY203" in out
    code, out, _ = run("explain", "pkg/client.py")
    assert "×3, cap 20 s" in out
    assert "`next_delay(attempt)`: next_delay() returns `min(20, base * 3 ** attempt)`, pkg/backoff.py:4" in out
    project.write("pkg/backoff.py", """
        import random

        def next_delay(attempt, base=1):
            return random.uniform(0, min(20, base * 3 ** attempt))
    """)
    code, out, _ = run("check", "pkg")  # the cache must see the helper's module change
    assert "RTY203" not in out


# ---------------------------------------------------------------- delay strategies on their own


def test_a_strategy_is_judged_where_it_is_written_and_its_users_elsewhere_inherit(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/backoff.py", """
        CAP = 30

        def next_delay(attempt, base=0.5):
            return min(CAP, base * 2 ** attempt)

        class ExponentialBackoff:
            def __init__(self, base=1):
                self.base = base

            def compute(self, failures):
                return self.base * 2 ** failures

        def page_size(n):
            return 2 ** n
    """)
    project.write("pkg/client.py", """
        import time
        import requests
        from .backoff import next_delay


        def fetch(url):
            for attempt in range(6):
                try:
                    return requests.get(url)
                except requests.ConnectionError:
                    time.sleep(next_delay(attempt))
    """)
    code, out, _ = run("check", "--no-cache", "pkg")
    lines = [line for line in out.splitlines() if "RTY" in line]
    assert any(line.startswith("pkg/backoff.py:3:1: RTY203 delay strategy `next_delay()`") for line in lines)
    assert any(line.startswith("pkg/backoff.py:10:5: RTY203 delay strategy `ExponentialBackoff.compute()`") for line in lines)
    assert not any("page_size" in line for line in lines)
    assert not any(line.startswith("pkg/client.py") and "RTY203" in line for line in lines), lines
    code, out, _ = run("explain", "pkg/client.py")
    assert "values from: `next_delay(attempt)`: next_delay() returns" in out


def test_a_strategy_used_in_its_own_module_is_judged_at_the_retry():
    found = _helper_codes("time.sleep(compute_delay(attempt))", strategies=True)
    assert "RTY203" in found and "`compute_delay(attempt)`" in found["RTY203"]
    assert not any("delay strategy" in m for m in found.values())
    # Unused, the same helper is a strategy of its own.
    messages = [f.message for f in _findings(HELPERS.replace("{wait}", "self._backoff(attempt)"))]
    assert any(m.startswith("delay strategy `compute_delay()`") for m in messages)


# ---------------------------------------------------------------- retries split across methods

SPLIT = """
class Client:
    max_retries = 5

    def __init__(self):
        self._retries = 0

    def _check_attempts(self):
        self._retries += 1
        if self._retries > self.max_retries:
            raise RuntimeError("gave up")

    def get(self, url):
        while True:
            try:
                response = requests.get(url)
                self._retries = 0
                return response
            except requests.ConnectionError:
                self._check_attempts()
                time.sleep(1)

    def fetch(self, url):
        try:
            return requests.get(url)
        except requests.ConnectionError:
            return self._again(url)

    def _again(self, url):
        time.sleep(1)
        return self.fetch(url)
"""


def test_a_helper_that_counts_the_attempts_and_raises_bounds_the_loop():
    found = _findings(SPLIT)
    assert not [f for f in found if f.code == "RTY101"]
    assert any(f.code == "RTY202" and f.location.line == 22 for f in found)  # still a fixed delay


def test_recursion_through_a_sibling_method():
    found = {(f.code, f.location.line) for f in _findings(SPLIT)}
    assert ("RTY103", 24) in found  # fetch → _again → fetch, with no depth limit
    assert ("RTY201", 24) not in found and ("RTY202", 28) in found  # _again sleeps 1 s first


def test_a_sibling_that_changes_the_input_is_no_retry():
    source = SPLIT.replace("return self.fetch(url)", "return self.fetch(url + '?fallback=1')")
    assert "RTY103" not in {f.code for f in _findings(source)}


def test_a_field_default_that_switches_retries_off_is_judged_as_the_package_ships_it():
    # llama_index's extractors: ``max_retries: int = Field(default=0)`` in a base class that its
    # subclasses inherit and nothing in the package sets: one attempt as shipped (the labeling
    # convention). A subclass that sets its own value switches the retry on, and it is judged.
    source = """
import pydantic

class Extractor(pydantic.BaseModel):
    max_retries: int = pydantic.Field(default=0)

    def extract(self, llm, prompt):
        for attempt in range(self.max_retries + 1):
            try:
                return llm.complete(prompt)
            except Exception:
                time.sleep(2 ** attempt)
"""
    assert "RTY203" not in {f.code for f in _findings(source)}
    inherited = source + "\n\nclass TitleExtractor(Extractor):\n    pass\n"
    assert "RTY203" not in {f.code for f in _findings(inherited)}
    overridden = source + "\n\nclass TitleExtractor(Extractor):\n    max_retries: int = 3\n"
    assert "RTY203" in {f.code for f in _findings(overridden)}


# ------------------------------------------------ a repair through state (pymongo OIDC)

OIDC_BASE = """
class AuthenticatorBase:
    def _invalidate(self, generation):
        if generation == self.generation:
            self.access_token = None
"""

OIDC = """
from .base import AuthenticatorBase


class Authenticator(AuthenticatorBase):
    def _run_command(self, conn, cmd):
        try:
            return conn.command("$external", cmd)
        except OperationFailure as e:
            if self._is_auth_error(e):
                self._invalidate(conn.generation)
            raise

    def _start(self, conn):
        return self._run_command(conn, {"jwt": self._get_access_token()})

    def authenticate(self, conn):
        if self.access_token:
            try:
                return self._start(conn)
            except OperationFailure as e:
                if self._is_auth_error(e):
                    return self.authenticate(conn)
                raise
        return self._start(conn)
"""


def test_a_token_reset_by_a_helper_of_a_base_class_in_another_module_resends_once(project, run):
    # The helper chain ``_start`` -> ``_run_command`` -> ``_invalidate`` (a base class of another
    # module) resets ``self.access_token``: the second call takes the branch without a retry.
    project.write("pkg/__init__.py", "")
    project.write("pkg/base.py", OIDC_BASE)
    project.write("pkg/auth.py", OIDC)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 0, out
    # The twin: a base class that resets something else leaves the guard true, forever.
    project.write("pkg/base.py", OIDC_BASE.replace("self.access_token = None", "self.refresh_token = None"))
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 1 and "RTY103" in out and "RTY201" in out


def test_a_token_reset_by_a_helper_of_the_same_class_resends_once():
    source = OIDC.replace("from .base import AuthenticatorBase\n", "").replace(
        "class Authenticator(AuthenticatorBase):", "class Authenticator:" + OIDC_BASE.split("class AuthenticatorBase:")[1])
    assert "def _invalidate" in source
    assert _findings(source) == []
    twin = source.replace("self.access_token = None", "self.refresh_token = None")
    assert {"RTY103", "RTY201"} <= {f.code for f in _findings(twin)}


# ------------------------------------------------ a strategy held by an attribute (tencentcloud)

HELD = """
class StandardRetryer:
    def __init__(self, max_attempts=3, backoff_fn=None):
        self._max_attempts = max_attempts
        self._backoff_fn = backoff_fn or self.backoff

    {def} send_request(self, fn):
        err = None
        for n in range(self._max_attempts):
            try:
                return {aw}fn()
            except ConnectionError as e:
                err = e
            if not {aw}self.should_retry(err):
                raise err
            sleep = {aw}self._backoff_fn(n)
            {sleep}(sleep)
        raise err

    @staticmethod
    {def} should_retry(err):
        return isinstance(err, ConnectionError)

    @staticmethod
    {def} backoff(n):
        return 2 ** n
"""


def _held(flavour: str, extra: str = "") -> list:
    sync = {"def": "def", "aw": "", "sleep": "time.sleep"}
    asynchronous = {"def": "async def", "aw": "await ", "sleep": "await asyncio.sleep"}
    source = "import asyncio\n" + HELD.format(**(sync if flavour == "sync" else asynchronous)) + extra
    return [(f.code, f.location.line) for f in _findings(source)]


def test_a_backoff_method_held_by_an_attribute_is_the_retrys_delay_sync_and_async():
    # ``self._backoff_fn = backoff_fn or self.backoff`` with ``backoff_fn=None``: the loop backs
    # off ``2 ** n`` without jitter, reported once, at the retry (the strategy's own module).
    for flavour in ("sync", "async"):
        found = _held(flavour)
        assert [code for code, _ in found] == ["RTY203"], (flavour, found)
        assert found[0][1] > 8, (flavour, found)  # in send_request, not at ``def backoff``


def test_a_backoff_function_a_caller_passes_is_unknown():
    # A caller hands its own ``backoff_fn``: the retry's delay is unknown; the jitterless
    # strategy is then judged on its own, at its definition (the last lines of the class).
    found = _held("sync", "\nRETRYER = StandardRetryer(backoff_fn=lambda n: 1)\n")
    backoff_line = 2 + HELD.splitlines().index("    {def} backoff(n):") + 1  # two import lines first
    assert found == [("RTY203", backoff_line)], found


SUPERVISOR = """
import asyncio, logging

async def runit(start, shutdown, restart_delay, restart_on_failure):
    while not shutdown.is_set():
        failed = False
        try:
            await start()
        except Exception:
            if not restart_on_failure:
                raise
            failed = True
            logging.exception("restarting")
        if not failed:
            break
        await asyncio.sleep(restart_delay)

async def run(start, shutdown, restart_delay=5, restart_on_failure=False):
    await runit(start, shutdown, restart_delay, restart_on_failure=restart_on_failure)
"""


def test_a_switch_a_cli_option_hands_on_with_the_same_default_stays_off(project, run):
    """pgqueuer's supervisor: ``runit(..., restart_on_failure)`` is called by ``run(...,
    restart_on_failure=False)``, itself called by the typer command with
    ``restart_on_failure: bool = typer.Option(False, "--restart-on-failure")``: as shipped, the
    restart never happens. A command whose option defaults to True turns it on."""
    project.write("pkg/__init__.py", "")
    project.write("pkg/supervisor.py", SUPERVISOR)
    command = (
        "import typer\nfrom .supervisor import run\n\n"
        "def main(restart_on_failure: bool = typer.Option(DEFAULT, '--restart-on-failure')):\n"
        "    run(start, shutdown, restart_on_failure=restart_on_failure)\n"
    )
    project.write("pkg/cli.py", command.replace("DEFAULT", "False"))
    code, out, _ = run("check", "--no-cache", "--select", "RTY1,RTY3", "pkg")
    assert code == 0, out
    project.write("pkg/cli.py", command.replace("DEFAULT", "True"))
    code, out, _ = run("check", "--no-cache", "--select", "RTY1,RTY3", "pkg")
    assert code == 1 and "RTY301" in out, out


CLIENT_ARGS = """
import urllib3
from urllib3.util.retry import Retry

class Sink:
    def __init__(self, host, max_retries=5, retry_backoff_factor=FACTOR):
        self._client_args = {"host": host, "max_retries": max_retries, "retry_backoff_factor": retry_backoff_factor}

    def setup(self):
        retry = Retry(total=self._client_args["max_retries"], backoff_factor=self._client_args["retry_backoff_factor"],
                      allowed_methods=["POST"])
        self._pool = urllib3.PoolManager(retries=retry)
"""


def test_a_dict_of_client_arguments_built_in_init_gives_its_keys():
    """quixstreams' TDengine sink: ``self._client_args = {"max_retries": max_retries, …}`` in
    ``__init__`` and ``Retry(total=self._client_args["max_retries"], backoff_factor=…)``: the
    keys hold the parameters' defaults as shipped (5 retries, factor 1.0: exponential without
    jitter). With a factor of 0 there is no backoff to jitter; a key written again elsewhere
    is unknown."""
    assert "RTY203" in {f.code for f in _findings(CLIENT_ARGS.replace("FACTOR", "1.0"))}
    assert "RTY203" not in {f.code for f in _findings(CLIENT_ARGS.replace("FACTOR", "0"))}
    rewritten = CLIENT_ARGS.replace("FACTOR", "1.0") + (
        "\n    def tune(self, factor):\n        self._client_args[\"retry_backoff_factor\"] = factor\n")
    assert "RTY203" not in {f.code for f in _findings(rewritten)}  # the factor is unknown again


OPTIONS = """
class Options:
    def __init__(self, options):
        self.tries = options.get("tries", {tries})
        self.pause = options.get("pause", 2.0)
"""

TYPED_CLIENT = """
import asyncio
from .options import Options


class Caller:
    def __init__(self, options: Options, http=None):
        self.options = options
        self.http = http

    async def call(self, url, tries=0, last_error=None):
        if tries >= self.options.tries:
            raise last_error or RuntimeError(url)
        try:
            return await self.http.get(url)
        except ConnectionError as error:
            await asyncio.sleep(self.options.pause)
            return await self.call(url, tries=tries + 1, last_error=error)
"""


def test_a_settings_object_typed_in_init_gives_its_shipped_defaults_across_modules(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/options.py", OPTIONS.format(tries=4))
    project.write("pkg/caller.py", TYPED_CLIENT)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert "RTY202 recursive retry in `call()` waits the same 2 s before every retry (at most 4 attempts)" in out
    code, out, _ = run("explain", "pkg/caller.py")
    assert "`self.options.tries` = 4: Caller.options.tries (as shipped: Options.tries (default of options.get('tries')" in out
    assert "pkg/options.py:4" in out


def test_a_typed_settings_dependency_that_changes_invalidates_the_cache(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/options.py", OPTIONS.format(tries=4))
    project.write("pkg/caller.py", TYPED_CLIENT)
    _, out, _ = run("check", "pkg")
    assert "(at most 4 attempts)" in out
    project.write("pkg/options.py", OPTIONS.format(tries=9))  # caller.py unchanged
    _, out, _ = run("check", "pkg")
    assert "(at most 9 attempts)" in out and "(at most 4 attempts)" not in out


def test_an_untyped_or_reassigned_settings_attribute_stays_unknown():
    untyped = """
class Options:
    def __init__(self, options):
        self.tries = options.get("tries", 4)


class Caller:
    def __init__(self, options):
        self.options = options

    def call(self, url):
        for _ in range(self.options.tries):
            try:
                return requests.get(url)
            except requests.ConnectionError:
                time.sleep(self.options.pause)
        raise RuntimeError(url)
"""
    assert not [m for m in _messages(untyped, "RTY202") if "at most 4 attempts" in m]
    typed = untyped.replace("def __init__(self, options):\n        self.options", "def __init__(self, options: Options):\n        self.options")
    assert any("at most 4 attempts" in m for m in _messages(typed, "RTY202"))
    reassigned = typed.replace("    def call(self, url):", "    def reset(self):\n        self.options = None\n\n    def call(self, url):")
    assert not [m for m in _messages(reassigned, "RTY202") if "at most 4 attempts" in m]


def test_an_object_built_when_the_caller_passes_none_gives_its_defaults():
    source = """
class Config:
    def __init__(self, max_tries=6, pause=3):
        self.max_tries = max_tries
        self.pause = pause


class Client:
    def __init__(self, config=None):
        self.config = config or Config()

    def call(self, url):
        for _ in range(self.config.max_tries):
            try:
                return requests.get(url)
            except requests.ConnectionError:
                time.sleep(self.config.pause)
        raise RuntimeError(url)
"""
    assert any("waits the same 3 s" in m and "at most 6 attempts" in m for m in _messages(source, "RTY202"))


OFF_CONFIG = """
class Config:
    def __init__(self, max_retries=0, timeout=30):
        self.max_retries = max_retries
        self.timeout = timeout
"""

OFF_CLIENT = """
import time
import requests
from .cfg import Config


class Client:
    def __init__(self, config=None):
        self.config = config or Config()

    def invoke(self, request):
        retries = 0
        while True:
            try:
                return requests.post(request)
            except requests.ConnectionError:
                if retries >= self.config.max_retries:
                    raise
                retries += 1
                time.sleep(2 ** retries)
"""


def test_a_settings_object_whose_default_switches_retries_off_is_judged_as_shipped(project, run):
    project.write("pkg/__init__.py", "")
    project.write("pkg/cfg.py", OFF_CONFIG)
    project.write("pkg/client.py", OFF_CLIENT)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 0, out  # ``max_retries=0`` as shipped: one attempt, no retry to judge
    typed = OFF_CLIENT.replace("def __init__(self, config=None):\n        self.config = config or Config()",
                               "def __init__(self, config: Config):\n        self.config = config")
    project.write("pkg/client.py", typed)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 0, out
    # A module of the package that switches it on: the retry written for it is judged.
    project.write("pkg/app.py", "from .cfg import Config\nCONFIG = Config(max_retries=5)\n")
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 1 and "RTY203" in out and "pkg/client.py" in out, out


FILLED_IN = """
class Api:
    default_retry_count: int = {count}

    async def request(self, method, url, retry_count=None):
        if retry_count is None:
            retry_count = self.default_retry_count
        backoff = 4
        while True:
            try:
                return await self.session.request(method, url)
            except ConnectionError:
                if retry_count <= 0:
                    raise
                await asyncio.sleep(backoff)
                backoff *= 2
                retry_count -= 1
"""


def test_a_counter_filled_in_from_a_class_default_that_switches_retries_off_is_judged_as_shipped():
    # mautrix-style: ``retry_count=None`` filled in from ``default_retry_count = 0``: no retry as shipped
    assert not _findings("import asyncio\n" + FILLED_IN.format(count=0))
    assert "RTY203" in {f.code for f in _findings("import asyncio\n" + FILLED_IN.format(count=3))}
    caller = FILLED_IN.format(count=0) + "\n    async def get(self, url):\n        return await self.request('GET', url, retry_count=5)\n"
    assert "RTY203" in {f.code for f in _findings("import asyncio\n" + caller)}


# ---------------------------------------------------------------- helpers that cannot wait

ERRORS_MODULE = """
import requests


def request_id_of(response):
    return response.headers.get("x-request-id")


def update_retry_context(exc, last_status):
    status = last_status
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        status = exc.response.status_code
        rid = request_id_of(exc.response)
        if rid:
            print(f"request {rid} failed")
    return status
"""

HANDLER_MODULE = """
import requests
from .errors import update_retry_context


def execute(session, query, attempts=5):
    current = 0
    last_status = None
    while current < attempts:
        try:
            response = session.post("https://api.example.com", json=query)
            response.raise_for_status()
            return response.json()
        except requests.HTTPError as e:
            last_status = update_retry_context(e, last_status)
            current += 1
    raise RuntimeError(last_status)
"""


def test_a_failure_handed_to_bookkeeping_in_another_module_adds_no_wait(project, run):
    """monday-sdk's GraphQL client: the handler hands the error to
    ``update_retry_context_from_exception`` (another module), which only reads the error and
    returns what it found. The program view reads that helper: it cannot wait, so the loop
    retries at once (RTY201), and ``explain`` says where that was decided. A helper that may
    wait (it calls ``time.sleep``) keeps the delay unknown: nothing is reported."""
    project.write("pkg/__init__.py", "")
    project.write("pkg/errors.py", ERRORS_MODULE)
    project.write("pkg/client.py", HANDLER_MODULE)
    code, out, _ = run("check", "--no-cache", "pkg")
    assert code == 1 and "RTY201" in out
    code, out, _ = run("explain", "pkg/client.py")
    assert "`update_retry_context` only reads, computes and logs" in out and "pkg/errors.py:8" in out
    project.write("pkg/errors.py", ERRORS_MODULE.replace('print(f"request {rid} failed")', "time.sleep(1)")
                  .replace("import requests", "import time\nimport requests"))
    code, out, _ = run("check", "--no-cache", "pkg")
    assert "RTY201" not in out


# ---------------------------------------------------------------- failures converted before the handlers

CONVERTING_CLIENT = """
import time


class TokenError(Exception):
    pass


class Provider:
    def _request_token(self, conn, body):
        try:
            conn.request("POST", "/v3/tokens", body)
            return conn.getresponse().read()
        except TokenError:
            raise
        except Exception as e:
            raise {converted}(str(e))

    def token(self, conn, body):
        for attempt in range(5):
            try:
                return self._request_token(conn, body)
            except TokenError:
                raise
            except Exception:
                time.sleep(2 ** attempt)
"""


def test_a_loop_whose_attempt_converts_every_failure_into_what_it_reraises_never_retries():
    """esdk-obs's ``_get_temporary_aksk``: ``_do_temporary_aksk_request`` turns every failure into
    ``TemporaryAKSKException``, and the loop re-raises that class before its ``except Exception``
    backs off: the backoff never runs, no retry is reported. When the helper converts failures
    into a ``RuntimeError`` instead, the catch-all below does retry them (RTY203)."""
    assert not {f.code for f in _findings(CONVERTING_CLIENT.replace("{converted}", "TokenError"))}
    assert "RTY203" in {f.code for f in _findings(CONVERTING_CLIENT.replace("{converted}", "RuntimeError"))}


CONVERTING_DECORATED = """
import requests
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_fixed


class UploadError({base}):
    pass


@retry(stop=stop_after_attempt(5), wait=wait_fixed(2),
       retry=retry_if_exception_type((requests.exceptions.Timeout, ConnectionError)))
def upload(url, data):
    try:
        return requests.put(url, data=data, timeout=10)
    except Exception as e:
        raise UploadError(str(e)) from e
"""


def test_a_retry_decorator_on_a_function_that_lets_out_only_other_errors_never_retries():
    """dashscope's OSS upload: the decorated function turns every failure into its own error,
    which is not one of the classes ``retry_if_exception_type`` names: tenacity never retries.
    When that error derives from ``ConnectionError``, the decorator retries it every 2 s (RTY202)."""
    assert not {f.code for f in _findings(CONVERTING_DECORATED.replace("{base}", "RuntimeError"))}
    assert "RTY202" in {f.code for f in _findings(CONVERTING_DECORATED.replace("{base}", "ConnectionError"))}
