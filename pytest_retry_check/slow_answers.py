"""Slow and hanging answers of the fake downstream, on the virtual clock.

A scripted ``slow(latency)`` or ``hang()`` outcome costs virtual time, so a client's timeout is
tested as it really fires: a sync callable honours a ``timeout=`` keyword, an async call is an
asyncio timer (``asyncio.wait_for`` cancels it), the in-process HTTP routes read the request's
timeout. A hang that no timeout ends trips the guard: for real it would wait forever.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional

from .timeline import format_seconds

if TYPE_CHECKING:
    from .downstream import CallRecord, FakeDownstream

NO_TIMEOUT_HINT = (
    "The client set no timeout, so for real it would wait forever: give the call a timeout "
    "(requests/httpx timeout=, asyncio.wait_for, or timeout= on the fake's callable)."
)


def _seconds(timeout: Any) -> Optional[float]:
    """A timeout as seconds: a number, or the read part of (connect, read) / httpx's dict."""
    if isinstance(timeout, dict):
        timeout = timeout.get("read", timeout.get("pool"))
    elif isinstance(timeout, (tuple, list)) and len(timeout) == 2:
        timeout = timeout[1]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        return None
    return float(timeout)


def hang_trip(downstream: "FakeDownstream", record: "CallRecord") -> BaseException:
    """The guard's exception for a hanging call without a timeout."""
    return downstream.clock.trip(
        f"call #{record.number} to {downstream.name} hangs (scripted hang()) and no timeout ended it",
        hint=NO_TIMEOUT_HINT,
    )


def wait_for_answer(downstream: "FakeDownstream", record: "CallRecord", timeout: Any, *, timeout_error: Any = None) -> None:
    """Sync: move virtual time by the answer's latency, or by ``timeout`` and raise when that
    comes first (``timeout_error(message)``, default :class:`DownstreamTimeout`)."""
    __tracebackhide__ = True
    latency = record.outcome.latency
    if not latency:
        return
    limit = _seconds(timeout)
    clock = downstream.clock
    if limit is not None and limit < latency:
        clock.advance(limit)
        from .downstream import DownstreamTimeout

        message = f"{downstream.name} call #{record.number}: no answer within the {format_seconds(limit)} timeout ({record.outcome.label})"
        raise (timeout_error or DownstreamTimeout)(message)
    if latency == math.inf:
        raise hang_trip(downstream, record)
    clock.advance(latency)


async def await_answer(downstream: "FakeDownstream", record: "CallRecord") -> None:
    """Async: the answer's latency is an asyncio timer, so timeouts around the call fire first."""
    __tracebackhide__ = True
    latency = record.outcome.latency
    if not latency:
        return
    from .clock import _real_asyncio_sleep  # not recorded: the downstream's time, not a client sleep

    clock = downstream.clock
    if latency == math.inf:
        # Wait until just short of the guard's horizon (a timeout around the call cancels this
        # first), then trip here, in the caller's task, where the test can see it.
        await _real_asyncio_sleep(max(clock.max_virtual_time - clock.now() - 1.0, 0.0))
        raise hang_trip(downstream, record)
    await _real_asyncio_sleep(latency)
