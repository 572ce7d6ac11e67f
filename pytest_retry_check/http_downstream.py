"""The fake downstream as a real HTTP/1.1 server on 127.0.0.1.

requests, urllib3 and httpx retry configurations go through real sockets, so what is tested is
the retry configuration as the service really wires it. The server knows when it is working on
a request, which the virtual asyncio loop asks before jumping time (``busy``).
"""

from __future__ import annotations

import ctypes
import json
import math
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, List, Set

from .downstream import response_parts
from .timeline import RetryGuardTripped

if TYPE_CHECKING:
    from .downstream import FakeDownstream

__all__ = ["DownstreamHTTPServer"]

HANG_OVER_SOCKETS = (
    "A real socket's timeout runs on real time, so it cannot end a virtual hang: script hang() for the "
    "in-process routes (downstream.httpx_transport(), downstream.httpx_handler for respx, "
    "downstream.responses_callback for responses) or the callable, whose timeouts are virtual."
)

_REASONS = {200: "OK", 408: "Request Timeout", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    rbufsize = 0  # unbuffered: "readable socket" must mean "a request is waiting" (see busy())
    # Buffered, flushed once per response: headers and body leave in one segment. Two small
    # writes meet Nagle + delayed ACK and the body lands ~40 ms later, after we told the event
    # loop the server was done.
    wbufsize = 65536

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server: "DownstreamHTTPServer"  # type: ignore[assignment]

    def handle(self) -> None:
        self.close_connection = True
        while True:
            # Wait for the next request without consuming it, and count it as in flight before
            # reading, so busy() never has a moment where a request is neither readable nor counted.
            if not self.server.wait_readable(self.connection):
                return
            with self.server.working():
                self.handle_one_request()
            if self.close_connection:
                return

    def _answer(self) -> None:
        downstream = self.server.downstream
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            record = downstream.record("http", method=self.command, path=self.path, headers=dict(self.headers.items()), body=body)
        except BaseException as exc:  # the guard tripped: tell the client, the clock remembers
            self._send(503, {"error": "retry guard tripped", "detail": str(exc).splitlines()[0]}, {})
            self.server.interrupt_owner(exc)
            return
        outcome = record.outcome
        if outcome.latency == math.inf:
            # A socket timeout is real time: it cannot fire in virtual time. Say so, loudly.
            exc = downstream.clock.trip(
                f"call #{record.number} to {downstream.name} hangs (scripted hang()) over the real HTTP server",
                hint=HANG_OVER_SOCKETS,
            )
            self._send(503, {"error": "retry guard tripped", "detail": str(exc).splitlines()[0]}, {})
            self.server.interrupt_owner(exc)
            return
        if outcome.latency:
            downstream.clock.advance(outcome.latency)  # the answer comes that much later (virtual)
            import warnings

            from ._warnings import UntestedTimeoutWarning
            from .timeline import format_seconds

            warnings.warn(
                UntestedTimeoutWarning(
                    f"call #{record.number} to {downstream.name} over its real HTTP server answered after "
                    f"{format_seconds(outcome.latency)} of virtual time: a client timeout shorter than that could not fire "
                    "(a real socket's timeout runs on real time), so it was not tested. Test timeouts with the in-process routes "
                    "(downstream.httpx_transport(), downstream.httpx_handler for respx, downstream.responses_callback for "
                    "responses) or the callable, whose timeouts are virtual."
                ),
                stacklevel=1,
            )
        if outcome.kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        headers, body = response_parts(record, downstream.clock)
        self._send(outcome.status, body, headers)

    def _send(self, status: int, body: Any, headers: dict) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status, _REASONS.get(status))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


class DownstreamHTTPServer:
    """Accept loop in one thread, one thread per connection; stops at once on ``close()``."""

    def __init__(self, downstream: "FakeDownstream") -> None:
        self.downstream = downstream
        #: The thread that asked for the URL: the test, where the code under test runs.
        self.owner = threading.get_ident()
        self._interrupted = False
        self.probe_clock: Any = None
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._wake_r, self._wake_w = socket.socketpair()  # written once on close: wakes every select()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._connections: Set[socket.socket] = set()
        self._threads: List[threading.Thread] = []
        self._closed = False
        self._accepter = threading.Thread(target=self._accept_loop, name=f"fake-downstream-{self.port}", daemon=True)
        self._accepter.start()

    # -- threads ----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while True:
            readable, _, _ = select.select([self._listener, self._wake_r], [], [])
            if self._wake_r in readable:
                return
            # Counted as in flight from before accept() until the socket is watched: between
            # the two the connection is neither a readable listener nor a known socket, and an
            # idle event loop would jump its clock past the client's timeout.
            with self._lock:
                self._in_flight += 1
            try:
                conn, address = self._listener.accept()
            except OSError:
                with self._lock:
                    self._in_flight -= 1
                return
            with self._lock:
                self._connections.add(conn)
                self._in_flight -= 1
            thread = threading.Thread(target=self._serve, args=(conn, address), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, address: Any) -> None:
        try:
            _Handler(conn, address, self)
        except (OSError, ValueError):
            pass  # client went away mid-request
        finally:
            with self._lock:
                self._connections.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    def interrupt_owner(self, exc: BaseException) -> None:
        """Raise the guard's exception in the test's thread, once.

        A retry loop that never sleeps and swallows every HTTP error would otherwise keep
        calling a tripped server forever: the clock's guard only runs inside sleeps. CPython
        delivers the exception at the thread's next bytecode, i.e. as soon as the client has
        read this 503 and returns to Python code.
        """
        if self._interrupted or not isinstance(exc, RetryGuardTripped) or self.owner == threading.get_ident():
            return
        self._interrupted = True
        message = str(exc)
        clock = self.downstream.clock

        def init(self: BaseException, *_: Any) -> None:
            RetryGuardTripped.__init__(self, message)
            clock.tripped = self  # type: ignore[assignment]  # the one the test sees (and may expect)

        base = type(exc) if isinstance(exc, RetryGuardTripped) else RetryGuardTripped
        tripped = type(base.__name__, (base,), {"__init__": init, "__module__": base.__module__, "__qualname__": base.__qualname__})
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.owner), ctypes.py_object(tripped))

    def wait_readable(self, conn: socket.socket) -> bool:
        try:
            readable, _, _ = select.select([conn, self._wake_r], [], [])
        except (OSError, ValueError):
            return False
        return conn in readable and self._wake_r not in readable

    def working(self) -> "_Working":
        return _Working(self)

    # -- for the virtual event loop ---------------------------------------------------------
    def busy(self) -> bool:
        """True while a request is waiting to be accepted, read, or answered."""
        with self._lock:
            if self._in_flight:
                return True
            watched = [self._listener, *self._connections]
        try:
            readable, _, _ = select.select(watched, [], [], 0)
        except (OSError, ValueError):
            return False
        return bool(readable)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake_w.send(b"x")
        self._accepter.join(5)
        for thread in list(self._threads):
            thread.join(5)
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()


class _Working:
    def __init__(self, server: DownstreamHTTPServer) -> None:
        self.server = server

    def __enter__(self) -> None:
        with self.server._lock:
            self.server._in_flight += 1

    def __exit__(self, *exc: Any) -> None:
        with self.server._lock:
            self.server._in_flight -= 1
