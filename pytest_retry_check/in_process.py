"""The fake downstream as an in-process HTTP route, for code that is not pointed at a URL.

- httpx: ``httpx.Client(transport=downstream.httpx_transport())`` (also ``AsyncClient``), or with
  respx, ``respx.get("https://orders.example/...").mock(side_effect=downstream.httpx_handler)``;
- requests with responses: ``responses.add_callback(responses.GET, url, callback=downstream.responses_callback)``.

The answer is the same as the HTTP server's (status, JSON body, ``Retry-After`` as whole seconds
or an HTTP-date) and the call is recorded with its method and path. No socket is opened, so it
is fast, and a slow or hanging answer meets the request's own timeout on the virtual clock.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Tuple
from urllib.parse import urlsplit

from .downstream import response_parts
from .slow_answers import wait_for_answer

if TYPE_CHECKING:
    from .downstream import CallRecord, FakeDownstream

__all__ = ["answer", "httpx_handler", "httpx_transport", "responses_callback"]


def answer(
    downstream: "FakeDownstream", method: str, url: str, timeout: Any, timeout_error: Any, headers: Any = None, body: Any = b""
) -> Tuple["CallRecord", int, Dict[str, str], bytes]:
    """Record one request and produce its answer: (record, status, headers, body).
    ``timeout_error`` is raised (virtual time having moved by the timeout) when a slow or
    hanging answer does not come within ``timeout``."""
    __tracebackhide__ = True
    parts = urlsplit(url)
    return answer_path(downstream, method, parts.path + (f"?{parts.query}" if parts.query else ""), timeout, timeout_error, headers, body)


def answer_path(
    downstream: "FakeDownstream", method: str, path: str, timeout: Any, timeout_error: Any, headers: Any = None, body: Any = b""
) -> Tuple["CallRecord", int, Dict[str, str], bytes]:
    """:func:`answer` for a request whose path (with its query) is known; ``headers`` and
    ``body`` are the request's (recorded: business keys and idempotency keys are read from them)."""
    __tracebackhide__ = True
    sent = {str(k): str(v) for k, v in headers.items()} if headers else {}
    content = body.encode() if isinstance(body, str) else bytes(body or b"")
    record = downstream.record("in-process", method=method.upper(), path=path or "/", headers=sent, body=content)
    wait_for_answer(downstream, record, timeout, timeout_error=timeout_error)
    extra, body = response_parts(record, downstream.clock)
    headers = {"Content-Type": "application/json", **extra}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return record, record.outcome.status, headers, data


def httpx_handler(downstream: "FakeDownstream", request: Any) -> Any:
    """An ``httpx.MockTransport`` handler / respx side effect: an ``httpx.Response``."""
    __tracebackhide__ = True
    import httpx

    timeout = request.extensions.get("timeout")

    def timed_out(message: str) -> BaseException:
        return httpx.ReadTimeout(message, request=request)

    # The raw path (with its query) as sent: no re-serialising and re-parsing of the URL.
    path = request.url.raw_path.decode("ascii", "replace")
    record, status, headers, data = answer_path(downstream, request.method, path, timeout, timed_out, request.headers, request.read())
    if record.outcome.kind == "drop":
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
    # What Response(content=data) makes (the same headers, in the same order, the body read),
    # built directly: content= costs ~7 us a response in httpx's type checks (a tenth of the
    # herd check of 2,000 httpx clients).
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
    raw.append((b"Content-Length", str(len(data)).encode()))
    response = httpx.Response(status, headers=raw, stream=httpx.ByteStream(data), request=request)
    response.read()
    return response


def httpx_transport(downstream: "FakeDownstream") -> Any:
    import httpx

    return httpx.MockTransport(lambda request: httpx_handler(downstream, request))


def responses_callback(downstream: "FakeDownstream", request: Any) -> Tuple[int, Dict[str, str], bytes]:
    """A ``responses.add_callback`` callback: (status, headers, body)."""
    __tracebackhide__ = True
    import requests

    timeout = getattr(request, "req_kwargs", {}).get("timeout")

    def timed_out(message: str) -> BaseException:
        return requests.exceptions.ReadTimeout(message, request=request)

    body = request.body if isinstance(request.body, (bytes, str)) else b""  # a file-like body is not consumed here
    record, status, headers, data = answer(downstream, request.method or "GET", request.url or "/", timeout, timed_out, request.headers, body)
    if record.outcome.kind == "drop":
        raise requests.exceptions.ConnectionError("Connection aborted: the server closed the connection without an answer", request=request)
    return status, headers, data
