"""Real time, read past the fake clock: to notice code that waits for real while the fake clock runs.

A sleep function captured before the clock started (``Retrying(sleep=time.sleep)`` built at
import, a default argument, a closure) is the real one: it blocks for real and virtual time does
not move, so every delay looks like 0 s and a bounded-wait check passes. What gives it away is
real time passing between two calls to a fake downstream while virtual time does not. Idle real
time (wall minus CPU time) is measured, so code that computes between calls is not mistaken
for sleeping.
"""

from __future__ import annotations

import datetime as _datetime
import functools
import gc
import os
import sys
import time
import threading
import types
from typing import Any, Dict, List, Optional, Sequence, Tuple

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
#: A gap between two calls that idles at least this long while virtual time stands still counts
#: towards ``max_real_wait`` with the gaps right before it: real sleeps of 0.1, 0.2, 0.4, 0.8 s add
#: up. A call to the fake downstream, in-process or over local HTTP, idles far less.
REAL_GAP = 0.05


def idle_seconds() -> float:
    """Real seconds this process spent not computing (wall time minus CPU time), from some origin."""
    return _wall() - _cpu()


def holders(targets: Optional[Sequence[Any]] = None, *, limit: int = 5) -> List[str]:
    """Where references to the real functions ``targets`` are held outside any module namespace
    (module names are patched by the clock): "tenacity.Retrying object's .sleep", ... Slow
    (a walk of the garbage collector's objects): only for a failure message."""
    found: List[str] = []
    pairs: List[Tuple[Any, str]] = []
    for target in targets if targets is not None else REAL_WAITERS:
        pairs.append((target, getattr(target, "__name__", repr(target))))
    if targets is None or targets is REAL_WAITERS:
        # A bound threading.Event().wait taken before the clock started (an "interruptible
        # sleep"): each is its own method object, found through the function it binds.
        from .clock import _real_event_wait

        pairs += [(m, "threading.Event.wait") for m in gc.get_referrers(_real_event_wait) if isinstance(m, types.MethodType)]
    for target, name in pairs:
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


def real_sleep_message(downstream: str, before: int, after: int, real: float, virtual: float, gaps: int = 1) -> str:
    """The failure for real time passing between calls ``before`` and ``after`` while virtual time did not."""
    between = f"between calls #{before} and #{after}" if gaps <= 1 else f"over calls #{before} to #{after} ({gaps} gaps of {REAL_GAP:g} s or more each)"
    lines = [
        f"the code under test slept for real: {real:.1f} real seconds passed {between} "
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


# -- real clock and sleep functions captured before the clock started -------------------------
from ._warnings import CapturedClockWarning, RealTimeWarning  # noqa: E402  (re-exported)

_DATETIME_CLASSES = (_datetime.datetime, _datetime.date)
_DATETIME_READERS = frozenset({"now", "utcnow", "today"})
_LIBRARY_PREFIXES = ("pytest_retry_check", "_pytest", "pytest", "pluggy", "freezegun", "hypothesis", "_hypothesis", "xdist", "execnet")


_reals_cache: List[Any] = [None, None]


def _real_functions() -> Dict[int, Tuple[Any, str]]:
    # Keyed on the two tuples, so a test can add a stand-in to REAL_WAITERS / REAL_CLOCKS.
    key = (REAL_WAITERS, REAL_CLOCKS)
    if _reals_cache[0] is not None and _reals_cache[0][0] is key[0] and _reals_cache[0][1] is key[1]:
        return _reals_cache[1]
    from .clock import _real_asyncio_sleep  # captured there at import, before any clock

    found: Dict[int, Tuple[Any, str]] = {id(_real_asyncio_sleep): (_real_asyncio_sleep, "asyncio.sleep")}
    for function in (*REAL_WAITERS, *REAL_CLOCKS):
        module = getattr(function, "__module__", None) or "time"
        found[id(function)] = (function, f"{module}.{getattr(function, '__name__', '?')}")
    _reals_cache[:] = [key, found]
    return found


def real_function_name(value: Any, reals: Optional[Dict[int, Tuple[Any, str]]] = None) -> Optional[str]:
    """``"time.monotonic"`` when ``value`` is the real (unpatched) clock or sleep function
    (``time.time/monotonic/perf_counter/sleep`` and ``_ns``, ``asyncio.sleep``, ``datetime.now``
    of the real class), else None."""
    entry = (reals if reals is not None else _real_functions()).get(id(value))
    if entry is not None and entry[0] is value:
        return entry[1]
    if isinstance(value, types.MethodType) and isinstance(getattr(value, "__self__", None), threading.Event):
        from .clock import _real_event_wait

        if value.__func__ is _real_event_wait:  # an "interruptible sleep" bound before the clock
            return "threading.Event.wait"
    if isinstance(value, types.BuiltinMethodType) and getattr(value, "__name__", "") in _DATETIME_READERS:
        owner = getattr(value, "__self__", None)
        if any(owner is cls for cls in _DATETIME_CLASSES):
            return f"{owner.__module__}.{owner.__name__}.{value.__name__}"
    return None


_library_dirs: Optional[Tuple[str, ...]] = None
_project_modules: Dict[str, bool] = {}


def _is_project_module(name: Optional[str]) -> bool:
    """True for the user's own code: not the standard library, not an installed package, not us."""
    global _library_dirs
    if not name:
        return False
    known = _project_modules.get(name)
    if known is not None:
        return known
    result = False
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path and not name.startswith(_LIBRARY_PREFIXES):
        if _library_dirs is None:
            import sysconfig

            paths = sysconfig.get_paths()
            dirs = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
            dirs.update(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p)
            _library_dirs = tuple(d.rstrip(os.sep) + os.sep for d in dirs)
        real = os.path.realpath(path)
        result = not real.startswith(_library_dirs) and "site-packages" not in real and "dist-packages" not in real
    _project_modules[name] = result
    return result


#: How far the scan looks into what a global or local names (an object's attribute, an item of a
#: container, a function's default or closed-over variable: one level each), and how many objects
#: it opens per scan at most: bounded, however big the objects under test are.
SCAN_DEPTH = 4
SCAN_BUDGET = 2000
#: At most this many other modules of the code under test's packages are looked at.
SCAN_PACKAGE_MODULES = 100

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins"}


def _is_stdlib_class(cls: type) -> bool:
    return (getattr(cls, "__module__", None) or "").partition(".")[0] in _STDLIB  # "_thread" and the like included


def _is_test_module(name: str) -> bool:
    return any(part.startswith(("test", "conftest")) for part in name.split("."))


class CapturedScan:
    """Looks into objects (up to ``SCAN_DEPTH`` levels, ``SCAN_BUDGET`` objects) for real
    clock/sleep functions and says where each is held."""

    def __init__(self) -> None:
        self.reals = _real_functions()
        #: What to show, and the place each names (what is reported once).
        self.found: List[str] = []
        self.keys: List[str] = []
        #: A real clock (not only a sleep) was found.
        self.clock_found = False
        self._seen: set = set()
        self.budget = SCAN_BUDGET

    def _hit(self, value: Any, where: str, held: str = "") -> bool:
        """``held``: how it was reached (shown, but not part of the place: the same attribute
        reached from two frames is one finding)."""
        name = real_function_name(value, self.reals)
        if name is None:
            return False
        key = f"{where} is the real {name}"
        if not name.endswith(("sleep", "Event.wait")):
            self.clock_found = True
        if key not in self.keys:
            self.keys.append(key)
            self.found.append(f"{where}{held} is the real {name}")
        return True

    def _once(self, value: Any) -> bool:
        key = id(value)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _open(self, value: Any) -> bool:
        """True the first time ``value`` is opened, while the budget lasts."""
        if self.budget <= 0 or not self._once(value):
            return False
        self.budget -= 1
        return True

    def function(self, func: Any, label: str, where: str = "", depth: int = SCAN_DEPTH) -> None:
        """Default arguments and closed-over variables of a function of the project; below
        ``depth``, what they hold and the function's own attributes (``fetch.retry``, the
        ``Retrying`` of ``@tenacity.retry``; ``__wrapped__``)."""
        func = getattr(func, "__func__", func)  # staticmethod / classmethod / bound method
        if not isinstance(func, types.FunctionType) or not self._open(func):
            return
        code = func.__code__
        deeper = depth < SCAN_DEPTH
        for name, value in list(getattr(func, "__dict__", {}).items()):
            if name == "__wrapped__":
                if deeper and isinstance(value, types.FunctionType) and _is_project_module(value.__module__):
                    self.function(value, label, where, depth + 1)
            elif deeper and not self._hit(value, f"the attribute .{name} of {label}()"):
                self._value(value, f"{where or label}.{name}", depth + 1)
        held: List[Tuple[str, Any]] = []
        if func.__defaults__:
            names = code.co_varnames[: code.co_argcount][-len(func.__defaults__):]
            held.extend((f"the default of argument {name!r} of {label}()", value) for name, value in zip(names, func.__defaults__))
        held.extend((f"the default of argument {name!r} of {label}()", value) for name, value in (func.__kwdefaults__ or {}).items())
        for name, cell in zip(code.co_freevars, func.__closure__ or ()):
            try:
                held.append((f"the variable {name!r} closed over by {label}()", cell.cell_contents))
            except ValueError:
                continue
        for place, value in held:
            if not self._hit(value, place) and deeper:
                self._value(value, place, depth + 1)

    def cls(self, klass: type) -> None:
        """Class attributes, dataclass ``default_factory`` values and method defaults of a project class."""
        if not _is_project_module(getattr(klass, "__module__", None)) or not self._once(klass):
            return
        label = f"{klass.__module__}.{klass.__qualname__}"
        fields = getattr(klass, "__dataclass_fields__", None)
        if isinstance(fields, dict):
            for name, field in fields.items():
                factory = getattr(field, "default_factory", None)
                self._hit(factory, f"the default_factory of dataclass field {label}.{name}")
                self._hit(getattr(field, "default", None), f"the default of dataclass field {label}.{name}")
        for name, value in list(vars(klass).items()):
            if not self._hit(value, f"the class attribute {label}.{name}"):
                self.function(value, f"{label}.{name}")

    def value(self, value: Any, where: str) -> None:
        """``value`` held at ``where`` (a global, a local): itself, or what it holds."""
        try:
            self._value(value, where, 0)
        except Exception:  # a proxy whose __dict__ or attributes raise: not ours to judge
            pass

    def _value(self, value: Any, where: str, depth: int) -> None:
        if self._hit(value, where) or isinstance(value, (types.ModuleType, types.BuiltinFunctionType, str, bytes, int, float, complex, bool, type(None))):
            return
        deeper = depth < SCAN_DEPTH
        if isinstance(value, type):
            self.cls(value)
        elif isinstance(value, types.FunctionType):
            if _is_project_module(value.__module__):
                self.function(value, f"{value.__module__}.{value.__qualname__}", where, depth)
        elif isinstance(value, types.MethodType):
            self._value(value.__func__, where, depth)
            if deeper:
                self._value(value.__self__, f"{where}.__self__", depth + 1)
        elif isinstance(value, functools.partial):
            self._hit(value.func, f"functools.partial held at {where}")
            for item in (*value.args, *value.keywords.values()):
                self._hit(item, f"an argument of functools.partial held at {where}")
        elif isinstance(value, (list, tuple, set, frozenset)):
            if len(value) <= 100 and self._open(value):
                for index, item in enumerate(value):
                    if not self._hit(item, f"an item of {where}") and deeper:
                        self._value(item, f"{where}[{index}]" if isinstance(value, (list, tuple)) else f"an item of {where}", depth + 1)
        elif isinstance(value, dict):
            if len(value) <= 100 and self._open(value):
                for key, item in list(value.items()):
                    if not self._hit(item, f"{where}[{key!r}]") and deeper:
                        self._value(item, f"{where}[{key!r}]", depth + 1)
        else:
            self.instance(value, where, depth)

    def instance(self, obj: Any, where: str, depth: int = SCAN_DEPTH) -> None:
        """An object's attributes; below ``depth``, what they hold. Objects of the standard
        library are only looked at, not into (a logger, a lock, a socket hold no clock of yours)."""
        cls = type(obj)
        if (getattr(cls, "__module__", None) or "").startswith(_LIBRARY_PREFIXES) or not self._open(obj):
            return  # the fake clock's own objects (and pytest's) hold the real functions on purpose
        attrs: Dict[str, Any] = {}
        try:
            attrs = dict(vars(obj))
        except TypeError:
            pass
        for klass in cls.__mro__:
            for slot in getattr(klass, "__dict__", {}).get("__slots__", ()) or ():
                if isinstance(slot, str) and slot not in attrs and not slot.startswith("__"):
                    try:
                        attrs[slot] = getattr(obj, slot)
                    except AttributeError:
                        continue
        deeper = depth < SCAN_DEPTH and not _is_stdlib_class(cls)
        owner = f"{cls.__module__}.{cls.__qualname__}"
        for name, value in attrs.items():
            if name == "__wrapped__":
                continue
            if self._hit(value, f"the attribute .{name} of a {owner} object", f" ({where})"):
                continue
            if isinstance(value, functools.partial):
                self._hit(value.func, f"functools.partial in the attribute .{name} of a {owner} object", f" ({where})")
            elif deeper:
                self._value(value, f"{where}.{name}", depth + 1)
        self.cls(cls)

    def namespace(self, module: types.ModuleType) -> None:
        """A module's globals, the project modules they name and the other loaded modules of
        those modules' packages (the code under test's module state), tests excepted."""
        if not self._once(module):
            return
        hops: List[types.ModuleType] = []
        for name, value in list(vars(module).items()):
            if name.startswith("__"):
                continue
            if isinstance(value, types.ModuleType):
                if _is_project_module(value.__name__):
                    hops.append(value)
                continue
            self.value(value, f"{module.__name__}.{name}")
            home = sys.modules.get(getattr(value, "__module__", None) or "") if isinstance(value, (type, types.FunctionType)) else None
            if home is not None and home is not module and _is_project_module(home.__name__):
                hops.append(home)
        packages = {other.__name__.partition(".")[0] for other in hops}
        if packages:
            count = 0
            for name, other in list(sys.modules.items()):
                if count >= SCAN_PACKAGE_MODULES:
                    break
                if name.partition(".")[0] in packages and isinstance(other, types.ModuleType) and not _is_test_module(name) and _is_project_module(name):
                    hops.append(other)
                    count += 1
        for other in hops:
            if self._once(other):
                for name, value in list(vars(other).items()):
                    if not name.startswith("__") and not isinstance(value, types.ModuleType):
                        self.value(value, f"{other.__name__}.{name}")

    def frames(self, frame: Optional[types.FrameType], seen_code: set, limit: int = 40) -> None:
        """The locals of the callers, up to the test runner: the objects under test."""
        while frame is not None and limit > 0:
            limit -= 1
            name = frame.f_globals.get("__name__") or ""
            if name.startswith(("_pytest", "pluggy")):
                return
            code = frame.f_code
            if not name.startswith(_LIBRARY_PREFIXES) and code not in seen_code:
                seen_code.add(code)
                label = f"{name}.{code.co_name}()"
                for local, value in list(frame.f_locals.items()):
                    self.value(value, f"the local {local!r} of {label}")
            frame = frame.f_back


def captured_message(found: Sequence[str]) -> str:
    lines = [
        "real clock or sleep functions were captured before the fake clock started; they read real time (or block "
        "for real) while the test runs on virtual time, so a deadline computed from them never expires and a delay "
        "slept with them looks like 0 s:"
    ]
    lines.extend(f"  - {where}" for where in found)
    lines.append(
        "fix: look the function up when it is called (default_factory=lambda: time.time(), def f(now=None): "
        "now = now or time.monotonic, sleep=lambda s: time.sleep(s)), or build the object inside the test. "
        "Harmless here? filterwarnings ignore::pytest_retry_check.CapturedClockWarning; to fail instead: "
        "-W error::pytest_retry_check.CapturedClockWarning."
    )
    return "\n".join(lines)


# -- a real clock read while virtual time runs --------------------------------------------------
class RealClockWatch:
    """Notices the code under test calling a real clock function (one captured before the fake
    clock started, which the patches cannot reach) while virtual time runs.

    A deadline computed from such a clock (``deadline = clock() + 30``, ``while clock() <
    deadline``) never comes: virtual time passes, the real clock hardly moves, and only the
    guard stops the loop. The watch is a profile hook (``sys.setprofile``, which sees every call
    of a built-in function) on the threads it is installed on; it costs, so the fake clock
    installs it only when needed: once a guard is half way to tripping, or when a scan found a
    captured real clock. It leaves alone a thread that already has a profile function.
    """

    def __init__(self, virtual: Any, skip: Tuple[str, ...]) -> None:
        #: Virtual seconds elapsed (never reset), and module prefixes whose reads are not judged.
        self.virtual, self.skip = virtual, skip
        self.active = True
        self._clocks = {id(f): (f, f"{getattr(f, '__module__', None) or 'time'}.{f.__name__}") for f in REAL_CLOCKS}
        self._installed: Dict[int, Any] = {}
        self.clear()

    def clear(self) -> None:
        #: name -> [count, call sites (up to 3)]; the places where the functions read are held.
        self.reads: Dict[str, List[Any]] = {}
        self.held: List[str] = []
        self.first: Optional[Tuple[float, float]] = None  # (real, virtual) at the first read
        self._sites: set = set()

    def install(self) -> bool:
        """Watch the calling thread; False when it cannot (another profile function is set)."""
        import threading

        thread = threading.get_ident()
        if thread in self._installed:
            return True
        current = sys.getprofile()
        if not self.active or (current is not None and not isinstance(getattr(current, "__self__", None), RealClockWatch)):
            return False  # a profiler is running (an earlier clock's stale hook is replaced)
        self._installed[thread] = True
        sys.setprofile(self._hook)
        return True

    def pause(self) -> None:
        """Stop watching the calling thread for now (``install`` resumes), and forget the reads."""
        import threading

        if self._installed.pop(threading.get_ident(), None) and sys.getprofile() == self._hook:
            sys.setprofile(None)
        self.clear()

    def uninstall(self) -> None:
        """Stop watching (the calling thread's hook goes now, another thread's at its next call)."""
        import threading

        self.active = False
        if self._installed.pop(threading.get_ident(), None) and sys.getprofile() == self._hook:
            sys.setprofile(None)

    def _hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event != "c_call":
            return
        if not self.active:
            sys.setprofile(None)
            return
        entry = self._clocks.get(id(arg))
        if entry is not None and entry[0] is arg:
            name = entry[1]
        elif type(arg) is types.BuiltinFunctionType and arg.__name__ in _DATETIME_READERS and any(arg.__self__ is c for c in _DATETIME_CLASSES):
            name = f"{arg.__self__.__module__}.{arg.__self__.__name__}.{arg.__name__}"
        else:
            return
        if (frame.f_globals.get("__name__") or "").startswith(self.skip):
            return
        if self.first is None:
            self.first = (_wall(), self.virtual())
        read = self.reads.setdefault(name, [0, []])
        read[0] += 1
        site = (frame.f_code, frame.f_lineno)
        if site not in self._sites and len(self._sites) < 20:
            self._sites.add(site)
            if len(read[1]) < 3:
                from .timeline import _describe

                read[1].append(_describe(frame))
            scan = CapturedScan()
            scan.frames(frame, set(), limit=6)
            self.held.extend(text for text in scan.found if text not in self.held)

    def note(self) -> Optional[str]:
        """What to add to a guard trip or a failed check: the real clock reads, where the
        functions are held, and the fix; None unless a real clock was read while virtual time
        moved at least 1 s and ten times as far as real time."""
        if not self.reads or self.first is None:
            return None
        real, virtual = _wall() - self.first[0], self.virtual() - self.first[1]
        if virtual < 1.0 or virtual < 10 * real:
            return None
        reads = "; ".join(f"{name} {count} time(s), at {', '.join(sites)}" for name, (count, sites) in self.reads.items())
        first = next(iter(self.reads))
        lines = [
            f"the code under test read a real clock while virtual time ran ({reads}); virtual time moved "
            f"{virtual:.3f} s and real time {real:.3f} s since the first read.",
            "The function was captured before the fake clock started (a default argument, a class or object attribute, "
            "a dataclass default or default_factory bound at import), which the fake clock cannot reach: a deadline "
            "computed from it (deadline = clock() + timeout; while clock() < deadline) never comes on virtual time.",
        ]
        held = self.held or holders(REAL_CLOCKS, limit=3)
        if held:
            more = f" (and {len(held) - 4} more)" if len(held) > 4 else ""
            lines.append("real clock functions held at: " + "; ".join(held[:4]) + more)
        lines.append(
            f"fix: read the clock when it is called ({first}() inside the function, default_factory=lambda: {first}(), "
            f"def f(clock=None): clock = clock or {first}), or build the object inside the test after the fake clock "
            "started; the deadline then expires on virtual time."
        )
        return "\n".join(lines)
