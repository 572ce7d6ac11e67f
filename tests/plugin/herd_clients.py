"""Hand-written retry loops with each jitter of RETRY_DOCTRINE.md §1.3, as a service would write
them (``time.sleep`` / ``asyncio.sleep``, the global ``random``), shared by the herd and
simulation tests. ``make_client(kind)`` returns ``client(downstream)``."""

import asyncio
import random
import time

# The doctrine's kinds. "token" is ±1 %: jitter that is there, but too small to do anything.
PASSING = ("full", "equal", "decorrelated", "band")
FAILING = ("none", "token")


def next_delay(kind, attempt, previous, *, base, cap):
    """The delay before retry ``attempt`` (1-based): (delay, state for decorrelated)."""
    d = min(cap, base * 2 ** (attempt - 1))
    if kind == "none":
        return d, previous
    if kind == "token":
        return d * random.uniform(0.99, 1.01), previous
    if kind == "band":
        return d * random.uniform(0.5, 1.5), previous
    if kind == "full":
        return random.uniform(0, d), previous
    if kind == "equal":
        return d / 2 + random.uniform(0, d / 2), previous
    if kind == "decorrelated":
        delay = min(cap, random.uniform(base, previous * 3))
        return delay, delay
    raise ValueError(kind)


def make_client(kind, *, attempts=10, base=1.0, cap=20.0):
    """A sync client: up to ``attempts`` calls of ``downstream()``, sleeping between them."""

    def client(downstream):
        previous = base
        for attempt in range(1, attempts + 1):
            try:
                return downstream()
            except ConnectionError:
                if attempt == attempts:
                    raise
                delay, previous = next_delay(kind, attempt, previous, base=base, cap=cap)
                time.sleep(delay)

    client.__name__ = client.__qualname__ = f"{kind}_client"
    return client


def make_async_client(kind, *, attempts=10, base=1.0, cap=20.0):
    """The same loop, async: ``await downstream.acall()`` and ``await asyncio.sleep(...)``."""

    async def client(downstream):
        previous = base
        for attempt in range(1, attempts + 1):
            try:
                return await downstream.acall()
            except ConnectionError:
                if attempt == attempts:
                    raise
                delay, previous = next_delay(kind, attempt, previous, base=base, cap=cap)
                await asyncio.sleep(delay)

    client.__name__ = client.__qualname__ = f"async_{kind}_client"
    return client
