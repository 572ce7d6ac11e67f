"""Real time, read past the fake clock: to notice code that waits for real while the fake clock runs.

A sleep function captured before the clock started (``Retrying(sleep=time.sleep)`` built at
import, a default argument, a closure) is the real one: it blocks for real and virtual time does
not move, so every delay looks like 0 s and a bounded-wait check passes. What gives it away is
real time passing between two calls to a fake downstream while virtual time does not. Idle real
time (wall minus CPU time) is measured, so code that computes between calls is not mistaken
for sleeping.
"""

from __future__ import annotations

import gc
import time
import types
from typing import Any, List, Optional, Sequence

# Bound at import, before any fake clock: freezegun skips this package's modules.
_wall = time.perf_counter
_cpu = time.process_time

#: The real functions that block; a reference to one of them held in an object, closure or
#: default argument escapes the fake clock.
REAL_WAITERS: Sequence[Any] = (time.sleep,)
#: The real clock readers, which escape it the same way (``field(default_factory=time.time)``).
REAL_CLOCKS: Sequence[Any] = (time.time, time.monotonic, time.perf_counter, time.time_ns, time.monotonic_ns)

#: Default real seconds of idling between two calls, with virtual time standing still, that
#: count as a real sleep. Well above scheduling noise on a busy machine, below any real backoff.
DEFAULT_MAX_REAL_WAIT = 1.0


def idle_seconds() -> float:
    """Real seconds this process spent not computing (wall time minus CPU time), from some origin."""
    return _wall() - _cpu()


def holders(targets: Optional[Sequence[Any]] = None, *, limit: int = 5) -> List[str]:
    """Where references to the real functions ``targets`` are held outside any module namespace
    (module names are patched by the clock): "tenacity.Retrying object's .sleep", ... Slow
    (a walk of the garbage collector's objects): only for a failure message."""
    found: List[str] = []
    for target in targets if targets is not None else REAL_WAITERS:
        name = getattr(target, "__name__", repr(target))
        for referrer in gc.get_referrers(target):
            where = _holder(referrer, target)
            if where and f"{where} (the real {name})" not in found:
                found.append(f"{where} (the real {name})")
            if len(found) >= limit:
                return found
    return found


def _holder(referrer: Any, target: Any) -> Optional[str]:
    if isinstance(referrer, dict):
        keys = [k for k, v in referrer.items() if v is target and k != "__wrapped__"]
        if not keys:
            return None
        for owner in gc.get_referrers(referrer):
            if getattr(owner, "__dict__", None) is not referrer or isinstance(owner, types.ModuleType):
                continue
            if isinstance(owner, type):
                return f"{owner.__module__}.{owner.__qualname__}.{keys[0] if keys else '?'}"
            cls = type(owner)
            return f"a {cls.__module__}.{cls.__qualname__} object's .{keys[0] if keys else '?'}"
        return None
    if isinstance(referrer, tuple):
        for owner in gc.get_referrers(referrer):
            if isinstance(owner, types.FunctionType) and owner.__defaults__ is referrer:
                return f"a default argument of {owner.__module__}.{owner.__qualname__}"
        return None
    if type(referrer).__name__ == "cell":
        for closure in gc.get_referrers(referrer):
            if isinstance(closure, tuple):
                for owner in gc.get_referrers(closure):
                    if isinstance(owner, types.FunctionType) and owner.__closure__ is closure:
                        return f"a variable closed over by {owner.__module__}.{owner.__qualname__}"
        return None
    if type(referrer).__name__ == "Field" and hasattr(referrer, "default_factory"):
        return f"the default_factory of dataclass field {getattr(referrer, 'name', '?')!r}"
    # An object whose attribute holds it (Python 3.11+ keeps small instance dicts inline, so
    # the object itself is the referrer).
    attrs = getattr(referrer, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(referrer, (type, types.ModuleType)):
        keys = [k for k, v in attrs.items() if v is target and k != "__wrapped__"]
        if keys:
            cls = type(referrer)
            return f"a {cls.__module__}.{cls.__qualname__} object's .{keys[0]}"
    if type(referrer).__name__ == "partial":
        return f"functools.partial({getattr(target, '__name__', '?')}, ...)"
    return None


def real_sleep_message(downstream: str, before: int, after: int, real: float, virtual: float) -> str:
    """The failure for real time passing between calls ``before`` and ``after`` while virtual time did not."""
    lines = [
        f"the code under test slept for real: {real:.1f} real seconds passed between calls #{before} and #{after} "
        f"to {downstream} while virtual time moved {virtual:.3f} s.",
        "A sleep function captured before the fake clock started (Retrying(sleep=time.sleep) built at import, "
        "a default argument, a closure) is the real one: it blocks, and every delay looks like 0 s.",
    ]
    found = holders(REAL_WAITERS)
    if found:
        lines.append("real sleep functions held at: " + "; ".join(found))
    clocks = holders(REAL_CLOCKS, limit=3)
    if clocks:
        lines.append("real clock functions held at (they read real time too): " + "; ".join(clocks))
    lines.append(
        "fix: look the sleep up when it is called (time.sleep inside a function, or the library's default), or build "
        "the object inside the test; if the wait is meant to be real, @pytest.mark.fake_clock(max_real_wait=None)."
    )
    return "\n".join(lines)
