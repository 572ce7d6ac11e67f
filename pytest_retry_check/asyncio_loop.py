"""Virtual time for asyncio event loops.

Under freezegun ``loop.time()`` reads the frozen ``time.monotonic``, so a loop whose only work
is a pending timer would wait forever. While a fake clock is active, the selectors' ``select``
(which the loop calls with "time until the next timer" as its timeout) is wrapped: when nothing
is ready it moves the clock to the next timer **plus 1 µs** instead of blocking. (Without that
µs the loop spins: the fake monotonic is about 1.7e9, where ``now + 1e-9 == now``.)

This works for any loop built on ``selectors`` -- the one pytest-asyncio made before the test,
``asyncio.run``, a loop in another thread -- because it is installed on the selector classes,
and it only acts when the caller is ``asyncio.base_events`` (socketserver and others use the
same classes). Real I/O that is in flight (a request to the fake HTTP downstream) is waited for
before time jumps, so a client timeout cannot fire early.
"""

from __future__ import annotations

import asyncio
import selectors
import sys
from typing import Any, Awaitable, Callable, List, Optional, Tuple, TypeVar

from .clock import FakeClock, current_clock, real_monotonic
from .timeline import format_seconds

__all__ = ["install", "run"]

T = TypeVar("T")

_BASE_EVENTS = "asyncio.base_events"


def _selector_classes() -> List[type]:
    classes = []
    for value in vars(selectors).values():
        if isinstance(value, type) and issubclass(value, selectors.BaseSelector) and "select" in vars(value):
            classes.append(value)
    return classes


def install() -> List[Tuple[Any, str, Any]]:
    """Wrap every selector class' ``select``; returns the undo list (target, attribute, original)."""
    undo = []
    for cls in _selector_classes():
        original = vars(cls)["select"]
        cls.select = _wrap(original)  # type: ignore[attr-defined]
        undo.append((cls, "select", original))
    return undo


def _wrap(real_select: Callable[..., Any]) -> Callable[..., Any]:
    def select(self: selectors.BaseSelector, timeout: Optional[float] = None) -> Any:
        if timeout is None or timeout <= 0:
            return real_select(self, timeout)
        clock = current_clock()
        if clock is None or sys._getframe(1).f_globals.get("__name__") != _BASE_EVENTS:
            return real_select(self, timeout)
        return _virtual_select(self, real_select, timeout, clock)

    select.__wrapped__ = real_select  # type: ignore[attr-defined]
    return select


def _virtual_select(selector: selectors.BaseSelector, real_select: Callable[..., Any], timeout: float, clock: FakeClock) -> Any:
    events = real_select(selector, 0)
    if events:
        return events
    # Real work the loop is waiting for (our HTTP downstream answering) comes first.
    deadline = real_monotonic() + clock.io_wait_limit
    while clock.io_busy() and real_monotonic() < deadline:
        events = real_select(selector, 0.0005)
        if events:
            return events
    # Sockets other than the loop's self-pipe: give unknown peers a brief real chance.
    if clock.io_grace and len(selector.get_map()) > 1:
        events = real_select(selector, clock.io_grace)
        if events:
            return events
    if clock.now() + timeout > clock.max_virtual_time:
        raise clock.trip(
            f"the event loop's next timer is {format_seconds(timeout)} away at +{format_seconds(clock.now())}, "
            f"past max_virtual_time={format_seconds(clock.max_virtual_time)}"
        )
    clock.advance(timeout + 1e-6)
    return []


def run(main: Awaitable[T], *, clock: Optional[FakeClock] = None) -> T:
    """``asyncio.run(main)`` under ``clock`` (a new :class:`FakeClock` if None)."""
    if clock is None:
        clock = FakeClock()
    if clock.active:
        return asyncio.run(main)  # type: ignore[arg-type]
    with clock:
        return asyncio.run(main)  # type: ignore[arg-type]
