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

__all__ = ["answer", "httpx_async_handler", "httpx_handler", "httpx_transport", "responses_callback"]


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
    record = _record(downstream, method, path, headers, body)
    wait_for_answer(downstream, record, timeout, timeout_error=timeout_error)
    return _parts(downstream, record)


def _record(downstream: "FakeDownstream", method: str, path: str, headers: Any, body: Any) -> "CallRecord":
    __tracebackhide__ = True
    sent = {str(k): str(v) for k, v in headers.items()} if headers else {}
    content = body.encode() if isinstance(body, str) else bytes(body or b"")
    return downstream.record("in-process", method=method.upper(), path=path or "/", headers=sent, body=content)


def _parts(downstream: "FakeDownstream", record: "CallRecord") -> Tuple["CallRecord", int, Dict[str, str], bytes]:
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
    return _httpx_response(record, status, headers, data, request)


async def httpx_async_handler(downstream: "FakeDownstream", request: Any) -> Any:
    """The async twin of :func:`httpx_handler` (``AsyncClient``): a slow or hanging answer is an
    asyncio timer, so a deadline around the call (``asyncio.timeout``, ``wait_for``, anyio's)
    ends it on virtual time, as it would end the real request; the request's own timeout gives
    ``httpx.ReadTimeout``."""
    __tracebackhide__ = True
    import asyncio

    import httpx

    from .slow_answers import _seconds, await_answer
    from .timeline import format_seconds

    path = request.url.raw_path.decode("ascii", "replace")
    record = _record(downstream, request.method, path, request.headers, await request.aread())
    latency = record.outcome.latency
    if latency:
        limit = _seconds(request.extensions.get("timeout"))
        if limit is not None and limit < latency:
            try:
                await asyncio.wait_for(await_answer(downstream, record), limit)
            except asyncio.TimeoutError:
                message = f"{downstream.name} call #{record.number}: no answer within the {format_seconds(limit)} timeout ({record.outcome.label})"
                raise httpx.ReadTimeout(message, request=request) from None
        else:
            await await_answer(downstream, record)
    return _httpx_response(*_parts(downstream, record), request)


def _httpx_response(record: "CallRecord", status: int, headers: Dict[str, str], data: bytes, request: Any) -> Any:
    __tracebackhide__ = True
    import httpx

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
    """A transport for ``httpx.Client`` and ``httpx.AsyncClient``: sync requests are answered by
    :func:`httpx_handler`, async ones by :func:`httpx_async_handler`."""
    global _Transport
    if _Transport is None:
        import httpx

        class Transport(httpx.MockTransport):
            downstream: "FakeDownstream"

            async def handle_async_request(self, request: Any) -> Any:
                __tracebackhide__ = True
                await request.aread()
                return await httpx_async_handler(self.downstream, request)

        _Transport = Transport
    transport = _Transport(lambda request: httpx_handler(downstream, request))
    transport.downstream = downstream
    return transport


_Transport: Any = None


def _sleep_urllib3_backoff(downstream: "FakeDownstream") -> None:
    """``responses`` replays a urllib3 ``Retry`` itself (``_on_request`` calls itself again)
    without the sleep urllib3 makes between attempts. Make that sleep here, on the virtual
    clock, as urllib3 would: the previous answer's ``Retry-After`` when it had one and the
    ``Retry`` respects it, else ``Retry.get_backoff_time()``."""
    __tracebackhide__ = True
    import sys

    frame = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return
        if frame.f_code.co_name == "_on_request" and (frame.f_globals.get("__name__") or "").startswith("responses"):
            break
        frame = frame.f_back
    else:
        return
    retries = frame.f_locals.get("retries")
    if retries is None or not getattr(retries, "history", None) or not hasattr(retries, "get_backoff_time"):
        return  # the first attempt, or no urllib3 Retry
    clock = downstream.clock
    wait = None
    previous = downstream.calls[-1] if downstream.calls else None
    if getattr(retries, "respect_retry_after_header", False) and previous is not None and previous.retry_after_until is not None:
        wait = max(0.0, previous.retry_after_until - clock.now())
    if wait is None:
        wait = retries.get_backoff_time()
    if wait > 0:
        clock.sleep(wait, kind="urllib3 Retry", _depth=2)


def responses_callback(downstream: "FakeDownstream", request: Any) -> Tuple[int, Dict[str, str], bytes]:
    """A ``responses.add_callback`` callback: (status, headers, body)."""
    __tracebackhide__ = True
    import requests

    timeout = getattr(request, "req_kwargs", {}).get("timeout")

    def timed_out(message: str) -> BaseException:
        return requests.exceptions.ReadTimeout(message, request=request)

    body = request.body if isinstance(request.body, (bytes, str)) else b""  # a file-like body is not consumed here
    _sleep_urllib3_backoff(downstream)
    record, status, headers, data = answer(downstream, request.method or "GET", request.url or "/", timeout, timed_out, request.headers, body)
    if record.outcome.kind == "drop":
        raise requests.exceptions.ConnectionError("Connection aborted: the server closed the connection without an answer", request=request)
    return status, headers, data
