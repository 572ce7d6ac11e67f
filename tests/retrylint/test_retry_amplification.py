"""RTY501 retry-amplification against the real libraries: the product the rule reports is the
number of calls the downstream really receives when both layers give up.

Each case is one module of source: retrylint checks it, then the test runs the same source
against a local server (or a failing redis connection) and counts the calls.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import textwrap
import threading
from typing import Iterator, List

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.explain import to_dict, to_text
from retrylint.extract.layers import Layers, carried_policy

pytest.importorskip("requests")
pytest.importorskip("botocore")


class _Failing(http.server.BaseHTTPRequestHandler):
    status = 503
    calls: List[str] = []

    def _answer(self) -> None:
        type(self).calls.append(self.command)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def failing_server() -> Iterator[tuple]:
    class Handler(_Failing):
        calls: List[str] = []

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Handler
    finally:
        server.shutdown()
        server.server_close()


def _rty501(source: str):
    report = check_source(source, "amp.py", settings_with(("RTY501",)), want_policies=True)
    assert report.error is None, report.error
    return [f for f in report.findings if f.code == "RTY501"], report


def _run(source: str, **names):
    namespace: dict = dict(names)
    exec(compile(source, "amp.py", "exec"), namespace)  # noqa: S102 - the test's own source
    return namespace


def _product(message: str) -> int:
    match = re.search(r"(\d+) × (\d+) = (\d+) attempts per call", message)
    assert match, message
    outer, inner, total = map(int, match.groups())
    assert outer * inner == total
    return total


REQUESTS_TENACITY = textwrap.dedent(
    """
    import requests
    import tenacity
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=Retry(total=3, status_forcelist=[503], backoff_factor=0)))


    @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException),
                    reraise=True)
    def fetch(url):
        return session.get(url, timeout=5)
    """
)


def test_tenacity_around_a_retrying_requests_session_makes_the_product_of_calls(failing_server):
    url, handler = failing_server
    findings, _ = _rty501(REQUESTS_TENACITY)
    assert len(findings) == 1 and findings[0].location.line == 11
    message = findings[0].message
    assert "3 × 4 = 12 attempts per call; 2,000 failing messages make 24,000 calls" in message
    assert "`session.get` (line 14)" in message and "urllib3 `Retry(...)`, line 8" in message
    namespace = _run(REQUESTS_TENACITY)
    import requests

    with pytest.raises(requests.RequestException):
        namespace["fetch"](url)
    assert len(handler.calls) == _product(message) == 12


def test_without_the_adapters_retries_the_rule_is_silent_and_calls_are_not_multiplied(failing_server):
    url, handler = failing_server
    source = REQUESTS_TENACITY.replace("Retry(total=3, status_forcelist=[503], backoff_factor=0)", "Retry(0)")
    source = source.replace("session.get(url, timeout=5)", "session.get(url, timeout=5).raise_for_status()")
    findings, _ = _rty501(source)
    assert findings == []
    namespace = _run(source)
    import requests

    with pytest.raises(requests.RequestException):
        namespace["fetch"](url)
    assert len(handler.calls) == 3


BOTOCORE_BACKOFF = textwrap.dedent(
    """
    import backoff
    import botocore.session
    from botocore.config import Config
    from botocore.exceptions import ClientError

    CONFIG = Config(retries={"total_max_attempts": 3, "mode": "standard"})


    class Store:
        def __init__(self, url):
            self.s3 = botocore.session.get_session().create_client(
                "s3", region_name="us-east-1", endpoint_url=url, config=CONFIG,
                aws_access_key_id="x", aws_secret_access_key="y")

        @backoff.on_exception(backoff.constant, ClientError, max_tries=2, interval=0, jitter=None)
        def get(self, key):
            return self.s3.get_object(Bucket="b", Key=key)
    """
)


def test_backoff_around_a_botocore_client_with_retries(failing_server, monkeypatch):
    url, handler = failing_server
    handler.status = 500
    findings, _ = _rty501(BOTOCORE_BACKOFF)
    assert [f.location.line for f in findings] == [16]
    message = findings[0].message
    assert "2 × 3 = 6 attempts per call; 2,000 failing messages make 12,000 calls" in message
    assert "`self.s3` is a client built with `config=Config(retries=...)`" in message
    import botocore.endpoint
    from botocore.exceptions import ClientError

    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda seconds: None)  # botocore's own backoff
    store = _run(BOTOCORE_BACKOFF)["Store"](url)
    with pytest.raises(ClientError):
        store.get("k")
    assert len(handler.calls) == _product(message) == 6


REDIS_STAMINA = textwrap.dedent(
    """
    import redis
    import stamina
    from redis.backoff import NoBackoff
    from redis.retry import Retry


    def make(port):
        return redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 3))


    cache = redis.Redis(host="127.0.0.1", port=PORT, retry=Retry(NoBackoff(), 3))


    @stamina.retry(on=redis.ConnectionError, attempts=3, wait_initial=0, wait_max=0, wait_jitter=0)
    def read(key):
        return cache.get(key)
    """
)


def test_stamina_around_a_redis_client_with_its_own_retry(monkeypatch):
    redis = pytest.importorskip("redis")
    import redis.connection

    findings, _ = _rty501(REDIS_STAMINA)
    assert [f.location.line for f in findings] == [15]
    message = findings[0].message
    assert "3 × 4 = 12 attempts per call" in message
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    connects = []
    real_connect = redis.connection.Connection._connect

    def counting(self):
        connects.append(1)
        return real_connect(self)

    monkeypatch.setattr(redis.connection.Connection, "_connect", counting)
    read = _run(REDIS_STAMINA, PORT=port)["read"]
    with pytest.raises(redis.ConnectionError):
        read("k")
    assert len(connects) == _product(message) == 12


SAME_MODULE = textwrap.dedent(
    """
    import backoff
    import tenacity

    CALLS = []


    @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(ConnectionError),
                    reraise=RERAISE)
    def fetch(url):
        CALLS.append(url)
        raise ConnectionError(url)


    @backoff.on_exception(backoff.constant, ConnectionError, max_tries=4, interval=0, jitter=None)
    def sync(url):
        return fetch(url)
    """
)


@pytest.mark.parametrize("reraise, calls, fires", [("True", 12, True), ("False", 3, False)])
def test_a_retry_around_a_decorated_function_of_the_same_module(reraise, calls, fires):
    source = SAME_MODULE.replace("RERAISE", reraise)
    findings, _ = _rty501(source)
    assert bool(findings) is fires
    namespace = _run(source)
    import tenacity

    with pytest.raises((ConnectionError, tenacity.RetryError)):
        namespace["sync"]("u")
    # tenacity without reraise=True gives up with RetryError, which backoff does not retry.
    assert len(namespace["CALLS"]) == calls
    if fires:
        assert _product(findings[0].message) == calls
        assert "`fetch` has its own retry decorator (line 8)" in findings[0].message


@pytest.mark.parametrize("source", [REQUESTS_TENACITY, BOTOCORE_BACKOFF, REDIS_STAMINA, SAME_MODULE.replace("RERAISE", "True")],
                         ids=["requests", "botocore", "redis", "same-module"])
def test_narrowing_keeps_what_the_layers_need(source):
    """Narrowing blanks definitions without sites; the ones that build clients must stay."""
    settings = settings_with(("RTY501",))
    narrowed = check_source(source, "amp.py", settings).findings
    whole = check_source(source, "amp.py", settings, narrowing=False).findings
    assert narrowed == whole and len(whole) == 1


def test_explain_shows_the_product():
    _, report = _rty501(REQUESTS_TENACITY)
    outer = [p for p in report.policies if p.source == "tenacity"][0]
    text = to_text(outer, "amp.py")
    assert "  inner retry: `session.get` (line 14) retries on its own: urllib3 `Retry(...)` (line 8), at most 4 attempts\n" in text
    assert "  amplified:   3 × 4 = 12 attempts per call; 2,000 failing messages make 24,000 calls\n" in text
    data = json.loads(json.dumps(to_dict(outer, "amp.py")))
    assert data["attempts_per_call"] == 12
    assert data["inner_retries"][0]["call"] == "session.get" and data["inner_retries"][0]["attempts"] == 4.0


def test_the_callee_question_can_be_answered_by_a_whole_program_view():
    """A callee defined in another module: ``ctx.program.retry_policy_of(name)`` answers it."""
    import libcst as cst

    from retrylint.extract import extract_policies
    from retrylint.extract.context import ModuleContext
    from retrylint.settings import Settings

    other = check_source(
        "import tenacity\n@tenacity.retry(stop=tenacity.stop_after_attempt(5), reraise=True)\ndef fetch(url): ...\n",
        "client.py", settings_with(()), want_policies=True,
    ).policies[0]
    source = textwrap.dedent(
        """
        import backoff
        from myapp.client import fetch

        @backoff.on_exception(backoff.expo, Exception, max_tries=3)
        def sync(url):
            return fetch(url)
        """
    )

    ctx = ModuleContext(cst.parse_module(source), "sync.py", Settings())

    class Program:
        """The module's own program view, plus the answer a whole-program index would give."""

        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def retry_policy_of(self, qualified_name):
            return other if qualified_name == "myapp.client.fetch" else None

    ctx.program = Program(getattr(ctx, "program", None))
    policies = extract_policies(ctx)
    (outer,) = [p for p in policies if p.source == "backoff"]
    assert [layer.call for layer in outer.inner] == ["fetch"]
    call = next(n for n in _calls(ctx.module) if isinstance(n.func, cst.Name) and n.func.value == "fetch")
    assert carried_policy(call, Layers(ctx, policies)).policy is other


def _calls(module):
    import libcst as cst

    from retrylint.syntax import walk

    return [n for n in walk(module, skip=()) if isinstance(n, cst.Call)]


def test_known_exception_bases_match_the_installed_requests():
    """The overlap table used to match an outer clause with what the inner layer raises."""
    import builtins

    import requests.exceptions

    from retrylint.extract.layers import _BASES, overlaps

    import importlib

    def real(name):
        if name.startswith("requests."):
            return getattr(requests.exceptions, name.split(".", 1)[1])
        if "." in name:
            module, attr = name.rsplit(".", 1)
            return getattr(importlib.import_module(module), attr)
        return getattr(builtins, name)

    for child, bases in _BASES.items():
        for base in bases:
            assert issubclass(real(child), real(base)), (child, base)
    # A connect timeout is both: a Timeout retry around a ConnectionError retry amplifies it.
    assert overlaps("requests.exceptions.Timeout", "requests.exceptions.ConnectionError")
    assert overlaps("IOError", "requests.exceptions.HTTPError")
    assert not overlaps("requests.exceptions.HTTPError", "requests.exceptions.Timeout")
    assert not overlaps("ValueError", "requests.exceptions.Timeout")
    assert overlaps("redis.ConnectionError", "redis.exceptions.RedisError")
    assert not overlaps("redis.exceptions.ResponseError", "redis.exceptions.ConnectionError")


def test_what_each_client_raises_when_its_retries_give_up():
    """The classes the layers say a client raises after its own retries, checked on the real
    requests (a Retry that gives up on a 503), redis (a refused connection) and google-api-core
    (a Retry whose timeout passes)."""
    from retrylint.extract.layers import _FAMILIES, overlaps

    def surfaces(source, exc):
        name = f"{type(exc).__module__}.{type(exc).__qualname__}"
        assert any(overlaps(name, raised) for raised in _FAMILIES[source] if not raised.endswith(".")), (source, name)

    import google.api_core.exceptions
    import google.api_core.retry

    calls = []

    def unavailable():
        calls.append(1)
        raise google.api_core.exceptions.ServiceUnavailable("down")

    retry = google.api_core.retry.Retry(initial=0.001, maximum=0.001, timeout=0.05)
    with pytest.raises(google.api_core.exceptions.RetryError) as info:
        retry(unavailable)()
    surfaces("google-api-core", info.value)
    assert not any(overlaps("google.api_core.exceptions.ServiceUnavailable", r) for r in _FAMILIES["google-api-core"])


TIMEOUT_AROUND_CONNECTION_ERROR = textwrap.dedent(
    """
    import backoff
    import requests
    from requests.exceptions import ConnectionError, Timeout

    session = requests.Session()


    @backoff.on_exception(backoff.expo, ConnectionError, max_tries=7, factor=0, jitter=None)
    def check(url):
        return session.get(url, timeout=0.001)


    @backoff.on_exception(backoff.expo, Timeout, max_tries=5, factor=0, jitter=None)
    def enter(url):
        return check(url)
    """
)


def test_a_timeout_retry_around_a_connection_error_retry_multiplies_connect_timeouts(monkeypatch):
    findings, _ = _rty501(TIMEOUT_AROUND_CONNECTION_ERROR)
    assert [f.location.line for f in findings] == [14]
    assert "5 × 7 = 35 attempts per call" in findings[0].message
    import requests

    calls = []

    def connect_timeout(self, request, **kwargs):
        calls.append(request.url)
        raise requests.exceptions.ConnectTimeout("connect timed out")

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", connect_timeout)
    with pytest.raises(requests.exceptions.ConnectTimeout):
        _run(TIMEOUT_AROUND_CONNECTION_ERROR)["enter"]("http://example.invalid/")
    assert len(calls) == _product(findings[0].message) == 35


CELERY_DIRECT = textwrap.dedent(
    """
    from celery import Celery

    app = Celery("amp", broker="memory://")
    CALLS = []


    @app.task(autoretry_for=(ConnectionError,), max_retries=3)
    def sync_languages(pk):
        CALLS.append(pk)
        raise ConnectionError(pk)


    @app.task(autoretry_for=(ConnectionError,), max_retries=3)
    def sync_terminology(pk):
        sync_languages(pk)
    """
)


def test_a_celery_task_called_directly_does_not_retry():
    """weblate's glossary tasks: the inner task runs once when called directly, so RTY501 is silent."""
    pytest.importorskip("celery")
    findings, _ = _rty501(CELERY_DIRECT)
    assert findings == []
    namespace = _run(CELERY_DIRECT)
    with pytest.raises(ConnectionError):
        namespace["sync_terminology"](1)  # called directly, as the outer task body does
    assert namespace["CALLS"] == [1]


HANDED = {
    "tenacity Retrying()(fn)": textwrap.dedent(
        """
        import requests
        import tenacity
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        session = requests.Session()
        session.mount("http://", HTTPAdapter(max_retries=Retry(total=2, status_forcelist=[503], backoff_factor=0)))


        def download(url):
            return tenacity.Retrying(stop=tenacity.stop_after_attempt(4), reraise=True)(session.get, url)
        """
    ),
    "retry_call(fn)": textwrap.dedent(
        """
        import requests
        from requests.adapters import HTTPAdapter
        from retry.api import retry_call
        from urllib3.util.retry import Retry

        session = requests.Session()
        session.mount("http://", HTTPAdapter(max_retries=Retry(total=2, status_forcelist=[503], backoff_factor=0)))


        def download(url):
            return retry_call(session.get, fargs=[url], exceptions=requests.RequestException, tries=4)
        """
    ),
}


@pytest.mark.parametrize("name", list(HANDED))
def test_a_retrying_call_handed_to_a_retry(name, failing_server):
    """The operation is the function handed to the retry (``Retrying(...)(session.get, url)``)."""
    pytest.importorskip("retry")
    url, handler = failing_server
    source = HANDED[name]
    findings, _ = _rty501(source)
    assert len(findings) == 1 and "4 × 3 = 12 attempts per call" in findings[0].message, findings
    import requests

    with pytest.raises(requests.RequestException):
        _run(source)["download"](url)
    assert len(handler.calls) == _product(findings[0].message) == 12


BOTOCORE_RETRIES = textwrap.dedent(
    """
    import backoff
    import botocore.session
    from botocore.config import Config
    from botocore.exceptions import ClientError

    CONFIG = Config(retries=RETRIES)


    class Store:
        def __init__(self, url):
            self.s3 = botocore.session.get_session().create_client(
                "s3", region_name="us-east-1", endpoint_url=url, config=CONFIG,
                aws_access_key_id="x", aws_secret_access_key="y")

        @backoff.on_exception(backoff.constant, ClientError, max_tries=2, interval=0, jitter=None)
        def get(self, key):
            return self.s3.get_object(Bucket="b", Key=key)
    """
)


@pytest.mark.parametrize(
    "retries, inner",
    [
        # botocore's client-config ``max_attempts`` counts retries in every mode (args.py:
        # total_max_attempts = max_attempts + 1), not only in legacy mode.
        ('{"max_attempts": 4, "mode": "standard"}', 5),
        ('{"max_attempts": 4, "mode": "adaptive"}', 5),
        ('{"max_attempts": 4, "mode": "legacy"}', 5),
        ('{"max_attempts": 4}', 5),
        ('{"total_max_attempts": 4, "mode": "standard"}', 4),
        ('{"total_max_attempts": 4, "mode": "legacy"}', 4),
        ('{"total_max_attempts": 4, "max_attempts": 9, "mode": "standard"}', 4),
        ('{"mode": "standard"}', 3),
        ('{"mode": "legacy"}', 5),
        ('{}', 3),
    ],
)
def test_botocore_attempts_in_each_mode_match_the_real_client(retries, inner, failing_server, monkeypatch):
    url, handler = failing_server
    handler.status = 500
    for name in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_NEW_RETRIES_2026"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    source = BOTOCORE_RETRIES.replace("RETRIES", retries)
    findings, _ = _rty501(source)
    assert len(findings) == 1, findings
    message = findings[0].message
    assert f"2 × {inner} = {2 * inner} attempts per call" in message
    assert f"up to {inner} attempts" in message
    import botocore.endpoint
    from botocore.exceptions import ClientError

    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda seconds: None)  # botocore's own backoff
    store = _run(source)["Store"](url)
    with pytest.raises(ClientError):
        store.get("k")
    assert len(handler.calls) == _product(message) == 2 * inner


# ---------------------------------------------------------------- issue 13 audit, item 7: objects not known


REASSIGNED = textwrap.dedent(
    """
    import requests
    import tenacity
    from requests.adapters import HTTPAdapter


    class Client:
        def __init__(self):
            self.session = requests.Session()
            self.session.mount("https://", HTTPAdapter(max_retries=3))
    {other}
        @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
        def get(self, url):
            return self.session.get(url, timeout=3)
    """
)


def _both(source: str):
    """RTY501 findings with and without narrowing (they must agree)."""
    out = []
    for narrowing in (True, False):
        report = check_source(source, "amp.py", settings_with(("RTY501",)), narrowing=narrowing)
        assert report.error is None, report.error
        out.append([f.location.line for f in report.findings if f.code == "RTY501"])
    assert out[0] == out[1], out
    return out[0]


@pytest.mark.parametrize("other", [
    "\n    def use(self, session):\n        self.session = session\n",
    "\n    def use(self, session: requests.Session):\n        self.session: requests.Session = session\n",
    "\n    def swap(self, pair):\n        self.session, self.other = pair\n",
])
def test_a_session_attribute_set_elsewhere_in_the_class_is_not_known(other):
    assert _both(REASSIGNED.replace("{other}", other)) == []


def test_a_session_attribute_set_only_to_the_mounted_session_still_fires():
    assert _both(REASSIGNED.replace("{other}", "\n    def close(self):\n        self.session.close()\n")) == [15]
    # set again to another retrying session: both values retry
    again = "\n    def reset(self):\n        self.session = requests.Session()\n        self.session.mount(\"https://\", HTTPAdapter(max_retries=2))\n"
    assert _both(REASSIGNED.replace("{other}", again)) == [16]


MOUNTED_UNDER = textwrap.dedent(
    """
    import requests
    import tenacity
    from requests.adapters import HTTPAdapter

    USE_RETRIES = load_flag()
    session = requests.Session()
    {mount}


    @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
    def get(url):
        return session.get(url, timeout=3)
    """
)


@pytest.mark.parametrize("mount", [
    'if USE_RETRIES:\n    session.mount("https://", HTTPAdapter(max_retries=3))',
    'if not USE_RETRIES:\n    pass\nelse:\n    session.mount("https://", HTTPAdapter(max_retries=3))',
    'try:\n    pass\nexcept ImportError:\n    session.mount("https://", HTTPAdapter(max_retries=3))',
    'USE_RETRIES and session.mount("https://", HTTPAdapter(max_retries=3))',
])
def test_a_mount_under_a_runtime_condition_is_not_known(mount):
    assert _both(MOUNTED_UNDER.replace("{mount}", mount)) == []


@pytest.mark.parametrize("mount", [
    'session.mount("https://", HTTPAdapter(max_retries=3))',
    'for prefix in ("http://", "https://"):\n    session.mount(prefix, HTTPAdapter(max_retries=3))',
    'with open("/dev/null"):\n    session.mount("https://", HTTPAdapter(max_retries=3))',
])
def test_an_unconditional_mount_still_fires(mount):
    assert len(_both(MOUNTED_UNDER.replace("{mount}", mount))) == 1


def test_a_session_built_and_mounted_under_the_same_condition_is_known():
    source = textwrap.dedent(
        """
        import requests
        import tenacity
        from requests.adapters import HTTPAdapter


        class Client:
            def __init__(self, retries=True):
                if retries:
                    self.session = requests.Session()
                    self.session.mount("https://", HTTPAdapter(max_retries=3))

            @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(requests.RequestException))
            def get(self, url):
                return self.session.get(url, timeout=3)
        """
    )
    assert _both(source) == [13]
    # ... but not when only the mount is conditional
    only_mount = source.replace("        if retries:\n            self.session = requests.Session()\n",
                                "        self.session = requests.Session()\n        if retries:\n")
    assert only_mount != source
    assert _both(only_mount) == []


def test_a_google_retry_used_as_a_decorator_is_not_told_to_take_retry_none():
    pytest.importorskip("google.api_core")
    source = textwrap.dedent(
        """
        import tenacity
        from google.api_core import retry as gretry
        from google.api_core import exceptions


        @gretry.Retry(initial=1, maximum=10, timeout=60, predicate=gretry.if_exception_type(exceptions.ServiceUnavailable))
        def read(name):
            return fetch(name)


        @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_random_exponential(max=10))
        def outer(name):
            return read(name)
        """
    )
    findings, _ = _rty501(source)
    assert len(findings) == 1
    message = findings[0].message
    assert "retry at one layer: drop this retry, or the retry decorator of `read`" in message
    assert "retry=None" not in message
    # given as `retry=` to a call, `retry=None` is the way to turn it off
    given = textwrap.dedent(
        """
        import tenacity
        from google.api_core import retry as gretry
        from google.cloud import storage

        RETRY = gretry.Retry(initial=1, maximum=10, timeout=60)
        bucket = storage.Client().bucket("b")


        @tenacity.retry(stop=tenacity.stop_after_attempt(3), wait=tenacity.wait_random_exponential(max=10))
        def outer(name):
            return bucket.blob(name).download_as_bytes(retry=RETRY)
        """
    )
    findings, _ = _rty501(given)
    assert len(findings) == 1 and "turn the inner one off with `retry=None`" in findings[0].message


HTTPX_TENACITY = textwrap.dedent(
    """
    import httpx
    import tenacity

    client = httpx.Client(transport=httpx.HTTPTransport(retries=3), timeout=5)


    @tenacity.retry(stop=tenacity.stop_after_attempt(3), retry=tenacity.retry_if_exception_type(CAUGHT), reraise=True)
    def fetch(url):
        return client.get(url)
    """
)


@pytest.mark.parametrize("caught", ["httpx.TransportError", "httpx.ConnectError", "httpx.HTTPError"])
def test_a_retry_around_an_httpx_client_whose_transport_retries_connections(caught, monkeypatch):
    httpx = pytest.importorskip("httpx")
    import httpcore
    from httpcore._backends.sync import SyncBackend

    source = HTTPX_TENACITY.replace("CAUGHT", caught)
    findings, _ = _rty501(source)
    assert len(findings) == 1
    message = findings[0].message
    assert "3 × 4 = 12 attempts per call" in message
    assert "turn the inner one off with `retries=0` on the transport" in message
    connects = []

    def refuse(self, host, port, **kwargs):
        connects.append((host, port))
        raise httpcore.ConnectError("refused")

    monkeypatch.setattr(SyncBackend, "connect_tcp", refuse)
    monkeypatch.setattr(SyncBackend, "sleep", lambda self, seconds: None)  # httpcore's own backoff
    with pytest.raises(httpx.ConnectError):
        _run(source)["fetch"]("http://127.0.0.1:9/")
    assert len(connects) == _product(message) == 12


@pytest.mark.parametrize("source", [
    # the outer retry catches only read timeouts: the transport's give-up (ConnectError) passes through
    HTTPX_TENACITY.replace("CAUGHT", "httpx.ReadTimeout"),
    # no retries on the transport
    HTTPX_TENACITY.replace("CAUGHT", "httpx.TransportError").replace("httpx.HTTPTransport(retries=3)", "httpx.HTTPTransport()"),
    HTTPX_TENACITY.replace("CAUGHT", "httpx.TransportError").replace("retries=3", "retries=0"),
])
def test_httpx_look_alikes_are_silent(source):
    findings, _ = _rty501(source)
    assert findings == []
