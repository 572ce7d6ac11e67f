"""Is this a retry? Decided by what the loop does, not by its shape.

Each case is paraphrased from real code (the package and file are named) and is paired
with its twin: the same shape where the next pass really repeats the same operation on
the same input, which must still be reported. Every pair runs twice, as written and as
its ``async`` twin, and both must get the same verdict.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)

SYNC = {"def": "def", "aw": "", "sleep": "time.sleep", "for": "for"}
ASYNC = {"def": "async def", "aw": "await ", "sleep": "await asyncio.sleep", "for": "for"}


def _report(code: str, flavour: dict):
    source = "import asyncio, time, random, errno, os, socket\n" + textwrap.dedent(code).format(**flavour)
    report = check_source(source, "case.py", settings_with(CODES))
    assert report.error is None, report.error
    assert not any(f.code == "RTY001" for f in report.findings), "the case does not parse"
    return report


def _codes(code: str, flavour: dict):
    return sorted({f.code for f in _report(code, flavour).findings})


TUMBLR = """
        {def} call(self, url, params, **kwargs):
            kwargs["params"] = params
            while True:
                response = {aw}self.request(url, **kwargs)
                try:
                    data = response.json()
                except ValueError:
                    data = response.text
                    status = response.status_code
                else:
                    status = data["meta"]["status"]
                    if 200 <= status < 400:
                        return data["response"]
                if status == 403:
                    msg = data.get("response")
                    if msg == "You do not have permission" and self.api_key is None:
                        {{way_back}}
                        continue
                    raise AuthorizationError(msg)
                raise RequestError(status)
"""


READY_PROBE = """
        {{def}} {name}(self):
            while not self._ready_event.is_set():
                try:
                    res = {{aw}}self._client.post(self._url)
                    if res.status_code == 200:
                        self._ready_event.set()
                        return
                except Exception:
                    pass
                {{sleep}}(0.1)
"""


# (id, not a retry: no finding at all, the twin that is a retry, codes the twin must get)
PAIRS = [
    (
        "next-candidate-name",  # langchain_community utilities/github.py: a free branch name
        """
        {def} create_branch(repo, proposed, sha):
            name = proposed
            for i in range(1000):
                try:
                    return {aw}repo.create_git_ref(ref=f"refs/heads/{{name}}", sha=sha)
                except RefExists:
                    name = f"{{proposed}}_v{{i + 1}}"
        """,
        """
        {def} create_branch(repo, name, sha):
            for i in range(1000):
                try:
                    return {aw}repo.create_git_ref(ref=f"refs/heads/{{name}}", sha=sha)
                except ConnectionError:
                    pass
        """,
        ["RTY201"],
    ),
    (
        "follow-redirects",  # posthog _async_request.py: 307/308 move the request elsewhere
        """
        {def} post(client, url, body):
            while True:
                response = {aw}client.post(url, json=body)
                if response.status_code in (307, 308):
                    url = response.headers["Location"]
                    continue
                if response.status_code == 200:
                    return response
                raise RuntimeError(response.status_code)
        """,
        """
        {def} post(client, url, body):
            while True:
                response = {aw}client.post(url, json=body)
                if response.status_code in (502, 503):
                    continue
                if response.status_code == 200:
                    return response
                raise RuntimeError(response.status_code)
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "shorter-module-path",  # rq utils.py import_attribute: move one bit to the attribute path
        """
        import importlib
        {def} import_attribute(name):
            module_bits = name.split(".")
            attribute_bits = []
            while True:
                try:
                    module = importlib.import_module(".".join(module_bits))
                    break
                except ImportError:
                    attribute_bits.insert(0, module_bits.pop())
            return module, attribute_bits
        """,
        """
        import importlib
        {def} import_attribute(name):
            while True:
                try:
                    module = importlib.import_module(name)
                    break
                except ImportError:
                    {sleep}(2)
            return module
        """,
        ["RTY101", "RTY202"],
    ),
    (
        "truncate-payload",  # langchain_community embeddings/vertexai.py: halve the batch
        """
        {def} embed(client, batch):
            while True:
                try:
                    return {aw}client.embed(batch)
                except InvalidArgument:
                    if len(batch) == 1:
                        raise
                    batch = batch[: len(batch) // 2]
        """,
        """
        {def} embed(client, batch):
            while True:
                try:
                    return {aw}client.embed(batch)
                except ValueError:
                    if len(batch) == 1:
                        raise
        """,
        ["RTY201", "RTY303"],
    ),
    (
        "walk-frames",  # sentry_sdk tracing_utils.py: walk to the caller's frame
        """
        import sys
        {def} caller_module():
            frame = sys._getframe()
            while frame is not None:
                try:
                    namespace = frame.f_globals.get("__name__")
                except Exception:
                    namespace = None
                if namespace and not namespace.startswith("sentry_sdk"):
                    return namespace
                frame = frame.f_back
        """,
        """
        {def} fetch(session, url):
            for attempt in range(5):
                try:
                    return {aw}session.get(url)
                except Exception:
                    pass
        """,
        ["RTY201", "RTY301"],
    ),
    (
        "free-port",  # celery contrib/rdb.py: bind the next port
        """
        {def} listen(host, port):
            while True:
                sock = socket.socket()
                try:
                    sock.bind((host, port))
                    return sock
                except OSError:
                    port += 1
        """,
        """
        {def} listen(host, port):
            while True:
                sock = socket.socket()
                try:
                    sock.bind((host, port))
                    return sock
                except OSError:
                    {sleep}(1)
        """,
        ["RTY101", "RTY202"],
    ),
    (
        "create-the-directory",  # gallery_dl path.py: makedirs, then move again
        """
        {def} finalize(temp, real, directory):
            while True:
                try:
                    os.replace(temp, real)
                    return True
                except FileNotFoundError:
                    os.makedirs(directory, exist_ok=True)
        """,
        """
        {def} finalize(temp, real):
            while True:
                try:
                    os.replace(temp, real)
                    return True
                except PermissionError:
                    {sleep}(0.5)
        """,
        ["RTY101", "RTY202", "RTY303"],
    ),
    (
        "fill-the-registry",  # mayan_edms databases/classes.py: a miss registers, then look up again
        """
        class Fields:
            _registry = {{}}

            @classmethod
            {def} get(cls, model):
                try:
                    return cls._registry[model]
                except KeyError:
                    cls(model=model)
                    return {aw}cls.get(model=model)
        """,
        """
        class Fields:
            @classmethod
            {def} get(cls, client, model):
                try:
                    return {aw}client.fetch(model)
                except ConnectionError:
                    return {aw}cls.get(client, model)
        """,
        ["RTY103", "RTY201"],
    ),
    (
        "re-prompt",  # meltano cli/utils.py: ask again until the value parses
        """
        import click
        {def} ask_settings():
            settings = None
            while settings is None:
                value = click.prompt("settings")
                try:
                    settings = [parse(v) for v in value.split(",")]
                except ValueError as ex:
                    click.secho(str(ex), fg="red")
            return settings
        """,
        """
        {def} load_settings(client):
            settings = None
            while settings is None:
                try:
                    settings = {aw}client.fetch_settings()
                except ValueError:
                    pass
            return settings
        """,
        ["RTY101", "RTY201", "RTY303"],
    ),
    (
        "oauth-device-flow",  # OAuth device flow: authorization_pending is "not yet"
        """
        {def} poll_token(client, url, code, interval):
            while True:
                resp = {aw}client.post(url, data={{"device_code": code}})
                data = resp.json()
                if resp.status_code == 200:
                    return data
                if data.get("error") == "authorization_pending":
                    {sleep}(interval)
                    continue
                raise RuntimeError(data)
        """,
        """
        {def} poll_token(client, url, code):
            while True:
                resp = {aw}client.post(url, data={{"device_code": code}})
                if resp.status_code == 200:
                    return resp.json()
                {sleep}(5)
        """,
        ["RTY101", "RTY202", "RTY302"],
    ),
    (
        "readiness-404",  # a resource that answers 404 until it exists
        """
        {def} wait_ready(client, url):
            while True:
                resp = {aw}client.get(url)
                if resp.status_code == 200:
                    return resp
                if resp.status_code in (404, 403):
                    {sleep}(2)
                    continue
                resp.raise_for_status()
        """,
        """
        {def} fetch(client, url):  # a function named for waiting (``wait_ready``) is a readiness poll
            while True:
                resp = {aw}client.get(url)
                if resp.status_code == 200:
                    return resp
                if resp.status_code in (404, 503):
                    {sleep}(2)
                    continue
                resp.raise_for_status()
        """,
        ["RTY101", "RTY202", "RTY302"],
    ),
    (
        "classified-in-a-helper",  # a handler that hands the failure to a helper that always raises
        """
        class Client:
            def _raise_for(self, exc):
                if isinstance(exc, KeyError):
                    raise LookupError(exc) from exc
                raise RuntimeError(exc) from exc

            {def} call(self):
                while True:
                    try:
                        return {aw}self.transport.send()
                    except Exception as exc:
                        self._raise_for(exc)
        """,
        """
        class Client:
            def _note(self, exc):
                if isinstance(exc, KeyError):
                    raise LookupError(exc) from exc
                self.errors.append(exc)

            {def} call(self):
                while True:
                    try:
                        return {aw}self.transport.send()
                    except ConnectionError as exc:
                        self._note(exc)
        """,
        ["RTY101"],  # the helper is handed the failure: its delay is unknown, not absent
    ),
    (
        "eintr-in-a-helper",  # EINTR handling with the errno test in a helper
        """
        def _interrupted(exc):
            return exc.errno == errno.EINTR

        {def} read(sock):
            while True:
                try:
                    return {aw}sock.recv(4096)
                except OSError as exc:
                    if not _interrupted(exc):
                        raise
        """,
        """
        def _transient(exc):
            return exc.errno in (errno.ECONNRESET, errno.ECONNREFUSED)

        {def} read(sock):
            while True:
                try:
                    return {aw}sock.connect(("db", 5432))
                except OSError as exc:
                    if not _transient(exc):
                        raise
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "repair-from-the-error",  # langchain_community graph_qa/gremlin.py: an LLM fixes the query
        """
        {def} run(self, query):
            error = None
            for attempt in range(5):
                if error is not None:
                    query = {aw}self.fix_chain.invoke({{"error": error, "query": query}})
                try:
                    return {aw}self.graph.execute(query)
                except Exception as exc:
                    error = str(exc)
        """,
        """
        {def} run(self, query):
            for attempt in range(5):
                try:
                    return {aw}self.graph.execute(query)
                except Exception as exc:
                    self.log.warning("failed: %s", exc)
        """,
        ["RTY201", "RTY301"],
    ),
    (
        "next-resource",  # kombu utils/scheduling.py: round-robin over resources
        """
        {def} get(self, callback):
            for tried in range(len(self.resources)):
                resource = self._next()
                try:
                    return {aw}self.fun(resource, callback)
                except LookupError:
                    if tried >= len(self.resources) - 1:
                        raise
        """,
        """
        {def} get(self, callback):
            resource = self.resource
            for tried in range(4):
                try:
                    return {aw}self.fun(resource, callback)
                except ConnectionError:
                    if tried >= 3:
                        raise
        """,
        ["RTY201"],
    ),
    (
        "attempt-blocks-with-a-timeout",  # the attempt waits up to 10 s before it fails
        """
        {def} result(future):
            for attempt in range(5):
                try:
                    return future.result(timeout=10)
                except ConnectionError:
                    continue
        """,
        """
        {def} result(op):
            for attempt in range(5):
                try:
                    return {aw}op()
                except ConnectionError:
                    continue
        """,
        ["RTY201"],
    ),
    (
        "inner-loop-break",  # discord gateway.py heartbeat: the break leaves only the inner loop
        """
        {def} heartbeat(self):
            while not self.stopped:
                future = self.send_heartbeat()
                try:
                    while True:
                        try:
                            future.result(10)
                            break
                        except TimeoutError:
                            self.log.warning("blocked")
                except Exception:
                    self.stop()
        """,
        """
        {def} heartbeat(self):
            while not self.stopped:
                try:
                    {aw}self.send_heartbeat()
                    break
                except Exception:
                    self.log.warning("failed")
        """,
        ["RTY101", "RTY201", "RTY301"],
    ),
    (
        "flag-bounded-repair",  # weblate trans/models/component.py: add the host key, once
        """
        {def} count_outgoing(self, retry=True):
            try:
                return {aw}self.repository.count_outgoing()
            except RepositoryError as error:
                if retry and "Host key verification failed" in str(error):
                    self.add_ssh_host_key()
                    return {aw}self.count_outgoing(retry=False)
                return 0
        """,
        """
        {def} count_outgoing(self):
            try:
                return {aw}self.repository.count_outgoing()
            except RepositoryError as error:
                if "Host key verification failed" in str(error):
                    return {aw}self.count_outgoing()
                return 0
        """,
        ["RTY103", "RTY201"],
    ),
    (
        "partial-write",  # celery concurrency/asynpool.py: move on by what was written
        """
        {def} send_all(sock, data):
            sent = 0
            while sent < len(data):
                try:
                    sent += sock.send(data[sent:])
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EINTR):
                        raise
        """,
        """
        {def} send_all(sock, data):
            while True:
                try:
                    return sock.sendall(data)
                except ConnectionError:
                    pass
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "curl-call-again",  # kombu asynchronous/http/curl.py: libcurl asks to be called again now
        """
        {def} pump(self):
            while 1:
                try:
                    ret, _ = {aw}self._multi.socket_all()
                except pycurl.error as exc:
                    ret = exc.args[0]
                if ret != pycurl.E_CALL_MULTI_PERFORM:
                    break
        """,
        """
        {def} pump(self):
            while 1:
                try:
                    ret, _ = {aw}self._multi.socket_all()
                except pycurl.error as exc:
                    ret = exc.args[0]
                if ret != pycurl.E_COULDNT_CONNECT:
                    break
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "llm-fix-chain",  # langchain_community graph_qa/gremlin.py: each pass runs what the fix chain wrote
        """
        {def} run(self, query, error_message):
            retries = 0
            while retries < self.max_fix_retries:
                try:
                    fixed = {aw}self.gremlin_fix_chain.invoke({{"error_message": error_message, "query": query}})
                    return {aw}self.execute_query(fixed["text"])
                except Exception as e:
                    retries += 1
                    error_message = str(e)
        """,
        """
        {def} run(self, query, error_message):
            retries = 0
            while retries < self.max_fix_retries:
                try:
                    return {aw}self.execute_query(query)
                except Exception as e:
                    retries += 1
                    error_message = str(e)
        """,
        ["RTY201", "RTY301"],
    ),
    (
        "repair-that-falsifies-its-guard",  # huey bin/huey_consumer.py: put cwd on sys.path, load once more
        """
        {def} load_huey(path):
            try:
                return {aw}load_class(path)
            except Exception:
                cur_dir = os.getcwd()
                if cur_dir not in sys.path:
                    sys.path.insert(0, cur_dir)
                    return {aw}load_huey(path)
                raise
        """,
        """
        {def} load_huey(path):
            try:
                return {aw}load_class(path)
            except Exception:
                cur_dir = os.getcwd()
                if cur_dir not in sys.path:
                    sys.path.insert(0, other_dir)
                    return {aw}load_huey(path)
                raise
        """,
        ["RTY201", "RTY301"],
    ),
    (
        "failure-ends-the-while",  # websocket-client _http.py: one connect per address, then the next
        """
        {def} connect(addresses):
            for address in addresses:
                sock = socket.socket()
                err = None
                while not err:
                    try:
                        {aw}sock.connect(address)
                    except OSError as error:
                        sock.close()
                        err = error
                        continue
                    else:
                        break
                else:
                    continue
                break
            return sock
        """,
        """
        {def} connect(address):
            sock = socket.socket()
            err = None
            while not err:
                try:
                    {aw}sock.connect(address)
                except OSError as error:
                    last = error
                    continue
                else:
                    break
            return sock
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "recursion-repairs-its-kwargs",  # awswrangler dynamodb/_read.py: escape a reserved keyword
        """
        {def} wrapper(*args, **kwargs):
            try:
                return {aw}query(*args, **kwargs)
            except ClientError as e:
                kwarg = e.response.get("param")
                if kwarg:
                    kwargs[kwarg] = kwargs[kwarg].replace(word(e), "#" + word(e))
                    return {aw}wrapper(*args, **kwargs)
                raise
        """,
        """
        {def} wrapper(*args, **kwargs):
            try:
                return {aw}query(*args, **kwargs)
            except ClientError as e:
                kwarg = e.response.get("param")
                if kwarg:
                    log.warning("retrying %s", kwarg)
                    return {aw}wrapper(*args, **kwargs)
                raise
        """,
        ["RTY201"],
    ),
    (
        "recursion-finishes-unfinished-work",  # fsspec dbfs.py rm(): PARTIAL_DELETE means "call again"
        """
        {def} rm(self, path, recursive=False):
            try:
                {aw}self._send_to_api(method="post", endpoint="delete", json={{"path": path}})
            except DatabricksException as e:
                if e.error_code == "PARTIAL_DELETE":
                    {aw}self.rm(path=path, recursive=recursive)
                else:
                    raise
        """,
        """
        {def} rm(self, path, recursive=False):
            try:
                {aw}self._send_to_api(method="post", endpoint="delete", json={{"path": path}})
            except DatabricksException as e:
                if e.error_code == "TEMPORARILY_UNAVAILABLE":
                    {aw}self.rm(path=path, recursive=recursive)
                else:
                    raise
        """,
        ["RTY103", "RTY201"],
    ),
    (
        "recursion-moves-to-a-mirror",  # the failure path reassigns the input it passes on
        """
        {def} fetch(url, **kwargs):
            try:
                return {aw}download(url, **kwargs)
            except ConnectionError:
                url = next_mirror(url)
                return {aw}fetch(url, **kwargs)
        """,
        """
        {def} fetch(url, **kwargs):
            try:
                return {aw}download(url, **kwargs)
            except ConnectionError:
                kwargs["timeout"] = kwargs.get("timeout", 5) * 2
                return {aw}fetch(url, **kwargs)
        """,
        ["RTY103", "RTY201"],
    ),
    (
        "protocol-version-the-server-asks-for",  # pyignite connection.py: handshake negotiation
        """
        {def} connect(self):
            while True:
                try:
                    return {aw}self._connect_version()
                except HandshakeError as e:
                    if e.expected_version in PROTOCOLS:
                        self.client.protocol_context.version = e.expected_version
                        continue
                    raise
        """,
        """
        {def} connect(self):
            while True:
                try:
                    return {aw}self._connect_version()
                except HandshakeError as e:
                    if e.expected_version in PROTOCOLS:
                        self.client.last_error = e.message
                        continue
                    raise
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "local-buffer-full",  # streamz sinks.py: confluent-kafka's local queue is full
        """
        {def} produce(self, value):
            while True:
                try:
                    return {aw}self.producer.produce(self.topic, value)
                except BufferError:
                    {sleep}(self.polltime)
        """,
        """
        {def} produce(self, value):
            while True:
                try:
                    return {aw}self.producer.produce(self.topic, value)
                except KafkaException:
                    {sleep}(0.2)
        """,
        ["RTY101", "RTY202"],
    ),
    (
        "not-ready-yet-exception",  # assemblyai transcript.py: HTTP 202 raised as "incomplete"
        """
        {def} redacted_audio_url(self):
            while True:
                try:
                    return {aw}self.api.get_redacted_audio(self.id)
                except RedactedAudioIncompleteError:
                    {sleep}(3.0)
        """,
        """
        {def} redacted_audio_url(self):
            while True:
                try:
                    return {aw}self.api.get_redacted_audio(self.id)
                except ConnectionError:
                    {sleep}(3.0)
        """,
        ["RTY101", "RTY202"],
    ),
    (
        "each-pass-steps-from-the-last",  # a cursor that moves on is a walk; a fresh copy each pass is not
        """
        {def} send(self, first):
            options = first
            for attempt in range(5):
                options = self._next_page(options)
                try:
                    return {aw}self._client.send(options)
                except Exception:
                    continue
        """,
        """
        {def} send(self, first):
            for attempt in range(5):
                options = dict(first)
                options = self._prepare(options)
                try:
                    return {aw}self._client.send(options)
                except Exception:
                    continue
        """,
        ["RTY201", "RTY301"],
    ),
    (
        "renews-the-session-then-resends",  # simple_salesforce api.py: INVALID_SESSION_ID on 401
        """
        {def} call(self, url, retries=0):
            result = {aw}self.session.request("GET", url)
            if self._login is not None and result.status_code == 401:
                retries += 1
                {aw}self._refresh_session()
                if retries > self.max_retries:
                    raise SalesforceExpiredSession(result)
                return {aw}self.call(url, retries=retries)
            return result
        """,
        """
        {def} call(self, url, retries=0):
            result = {aw}self.session.request("GET", url)
            if self._login is not None and result.status_code == 401:
                retries += 1
                log.warning("unauthorized, again")
                if retries > self.max_retries:
                    raise SalesforceExpiredSession(result)
                return {aw}self.call(url, retries=retries)
            return result
        """,
        ["RTY201", "RTY302"],
    ),
    (
        "refreshes-the-token-in-the-handler",  # a loop that renews credentials before sending again
        """
        {def} get(self, url):
            for attempt in range(3):
                try:
                    return {aw}self.session.get(url)
                except Unauthorized:
                    {aw}self._refresh_token()
        """,
        """
        {def} get(self, url):
            for attempt in range(3):
                try:
                    return {aw}self.session.get(url)
                except Unauthorized:
                    log.warning("unauthorized, again")
        """,
        ["RTY201"],
    ),
    (
        "heartbeat-until-the-server-answers",  # chromadb test_cli.py: wait for a server just started
        """
        {def} wait_for(host, port):
            for attempt in range(30):
                try:
                    client = HttpClient(host=host, port=port)
                    if {aw}client.heartbeat() > 0:
                        return True
                except Exception:
                    print("Heartbeat failed, trying again...")
                {sleep}(1)
            return False
        """,
        """
        {def} fetch(host, port):
            for attempt in range(30):
                try:
                    client = HttpClient(host=host, port=port)
                    if {aw}client.query("select 1") > 0:
                        return True
                except Exception:
                    print("Query failed, trying again...")
                {sleep}(1)
            return False
        """,
        ["RTY202", "RTY301"],
    ),
    (
        "a-function-that-waits-for-its-server",  # inngest dev_server.py: _wait_for_server, at a fixed pace
        READY_PROBE.format(name="_wait_for_server"),
        READY_PROBE.format(name="_send_event"),
        ["RTY101", "RTY301"],
    ),
    (
        "walks-up-through-a-local",  # anthropic memory tool: resolve the parent when a path is missing
        """
        {def} check(target):
            current = target
            while True:
                try:
                    return {aw}current.resolve()
                except OSError:
                    parent = current.parent
                    if parent == current:
                        return None
                    current = parent
        """,
        """
        {def} check(target):
            current = target
            while True:
                try:
                    return {aw}current.resolve()
                except OSError:
                    parent = current.parent
                    if parent == current:
                        return None
                    log.info("again: %s", parent)
        """,
        ["RTY201"],
    ),
    (
        "update-gone-so-create-once",  # anthropic lib/tools/_memories.py: 404 on update, then create
        """
        {def} upload(self, rel, *, existing):
            try:
                if existing is None:
                    return {aw}self.client.create(path=rel)
                return {aw}self.client.update(existing.id, path=rel)
            except APIStatusError as e:
                if existing is not None and e.status_code == 404:
                    return {aw}self.upload(rel, existing=None)
                raise
        """,
        """
        {def} upload(self, rel, *, existing):
            try:
                if existing is None:
                    return {aw}self.client.create(path=rel)
                return {aw}self.client.update(existing.id, path=rel)
            except APIStatusError as e:
                if existing is not None and e.status_code == 503:
                    return {aw}self.upload(rel, existing=existing)
                raise
        """,
        ["RTY103", "RTY201"],
    ),
    (
        "seek-to-each-header",  # pip _vendor/packaging/_elffile.py: each pass seeks to the next header
        """
        import struct
        {def} interpreter(self):
            for index in range(self._e_phnum):
                self._f.seek(self._e_phoff + self._e_phentsize * index)
                try:
                    data = {aw}self._read(self._p_fmt)
                except struct.error:
                    continue
                return data
        """,
        """
        import struct
        {def} interpreter(self):
            for index in range(self._e_phnum):
                self.log.debug("reading header, try %d", index)
                try:
                    data = {aw}self._read(self._p_fmt)
                except struct.error:
                    continue
                return data
        """,
        ["RTY201"],
    ),
    (
        "re-prompt-through-own-helper",  # a client's sign-in asks for the code through its own helper
        """
        class Client:
            def _ask_code(self):
                return input("Enter code: ")

            {def} sign_in(self):
                while True:
                    code = self._ask_code()
                    try:
                        return {aw}self.api.sign_in(code)
                    except BadCode:
                        print("wrong code")
        """,
        """
        class Client:
            def _ask_code(self):
                return self.store.get("code")

            {def} sign_in(self):
                while True:
                    code = self._ask_code()
                    try:
                        return {aw}self.api.sign_in(code)
                    except BadCode:
                        print("wrong code")
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "re-prompt-in-a-thread",  # input handed to an executor so the event loop keeps running
        """
        {def} check_password(self, loop):
            while True:
                try:
                    password = {aw}loop.run_in_executor(None, input, "Password: ")
                    return {aw}self.api.check_password(password)
                except BadPassword:
                    print("wrong password")
        """,
        """
        {def} check_password(self, loop):
            while True:
                try:
                    password = {aw}loop.run_in_executor(None, self.vault.read, "password")
                    return {aw}self.api.check_password(password)
                except BadPassword:
                    print("wrong password")
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "switch-credentials-on-403",  # gallery_dl extractor/tumblr.py: retry once with the api key
        TUMBLR.replace("{{way_back}}", 'self.api_key = params["api_key"] = self.consumer_key'),
        TUMBLR.replace("{{way_back}}", 'self.log.debug("again")'),
        ["RTY201"],
    ),
    (
        "recursion-excludes-the-failed-target",  # hazelcast pn_counter: choose another replica, then call again
        """
        {def} invoke(self, future, excluded_addresses, last_error, request):
            target = {aw}self._pick_target(excluded_addresses)
            if not target:
                future.set_exception(last_error)
                return
            try:
                future.set_result({aw}self._invoke_on(target, request))
            except ConnectionError as ex:
                excluded_addresses.append(target)
                {aw}self.invoke(future, excluded_addresses, ex, request)
        """,
        """
        {def} invoke(self, future, excluded_addresses, last_error, request):
            target = {aw}self._pick_target(excluded_addresses)
            if not target:
                future.set_exception(last_error)
                return
            try:
                future.set_result({aw}self._invoke_on(target, request))
            except ConnectionError as ex:
                self.log.warning("again")
                {aw}self.invoke(future, excluded_addresses, ex, request)
        """,
        ["RTY201"],
    ),
    (
        "recursion-tries-the-next-name",  # a stepped argument names the candidate: a search for a free name
        """
        {def} create_unique(base, n=0):
            try:
                return {aw}store.create(f"{{base}}-{{n}}", exclusive=True)
            except AlreadyExists:
                return {aw}create_unique(base, n + 1)
        """,
        """
        {def} create_unique(base, n=0):
            try:
                return {aw}store.create(base, exclusive=False)
            except ServiceUnavailable:
                if n > 3:
                    raise
                return {aw}create_unique(base, n + 1)
        """,
        ["RTY201"],
    ),
    (
        "loop-walks-up-through-a-local",  # comet's find_git_repo: parent = dirname(path); path = parent
        """
        import os
        {def} find_repo(path):
            while path:
                parent = os.path.dirname(path)
                if parent == path:
                    break
                path = parent
                try:
                    return {aw}open_repo(path)
                except NotARepository:
                    pass
        """,
        """
        import os
        {def} find_repo(path):
            while path:
                parent = os.path.dirname(path)
                if parent == path:
                    break
                try:
                    return {aw}open_repo(path)
                except RepositoryBusy:
                    pass
        """,
        ["RTY201"],
    ),
    (
        "loop-cuts-a-string",  # s3cmd: path = path[:path.rindex('/', 0, -1) + 1] until no '/' is left
        """
        {def} parents(path, seen):
            while path and path not in seen:
                seen.add(path)
                try:
                    path = path[:path.rindex('/', 0, -1) + 1]
                except ValueError:
                    continue
        """,
        """
        {def} parents(path, seen):
            while path and path not in seen:
                try:
                    {aw}client.upload(path)
                    return
                except ConnectionError:
                    continue
        """,
        ["RTY201"],
    ),
    (
        "loop-waits-for-a-lock-directory",  # langsmith's _dir_lock: mkdir fails while another process holds it
        """
        {def} acquire(lock_dir):
            while True:
                try:
                    os.mkdir(lock_dir)
                    return
                except FileExistsError:
                    {sleep}(0.01)
        """,
        """
        {def} acquire(lock_dir):
            while True:
                try:
                    os.mkdir(lock_dir)
                    return
                except OSError:
                    {sleep}(0.01)
        """,
        ["RTY101"],
    ),
    (
        "loop-probes-a-port",  # junos-eznc's Device.probe(): connect and close until the port answers
        """
        {def} probe(host, port, timeout=5):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(1)
                try:
                    s.connect((host, port))
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                    return True
                except OSError:
                    {sleep}(1)
        """,
        """
        {def} probe(host, port, timeout=5):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(1)
                try:
                    s.connect((host, port))
                    s.sendall(b"HELLO")
                    s.close()
                    return True
                except OSError:
                    {sleep}(1)
        """,
        ["RTY202"],
    ),
    (
        "loop-goes-round-only-on-not-finished-yet",  # instagrapi's album configure: HTTP 202 "Transcode not finished yet"
        """
        {def} configure(self, children):
            for attempt in range(50):
                try:
                    configured = {aw}self.album_configure(children)
                except Exception as e:
                    if "Transcode not finished yet" in str(e):
                        {sleep}(10)
                        continue
                    raise e
                if configured:
                    return configured
        """,
        """
        {def} configure(self, children):
            for attempt in range(50):
                try:
                    configured = {aw}self.album_configure(children)
                except Exception as e:
                    if "Service unavailable" in str(e):
                        {sleep}(10)
                        continue
                    raise e
                if configured:
                    return configured
        """,
        ["RTY202"],
    ),
    (
        "loop-fails-over-to-the-next-address",  # tarantool's MeshConnection._opt_reconnect
        """
        {def} reconnect(self):
            last_error = None
            for _ in range(len(self.strategy.addrs)):
                try:
                    {aw}self.connect()
                    last_error = None
                    break
                except NetworkError as exc:
                    last_error = exc
                    addr = self.strategy.getnext()
                    update_connection(self, addr)
            if last_error:
                raise last_error
        """,
        """
        {def} reconnect(self):
            last_error = None
            for _ in range(len(self.strategy.addrs)):
                try:
                    {aw}self.connect()
                    last_error = None
                    break
                except NetworkError as exc:
                    last_error = exc
                    addr = self.strategy.current()
                    update_connection(self, addr)
            if last_error:
                raise last_error
        """,
        ["RTY201"],
    ),
    (
        "loop-takes-attempts-from-a-policy",  # aiodynamo: ``async for _ in self.throttle_config.attempts()``
        """
        {def} send(self, request):
            for _ in self.retry_config.attempts():
                try:
                    return {aw}self.http.post(request)
                except Throttled:
                    continue
        """,
        """
        {def} send(self, request):
            for _ in self.retry_config.items():
                try:
                    return {aw}self.http.post(request)
                except Throttled:
                    continue
        """,
        ["RTY201"],
    ),
    (
        "loop-waits-for-the-resource-to-be-listed",  # kr8s's APIObject.get(name, timeout=2)
        """
        {def} get(api, name, timeout=2):
            start = time.time()
            while start + timeout > time.time():
                try:
                    return {aw}api.get_one(name)
                except ServerError as e:
                    if e.response and e.response.status_code == 404:
                        continue
                    raise e
        """,
        """
        {def} get(api, name, timeout=2):
            start = time.time()
            while start + timeout > time.time():
                try:
                    return {aw}api.get_one(name)
                except ServerError as e:
                    if e.response and e.response.status_code == 503:
                        continue
                    raise e
        """,
        ["RTY201"],
    ),
    (
        "loop-polls-the-device-flow-with-an-error-chain",  # logfire's gateway login (RFC 8628)
        """
        {def} poll(client, device_code, interval, deadline):
            while time.time() < deadline:
                {sleep}(interval)
                response = {aw}client.post_token(device_code)
                if response.status_code == 200:
                    return response.json()
                error = response.json().get("error")
                if error == "slow_down":
                    interval += 5
                elif error == "authorization_pending":
                    continue
                else:
                    raise LoginError(error)
        """,
        """
        {def} poll(client, device_code, interval, deadline):
            while time.time() < deadline:
                {sleep}(interval)
                response = {aw}client.post_token(device_code)
                if response.status_code == 200:
                    return response.json()
                error = response.json().get("error")
                if error == "slow_down":
                    interval += 5
                elif error == "invalid_grant":
                    continue
                else:
                    raise LoginError(error)
        """,
        ["RTY302"],
    ),
    (
        "loop-downgrades-the-protocol",  # cassandra-driver's ControlConnection._try_connect
        """
        {def} connect(self, host):
            while True:
                try:
                    connection = {aw}self.factory(host.endpoint)
                    break
                except ProtocolVersionUnsupported as e:
                    self.cluster.protocol_downgrade(host.endpoint, e.startup_version)
                except ProtocolError as e:
                    if e.is_beta_protocol_error:
                        self.cluster.protocol_downgrade(host.endpoint, self.cluster.protocol_version)
                    else:
                        raise
            return connection
        """,
        """
        {def} connect(self, host):
            while True:
                try:
                    connection = {aw}self.factory(host.endpoint)
                    break
                except ConnectionRefused as e:
                    self.cluster.note_failure(host.endpoint)
                except ProtocolError as e:
                    if e.is_beta_protocol_error:
                        self.cluster.note_failure(host.endpoint)
                    else:
                        raise
            return connection
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "loop-pages-with-a-fallback-fetch",  # opik's _paginate_experiments
        """
        {def} pages(client):
            page = 1
            while True:
                try:
                    resp = {aw}client.find_experiments(page=page)
                    items = resp.content
                    total = resp.total
                except ValidationError:
                    items, total = {aw}fetch_page_raw(client, page)
                if not items:
                    break
                handle(items)
                if page * 100 >= total:
                    break
                page += 1
        """,
        """
        {def} pages(client):
            page = 1
            while True:
                try:
                    resp = {aw}client.find_experiments(page=page)
                    items = resp.content
                    total = resp.total
                except ConnectionError:
                    continue
                if not items:
                    break
                handle(items)
                if page * 100 >= total:
                    break
                page += 1
        """,
        ["RTY201"],
    ),
    (
        "loop-skips-the-failed-page",  # opik's _scan_and_group_spans: 'skipping and continuing'
        """
        {def} scan(client):
            page = 1
            failures = 0
            while True:
                try:
                    result = {aw}fetch_page(client, page)
                    failures = 0
                except ConnectError:
                    failures += 1
                    if failures >= 5:
                        break
                    page += 1
                    {sleep}(1)
                    continue
                items = result.content or []
                if not items or len(items) < 100:
                    break
                page += 1
        """,
        """
        {def} scan(client):
            page = 1
            failures = 0
            while True:
                try:
                    result = {aw}fetch_page(client, page)
                    failures = 0
                except ConnectError:
                    failures += 1
                    if failures >= 5:
                        break
                    {sleep}(1)
                    continue
                items = result.content or []
                if not items or len(items) < 100:
                    break
                page += 1
        """,
        ["RTY202"],
    ),
    (
        "loop-polls-numbered-progress-states",  # python-kasa's firmware update
        """
        {def} update(self):
            while True:
                {sleep}(0.5)
                try:
                    state = {aw}self.get_update_state()
                except Exception:
                    continue
                if state.status == 0:
                    break
                elif state.status == 2:
                    log.info("downloading %s", state.progress)
                elif state.status == 3:
                    {sleep}(state.upgrade_time)
                elif state.status < 0:
                    break
            return state
        """,
        """
        {def} update(self):
            while True:
                {sleep}(0.5)
                try:
                    state = {aw}self.get_update_state()
                except Exception:
                    continue
                return state
        """,
        ["RTY101", "RTY301"],
    ),
    (
        "loop-drops-the-failed-server",  # crate's Client._request: _drop_server, then the next one
        """
        {def} request(self, method, path):
            while True:
                next_server = self._get_server()
                try:
                    return {aw}self.server_pool[next_server].request(method, path)
                except HTTPError as ex:
                    with self._lock:
                        self._drop_server(next_server, str(ex))
        """,
        """
        {def} request(self, method, path):
            while True:
                next_server = self._get_server()
                try:
                    return {aw}self.server_pool[next_server].request(method, path)
                except HTTPError as ex:
                    with self._lock:
                        self._note_error(next_server, str(ex))
        """,
        ["RTY101", "RTY201"],
    ),
    (
        "loop-hunts-a-free-random-name",  # s3cmd's mktmpsomething: a new random name on each pass
        """
        {def} make_temp(prefix):
            tries = 5
            while tries > 0:
                name = prefix + rndstr(8)
                try:
                    {aw}storage.create(name)
                    break
                except AlreadyExists:
                    pass
                tries -= 1
            return name
        """,
        """
        {def} make_temp(prefix):
            tries = 5
            while tries > 0:
                name = prefix + suffix(8)
                try:
                    {aw}storage.create(name)
                    break
                except AlreadyExists:
                    pass
                tries -= 1
            return name
        """,
        ["RTY201"],
    ),
]


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("case_id, not_retry, twin, twin_codes", PAIRS, ids=[p[0] for p in PAIRS])
def test_not_a_retry_is_silent_and_its_twin_is_reported(case_id, not_retry, twin, twin_codes, flavour):
    assert _codes(not_retry, flavour) == [], f"{case_id}: not a retry, but reported"
    found = _codes(twin, flavour)
    assert set(twin_codes) <= set(found), f"{case_id} twin: expected {twin_codes}, got {found}"


@pytest.mark.parametrize("case_id, not_retry, twin, twin_codes", PAIRS, ids=[p[0] for p in PAIRS])
def test_sync_and_async_twins_get_the_same_verdict(case_id, not_retry, twin, twin_codes):
    for code in (not_retry, twin):
        assert _codes(code, SYNC) == _codes(code, ASYNC), case_id


# ------------------------------------------------------------------ bounds and delays that exist


def _findings(code: str, flavour: dict = SYNC):
    return [(f.code, f.message) for f in _report(code, flavour).findings]


def test_a_cancel_scope_deadline_is_a_bound():
    code = """
    import anyio
    async def call(op, deadline):
        with anyio.CancelScope(deadline=deadline):
            while True:
                try:
                    return await op()
                except ConnectionError:
                    await anyio.sleep(1)
    """
    codes = [c for c, _ in _findings(code)]
    assert "RTY101" not in codes and "RTY202" in codes
    assert "RTY101" in [c for c, _ in _findings(code.replace("anyio.CancelScope(deadline=deadline)", "anyio.CancelScope()"))]


def test_an_event_wait_in_the_loop_test_is_a_delay_not_a_limit():
    code = """
    def connect(self):
        while not self._stop.wait(5):
            try:
                return self.open_connection()
            except ConnectionError:
                pass
    """
    found = _findings(code)
    codes = [c for c, _ in found]
    assert "RTY201" not in codes and "RTY202" in codes
    assert not any("a limited number of attempts" in message for _, message in found)


def test_a_backoff_iterator_is_a_delay():
    # google_auth oauth2/_client.py: ``for _ in ExponentialBackoff()`` sleeps on each step.
    code = """
    def token(request, backoff):
        retries = backoff.ExponentialBackoff()
        for _ in retries:
            try:
                return request("POST")
            except ConnectionError:
                pass
    """
    assert "RTY201" not in [c for c, _ in _findings(code)]
    twin = code.replace("backoff.ExponentialBackoff()", "range(5)")
    assert "RTY201" in [c for c, _ in _findings(twin)]


def test_a_wait_helper_with_keywords_is_a_delay():
    # gallery_dl extractor/bluesky.py: ``self.extractor.wait(until=reset)`` on a 429.
    code = """
    def call(self, url):
        while True:
            response = self.extractor.request(url)
            if response.status_code < 400:
                return response.json()
            if response.status_code == 429:
                self.extractor.wait(until=response.headers.get("RateLimit-Reset"))
                continue
            raise RuntimeError(response.status_code)
    """
    found = _findings(code)
    assert "RTY201" not in [c for c, _ in found]
    assert not any("with no delay" in message for _, message in found)


def test_getter_named_like_a_wait_is_no_delay():
    code = """
    def get(self):
        for attempt in range(5):
            try:
                return self.op(limit=self._get_max_wait())
            except ConnectionError:
                continue
    """
    assert "RTY201" in [c for c, _ in _findings(code)]


def test_a_handler_that_records_and_defers_to_status_checks_retries_no_value_error():
    # google_auth oauth2/_client.py: a non-JSON body is kept; the status decides.
    code = """
    import time
    def token(request):
        for attempt in range(3):
            response = request("POST")
            try:
                data = response.json()
            except ValueError:
                data = response.text
            if response.status == 200:
                return data
            if not can_retry(response.status, data):
                raise RuntimeError(data)
            time.sleep(1)
    """
    assert "RTY303" not in [c for c, _ in _findings(code)]


# ------------------------------------------------------------------ messages name the real operation


def test_the_operation_is_never_a_clock_or_local_data_call():
    code = """
    import time
    def get(self, items):
        while True:
            started = time.monotonic()
            try:
                position = items.index("x")
                return self.session.get("https://example.invalid")
            except ConnectionError:
                time.sleep(1)
    """
    report = check_source(textwrap.dedent(code), "case.py", settings_with(CODES), want_policies=True)
    assert [p.operation for p in report.policies] == ["self.session.get"]
    # A clock imported under a package's own name (distributed worker.py: ``from .metrics import time``).
    wrapped = code.replace("import time\n", "import time\n    from .metrics import monotonic\n").replace(
        "started = time.monotonic()", "pass").replace("position = items.index", "_start = monotonic()\n                position = items.index")
    report = check_source(textwrap.dedent(wrapped), "case.py", settings_with(CODES), want_policies=True)
    assert "_start = monotonic()" in textwrap.dedent(wrapped)
    assert [p.operation for p in report.policies] == ["self.session.get"]


def test_rty302_names_only_the_statuses_retried():
    code = """
    import time
    def get(client, url):
        for attempt in range(5):
            resp = client.get(url)
            if resp.status_code == 200:
                return resp
            if resp.status_code in (404, 500, 503):
                time.sleep(random.uniform(0, 2 ** attempt))
                continue
            resp.raise_for_status()
    """
    messages = [m for c, m in _findings(code) if c == "RTY302"]
    assert messages and "404" in messages[0]
    assert "400" not in messages[0] and "401" not in messages[0]


def test_a_flag_named_for_retryability_after_the_handler_is_a_permanent_error_exit():
    # google_auth oauth2/_client.py: the sync twin of an async loop that was already silent.
    code = """
    import json
    def lookup(request, can_retry, backoff):
        for attempt in range(6):
            response = request("GET")
            try:
                data = json.loads(response.data)
            except ValueError:
                data = response.data
            if response.status == 200:
                return True, data
            retryable_error = response.status in (500, 503)
            if not can_retry or not retryable_error:
                return False, data
    """
    assert "RTY303" not in [c for c, _ in _findings(code)]


def test_a_flag_set_both_ways_in_the_loop_is_no_one_shot():
    # ldap3 strategy/restartable.py: ``failure = False`` each pass, ``True`` on a failed reopen;
    # ``if not failure:`` says how this pass went, it does not spend a single retry.
    code = """
    def send(self, request):
        counter = self.restartable_tries
        while counter > 0:
            time.sleep(self.restartable_sleep_time)
            failure = False
            try:
                self.connection.open()
            except Exception:
                failure = True
            if not failure:
                try:
                    return self.connection.send(request)
                except Exception:
                    pass
            counter -= 1
    """
    assert "RTY301" in _codes(code, SYNC)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_flag_set_after_the_try_on_success_only_ends_the_retry(flavour):
    # ``ok = True`` after a try whose handler continues: set on success only, so the loop retries.
    found = _codes(
        """
        {def} connect(address):
            ok = False
            while not ok:
                try:
                    sock = {aw}socket.create_connection(address)
                except OSError:
                    continue
                ok = True
            return sock
        """,
        flavour,
    )
    assert found == ["RTY101", "RTY201"]
    # A handler that falls through to the same flag leaves after one failure: no retry.
    assert _codes(
        """
        {def} connect(address):
            ok = False
            while not ok:
                try:
                    sock = {aw}socket.create_connection(address)
                except OSError:
                    sock = None
                ok = True
            return sock
        """,
        flavour,
    ) == []


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_attribute_of_an_object_the_loop_steps_is_no_fixed_delay(flavour):
    # psycopg_pool _getconn_with_check_loop: AttemptWithBackoff.update_delay doubles ``delay``.
    stepped = """
        {def} getconn(pool, deadline):
            attempt = None
            while True:
                conn = pool.take()
                try:
                    {aw}pool.check(conn)
                except ConnectionError:
                    pool.put(conn)
                else:
                    return conn
                if not attempt:
                    attempt = Attempt(timeout=deadline)
                else:
                    attempt.{method}(time.monotonic())
                if attempt.expired():
                    raise TimeoutError()
                {sleep}(attempt.delay)
        """
    assert "RTY202" not in _codes(stepped.replace("{method}", "update_delay"), flavour)
    # The same attribute read from an object the loop only asks questions of stays a fixed delay.
    assert "RTY202" in _codes(stepped.replace("{method}", "record_metrics").replace(
        "attempt.record_metrics", "stats.record_metrics"), flavour)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_interval_clamped_at_the_deadline_is_a_fixed_delay(flavour):
    # kafka-python admin: sleep(min(backoff_secs, max(0.0, timer.timeout_secs or 0.0))).
    retry = """
        {def} fetch(client, timeout=30):
            deadline = time.monotonic() + timeout
            while True:
                try:
                    return {aw}client.fetch()
                except ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                {sleep}(min(5, deadline - time.monotonic()))
        """
    assert "RTY202" in _codes(retry, flavour)
    # A growing delay keeps its cap: min() with a cap named like a timeout is still a cap.
    capped = """
        {def} fetch(client, max_timeout=10):
            for attempt in range(5):
                try:
                    return {aw}client.fetch()
                except ConnectionError:
                    pass
                {sleep}(min(2 ** attempt, max_timeout))
        """
    found = _codes(capped, flavour)
    assert "RTY203" in found and "RTY202" not in found
    # qiniu sandbox wait_for_ready: a readiness wait at min(interval, remaining) is a poll.
    poll = """
        {def} wait_for_ready(client, timeout=60, interval=1):
            started = time.monotonic()
            while True:
                elapsed = time.monotonic() - started
                remaining = max(timeout - elapsed, 0)
                try:
                    response = {aw}client.get("/health")
                    if response.status_code == 200:
                        return client
                except ConnectionError:
                    pass
                if elapsed >= timeout:
                    raise TimeoutError()
                sleep_time = interval
                if remaining:
                    sleep_time = min(interval, remaining)
                {sleep}(sleep_time)
        """
    assert _codes(poll, flavour) == []


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_binding_until_a_free_port_is_found_is_a_search(flavour):
    # distributed comm/tcp.py TCPListener.start: port 0 on EADDRINUSE lets the OS pick another.
    search = """
        {def} start(listener):
            for _ in range(5):
                try:
                    sockets = {aw}bind_sockets(listener.port, address=listener.ip)
                except OSError as e:
                    if listener.port != 0 or e.errno != errno.EADDRINUSE:
                        raise
                    exc = e
                else:
                    return sockets
            raise exc
        """
    assert _codes(search, flavour) == []
    # The same loop retrying a refused connection is a retry.
    assert "RTY201" in _codes(search.replace("EADDRINUSE", "ECONNREFUSED"), flavour)
    # gunicorn sock.py: a handler that only logs a taken port retries every OSError.
    logs_only = """
        {def} bind(addr, log):
            for i in range(5):
                try:
                    return {aw}create_socket(addr)
                except OSError as e:
                    if e.args[0] == errno.EADDRINUSE:
                        log.error("Connection in use: %s", addr)
                    {sleep}(1)
        """
    assert "RTY202" in _codes(logs_only, flavour)


def test_a_timeout_from_waiting_on_a_process_is_no_failure():
    # meltano runner/singer.py stop(): wait(**wait_args), kill on TimeoutExpired, wait again.
    stop = """
        import subprocess
        def stop(process, **wait_args):
            while True:
                try:
                    return process.wait(**wait_args)
                except subprocess.TimeoutExpired:
                    process.kill()
        """
    assert _codes(stop, SYNC) == []
    # The same loop going round on a failure of the wait is a retry.
    assert "RTY101" in _codes(stop.replace("subprocess.TimeoutExpired", "OSError"), SYNC)


def test_a_loop_that_goes_round_only_for_new_work_does_not_retry_a_failure():
    # posthog client.py deferred lifecycle: the flag is cleared on every pass; only a new request
    # (another thread) sets it again, so a failure is logged and the loop ends.
    runner = """
        def run(self):
            while True:
                with self._lock:
                    self._dirty = False
                try:
                    self._run_lifecycle()
                except BaseException:
                    log.exception("failed")
                with self._lock:
                    if self._dirty:
                        continue
                    return
        """
    assert _codes(runner, SYNC) == []
    # The twin that sets the flag itself on failure goes round because of the failure.
    retry = runner.replace('log.exception("failed")', 'log.exception("failed")\n                self._dirty = True')
    assert "RTY101" in _codes(retry, SYNC)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_status_test_after_a_helper_that_raises_for_failures_sees_successes_only(flavour):
    # airflow datafusion.py delete_pipeline: _check_response_status_and_data raises for every
    # non-200 answer, so the later ``if response.status == 200: break`` never retries a status.
    checked = """
        def _check(response, message):
            if response.status == 409:
                raise ConflictError(message)
            if response.status != 200:
                raise RequestError(message)

        {def} delete(client, url):
            for wait in range(1, 6):
                try:
                    response = {aw}client.request(url, method="DELETE")
                    _check(response, "failed")
                except ConflictError:
                    {sleep}(random.uniform(0, 2 ** wait))
                else:
                    if response.status == 200:
                        break
        """
    assert _codes(checked, flavour) == []
    # A helper that only logs leaves failed statuses to the loop: they go round at once.
    logged = checked.replace("raise RequestError(message)", "log.warning(message)")
    assert "RTY201" in _codes(logged, flavour)
    # ``response.raise_for_status()`` before the test does the same as the helper.
    assert _codes(checked.replace('_check(response, "failed")', "response.raise_for_status()"), flavour) == []


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_sleep_for_some_failures_leaves_the_others_going_round_at_once(flavour):
    # airflow HttpSensorTrigger.run: a 404 waits poke_interval (a poll), any other
    # AirflowException goes round at once, forever.
    hot = """
        class HttpSensorTrigger:
            {def} run(self, hook):
                while True:
                    try:
                        {aw}hook.run(endpoint=self.endpoint)
                        return True
                    except AirflowException as exc:
                        if str(exc).startswith("404"):
                            {sleep}(self.poke_interval)
        """
    found = _codes(hot, flavour)
    assert "RTY201" in found and "RTY101" in found
    # The poll that raises every other failure is a readiness wait: silent.
    poll = hot.replace("({sleep}(self.poke_interval)", "").replace(
        "{sleep}(self.poke_interval)", "{sleep}(self.poke_interval)\n                        else:\n                            raise")
    assert _codes(poll, flavour) == []
    # A sleep under a test of the attempt counter is not a second kind of failure.
    counted = """
        {def} fetch(client):
            for attempt in range(5):
                try:
                    return {aw}client.get()
                except ConnectionError as exc:
                    if attempt < 4:
                        {sleep}(2 ** attempt)
        """
    assert "RTY201" not in _codes(counted, flavour)


@pytest.mark.parametrize(
    "attempt, expected",
    [
        # airflow HttpSensorTrigger: the session is set up for the call in the with body
        ("async with aiohttp.ClientSession() as session:\n            return await hook.run(session=session)", "hook.run"),
        # distributed preloading.py: the body reads what the with item returned
        ("with urllib.request.urlopen(url) as response:\n            return response.read()", "urllib.request.urlopen"),
        ("for _ in range(3):\n            rows.append(next(cursor))\n        return cursor.commit()", "next"),
        ("stream.seek(0)\n        return self.session.post(url, data=stream)", "self.session.post"),
        ("if deadline_passed:\n            raise TimeoutError('late')\n        return start_cluster()", "start_cluster"),
        ("started = get_current_time_millis()\n        return store.create(started)", "store.create"),
    ],
)
def test_explain_names_the_call_the_attempt_makes(attempt, expected):
    code = f"""
import time
async def get(self, hook, url, cursor, rows, store, stream, deadline_passed):
    while True:
      try:
        {attempt}
      except ConnectionError:
        time.sleep(1)
    """
    report = check_source(code, "case.py", settings_with(CODES), want_policies=True)
    assert report.error is None, report.error
    assert [p.operation for p in report.policies if p.source == "loop"] == [expected]


def test_the_message_shows_the_value_a_delay_name_holds():
    # tencentcloud retry.py: ``sleep = self._backoff_fn(n)`` then ``time.sleep(sleep)``.
    short = """
        def call(fn):
            for attempt in range(5):
                try:
                    return fn()
                except ConnectionError:
                    pass
                delay = min(2 ** attempt, 60)
                time.sleep(delay)
        """
    (message,) = [f.message for f in _report(short, SYNC).findings if f.code == "RTY203"]
    assert "(`min(2 ** attempt, 60)`)" in message
    # A long expression keeps its name: the message stays readable.
    long = short.replace("min(2 ** attempt, 60)", "min(2 ** attempt * settings.backoff_base_seconds, 60)")
    (message,) = [f.message for f in _report(long, SYNC).findings if f.code == "RTY203"]
    assert "(`delay`)" in message


TRANSPORT = """
def perform(self, method, url):
    for attempt in range(self.max_retries + 1):
        connection = self.get_connection()
        try:
            return connection.perform_request(method, url)
        except TransportError as e:
            if method == "HEAD" and e.status_code == 404:
                return False
            retry = False
            if isinstance(e, ConnectionError):
                retry = True
            elif e.status_code in {statuses}:
                retry = True
            if retry:
                time.sleep(random.uniform(0, 2 ** attempt))
                if attempt == self.max_retries:
                    raise e
            else:
                raise e
"""


def test_a_status_decision_kept_in_a_flag_is_read_or_left_unknown():
    # opensearch-py transport.py: ``retry = True`` for ``self.retry_on_status``: the statuses come
    # from configuration; the HEAD-404 exit must not make every other 4xx "retried"
    assert "RTY302" not in {f.code for f in _report(TRANSPORT.replace("{statuses}", "self.retry_on_status"),
                                                      SYNC).findings}
    found = [f.message for f in _report(TRANSPORT.replace("{statuses}", "(403, 503)"), SYNC).findings
             if f.code == "RTY302"]
    assert found and "403" in found[0]


CAPACITY = """
def call(self, endpoint):
    while True:
        try:
            return self.request_json(endpoint)
        except HttpError as exc:
            if exc.status not in (403, 429){extra}:
                raise
        time.sleep(600)
"""


def test_a_status_read_together_with_the_failure_text_is_not_a_permanent_status_retry():
    # gallery_dl extractor/imgur.py: a 403 whose body says "capacity" is imgur being overloaded
    text = ' or b"capacity" not in exc.response.content'
    assert "RTY302" not in _codes(CAPACITY.replace("{extra}", text), SYNC)
    assert "RTY302" in _codes(CAPACITY.replace("{extra}", ""), SYNC)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_iterator_handed_the_wait_waits_on_each_step(flavour):
    # openstacksdk cloud/_compute.py wait_for_server: ``utils.iterate_timeout(..., wait=5)`` sleeps
    source = """
    {def} wait_for_server(self, server_id, timeout=180):
        for count in utils.iterate_timeout(timeout, "Timeout waiting", {wait}):
            try:
                server = {aw}self.get_server(server_id)
            except Exception:
                continue
            if server and server["status"] == "ACTIVE":
                return server
    """
    assert "RTY201" not in _codes(source.replace("{wait}", "wait=min(5, timeout)"), flavour)
    assert "RTY201" in _codes(source.replace("{wait}", "loud=True"), flavour)


def test_an_exception_used_as_control_flow_is_no_failure():
    # yt_dlp jsinterp.py: the interpreter's own ``for`` loop; ``JS_Continue`` is a ``continue``
    source = """
    def run_for(self, cndn, body, increment, local_vars):
        while True:
            if not self.interpret(cndn, local_vars):
                break
            try:
                ret, abort = self.interpret_statement(body, local_vars)
                if abort:
                    return ret, True
            except JS_Break:
                break
            except {name}:
                pass
            self.interpret(increment, local_vars)
    """
    assert _codes(source.replace("{name}", "JS_Continue"), SYNC) == []
    assert "RTY201" in _codes(source.replace("{name}", "ConnectionError"), SYNC)


READY = """
def {name}(self):
    while not self._ready_event.is_set():
        try:
            res = httpx.post(f"http://127.0.0.1:{{self.port}}/v0/connect/start")
            if res.status_code == 200:
                self._ready_event.set()
                break
        except Exception:
            time.sleep(0.1)
"""


def test_a_readiness_wait_is_judged_by_its_pace_not_by_the_answers_it_waits_through():
    # inngest dev_server.py _wait_for_server: every status and error means "not up yet", and a
    # non-200 asking again at once is still a wait for the server it just launched (the stop-26
    # review judged the RTY201 once reported here a false positive); so is jenkinsapi's
    # ``ensure_jenkins_up``. The same loop named for sending work resends it.
    for name in ("_wait_for_server", "ensure_jenkins_up"):
        assert _codes(READY.replace("{name}", name), SYNC) == [], name
    twin = _codes(READY.replace("{name}", "send_orders"), SYNC)
    assert {"RTY302", "RTY301", "RTY201"} <= set(twin)


WARMUP = """
def {name}(self, model, max_retries=30, retry_interval_s=10.0):
    for attempt in range(1, max_retries + 1):
        try:
            resp = self._sync_request(self.url, method="POST", json={{"model": model}})
            if resp.status_code == 200:
                return True
        except Exception as e:
            logger.info("attempt %d: %s", attempt, e)
        time.sleep(retry_interval_s)
    return False
"""


def test_a_warmup_at_a_fixed_pace_is_a_poll():
    # fireworks training/sdk/deployment.py warmup: probe every 10 s until the deployment answers
    assert _codes(WARMUP.replace("{name}", "warmup"), SYNC) == []
    assert {"RTY202", "RTY302"} <= set(_codes(WARMUP.replace("{name}", "submit"), SYNC))


APPEARS = """
async def get_link(self, url, session):
    for time_to_wait in exponential_sleep_generator(initial=10, maximum=120):
        try:
            return await session.get(url=url)
        except ClientResponseError as exc:
            if exc.status in {statuses}:
                await asyncio.sleep(time_to_wait)
            else:
                raise
"""


def test_a_handler_that_waits_only_on_chosen_client_errors_waits_for_the_resource():
    # airflow google hooks/datafusion.py _get_link: a 404 until the pipeline run is visible
    assert "RTY302" not in _codes(APPEARS.replace("{statuses}", "(404,)"), SYNC)
    assert "RTY302" in _codes(APPEARS.replace("{statuses}", "(404, 503)"), SYNC)


SWITCHED = """
class Client:
    def __init__(self, bearer_token=None, wait_on_rate_limit={default}):
        self.bearer_token = bearer_token
        self.wait_on_rate_limit = wait_on_rate_limit

    def request(self, method, route, params=None):
        response = self.session.request(method, route, params=params)
        if response.status_code == 429:
            if self.wait_on_rate_limit:
                return self.request(method, route, params)
            raise TooManyRequests(response)
        return response
"""


def test_a_retry_behind_a_switch_that_is_off_by_default_cannot_happen():
    # tweepy client.py: the 429 recursion only runs after ``wait_on_rate_limit=True``
    assert _codes(SWITCHED.replace("{default}", "False"), SYNC) == []
    assert "RTY103" in _codes(SWITCHED.replace("{default}", "True"), SYNC)


SUPERVISED = """
def serve(factory, restart_on_failure={default}):
    while True:
        try:
            return factory().run()
        except Exception:
            if not restart_on_failure:
                raise
            logger.exception("restarting")
"""


def test_a_handler_that_raises_first_unless_switched_on_retries_nothing_by_default():
    assert _codes(SUPERVISED.replace("{default}", "False"), SYNC) == []
    assert "RTY201" in _codes(SUPERVISED.replace("{default}", "True"), SYNC)
    # a caller in the module turns it on: the retry happens
    on = SUPERVISED.replace("{default}", "False") + "\nserve(make, restart_on_failure=True)\n"
    assert "RTY201" in _codes(on, SYNC)


DISCOVERY = """
def import_with_dummies(name, missing_modules=()):
    while True:
        try:
            return import_module(name)
        except ImportError as ie:
            if ie.name is None:
                raise
            {guard}
            missing_modules += (ie.name,)
"""


def test_a_path_that_records_each_failure_and_gives_up_on_a_repeat_is_a_discovery():
    # dlt common/reflection/ref.py: each pass stubs one more missing module; a repeat raises
    assert _codes(DISCOVERY.replace("{guard}", "if ie.name in missing_modules:\n                raise"), SYNC) == []
    assert "RTY201" in _codes(DISCOVERY.replace("{guard}", "pass"), SYNC)


RECOVERY = """
class ThreadState:
    def recovers_from(self, error):
        if self.thread_id is not None and error.status_code == 409:
            self.thread_id = None
            return True
        return False


def recoverable(error):
    return error.status_code == 409


def create_with_recovery(self, overrides):
    while True:
        arguments = self._state.create_arguments(overrides)
        try:
            return self._client.messages.create(**arguments)
        except APIStatusError as error:
            if not {who}.recovers_from(error):
                raise
"""


def test_a_failure_handed_to_the_object_that_builds_the_request_is_a_repair():
    # anthropic lib/threads/_beta_threads.py: the thread state switches to a new thread, then resends
    assert _codes(RECOVERY.replace("{who}", "self._state"), SYNC) == []
    # handed to a predicate that only decides: the same request goes round at once
    assert "RTY201" in _codes(RECOVERY.replace("{who}.recovers_from", "recoverable"), SYNC)


FALLBACK = """
def request(self, url, path):
    while True:
        response = self.session.get(url, allow_redirects=False)
        if response.status_code < 300:
            return response
        {move}
        time.sleep(random.uniform(0, 5))
"""


def test_a_status_loop_that_sends_elsewhere_on_the_way_back_is_a_walk():
    # gallery_dl extractor/bunkr.py: follow the Location header, or fall back to another domain
    assert _codes(FALLBACK.replace("{move}", 'url = response.headers["Location"]'), SYNC) == []
    assert _codes(FALLBACK.replace("{move}", 'url = "https://" + random.choice(DOMAINS) + path'), SYNC) == []
    assert "RTY302" in _codes(FALLBACK.replace("{move}", 'self.log.debug("again")'), SYNC)


SMALLER = """
class Store:
    def add(self, texts, chunk_size=500):
        try:
            return self._store.add_texts(texts, bulk_kwargs={{"chunk_size": chunk_size}})
        except ConnectionTimeout as e:
            if chunk_size <= 50:
                raise e
            return self.add(texts, chunk_size={passed})
"""


def test_a_recursion_that_passes_the_value_its_exit_tests_for_retries_once():
    # ibm-watsonx-ai es_adapter.py _fallback_add_documents: one retry with chunks of 50
    assert "RTY201" not in _codes(SMALLER.replace("{passed}", "50"), SYNC)
    assert "RTY201" in _codes(SMALLER.replace("{passed}", "chunk_size"), SYNC)


def test_a_change_made_only_on_success_does_not_make_the_failed_status_a_walk():
    # langchain_community obs_directory.py: the marker moves on success only; a failed status
    # re-sends the same page at once, forever
    source = """
    def load(self):
        mark = None
        docs = []
        while True:
            resp = self.client.listObjects(self.bucket, marker=mark)
            if resp.status < 300:
                docs.extend(resp.body.contents)
                if resp.body.is_truncated is True:
                    mark = resp.body.next_marker
                else:
                    break
        return docs
    """
    assert {"RTY101", "RTY201"} <= set(_codes(source, SYNC))


def test_a_recursion_after_waiting_out_the_pending_future_runs_once_more():
    # distributed actor.py: on OSError, wait for the actor's future, then call once more; the
    # future is done by then, so the next OSError gives up
    source = """
    async def run(self, key):
        try:
            return await self._worker_rpc.actor_execute(function=key)
        except OSError:
            if self._future and not self._future.done():
                {wait}
                return await self.run(key)
            return _Error(OSError("Unable to contact Actor's worker"))
    """
    assert "RTY103" not in _codes(source.replace("{wait}", "await self._future"), SYNC)
    assert "RTY103" in _codes(source.replace("{wait}", "self.log.debug('again')"), SYNC)


READER = """
def make(read_gen, read_lock, close_requested, close_response, deferred_close, decompress, buffer_size, logger):
    reading = False
    def buffered():
        nonlocal reading
        chunks = deque()
        done = False
        current_size = 0
        read_error = None
        while True:
            while not done:
                {reset}
                try:
                    with read_lock:
                        reading = True
                        try:
                            if not close_requested.is_set() and read_gen is not None:
                                chunk = next(read_gen, None)
                        finally:
                            reading = False
                            if deferred_close:
                                close_response()
                except Exception as ex:
                    # Store the exception for re-raising later
                    read_error = ex
                    logger.warning("unexpected failure to read next chunk", exc_info=True)
                if not chunk:
                    done = True
                    break
                chunks.append(chunk)
                current_size += len(chunk)
                if current_size > buffer_size:
                    break
            if len(chunks) == 0:
                if read_error:
                    raise OperationalError("Failed to read response data from server") from read_error
                return
            if decompress:
                chunk, used = decompress(chunks)
                current_size -= used
            else:
                chunk = chunks.popleft()
                current_size -= len(chunk)
            if chunk:
                yield chunk
    return buffered()
"""


def test_a_failed_read_that_leaves_the_result_empty_ends_the_loop():
    # clickhouse-connect driver/httputil.py: ``chunk = None`` each pass; a failed read stores the
    # error, and the empty chunk ends the reading
    assert _codes(READER.replace("{reset}", "chunk = None"), SYNC) == []
    # not emptied on each pass: after a good chunk, a failed read leaves the last chunk in
    # place and the read goes round at once
    assert "RTY201" in _codes(READER.replace("{reset}", "pass"), SYNC)


def test_a_wait_until_the_servers_reset_time_is_no_fixed_delay():
    # gallery_dl extractor/sankaku.py: wait until X-RateLimit-Reset; 600 s only when it is missing
    source = """
    def call(self, url):
        for _ in range(5):
            response = self.extractor.request(url, fatal=None)
            if response.status_code == 429:
                until = response.headers.get("X-RateLimit-Reset")
                seconds = None if until else 600
                self.extractor.wait({args})
                continue
            return response.json()
    """
    assert "RTY202" not in _codes(source.replace("{args}", "until=until, seconds=seconds"), SYNC)
    assert "RTY202" in _codes(source.replace("{args}", "seconds=600"), SYNC)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_redirect_branch_in_a_status_chain_hides_no_delay(flavour):
    """``elif 300 <= status < 400: url = location; continue`` before ``elif status == 429:
    sleep(2); continue``: the 429 way waits 2 s (RTY202, at the test that names 429), it is no
    immediate retry because the redirect branch's ``else`` reaches a 2xx as well."""
    source = """
    import time
    {def} call(session, url):
        for attempt in range(5):
            response = {aw}session.get(url, allow_redirects=False)
            if response.status_code == 200:
                return response.json()
            elif 300 <= response.status_code < 400:
                url = response.headers["Location"]
                continue
            elif response.status_code == 429:
                {sleep}(2)
                continue
            else:
                raise RuntimeError(response.status_code)
    """
    findings = _findings(source, flavour)
    assert [code for code, _ in findings] == ["RTY202"], findings
    assert "2 s" in findings[0][1]
    text = "import asyncio, time\n" + textwrap.dedent(source).format(**flavour)
    report = check_source(text, "case.py", settings_with(CODES), want_policies=True)
    assert [p.statuses.text for p in report.policies if p.statuses] == ["response.status_code == 429"]


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("wait", ["e.value", "int(e.args[0])", "min(e.seconds, 300)"])
def test_a_wait_the_failure_gives_is_no_fixed_delay(flavour, wait):
    """``except FloodWait as e: sleep(e.value)``: the server says how long to wait; no RTY202.
    The twin that waits its own constant is RTY202."""
    source = """
    {def} send(client, msg):
        for attempt in range(5):
            try:
                return {aw}client.send(msg)
            except FloodWait as e:
                {sleep}(WAIT)
    """
    assert _codes(source.replace("WAIT", wait), flavour) == []
    assert _codes(source.replace("WAIT", "5"), flavour) == ["RTY202"]


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("loop", [
    """
        attempt = 0
        while True:
            try:
                return {aw}session.get(url)
            except ConnectionError:
                if attempt >= retries:
                    raise
                attempt += 1
    """,
    """
        for attempt in range(retries + 1):
            try:
                return {aw}session.get(url)
            except ConnectionError:
                if attempt == retries:
                    raise
    """,
], ids=["counter", "range"])
def test_retries_off_by_default_fire_nothing(flavour, loop):
    """``def fetch(session, url, retries=0)`` and no caller here passes a value: as shipped the
    loop runs once (label convention: a retry impossible with the defaults fires nothing). A
    default of 3, or a caller here passing 4, is an immediate retry (RTY201)."""
    head = "{def} fetch(session, url, retries=DEFAULT):" + textwrap.dedent(loop).replace("\n", "\n    ")
    assert _codes(head.replace("DEFAULT", "0"), flavour) == []
    assert _codes(head.replace("DEFAULT", "3"), flavour) == ["RTY201"]
    caller = "\n{def} use():\n    return {aw}fetch(None, 'u', retries=4)\n"
    assert _codes(head.replace("DEFAULT", "0") + caller, flavour) == ["RTY201"]


def test_a_default_that_turns_retries_off_counts_only_when_no_module_of_the_package_calls_it(project, run):
    """kafka-utils ``ssh(host, max_attempts=1, max_timeout=5)``: another module of the package
    calls ``ssh(host, max_attempts=3, max_timeout=2)``, so the default decides nothing there and
    the constant sleep is RTY202; with no other module passing ``max_attempts`` the loop never
    retries as shipped."""
    project.write("pkg/__init__.py", "")
    project.write("pkg/ssh.py", """
        import time

        def ssh(client, host, max_attempts=1, max_timeout=5):
            attempts = 0
            while attempts < max_attempts:
                try:
                    attempts += 1
                    return client.connect(host)
                except OSError:
                    if attempts < max_attempts:
                        time.sleep(max_timeout)
            raise RuntimeError(host)
    """)
    code, out, _ = run("check", "--no-cache", "--output-format", "json", "--select", "RTY", "pkg")
    assert code == 0 and json.loads(out) == []
    # A module that calls it with the defaults (airflow's GCSHook.download(num_max_attempts=1)
    # called without it) changes nothing: one attempt as shipped.
    project.write("pkg/restart.py", """
        from .ssh import ssh

        def restart(client, host):
            return ssh(client, host)
    """)
    code, out, _ = run("check", "--no-cache", "--output-format", "json", "--select", "RTY", "pkg")
    assert code == 0 and json.loads(out) == []
    project.write("pkg/restart.py", """
        from .ssh import ssh

        def restart(client, host):
            return ssh(client, host, max_attempts=3, max_timeout=2)
    """)
    code, out, _ = run("check", "--no-cache", "--output-format", "json", "--select", "RTY", "pkg")
    assert [f["code"] for f in json.loads(out)] == ["RTY202"]


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_parameter_named_input_is_no_prompt(flavour):
    """dashscope ``__call_with_input(self, input)`` sends ``call(..., input=input)``: the name is
    the request's payload, not the builtin ``input``; a helper handed its own ``input``
    parameter asks nobody either. Both loops are retries with a fixed 2 s delay."""
    source = """
    class Service:
        def _send(self, input):
            return self.transport.run(self.prepare, input)

        {def} call_with_input(self, input):
            while True:
                try:
                    return {aw}self.call(model="m", input=input)
                except ConnectionError:
                    {sleep}(2)

        {def} call_through_helper(self, input):
            while True:
                try:
                    return self._send(input)
                except ConnectionError:
                    {sleep}(2)
    """
    assert [code for code, _ in _findings(source, flavour)] == ["RTY101", "RTY202", "RTY101", "RTY202"]


FREE_PORT = """
    {def} find_free_port(start_port=8100):
        port = start_port
        for _ in range(100):
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                {aw}bind(sock, ("", port))
                sock.close()
                return port
            except OSError:
                {way_back}
        raise RuntimeError(start_port)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_the_next_port_read_by_a_later_call_of_the_attempt_is_a_search(flavour):
    """jenkinsapi's ``find_free_port``: the first call of the attempt (``socket.socket()``) is
    named the operation, but ``bind(("", port))`` further down reads the port the failure path
    steps: each pass asks for another port, a search. Its twin binds the same port again."""
    assert _codes(FREE_PORT.replace("{way_back}", "port += 1"), flavour) == []
    assert "RTY201" in _codes(FREE_PORT.replace("{way_back}", "pass"), flavour)


HANDLE_FAILURES = """
    def _handle_failures(n_tries=15):
        def inner(func):
            {def} wrapper(*args, **kwargs):
                ntries = n_tries
                while ntries:
                    try:
                        return {aw}func(*args, **kwargs)
                    except ConnectionError as e:
                        ntries -= 1
                        if not ntries:
                            utils.raise_with_cause(ToozConnectionError, str(e), cause=e)
                        LOG.debug("Redis connection error, will retry - %s", e)
                    except TimeoutError as e:
                        {give_up}
                raise RuntimeError("unreachable")
            return wrapper
        return inner
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_call_named_for_raising_gives_up(flavour):
    """tooz's redis driver: ``utils.raise_with_cause(..., cause=e)`` (like ``six.reraise``) raises;
    it neither waits nor goes round, so the ConnectionError path is an immediate retry, and the
    TimeoutError handler that only calls it retries nothing. ``raise_for_status()`` raises only
    sometimes: a handler that calls it may still go round."""
    codes = _codes(HANDLE_FAILURES.replace("{give_up}", "utils.raise_with_cause(ToozConnectionError, str(e), cause=e)"), flavour)
    assert codes == ["RTY201"]
    report = _report(HANDLE_FAILURES.replace("{give_up}", "utils.raise_with_cause(ToozConnectionError, str(e), cause=e)"), flavour)
    (finding,) = report.findings
    assert "TimeoutError" not in finding.message


def test_which_names_raise():
    from retrylint.syntax import RAISER_NAME

    assert all(RAISER_NAME.match(n) for n in ("reraise", "raise_from", "raise_with_cause", "_raise_error"))
    assert not any(RAISER_NAME.match(n) for n in ("raise_for_status", "raise_if_error", "raise_on_failure", "raised", "praise"))


TTL_LOOP = """
    class Cluster:
        TTL = 16

        {def} execute(self, *args):
            ttl = self.TTL
            while ttl > 0:
                ttl -= 1
                try:
                    return {aw}self.node.execute_command(*args)
                except TryAgainError:
                    if {guard}:
                        {sleep}(0.05)
            raise ClusterError("TTL exhausted.")
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_wait_for_some_attempts_only_leaves_the_others_immediate(flavour):
    """redis-py's cluster ``execute_command``: TryAgainError waits 0.05 s only in the second half
    of the TTL; the first half goes round at once (RTY201). A wait skipped only after the last
    attempt (the test names the loop's own bound) leaves every retry waiting."""
    early = _report(TTL_LOOP.replace("{guard}", "ttl < self.TTL / 2"), flavour)
    assert [f.code for f in early.findings] == ["RTY201"]
    assert "(some attempts)" in early.findings[0].message
    last = _codes(TTL_LOOP.replace("{guard}", "ttl > 0"), flavour)
    assert "RTY201" not in last


APP_INFO_POOL = """
    import itertools

    class TikTok:
        {def} call_api(self, ep, query):
            for count in itertools.count(1):
                real_query = self._build_api_query(query)
                try:
                    return {aw}self._call_api_impl(ep, query=real_query)
                except ExtractorError as e:
                    if {way_back}:
                        raise
                    continue
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_failure_path_that_moves_the_object_to_its_next_alternative_is_a_search(flavour):
    """yt-dlp's TikTok ``_call_api``: ``if not self._get_next_app_info(): raise`` switches the
    extractor to the next app info of its pool, and the next pass sends with it (a search over
    alternatives, ended when the pool is empty). Its twin asks only whether to go on."""
    source = APP_INFO_POOL
    assert _codes(source.replace("{way_back}", "not self._get_next_app_info()"), flavour) == []
    assert "RTY101" in _codes(source.replace("{way_back}", "not self._should_retry(e)"), flavour)


RE_EXTRACT = """
    def _handle_extraction_exceptions(func):
        {def} wrapper(self, *args, **kwargs):
            while True:
                try:
                    return {aw}func(self, *args, **kwargs)
                except {caught} as e:
                    self.report_warning(f'{{e}}; Re-extracting data')
                    continue
        return wrapper
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_exception_named_for_doing_it_again_steers_the_program(flavour):
    """yt-dlp's ``ReExtractInfo``: the extractor asks to run again with what it learned (a
    control signal, like bottle's RouteReset); ``RequestError`` and ``ReadTimeout`` are failures."""
    assert _codes(RE_EXTRACT.replace("{caught}", "ReExtractInfo"), flavour) == []
    assert "RTY101" in _codes(RE_EXTRACT.replace("{caught}", "ReadTimeout"), flavour)


CHAINED_CALL = """
    class CascadingClient:
        {def} _chained_call(self, method_name, *args, **kwargs):
            for i in range(len(self.clients)):
                client = {client}
                try:
                    return {aw}getattr(client, method_name)(*args, **kwargs)
                except FileSystemException:
                    raise
                except BaseException:
                    if i + 1 >= len(self.clients):
                        raise
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_method_looked_up_on_the_next_client_is_a_fallback(flavour):
    """luigi's ``CascadingClient._chained_call``: ``getattr(client, method_name)(...)`` on
    ``self.clients[i]`` tries the next client after a failure (a fallback chain). The same
    client every pass is a retry, and an immediate one."""
    assert _codes(CHAINED_CALL.replace("{client}", "self.clients[i]"), flavour) == []
    assert "RTY201" in _codes(CHAINED_CALL.replace("{client}", "self.clients[0]"), flavour)


TRY_COUNT = """
    class VocabularyService:
        MAX_QUERY_TRY_COUNT = 3

        {def} call_with_input(self, input):
            try_count = 0
            while True:
                try:
                    response = {aw}self.client.call(input=input)
                except (requests.Timeout, requests.ConnectionError) as e:
                    try_count += 1
                    if try_count <= VocabularyService.MAX_QUERY_TRY_COUNT:
                        {sleep}(2)
                        continue
                {after}
            return response
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_bound_whose_exit_follows_the_try(flavour):
    """dashscope's ``__call_with_input``: ``if try_count <= MAX: sleep(2); continue``, and a
    failure past the limit falls out of the handler into the ``break`` after the try: at most
    4 attempts, a fixed 2 s delay (RTY202, no RTY101). With the ``break`` in the try's ``else``
    instead, a failure past the limit goes round at once, for ever."""
    source = TRY_COUNT
    bounded = _report(source.replace("{after}", "break"), flavour)
    assert [f.code for f in bounded.findings] == ["RTY202"]
    assert "at most 4 attempts" in bounded.findings[0].message
    unbounded = source.replace("{after}", "else:\n" + " " * 20 + "break")  # success leaves, failures go round
    assert "RTY101" in _codes(unbounded, flavour)


GCS_DOWNLOAD = """
    class GCSHook:
        {def} download(self, bucket, name, num_max_attempts=1):
            if num_max_attempts is None:
                num_max_attempts = 3
            for attempt in range(num_max_attempts):
                if attempt:
                    {sleep}(2 ** attempt)
                try:
                    return {aw}self.get_conn().bucket(bucket).blob(name).download_as_bytes()
                except GoogleCloudError:
                    if attempt == num_max_attempts - 1:
                        raise

        {def} download_as_byte_array(self, bucket, name, num_max_attempts={wrapper_default}):
            return {aw}self.download(bucket, name, num_max_attempts=num_max_attempts)

        {def} provide_file(self, bucket, name):
            return {aw}self.download(bucket, name)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_default_handed_on_by_a_wrapper_is_the_default_as_shipped(flavour):
    """airflow's ``GCSHook.download(num_max_attempts=1)``: ``if num_max_attempts is None: 3``
    never runs with that default, one caller leaves it out and the other hands on its own
    parameter defaulting to 1, which nobody passes: one attempt as shipped. A wrapper defaulting
    to 3 turns the retry on, and its doubling without jitter is judged."""
    assert _codes(GCS_DOWNLOAD.replace("{wrapper_default}", "1"), flavour) == []
    assert "RTY203" in _codes(GCS_DOWNLOAD.replace("{wrapper_default}", "3"), flavour)


RPC_FAILURE = """
    def retry_on_rpc_failure(retry_timeout=10, initial_back_off=0.01, max_back_off=60, back_off_multiplier=3):
        def wrapper(func):
            {def} handler(*args, **kwargs):
                back_off = initial_back_off
                start_time = time.time()
                while True:
                    try:
                        remaining = retry_timeout - (time.time() - start_time)
                        if remaining <= 0:
                            raise MilvusException(message="Retry timeout")
                        return {aw}func(*args, **kwargs)
                    except RpcError as e:
                        {sleep}(back_off)
                        back_off = min(back_off * back_off_multiplier, max_back_off)
                    except MilvusException as e:
                        if e.code != RATE_LIMIT:
                            raise
                        {sleep}(back_off)
                        back_off = {second_step}
            return handler
        return wrapper
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_one_step_written_on_two_paths_and_a_remaining_time_deadline(flavour):
    """pymilvus's ``retry_on_rpc_failure``: ``back_off = min(back_off * m, cap)`` written once in
    each handler is one exponential schedule (RTY203: no jitter), and ``remaining = timeout -
    elapsed; if remaining <= 0: raise`` is a deadline of ``timeout``, not of 0 s. Two different
    steps leave the schedule unknown."""
    same = _report(RPC_FAILURE.replace("{second_step}", "min(back_off * back_off_multiplier, max_back_off)"), flavour)
    assert [f.code for f in same.findings] == ["RTY203"]
    source = "import asyncio, time, random, errno, os, socket\n" + textwrap.dedent(
        RPC_FAILURE.replace("{second_step}", "back_off * back_off_multiplier")).format(**flavour)
    (policy,) = check_source(source, "case.py", settings_with(CODES), want_policies=True).policies
    assert policy.bound.deadline is not None and policy.bound.deadline != 0  # the budget, never 0 s
    different = _codes(RPC_FAILURE.replace("{second_step}", "back_off + 1"), flavour)
    assert "RTY203" not in different


COMMIT_LOOP = """
    class Session:
        {def} commit_with_retry(self, start_time):
            while True:
                try:
                    {aw}self.commit_transaction()
                except PyMongoError as exc:
                    if exc.has_error_label("UnknownTransactionCommitResult") and {check}(start_time):
                        continue
                    raise
                return
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_time_limit_check_in_the_retry_test_waits_for_nothing(flavour):
    """motor's ``with_transaction`` commit loop: ``_within_time_limit(start_time)`` answers
    whether time is left (a deadline); it does not sleep, so the commit is retried at once
    (RTY201). A policy object's ``handle_retry(...)`` in the same place may sleep: unknown."""
    assert "RTY201" in _codes(COMMIT_LOOP.replace("{check}", "_within_time_limit"), flavour)
    assert "RTY201" not in _codes(COMMIT_LOOP.replace("{check}", "self._retry_policy.handle_retry"), flavour)


SUBSCRIBE = """
    class RunEventListener:
        {def} retry_subscribe(self):
            retries = 0
            while retries < 5:
                try:
                    if retries > 0:
                        {sleep}(5)
                    if self.workflow_run_id is not None:
                        return {aw}self.client.Subscribe(run_id=self.workflow_run_id)
                    if self.additional_meta is not None:
                        return {aw}self.client.Subscribe(meta=self.additional_meta)
                    raise Exception("no listener method provided")
                except grpc.RpcError as e:
                    if e.code() == grpc.StatusCode.UNAVAILABLE:
                        retries = retries + 1
                    else:
                        raise ValueError("gRPC error") from e
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_attempt_that_returns_the_call_its_configuration_chose(flavour):
    """hatchet's ``retry_subscribe``: each ``if`` picks the request from settings the loop does
    not change and returns the call's result: that is the attempt's success, so the loop is a
    retry of UNAVAILABLE, every 5 s (RTY202). A ``return`` guarded by a stop flag returns no
    call's result and says nothing about success."""
    assert _codes(SUBSCRIBE, flavour) == ["RTY202"]


RUN_COMMAND = """
    def main(app, remaining, ask):
        async def run_command():
            try:
                command, bound = app.parse_known_args(remaining)
                await command(*bound.args)
            except MissingArgumentError as e:
                {repair}
                await run_command()
        return run_command
"""


def test_a_recursion_that_changes_what_its_attempt_reads_or_asks_a_person():
    """together's CLI ``run_command``: on a missing argument it appends the value to the
    ``remaining`` list that ``parse_known_args(remaining)`` reads, then runs again (another
    input), or asks for it first (a re-prompt). Its twin runs the same command again at once,
    for ever."""
    assert _codes(RUN_COMMAND.replace("{repair}", "remaining.append(e.argument.name)"), SYNC) == []
    assert _codes(RUN_COMMAND.replace("{repair}", "value = await prompt.prompt(e.argument.name)"), SYNC) == []
    assert "RTY103" in _codes(RUN_COMMAND.replace("{repair}", "log.warning(e)"), SYNC)


WRITER_LOOP = """
    class Session:
        async def _writer_loop(self):
            try:
                {attempt}
            except Exception as exc:
                if not self._closed:
                    self._schedule_reconnect(str(exc))
                    self._writer_task = asyncio.create_task(self._writer_loop())
"""


def test_a_worker_loop_that_restarts_itself_in_the_background_is_a_supervisor():
    """together's realtime ``_writer_loop``: the attempt is itself the writer's loop (``while
    not self._closed: …``), and a failure starts a fresh copy as a task: a supervisor restarting
    a worker. A single send restarted that way is a retry of the send."""
    worker = "while not self._closed:\n                    await self._drain()"
    assert _codes(WRITER_LOOP.replace("{attempt}", worker), SYNC) == []
    assert "RTY103" in _codes(WRITER_LOOP.replace("{attempt}", "await self._connection.send(self._next_chunk)"), SYNC)


FAILOVER_TRANSPORT = """
    class Transport:
        {def} perform_request(self, method, url):
            for attempt in range(self.max_retries + 1):
                connection = self.get_connection()
                try:
                    return {aw}connection.perform_request(method, url)
                except ConnectionError as e:
                    {failure_path}
                    if attempt == self.max_retries:
                        raise e
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_failure_path_that_takes_the_connection_out_of_rotation_fails_over(flavour):
    """opensearch-py's ``Transport.perform_request``: ``self.mark_dead(connection)`` takes the
    failed connection out of the pool, and the next pass's ``get_connection()`` gives another
    host (a failover, not a resend to the same one). Logging the failure instead resends at
    once."""
    assert _codes(FAILOVER_TRANSPORT.replace("{failure_path}", "self.mark_dead(connection)"), flavour) == []
    assert "RTY201" in _codes(FAILOVER_TRANSPORT.replace("{failure_path}", "self.log(e)"), flavour)


EVENTUALLY = """
    {def} retry(check, retry_time=10, wait_between_tries=0.1, exception_to_retry=CAUGHT):
        start = time.monotonic()
        while True:
            try:
                return {aw}check()
            except exception_to_retry as e:
                if time.monotonic() - start >= retry_time:
                    raise e
                {sleep}(wait_between_tries)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_failed_assertion_checked_again_is_an_eventually_poll(flavour):
    """pykafka's ``test/utils.retry(assertion_callable, exception_to_retry=AssertionError)``:
    a failed check means "not true yet", a test waiting for a state. The same loop on a
    connection error resends a failed operation at a fixed interval."""
    assert _codes(EVENTUALLY.replace("CAUGHT", "AssertionError"), flavour) == []
    assert "RTY202" in _codes(EVENTUALLY.replace("CAUGHT", "ConnectionError"), flavour)


TESTING_ONLY = """
    _TESTING = _BooleanEnvironmentVariable("MLFLOW_TESTING", False)

    {def} commit_hash(api, repo):
        for i in range(7):
            try:
                return {aw}api.model_info(repo)
            except HfHubHTTPError as e:
                {guard}
                if e.response.status_code == 429:
                    {sleep}(2 ** i)
                    continue
                raise
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_retry_taken_only_under_the_test_suite_is_off_as_shipped(flavour):
    """mlflow's ``_fetch_commit_hash``: ``if not _MLFLOW_TESTING.get(): raise`` first, so the
    429 retry runs only in mlflow's own tests. Behind another flag it is a retry."""
    assert _codes(TESTING_ONLY.replace("{guard}", "if not _TESTING.get():\n                    raise"), flavour) == []
    assert "RTY203" in _codes(TESTING_ONLY.replace("{guard}", "if not self.enabled:\n                    raise"), flavour)


LRU_EVICT = """
    class Buffers:
        {def} evict(self):
            for _ in range(100):
                key = self.lru_key()
                buf = self[key]
                try:
                    {aw}buf.take()
                except (IndexError, BufferEmpty):
                    {failure_path}
                else:
                    break
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_failure_path_that_drops_the_candidate_moves_on_to_the_next(flavour):
    """celery's ``LimitedSet``-style ``_pop_to_evict``: an empty buffer is popped from the
    mapping, so the next pass's ``lru_key()`` names another buffer: a walk, not a retry. Without
    the pop the same buffer is asked again at once."""
    assert _codes(LRU_EVICT.replace("{failure_path}", "self.pop(key)"), flavour) == []
    assert "RTY201" in _codes(LRU_EVICT.replace("{failure_path}", "self.log(key)"), flavour)


STATUS_INTO_HANDLER = """
    {def} fetch_tiles(client, url, max_retries=5):
        for retries in range(max_retries):
            try:
                resp = {aw}client.request(url)
                if resp.status_code >= 500:
                    {status_path}
                return resp.content
            except Exception as e:
                if retries + 1 == max_retries:
                    raise e
                {sleep}(2)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_status_that_raises_into_the_handler_waits_as_the_handler_does(flavour):
    """geonode's thumbnail tiles: ``resp.raise_for_status()`` inside the try sends a failed
    status into ``except Exception``, which sleeps: no status goes round at once. A status
    branch that ``continue``s on its own skips the handler's sleep."""
    waits = _codes(STATUS_INTO_HANDLER.replace("{status_path}", "resp.raise_for_status()"), flavour)
    assert "RTY201" not in waits and "RTY202" in waits
    assert "RTY201" in _codes(STATUS_INTO_HANDLER.replace("{status_path}", "continue"), flavour)


LOCKED_STORE = """
    class Partition:
        {def} open(self):
            attempt = 1
            while True:
                try:
                    return {aw}self._open_db()
                except Exception as exc:
                    {classify}
                    if attempt >= 10:
                        raise
                    attempt += 1
                    {sleep}(3)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_wait_for_a_lock_another_process_holds_is_no_retry(flavour):
    """quixstreams' RocksDB partition: ``is_locked = str(exc).lower().startswith("io error");
    if not is_locked: raise`` -- only "the lock is held" goes round, every 3 s: waiting for a
    lock, not resending to a failing downstream. Classified by another test it is a retry."""
    locked = 'is_locked = str(exc).lower().startswith("io error")\n                    if not is_locked:\n                        raise'
    assert _codes(LOCKED_STORE.replace("{classify}", locked), flavour) == []
    transient = 'is_transient = str(exc).lower().startswith("io error")\n                    if not is_transient:\n                        raise'
    assert "RTY202" in _codes(LOCKED_STORE.replace("{classify}", transient), flavour)


CONSECUTIVE_PORTS = """
    {def} hold_consecutive_ports(held):
        for _ in range(100):
            first_port = {first}
            try:
                return first_port, {aw}_hold_port(held, first_port + 1)
            except OSError:
                continue
        raise StartUpError("no two consecutive free ports")
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_pass_that_takes_a_new_free_port_first_is_a_search(flavour):
    """weaviate's embedded server: ``first_port = _hold_port(held)`` binds a port the OS chose,
    so each pass tries another pair: hunting free ports. A port read from the configuration is
    the same port every pass: binding it again at once is an immediate retry."""
    assert _codes(CONSECUTIVE_PORTS.replace("{first}", "_hold_port(held)"), flavour) == []
    assert "RTY201" in _codes(CONSECUTIVE_PORTS.replace("{first}", "settings.base_port"), flavour)



DYNAMIC_IMPORT = """
    import importlib, sys

    {def} dynamic_import(modname, retries=3):
        for attempt in range(retries):
            try:
                return {operation}(modname)
            except (KeyError, ImportError) as e:
                sys.modules.pop(modname, None)
                if attempt == retries - 1:
                    raise
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_import_tried_again_after_clearing_a_half_initialised_module_is_no_retry(flavour):
    """mistralai's ``dynamic_import``: ``importlib.import_module`` again after
    ``sys.modules.pop(modname)`` repairs a concurrent import in the process; nothing on the
    other end is overloaded. The same loop around a fetch resends it at once."""
    assert _codes(DYNAMIC_IMPORT.replace("{operation}", "importlib.import_module"), flavour) == []
    assert "RTY201" in _codes(DYNAMIC_IMPORT.replace("{operation}", "{aw}client.fetch"), flavour)


HEALTH_PROBES = """
    class {owner}:
        {def} _execute(self, health_check, database):
            last_exception = None
            for attempt in range(health_check.probes):
                try:
                    result = {aw}health_check.{call}(database)
                    if result:
                        return True
                except Exception as e:
                    last_exception = e
                if attempt < health_check.probes - 1:
                    {sleep}(0.5)
            raise last_exception
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_probes_of_a_health_check_policy_measure_health(flavour):
    """redis's multidb ``HealthyAnyPolicy._execute``: ``check_health`` probes a database a few
    times, 0.5 s apart, and an exception is the probe's "unhealthy" answer: a measurement, not
    a retry of work. The same loop sending a command resends it at a fixed interval."""
    probe = HEALTH_PROBES.replace("{owner}", "HealthyAnyPolicy").replace("{call}", "check_health")
    assert _codes(probe, flavour) == []
    work = HEALTH_PROBES.replace("{owner}", "CommandRunner").replace("{call}", "execute_command")
    assert "RTY202" in _codes(work, flavour)


NOT_READY_LOG = """
    {def} delete_cluster(self, hook, deadline):
        while True:
            try:
                {aw}hook.delete_cluster(name=self.cluster_name)
                return
            except FailedPrecondition:
                if time.monotonic() >= deadline:
                    raise
                self.log.warning("{says}", self.cluster_name)
                {sleep}(60)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_handler_that_logs_the_resource_is_not_ready_yet_waits_for_a_state(flavour):
    """airflow's GKE delete (``FailedPrecondition``: "Cluster %s still has active operation.
    Retrying deletion") and bedrock's "Vector index not ready, retrying": the author says the
    failure means "not there yet", a wait for a state. Logged as a plain failure, it is a
    fixed-delay retry."""
    waiting = NOT_READY_LOG.replace("{says}", "Cluster %s still has active operation. Retrying deletion.")
    assert _codes(waiting, flavour) == []
    assert _codes(NOT_READY_LOG.replace("{says}", "Cluster %s is not ready yet, retrying"), flavour) == []
    assert "RTY202" in _codes(NOT_READY_LOG.replace("{says}", "Deleting cluster %s failed, retrying"), flavour)


SWIFT_RETRY = """
    class Connection:
        def __init__(self, retries=5, starting_backoff=1, max_backoff=64, force_auth_retry=False):
            self.retries = retries
            self.starting_backoff = starting_backoff
            self.max_backoff = max_backoff
            self.force_auth_retry = force_auth_retry
            self.url = self.token = self.http_conn = None

        {def} _retry(self, func, *args, **kwargs):
            backoff = self.starting_backoff
            attempts = 0
            while attempts <= self.retries:
                attempts += 1
                try:
                    if not self.url or not self.token:
                        self.url, self.token = self.get_auth()
                    if not self.http_conn:
                        self.http_conn = self.http_connection()
                    kwargs["http_conn"] = self.http_conn
                    rv = {aw}func(self.url, self.token, *args, **kwargs)
                    return rv
                except (socket.error, RequestException):
                    if attempts > self.retries:
                        raise
                    {failure_path}
                if {flag}:
                    self.url = self.token = None
                {sleep}(backoff)
                backoff = min(backoff * 2, self.max_backoff)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_connection_dropped_to_reconnect_then_the_same_request_is_a_retry(flavour):
    """swiftclient's ``Connection._retry``: the operation is ``func(self.url, self.token, …)``,
    not the ``get_auth()`` that runs only when the token is missing; ``self.http_conn = None``
    drops the connection so the next pass reconnects, and ``if self.force_auth_retry:`` (off as
    shipped) forgets nothing. Exponential backoff without jitter. A failure path that takes the
    next endpoint, or a token dropped on every failure (a flag we cannot read), changes the
    request."""
    retry = SWIFT_RETRY.replace("{failure_path}", "self.http_conn = None")
    assert "RTY203" in _codes(retry.replace("{flag}", "self.force_auth_retry"), flavour)
    assert _codes(retry.replace("{flag}", "settings.force_auth"), flavour) == []
    walk = SWIFT_RETRY.replace("{failure_path}", "self.url = self.next_endpoint()")
    assert _codes(walk.replace("{flag}", "self.force_auth_retry"), flavour) == []


STREAM_BEFORE_FIRST_CHUNK = """
    class Hardened:
        async def chat_stream(self, messages):
            to_send = messages
            for attempt in range(4):
                emitted = False
                try:
                    async for chunk in self.provider.chat_stream(to_send):
                        emitted = True
                        yield chunk
                    return
                except Exception as e:
                    if emitted or not is_retryable_error(e) or attempt == 3:
                        raise
                    to_send = {failure_input}
                    await asyncio.sleep(4 * 2 ** attempt)
"""


def test_a_stream_retried_before_its_first_chunk_with_the_original_input_is_a_retry():
    """dashscope's ``HardenedProvider.chat_stream``: a transient failure before any chunk sets
    ``attempt_messages = messages`` (as before the loop) and streams again after an unjittered
    exponential backoff -- the same request. The iterated call's arguments (``…messages``) do
    not make it a message consumer, and ``emitted = False`` on every pass is no one-retry flag. A failure path that trims the messages repairs them."""
    assert "RTY203" in _codes(STREAM_BEFORE_FIRST_CHUNK.replace("{failure_input}", "messages"), SYNC)
    assert _codes(STREAM_BEFORE_FIRST_CHUNK.replace("{failure_input}", "trim(messages)"), SYNC) == []


RECONNECT_WITH_DELAY_FLAG = """
    class Client:
        async def reconnect(self, delay=False):
            if self.failed_connections > 5:
                return
            if delay:
                await asyncio.sleep(5)
            try:
                self._connection = await self._create_connection(self._host, self._port)
            except OSError:
                self.failed_connections += 1
                asyncio.ensure_future(self.reconnect(delay={again}))
                return
"""


def test_a_recursion_that_asks_its_next_call_to_wait_first_waits():
    """gmqtt's ``Client.reconnect(delay=False)``: ``if delay: await asyncio.sleep(...)`` on
    entry, and the failure path schedules ``self.reconnect(delay=True)``: every reconnect after
    a failure waits the same 5 s. Called again with ``delay=False`` it reconnects at once."""
    assert "RTY202" in _codes(RECONNECT_WITH_DELAY_FLAG.replace("{again}", "True"), SYNC)
    immediate = _codes(RECONNECT_WITH_DELAY_FLAG.replace("{again}", "False"), SYNC)
    assert "RTY202" not in immediate and "RTY201" in immediate


FLAG_FROM_COUNT = """
    {def} request(session, url, retries=3):
        retry = True
        _try = 0
        while retry:
            try:
                response = {aw}session.request("GET", url)
                break
            except ConnectionError:
                _try += 1
                retry = {flag}
        return response
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_loop_flag_set_from_the_attempt_count_bounds_the_loop(flavour):
    """influxdb's 0.8 client: ``while retry:`` with ``retry = _try < self._retries`` in the
    handler: a counted bound (an immediate retry, not a forever one). A flag that is set
    True again on every failure keeps the loop going forever."""
    counted = _codes(FLAG_FROM_COUNT.replace("{flag}", "_try < retries"), flavour)
    assert "RTY201" in counted and "RTY101" not in counted
    assert "RTY101" in _codes(FLAG_FROM_COUNT.replace("{flag}", "True"), flavour)


SIGNAL_WAIT = """
    class Signal:
        async def wait(self, key, app, max_interval=5.0):
            while not app.should_stop:
                {wait}
                try:
                    return self._get_current_value(key)
                except KeyError:
                    pass
"""


def test_a_lookup_after_waiting_for_a_notification_waits_for_the_value():
    """faust's livecheck ``Signal.wait``: each pass first waits for the resolution event, then
    looks the key up; ``KeyError`` means "not arrived yet". Without the wait the loop asks for
    the missing key again at once, retrying a lookup error."""
    assert _codes(SIGNAL_WAIT.replace("{wait}", "await self._wait_for_resolved(timeout=max_interval)"), SYNC) == []
    assert "RTY303" in _codes(SIGNAL_WAIT.replace("{wait}", "self.refresh()"), SYNC)


UNTIL_DOWN = """
    {def} _jenkins_is_unresponsive(self, max_wait=360):
        is_alive = True
        wait = 0
        while is_alive and wait < max_wait:
            try:
                {aw}self.requester.get_and_confirm_status(self.baseurl, valid=[200])
                {sleep}(1)
                wait += 1
                is_alive = {after_answer}
            except ConnectionError:
                return True
            except HTTPError:
                {sleep}(1)
                wait += 1
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_good_answer_that_keeps_the_loop_going_is_a_wait_for_a_state(flavour):
    """jenkinsapi's ``__jenkins_is_unresponsive``: ``is_alive = True`` after a good answer and
    ``while is_alive and wait < max_wait``: the loop waits for Jenkins to go down; neither the
    flag set to go round nor the ``wait += 1`` count is a success exit. A good answer that sets
    ``is_alive = False`` leaves, and the HTTPError path is a fixed-delay retry."""
    assert _codes(UNTIL_DOWN.replace("{after_answer}", "True"), flavour) == []
    assert "RTY202" in _codes(UNTIL_DOWN.replace("{after_answer}", "False"), flavour)


FLAGGED_EXIT = """
    {def} download(self, url, retries=4):
        tries = 0
        while True:
            tries += 1
            try:
                info = {aw}self._extract_url(url)
            except Exception as exc:
                cls = exc.__class__
                if {classify}:
                    tries = False
                msg = str(exc)
            else:
                return info
            if tries:
                self.log.error("%s (%s/%s)", msg, tries, retries + 1)
            else:
                return False
            if tries > retries:
                return False
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_classification_that_flags_an_exit_right_after_the_try_is_a_permanent_error_exit(flavour):
    """gallery-dl's ytdl downloader: ``if cls.__module__ == "builtins": tries = False`` and,
    right after the try, ``if tries: … else: return False``: a bug or bad input ends the loop,
    only the rest go round (still at once: RTY201). A flag set on every failure classifies
    nothing."""
    classified = _codes(FLAGGED_EXIT.replace("{classify}", 'cls.__module__ == "builtins"'), flavour)
    assert "RTY301" not in classified and "RTY201" in classified
    assert "RTY301" in _codes(FLAGGED_EXIT.replace("{classify}", "self.verbose"), flavour)


EVENT_TRIGGER = """
    class {cls}:
        async def run(self):
            failures = 0
            while True:
                try:
                    response = await self._get_response()
                    event = response if await self._check(response) else None
                except Exception:
                    failures += 1
                    if failures >= 10:
                        raise
                else:
                    failures = 0
                    if event is not None:
                        return event
                await asyncio.sleep(60)
"""


def test_an_event_trigger_polls_at_its_own_pace():
    """airflow's ``HttpEventTrigger.run``: asks until the response check passes, every
    ``poll_interval``; failures count towards a give-up but the pace is the poll's. The same
    loop in a class that sends work is a fixed-delay retry of everything."""
    assert _codes(EVENT_TRIGGER.replace("{cls}", "HttpEventTrigger"), SYNC) == []
    assert {"RTY202", "RTY301"} <= set(_codes(EVENT_TRIGGER.replace("{cls}", "HttpSender"), SYNC))


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_an_earlier_handler_that_raises_is_a_permanent_error_exit_for_recursion_too(flavour):
    code = """
    {def} send(request, retries=3):
        try:
            return {aw}transport.send(request)
        except InvalidParameter:
            raise
        except Exception:
            if not retries:
                raise
            {sleep}(random.uniform(0, 2))
            return {aw}send(request, retries - 1)
    """
    assert "RTY301" not in _codes(code, flavour)
    assert "RTY301" in _codes(code.replace("        except InvalidParameter:\n            raise\n", ""), flavour)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("compared, bounded", [("timeouts + errors < max_attempts", True), ("level < MAX_LEVEL", False)])
def test_a_closure_that_compares_the_stepped_counter_before_raising_bounds_the_loop(flavour, compared, bounded):
    # bleak-retry-connector's establish_connection: each handler steps a counter and calls
    # ``_raise_if_needed(exc)``, which returns while ``timeouts + connect_errors < max_attempts``
    # and raises otherwise. A closure comparing something else bounds nothing.
    code = f"""
    {{def}} connect(device, max_attempts=4, level=0):
        timeouts = errors = 0

        def _raise_if_needed(exc):
            if {compared}:
                return
            raise ConnectError("gave up") from exc

        while True:
            try:
                return {{aw}}device.connect()
            except TimeoutError as exc:
                timeouts += 1
                _raise_if_needed(exc)
            except OSError as exc:
                errors += 1
                _raise_if_needed(exc)
    """
    codes = _codes(code, flavour)
    assert ("RTY101" in codes) is not bounded, codes


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("shipped, reported", [("0", False), ("2", True)])
def test_a_recursion_whose_limit_is_off_unless_options_are_passed(flavour, shipped, reported):
    """Fern-generated clients (opik's ``core/http_client.py``): ``max_retries = request_options.get(
    "max_retries", 0) if request_options is not None else 0`` and ``if max_retries > retries:``
    call again. Nobody here passes ``request_options``, so as shipped the limit is 0 and there is
    no retry; with a default of 2 there are two, each after the same 1 s (RTY202)."""
    code = """
    class HttpClient:
        {def} request(self, path, request_options=None, retries=0):
            response = {aw}self.http.request(path)
            max_retries = request_options.get("max_retries", LIMIT) if request_options is not None else LIMIT
            if response.status_code >= 500:
                if max_retries > retries:
                    {sleep}(1)
                    return {aw}self.request(path, request_options=request_options, retries=retries + 1)
            return response
    """.replace("LIMIT", shipped)
    assert _codes(code, flavour) == (["RTY202"] if reported else [])
    # ``retries = retries or 0`` reads the same way: None as shipped is 0
    written = 'max_retries = request_options.get("max_retries", LIMIT) if request_options is not None else LIMIT'
    orred = code.replace(written.replace("LIMIT", shipped), "max_retries = request_options or " + shipped)
    assert "request_options or" in orred
    assert _codes(orred, flavour) == (["RTY202"] if reported else [])


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("test, reported", [("== 429", False), (">= 400", True)])
def test_a_status_test_inside_a_branch_sees_only_the_responses_of_that_branch(flavour, test, reported):
    """sentinelhub's download loop: ``if sleep_time == 0:`` send, ``if status == 429: continue``,
    ``raise_for_status()``, return; otherwise sleep for the rate limiter. The other branch of the
    outer ``if`` never has a response, so no 4xx goes round there (RTY302 said 400–404 did)."""
    code = f"""
    class Client:
        {{def}} download(self, request):
            attempts = 0
            while True:
                sleep_time = self.limiter.next_slot()
                if sleep_time == 0:
                    attempts += 1
                    response = {{aw}}self.http.send(request)
                    if response.status_code {test}:
                        if attempts >= self.max_retries:
                            raise OutOfRequests(attempts)
                        {{sleep}}(1)
                        continue
                    response.raise_for_status()
                    return response
                {{sleep}}(sleep_time)
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("caught, reported", [("requests.RequestException", False), ("Exception", True)])
def test_a_builtin_error_raised_for_a_status_is_not_caught_by_a_library_handler(flavour, caught, reported):
    """langchain-core's mermaid renderer: 5xx go round while attempts remain, any other status
    ``raise ValueError(msg)`` inside the try, whose handler catches ``requests.RequestException``
    (never a base of ValueError): the 4xx leave the loop. ``except Exception`` would take them round."""
    code = f"""
    import requests
    {{def}} render(url, max_retries=3):
        for attempt in range(max_retries + 1):
            try:
                response = {{aw}}session.get(url)
                if response.status_code == requests.codes.ok:
                    return response.content
                if requests.codes.internal_server_error <= response.status_code and attempt < max_retries:
                    {{sleep}}(random.uniform(0, 2 ** attempt))
                    continue
                raise ValueError(f"failed: {{{{response.status_code}}}}")
            except {caught} as e:
                if attempt < max_retries:
                    {{sleep}}(random.uniform(0, 2 ** attempt))
                else:
                    raise ValueError("gave up") from e
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("handler, reported", [
    ("{aw}self.save_file(path, file_part=e.value)", False),
    ("self.limiter.update(e.headers)", True),
    ("log.warning('missing %s', e.value)", True),
])
def test_a_handler_that_supplies_what_the_failure_names_is_a_repair(flavour, handler, reported):
    """pyrogram's send_photo: ``except FilePartMissing as e: await self.save_file(photo,
    file_part=e.value)`` uploads the part the server says is missing, then sends again: a repair.
    Handing the failure's headers to a rate limiter, or logging its value, repairs nothing."""
    code = f"""
    class Client:
        {{def}} send_photo(self, path, media):
            while True:
                try:
                    return {{aw}}self.invoke(media)
                except FilePartMissing as e:
                    {handler}
    """
    assert ("RTY101" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("gate, reported", [("retry_policy.should_retry(response, last_exception, retry_count)", False),
                                            ("retry_count < 5", True)])
def test_a_policy_asked_after_the_try_may_wait(flavour, gate, reported):
    """azure-datalake-store's ``__call``: the handler only records the failure, and after the try
    ``if ok or not retry_policy.should_retry(...): break``; the policy's ``should_retry`` sleeps
    (ExponentialRetryPolicy). A plain count there waits for nothing: an immediate retry."""
    code = f"""
    class Rest:
        {{def}} call(self, retry_policy, request):
            retry_count = -1
            while True:
                retry_count += 1
                last_exception = None
                try:
                    response = {{aw}}self.http.send(request)
                except ConnectionError as e:
                    last_exception = e
                    response = None
                ok = response is not None
                if ok or not {gate}:
                    break
            return response
    """
    assert ("RTY201" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("guard, reported", [("tts", False), ("exc.transient", True)])
def test_a_guard_that_skips_a_zero_delay_leaves_no_path_unslept(flavour, guard, reported):
    """pulsar's ``_retry_over_time``: ``tts = errback(exc, intervals, n)`` then ``if tts:
    sleep(tts)``: a zero delay skipped is the schedule's own, not a failure sent round at once.
    A guard on the failure itself (``if exc.transient:``) leaves the others unslept (RTY201)."""
    code = f"""
    import itertools
    {{def}} call(fun, errback, intervals, max_retries=5):
        for retries in itertools.count():
            try:
                return {{aw}}fun()
            except OSError as exc:
                if retries >= max_retries:
                    raise
                tts = next(intervals)
                if {guard}:
                    {{sleep}}(tts)
    """
    codes = _codes(code, flavour)
    assert ("RTY201" in codes) is reported, codes


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("helper_body, reported", [
    ("if response.status_code != 409:\n                raise ApiError(response)\n            return retries - 1", False),
    ("log.warning('client error %s', response.status_code)\n            return retries - 1", True),
])
def test_a_status_handed_to_a_helper_that_may_raise_is_decided_there(flavour, helper_body, reported):
    """meraki's session: ``elif 400 <= status < 500: retries = self._handle_client_error(response,
    retries)``, which raises unless the error is retryable: the 4xx are decided in the helper,
    not sent round blindly. A helper that only logs sends every 4xx round (RTY302)."""
    code = f"""
    class Session:
        def _handle_client_error(self, response, retries):
            {helper_body}

        {{def}} request(self, url):
            retries = 5
            while retries > 0:
                response = {{aw}}self.http.get(url)
                status = response.status_code
                if 200 <= status < 300:
                    return response
                elif status >= 500:
                    {{sleep}}(random.uniform(0, 2))
                    retries -= 1
                elif 400 <= status < 500:
                    retries = self._handle_client_error(response, retries)
                    {{sleep}}(random.uniform(0, 2))
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("last_step, reported", [("self._raise_for_status(response)", False),
                                                 ("log.warning('status %s', response.status_code)", True)])
def test_a_status_that_a_helper_raises_for_does_not_go_round(flavour, last_step, reported):
    """mailersend's client: statuses not in RETRY_STATUSES go to ``self._raise_for_status(response)``,
    whose ``elif 400 <= response.status_code < 500: raise BadRequestError(...)`` ends the loop for
    every 4xx. Only logging them lets the 4xx fall through and go round (RTY302)."""
    code = f"""
    class Client:
        def _raise_for_status(self, response):
            if response.status_code == 401:
                raise AuthenticationError(response)
            elif 400 <= response.status_code < 500:
                raise ApiError(response)

        {{def}} request(self, url):
            for attempt in range(4):
                response = {{aw}}self.http.get(url)
                if 200 <= response.status_code < 300:
                    return response
                if response.status_code in (429, 503):
                    {{sleep}}(random.uniform(0, 2 ** attempt))
                    continue
                {last_step}
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("guard, reported", [("response.status_code in (408, 429) or response.status_code >= 500", False),
                                             ("response.status_code >= 400", True)])
def test_raise_for_status_only_for_retryable_statuses_retries_no_4xx(flavour, guard, reported):
    """logfire's DiskRetryer: ``raise_for_retryable_status(response)`` calls ``raise_for_status()``
    only under ``if status in (408, 429) or status >= 500``, so the ``except RequestException``
    that retries sees no 4xx. Raising for every status >= 400 would send the 4xx round (RTY302)."""
    code = f"""
    import requests

    def raise_for_retryable_status(response):
        if {guard}:
            response.raise_for_status()

    {{def}} export(session, data):
        for attempt in range(5):
            try:
                response = {{aw}}session.post(data=data)
                raise_for_retryable_status(response)
                return response
            except requests.exceptions.RequestException:
                {{sleep}}(random.uniform(0, 2 ** attempt))
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("handed, reported", [("retry_attempt", False), ("retry_after", True)])
def test_a_status_loop_that_hands_its_count_to_a_helper_may_be_bounded_there(flavour, handed, reported):
    """lago's request wrapper: ``if not is_rate_limit_response(response): return response``, then
    ``wait = handle_rate_limit_response(response, config, retry_attempt)``, which raises once the
    attempts are spent (a helper in another module). Handing it only the Retry-After value bounds
    nothing: retried forever (RTY101)."""
    code = f"""
    {{def}} request(http, url, config):
        retry_attempt = 0
        while True:
            response = {{aw}}http.get(url)
            if response.status_code != 429:
                return response
            retry_after = response.headers.get("Retry-After")
            wait = handle_rate_limit_response(response, config, {handed})
            {{sleep}}(wait)
            retry_attempt += 1
    """
    assert ("RTY101" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("filled, reported", [("0", False), ("3", True)])
def test_a_counter_filled_in_with_or_is_read_as_shipped(flavour, filled, reported):
    """internetarchive's ``upload_file``: ``retries = retries or 0`` with ``retries=None`` that no
    caller passes: as shipped the 503 branch (``retries > 0``) never runs. ``retries or 3`` retries
    three times after the same 30 s (RTY202)."""
    code = f"""
    {{def}} upload(session, data, retries=None, retries_sleep=None):
        retries = retries or {filled}
        retries_sleep = retries_sleep or 30
        while True:
            response = {{aw}}session.put(data)
            if response.status_code == 503 and retries > 0:
                {{sleep}}(retries_sleep)
                retries -= 1
                continue
            return response
    """
    assert ("RTY202" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("other, reported", [("retries_left = 0", False), ("log.debug('other error')", True)])
def test_a_catch_all_whose_other_branch_spends_the_count_classifies(flavour, other, reported):
    """pyvmomi's ``InvokeAccessor``: ``except Exception as e:`` sleeps for socket and parse
    errors (and re-logs in for session errors), and ``else: retriesLeft = 0``, then ``if retriesLeft > 0:
    continue`` and ``raise e``: every other error is raised at once. Without that ``else`` the
    catch-all retries them all (RTY301)."""
    code = f"""
    {{def}} invoke(self, request):
        retries_left = self.retry_count
        while True:
            try:
                return {{aw}}self.stub.invoke(request)
            except Exception as e:
                if isinstance(e, (socket.error, ParseError)):
                    {{sleep}}(random.uniform(0, 1))
                else:
                    {other}
                if retries_left > 0:
                    retries_left -= 1
                    continue
                raise e
    """
    assert ("RTY301" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("skipped_for, reported", [("ServerReloadError", False), ("ServerBusyError", True)])
def test_skipping_the_wait_for_the_servers_instruction_leaves_no_failure_unslept(flavour, skipped_for, reported):
    """langsmith's sandbox stream: every connection error waits ``min(base * 2 ** n, cap)`` except
    the server's hot reload (1001 Going Away), after which it reattaches at once, as asked.
    Skipping the wait for an ordinary failure leaves it immediate (RTY201)."""
    code = f"""
    {{def}} follow(self):
        attempts = 0
        while True:
            try:
                return {{aw}}self.stream()
            except ConnectionFailed as e:
                attempts += 1
                if attempts > 5:
                    raise
                skip = isinstance(e, {skipped_for})
                if not skip:
                    {{sleep}}(random.uniform(0, min(0.5 * 2 ** attempts, 8)))
    """
    assert ("RTY201" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("header, reported", [("_AUTHORIZATION_HEADER", False), ("_ACCEPT_HEADER", True)])
def test_a_401_that_renews_the_token_under_a_named_header_is_a_repair(flavour, header, reported):
    """hikari's REST client: ``if can_re_auth and response.status == 401:`` invalidates the token,
    ``auth = headers[_AUTHORIZATION_HEADER] = await self._token.acquire(self)`` and goes round
    once: a repair of the credentials, not a 401 retried. Setting another header is no repair."""
    code = f"""
    class Rest:
        {{def}} request(self, url, headers):
            can_re_auth = True
            retry_count = 0
            while True:
                response = {{aw}}self.http.get(url, headers=headers)
                if 200 <= response.status < 300:
                    return response
                if response.status in (500, 502, 503) and retry_count < 3:
                    retry_count += 1
                    {{sleep}}(random.uniform(0, 2 ** retry_count))
                    continue
                if can_re_auth and response.status == 401:
                    headers[{header}] = {{aw}}self.token.acquire(self)
                    can_re_auth = False
                    continue
                raise ApiError(response)
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


def test_a_failure_that_falls_into_a_pass_that_advances_the_loop_is_a_walk():
    """pytubefix's ``stream``: ``while downloaded < file_size:`` a failed size lookup is only logged
    and the pass goes on to read the chunk, ``downloaded += len(chunk)``; the next pass reads the
    next range. Advancing by a count (``+= 1``) says nothing of the input."""
    import libcst as cst

    from retrylint.extract.context import ModuleContext
    from retrylint.extract.errors import describe_handler
    from retrylint.extract.loops import TryAnalysis, _rest_advances_the_loop
    from retrylint.settings import Settings
    from retrylint.syntax import statements

    def verdict(step: str) -> bool:
        source = textwrap.dedent(f"""
        def stream(url, file_size):
            downloaded = 0
            while downloaded < file_size:
                try:
                    size = head_size(url)
                except KeyError as e:
                    log.error(e)
                chunk = read_range(url, downloaded)
                downloaded += {step}
        """)
        ctx = ModuleContext(cst.parse_module(source), "case.py", Settings())
        loop = next(n for n in ctx.module.body[0].body.body if isinstance(n, cst.While))
        body = statements(loop.body)
        try_node = body[0]
        handler = describe_handler(try_node.handlers[0], ctx)
        analysis = TryAnalysis(try_node, [handler], [handler], [], body[1:], True, None)
        return _rest_advances_the_loop(handler, analysis, loop, ctx)

    assert verdict("len(chunk)")
    assert not verdict("1")


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("entry, reported", [("response.status_code >= 500", False), ("response.status_code >= 400", True)])
def test_a_status_retry_entered_only_for_some_statuses_retries_those(flavour, entry, reported):
    """gen3's file download: ``if response.status_code >= 500: for _ in range(MAX_RETRIES):``
    re-request until 200; the retry exists for the 5xx that led into it. Entered for every
    status >= 400, it resends 4xx too (RTY302)."""
    code = f"""
    {{def}} download(session, url):
        response = {{aw}}session.get(url)
        if response.status_code != 200:
            if {entry}:
                for _ in range(3):
                    {{sleep}}(random.uniform(0, 2))
                    response = {{aw}}session.get(url)
                    if response.status_code == 200:
                        break
            else:
                return False
        return response
    """
    assert ("RTY302" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
@pytest.mark.parametrize("handed, reported", [("pause_duration", False), ("filename", True)])
def test_a_helper_handed_the_pause_may_wait(flavour, handed, reported):
    """zenodo-get's ``download_with_retries``: ``if not handle_download_error(filename, error,
    current_retry, retry_limit, pause_duration, sleep_func): return False``, a helper of another
    module that sleeps ``pause_duration`` before allowing another attempt: the delay is unknown,
    not absent. A helper handed nothing of the kind waits for nothing (RTY201)."""
    code = f"""
    {{def}} download(filename, link, retry_limit, pause_duration):
        for current_retry in range(retry_limit + 1):
            try:
                return {{aw}}download_once(filename, link)
            except OSError as error:
                if not handle_download_error(error, current_retry, retry_limit, {handed}):
                    return False
        return False
    """
    assert ("RTY201" in _codes(code, flavour)) is reported


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_delay_computed_and_logged_but_never_waited_is_no_delay(flavour):
    """mautrix's ``proxy_with_retry``: ``wait = min(max(errors * 10, lo), hi)`` and ``logger.warning(
    "retrying in %d seconds", wait)``, but nothing sleeps: every retry is immediate (RTY201);
    ``min``/``max`` compute the delay, they do not wait."""
    code = """
    {def} proxy_with_retry(func, max_retries=10, lo=0, hi=60):
        errors = 0
        while True:
            try:
                return {aw}func()
            except ConnectionError:
                errors += 1
                if errors > max_retries:
                    raise
                wait = min(max(errors * 10, lo), hi)
                log.warning("retrying in %d seconds", wait)
    """
    assert "RTY201" in _codes(code, flavour)


COUNTER_GUARDED_ENTRY_WAIT = """
    import random
    import requests

    class Client:
        {def} _request(self, url, retry_counter=0):
            if {guard}:
                delay_seconds = 1.5 ** (retry_counter - 1)
                {sleep}(delay_seconds * (random.random() + 0.5))
            response = requests.get(url)
            if response.status_code in (500, 503) and retry_counter < 5:
                return {aw}self._request(url, retry_counter + 1)
            return response.json()
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_recursion_that_waits_on_entry_once_it_counts_a_retry_waits(flavour):
    """routingpy's (and googlemaps') ``_request``: ``if retry_counter > 0: time.sleep(...)`` at
    the top of the function, and the failure path calls itself with ``retry_counter + 1``: every
    retry waits a jittered exponential delay first. Called again without the counter, the
    guard never opens: every retry starts at once."""
    code = COUNTER_GUARDED_ENTRY_WAIT
    waits = _codes(code.replace("{guard}", "retry_counter > 0"), flavour)
    assert "RTY201" not in waits and "RTY203" not in waits
    again_from_zero = code.replace("{guard}", "retry_counter > 0").replace("url, retry_counter + 1", "url")
    assert "RTY201" in _codes(again_from_zero, flavour)


NON_BLOCKING_FILE_LOCK = """
    import fcntl
    from datetime import datetime

    {def} open_locked(path, timeout):
        start = datetime.now()
        while True:
            if timeout and datetime.now() - start >= timeout:
                lockfile = None
                break
            lockfile = open(path, "w")
            try:
                fcntl.flock(lockfile, {flags})
                break
            except IOError:
                {sleep}(0.1)
                continue
        return lockfile
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_non_blocking_file_lock_taken_again_is_a_wait_for_the_lock(flavour):
    """eumdac's ``open_locked``: ``fcntl.flock(f, LOCK_EX | LOCK_NB)`` fails at once while another
    process holds the lock; sleeping 0.1 s and trying again waits for the holder, with no
    downstream to back off from. A blocking ``flock`` that fails has really failed (an NFS or
    permission error), and trying it again every 0.1 s is a fixed-delay retry."""
    assert _codes(NON_BLOCKING_FILE_LOCK.replace("{flags}", "fcntl.LOCK_EX | fcntl.LOCK_NB"), flavour) == []
    assert "RTY202" in _codes(NON_BLOCKING_FILE_LOCK.replace("{flags}", "fcntl.LOCK_EX"), flavour)


PREPARED_DOWNLOAD = """
    from urllib.error import HTTPError

    {def} read_prepared(url):
        for _ in range(60):
            {comment}
            try:
                return {aw}download(url)
            except HTTPError:
                {sleep}(1)
                continue
        raise ValueError("Unable to download zipped data within 60 secs")
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_loop_its_author_comments_as_a_wait_for_readiness_is_a_poll(flavour):
    """pandas-datareader's SDMX reader: the server answered with the address of a zip it is still
    preparing; ``# wait zipped data is prepared`` heads a loop fetching it once a second for 60 s.
    The author says the loop waits for a state. Without that comment the same loop reads as a
    fixed-delay retry of a failing download."""
    assert _codes(PREPARED_DOWNLOAD.replace("{comment}", "# wait zipped data is prepared"), flavour) == []
    assert "RTY202" in _codes(PREPARED_DOWNLOAD.replace("{comment}", "# download it"), flavour)


RATE_LIMIT_BRANCH_IN_ATTEMPT = """
    import requests

    {def} execute(session, query, attempts=5):
        current = 0
        while current < attempts:
            try:
                response = {aw}session.post("https://api.example.com", json=query)
                if response.status_code == 429:
                    {sleep}(30)
                    current += 1
                    {go_on}
                response.raise_for_status()
                return response.json()
            except requests.ConnectionError:
                current += 1
        raise RuntimeError("gave up")
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_sleep_on_its_own_path_in_the_attempt_is_no_wait_for_the_handler(flavour):
    """monday-sdk: ``if response.status_code == 429: time.sleep(30); current += 1; continue``
    inside the attempt goes round on a path of its own; a connection error caught below goes
    round at once. When the 429 branch falls through to the rest of the attempt instead, its
    sleep is on the way to every later failure, so the handler's delay stays unknown."""
    own_path = _codes(RATE_LIMIT_BRANCH_IN_ATTEMPT.replace("{go_on}", "continue"), flavour)
    assert "RTY201" in own_path
    falls_through = _codes(RATE_LIMIT_BRANCH_IN_ATTEMPT.replace("{go_on}", "pass"), flavour)
    assert "RTY201" not in falls_through


CLASSIFIER_THAT_SLEEPS = """
    import time

    class Signature:
        def _check_exception(self, ex):
            if "Lock wait timeout exceeded" in str(ex):
                time.sleep({first})
                return True
            if "Deadlock found when" in str(ex):
                time.sleep({second})
                return True
            return False

        {def} create(self, **kwargs):
            for _ in range(0, 30):
                try:
                    return {aw}self._create(**kwargs)
                except ConnectionError as ex:
                    if self._check_exception(ex):
                        continue
                    raise
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_classifier_that_sleeps_one_literal_before_answering_sets_the_delay(flavour):
    """f5-sdk's ASM resources: ``if self._check_exception(ex): continue``, where the classifier
    sleeps ``time.sleep(3)`` in every branch that answers "retry": each retry waits the same
    3 s (RTY202). When its branches sleep different times the delay is unknown: nothing is
    said about its shape."""
    same = CLASSIFIER_THAT_SLEEPS.replace("{first}", "3").replace("{second}", "3")
    assert "RTY202" in _codes(same, flavour)
    assert "the same 3 s" in " ".join(f.message for f in _report(same, flavour).findings)
    mixed = CLASSIFIER_THAT_SLEEPS.replace("{first}", "3").replace("{second}", "30")
    assert not {"RTY201", "RTY202", "RTY203"} & set(_codes(mixed, flavour))


POOL_THAT_WAITS_FOR_A_FREE_CONNECTION = """
    import asyncio

    class Pool:
        async def acquire(self):
            while True:
                for connection in self.connections:
                    if not connection.is_busy:
                        return connection
                await asyncio.sleep(0.01)

        async def send(self, request):
            attempts = 0
            while attempts < 5:
                attempts += 1
                try:
                    connection = await self.acquire()
                except ConnectionError:
                    await asyncio.sleep(1)
                    continue
                try:
                    return await connection.send(request)
                except ConnectionResetError:
                    connection.close()
                except ConnectionRefusedError:
                    await asyncio.sleep(1)
"""


def test_a_helper_that_sleeps_in_a_loop_is_no_fixed_delay_of_the_retry():
    """aioapns's pool: ``acquire()`` sleeps 0.01 s in a loop until a connection is free, for as
    long as that takes; it is not a 0.01 s delay before each retry. The reset connection is sent
    again at once while a refused connection waits 1 s: RTY201 for the reset, as before."""
    assert "RTY201" in _codes(POOL_THAT_WAITS_FOR_A_FREE_CONNECTION, SYNC)


RECONNECT_UNTIL_CONNECTED = """
    class NetworkError(Exception):
        pass

    class Connection:
        {def} _opt_reconnect(self):
            attempt = 0
            while True:
                {sleep}(0.1)
                try:
                    {aw}self.{call}()
                except NetworkError:
                    pass
                else:
                    if self.connected:
                        break
                if attempt == 10:
                    raise NetworkError("gave up")
                attempt += 1
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_connect_that_leaves_once_connected_is_a_reconnect_retry(flavour):
    """tarantool's ``_opt_reconnect``: ``self.connect_basic()`` in the attempt, ``else: if
    self.connected: break``: the flag the connect sets is the success exit, so a failed connect
    goes round after the same 0.1 s (RTY202). The same flag read after a call that does not
    connect (``self.ping()``) says nothing about that call: no retry is claimed."""
    assert "RTY202" in _codes(RECONNECT_UNTIL_CONNECTED.replace("{call}", "connect_basic"), flavour)
    assert _codes(RECONNECT_UNTIL_CONNECTED.replace("{call}", "ping"), flavour) == []


CAPPED_RETRY_COUNT = """
    import requests

    {def} call(url, opts):
        num_retries = opts.get("number_retries", 2)
        if opts.get("post"):
            num_retries = 0
        num_retries = {last}
        try_count = 0
        while True:
            try:
                try_count += 1
                return {aw}requests.get(url)
            except requests.ConnectionError:
                if try_count > num_retries:
                    raise
            {sleep}(2 ** try_count)
"""


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_a_limit_clamped_by_min_bounds_the_attempts(flavour):
    """hubspot3's ``_call_raw``: ``num_retries = min(num_retries, 6)`` whatever the options say,
    then ``if try_count > num_retries: raise``: at most 7 attempts, so the doubling delay never
    passes 64 s and no cap is missing (no RTY204; the missing jitter is still RTY203). Clamped
    at 60 instead, the schedule runs past the 2 min max-delay."""
    clamped = _codes(CAPPED_RETRY_COUNT.replace("{last}", "min(num_retries, 6)"), flavour)
    assert "RTY203" in clamped and "RTY204" not in clamped
    assert "RTY204" in _codes(CAPPED_RETRY_COUNT.replace("{last}", "min(num_retries, 60)"), flavour)


@pytest.mark.parametrize("flavour", [SYNC, ASYNC], ids=["sync", "async"])
def test_builtin_pow_grows_the_delay_like_the_power_operator(flavour):
    """hubspot3 writes ``(pow(2, try_count - 1) - 1) * self.sleep_multiplier``: the builtin
    ``pow`` doubles the delay as ``2 ** n`` does (RTY203, no jitter). ``pow(2, 3)`` of two
    literals is one fixed 8 s delay (RTY202)."""
    growing = CAPPED_RETRY_COUNT.replace("{last}", "min(num_retries, 6)").replace(
        "2 ** try_count", "(pow(2, try_count - 1) - 1) * 1")
    assert "RTY203" in _codes(growing, flavour)
    fixed = CAPPED_RETRY_COUNT.replace("{last}", "min(num_retries, 6)").replace("2 ** try_count", "pow(2, 3)")
    assert "RTY202" in _codes(fixed, flavour) and "RTY203" not in _codes(fixed, flavour)


def test_a_wait_on_entry_sees_the_counter_the_call_made_again_passes():
    """routingpy's ``_request(..., retry_counter + 1)`` waits ``1.5 ** (retry_counter - 1)``
    (jittered by half) on entry: the first retry runs with ``retry_counter == 1`` and waits
    about 1 s, not 1.5 ** -1 s: the schedule ``explain`` shows starts where the code starts."""
    from retrylint.schedule import nominal_delay

    source = "import asyncio, time, random, errno, os, socket\n" + textwrap.dedent(
        COUNTER_GUARDED_ENTRY_WAIT.replace("{guard}", "retry_counter > 0")).format(**SYNC)
    (policy,) = check_source(source, "case.py", settings_with(CODES), want_policies=True).policies
    assert [round(float(nominal_delay(policy.delay, k)), 3) for k in (1, 2, 3)] == [1.0, 1.5, 2.25]
