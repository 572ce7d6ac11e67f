"""Bounds and delays that are parameters, judged as this module's callers use them (issue 12).

``def ensure_connection(self, max_retries=None, interval=2)`` with
``if max_retries is not None and retries >= max_retries: raise`` is a retry engine whose bound
its caller chooses: alone, it is not reported. When a caller in the module leaves the limit to
its default of None (``conn.ensure_connection()``), that call retries forever: RTY101, and
``explain`` says which call. A parameter every caller here leaves alone has its default's value
(the fixed 2 s delay is shown as 2 s); callers that disagree, pass ``**kwargs`` or are not in
the module keep it unknown.
"""

from __future__ import annotations

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)

ENGINE = """
import time


class Connection:
    def ensure_connection(self, max_retries=None, interval=2):
        retries = 0
        while True:
            try:
                return self._connect()
            except OSError:
                if max_retries is not None and retries >= max_retries:
                    raise
                retries += 1
                time.sleep(interval)
"""


def _findings(source: str):
    report = check_source(source, "conn.py", settings_with(CODES))
    assert report.error is None, report.error
    return report.findings


def _codes(source: str):
    return {f.code for f in _findings(source)}


def _async(source: str) -> str:
    return (source.replace("def ensure_connection", "async def ensure_connection")
            .replace("return self._connect()", "return await self._connect()")
            .replace("time.sleep(", "await asyncio.sleep(").replace("import time", "import asyncio, time"))


def test_an_engine_whose_limit_its_callers_choose_is_not_reported_alone():
    assert "RTY101" not in _codes(ENGINE)
    assert "RTY101" not in _codes(_async(ENGINE))


def test_a_caller_that_leaves_the_limit_to_none_makes_it_retry_forever():
    source = ENGINE + "\n\ndef start(conn):\n    conn.ensure_connection()\n"
    (finding,) = [f for f in _findings(source) if f.code == "RTY101"]
    assert finding.location.line == 8
    assert "retries forever" in finding.message and "fixed 2 s" in finding.message
    assert "RTY101" in _codes(_async(source).replace("conn.ensure_connection()", "await conn.ensure_connection()"))


def test_a_caller_that_passes_none_explicitly_too():
    source = ENGINE + "\n\ndef start(conn):\n    conn.ensure_connection(max_retries=None)\n"
    assert "RTY101" in _codes(source)


def test_callers_that_all_pass_a_limit_bound_it():
    source = ENGINE + "\n\ndef start(conn):\n    conn.ensure_connection(max_retries=3)\n    conn.ensure_connection(5)\n"
    assert "RTY101" not in _codes(source)


def test_a_caller_passing_kwargs_is_not_read():
    source = ENGINE + "\n\ndef start(conn, **options):\n    conn.ensure_connection(**options)\n"
    assert "RTY101" not in _codes(source)


def test_the_recursion_handing_the_limit_on_is_no_caller():
    # The function's own call passes its parameter on: it says nothing about the value.
    source = ENGINE.replace("                raise\n", "                raise\n                self.ensure_connection(max_retries, interval)\n", 1)
    assert "RTY101" not in _codes(source)


def test_a_parameter_every_caller_leaves_alone_has_its_default_value():
    source = ENGINE + "\n\ndef start(conn):\n    conn.ensure_connection(max_retries=3)\n"
    (message,) = [f.message for f in _findings(source) if f.code == "RTY202"]
    assert "2 s" in message


def test_callers_that_disagree_keep_the_value_unknown():
    source = ENGINE + "\n\ndef start(conn):\n    conn.ensure_connection(3, interval=1)\n    conn.ensure_connection(3)\n"
    (message,) = [f.message for f in _findings(source) if f.code == "RTY202"]
    assert "`interval`" in message


def test_a_module_constant_of_none_leaves_no_limit():
    source = """
import time

MAX_RETRIES = None


def connect(sock):
    retries = 0
    while True:
        try:
            return sock.connect()
        except OSError:
            if MAX_RETRIES is not None and retries >= MAX_RETRIES:
                raise
            retries += 1
            time.sleep(2)
"""
    assert "RTY101" in _codes(source)
    assert "RTY101" not in _codes(source.replace("MAX_RETRIES = None", "MAX_RETRIES = 5"))


def test_explain_names_the_call_that_leaves_the_limit_out(project, run):
    path = project.write("conn.py", ENGINE + "\n\ndef start(conn):\n    conn.ensure_connection()\n")
    lines = path.read_text().splitlines()
    loop = next(i for i, line in enumerate(lines, 1) if "while True" in line)
    call = next(i for i, line in enumerate(lines, 1) if "conn.ensure_connection()" in line)
    code, out, _ = run("explain", f"conn.py:{loop}")
    assert code == 0
    assert "bound:       forever" in out
    assert f"default of `ensure_connection(max_retries=...)`, as called without it, conn.py:{call}" in out


def test_a_call_of_a_builtin_method_name_is_no_caller():
    # ``options.get("timeout")`` is a dict's ``get``, not ``Client.get`` leaving ``retries`` out.
    source = """
import time


class Client:
    def get(self, path, retries=None):
        attempt = 0
        while True:
            try:
                return self._session.request("GET", path)
            except OSError:
                if retries is not None and attempt >= retries:
                    raise
                attempt += 1
                time.sleep(2)


def configure(options):
    return options.get("timeout")
"""
    assert "RTY101" not in _codes(source)
    # the same engine called by its own class without a limit does retry forever
    assert "RTY101" in _codes(source + "\n\nclass Sub(Client):\n    def ping(self):\n        return self.get('/ping')\n")


def test_a_module_function_of_the_same_name_as_a_method_is_no_caller():
    source = ENGINE + "\n\ndef ensure_connection():\n    pass\n\n\ndef start():\n    ensure_connection()\n"
    assert "RTY101" not in _codes(source)


def test_a_method_of_the_same_name_in_another_class_is_not_a_caller():
    # Two classes of one module each with their own ``ensure_connection`` (a sync and an async
    # twin, two transports): ``self.ensure_connection()`` in the other class calls its own.
    other = ENGINE.replace("class Connection:", "class OtherConnection:").replace("import time\n", "")
    source = (ENGINE + "\n    def publish(self):\n        self.ensure_connection(max_retries=3)\n"
              + other + "\n    def publish(self):\n        self.ensure_connection()\n")
    lines = sorted(f.location.line for f in _findings(source) if f.code == "RTY101")
    # Only OtherConnection's loop retries forever (its own caller leaves the limit to None).
    other_class_line = source[: source.index("class OtherConnection")].count("\n") + 1
    assert len(lines) == 1 and lines[0] > other_class_line


SETTINGS = """
import time
from tenacity import Retrying, stop_after_attempt, wait_fixed
from . import configuration


class RemoteScheduler:
    def __init__(self, url):
        config = configuration.get_config()
        self._url = url
        self._attempts = config.getint("core", "rpc-retry-attempts", ATTEMPTS)
        self._wait = config.getint("core", "rpc-retry-wait", fallback=WAIT)

    def _get_retryer(self):
        return Retrying(wait=wait_fixed(self._wait), stop=stop_after_attempt(self._attempts),
                        retry=retry_if_exception_type(ConnectionError), reraise=True)
"""


def test_a_setting_read_with_a_literal_default_has_that_value():
    """luigi ``config.getint("core", "rpc-retry-wait", 30)`` in ``__init__``: the package ships
    30 s, so the policy waits a fixed 30 s for at most 3 attempts (issue 12, "settings objects
    with literal defaults"); a default that is itself unknown keeps the values unknown."""
    known = _findings(SETTINGS.replace("ATTEMPTS", "3").replace("WAIT", "30"))
    assert [f.code for f in known] == ["RTY202"]
    assert "30 s" in known[0].message and "at most 3 attempts" in known[0].message
    unknown = _findings(SETTINGS.replace("ATTEMPTS", "self.DEFAULT").replace("WAIT", "self.DEFAULT_WAIT"))
    assert [f.code for f in unknown] == ["RTY202"]
    assert "30 s" not in unknown[0].message and "a limited number of attempts" in unknown[0].message


# ---------------------------------------------------------------- a recursion's counter

RECONNECT = """
import aiohttp


class Source:
    def __init__(self, session, url, max_connect_retry=5):
        self._session = session
        self._url = url
        self._max_connect_retry = max_connect_retry

    async def connect(self, retry=0):
        try:
            self._response = await self._session.get(self._url)
        except aiohttp.ClientConnectionError:
            if retry <= 0:
                raise
            await self.connect(retry - 1)

    async def __aenter__(self):
        await self.connect(CALLER_PASSES)
        return self
"""


def test_a_recursion_counter_starts_where_its_callers_start_it():
    # Default 0 says "one attempt", but the one caller starts it at 3: three immediate retries.
    findings = _findings(RECONNECT.replace("CALLER_PASSES", "3"))
    assert [f.code for f in findings] == ["RTY201"]
    assert "at most 4 attempts" in findings[0].message


def test_a_recursion_counter_its_callers_leave_at_zero_never_retries():
    assert _codes(RECONNECT.replace("CALLER_PASSES", "")) == set()
    assert _codes(RECONNECT.replace("CALLER_PASSES", "0")) == set()


def test_a_recursion_counter_a_caller_starts_from_an_unread_value_is_limited_but_unknown():
    # ``self._max_connect_retry``: limited by a value not read; the retry is still immediate.
    assert _codes(RECONNECT.replace("CALLER_PASSES", "self._max_connect_retry")) == {"RTY201"}
