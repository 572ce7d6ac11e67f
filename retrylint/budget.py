"""A time and memory budget per file: a pathological file (twenty thousand retry sites, one
call with a 200,000-item literal, which libcst's native parser alone takes 11 s and 1.6 GB to
read) is reported as "could not be analysed in N s" instead of taking minutes and gigabytes.

Neither limit can be enforced inside the process that runs the analysis: a signal waits until
libcst's native parser returns, and an allocation that fails in it aborts the whole process.
So files that need the engine are analysed in worker processes: each worker gets one file at a
time; a worker still busy after ``seconds`` is killed; a worker limits its own address space
(``RLIMIT_AS``, on Linux) to what it had plus ``memory_mb``, and one that dies on a file (its
allocation failed, or the system killed it) has that file reported as over the memory budget.
A new worker takes its place. With both limits off (0), files are analysed as before: in this
process for a few, in a process pool for many.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Deque, Dict, List, Optional, Tuple

from .records import Report
from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from multiprocessing.connection import Connection

#: Defaults of ``--file-timeout`` (seconds) and ``--file-memory`` (MB).
DEFAULT_SECONDS = 30.0
DEFAULT_MEMORY_MB = 2048


#: Seconds a new worker may take to import the engine before its first file's budget starts.
_STARTING = 60.0


@dataclass(frozen=True)
class Budget:
    seconds: float = DEFAULT_SECONDS
    memory_mb: int = DEFAULT_MEMORY_MB

    @property
    def enabled(self) -> bool:
        return self.seconds > 0 or self.memory_mb > 0


def over_time(display: str, seconds: float) -> Report:
    return Report(display, notice=f"could not be analysed in {seconds:g} s (the time budget per file: --file-timeout)")


def over_memory(display: str, memory_mb: int) -> Report:
    return Report(display, notice=f"could not be analysed within {memory_mb} MB of memory "
                                  "(the memory budget per file: --file-memory)")


def over_budget(notice: Optional[str]) -> bool:
    """Whether a notice says the file was over the budget per file (time or memory): such a file
    was never checked, so the run exits 1 as for a finding. (The other notices, a limit of the
    parsers on valid code, are reported and exit 0.)"""
    return bool(notice) and ("(the time budget per file: " in notice or "(the memory budget per file: " in notice)


def _limit_memory(memory_mb: int) -> None:
    if memory_mb <= 0:
        return
    try:
        import resource

        with open("/proc/self/statm") as statm:
            current = int(statm.read().split()[0]) * resource.getpagesize()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = current + memory_mb * 2**20
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError):
        pass  # not Linux: the time budget still holds


def _serve(connection: "Connection", settings: Settings, memory_mb: int,
           check: Callable[[Path, str, Settings, bool], object]) -> None:
    """A worker: analyse one file per request until told to stop."""
    # An allocation that fails in native code prints a Rust backtrace: the report says it instead.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    import faulthandler

    faulthandler.disable()  # nor a Python dump on a duplicate of standard error (pytest, PYTHONFAULTHANDLER)
    try:
        # Imported (libcst's native parser too, loaded by its first parse) before the memory
        # limit: the budget is the file's, not retrylint's own code (a 20 MB budget failed to
        # map libcst's native library, an ImportError, on a 10-line file).
        from . import engine  # noqa: F401 - imported before the first file's budget starts
        import libcst

        libcst.parse_module("pass\n")
    except Exception:  # noqa: BLE001 - the check itself reports what is broken
        pass
    _limit_memory(memory_mb)
    while True:
        try:
            item = connection.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        path, display = item
        connection.send(("start", None))  # the budget counts from here, not from the imports
        before = _peak_kb()
        result = check(path, display, settings, False)
        if memory_mb > 0 and _ran_out_of_memory(result, memory_mb, _peak_kb() - before):
            result = over_memory(display, memory_mb)
        connection.send(("done", result))


def _peak_kb() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _ran_out_of_memory(result: object, memory_mb: int, grown_kb: int) -> bool:
    """Whether a worker's result says an allocation failed under its memory limit: a
    ``MemoryError`` caught on the way (an internal error), a library that could not be mapped
    (ImportError: "failed to map segment"), or Python's parser failing with ``MemoryError``
    (reported as "nested too deeply") after the worker had grown by a quarter of its budget, or
    under a budget so small (< 32 MB) that any file may need more. CPython's parser also raises
    ``MemoryError`` on an expression nested too deeply (100,000 unary minuses) without using
    memory: that stays the parser's reason."""
    report = getattr(result, "report", None)
    for item in (result, report):
        error = getattr(item, "error", None)
        if error and ("MemoryError" in error or "failed to map segment" in error
                      or "annot allocate memory" in error):
            return True
        notice = getattr(item, "notice", None)
        if notice and "(MemoryError)" in notice:
            return memory_mb < 32 or grown_kb * 4 >= memory_mb * 1024
    return False


#: Files sent to a worker ahead of the one it is analysing: it never waits for the next one.
_AHEAD = 2


class _Worker:
    def __init__(self, settings: Settings, budget: Budget, check) -> None:
        import multiprocessing

        context = multiprocessing.get_context()
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, settings, budget.memory_mb, check), daemon=True)
        self.process.start()
        child.close()
        #: files sent, in order; the first is being analysed once it said "start"
        self.queue: Deque[int] = deque()
        #: when the first file of the queue started; until it says so (a new worker imports
        #: the engine first), when it was sent plus a minute
        self.started = 0.0

    def give(self, index: int, item: Tuple[Path, str]) -> None:
        if not self.queue:
            self.started = time.monotonic() + _STARTING
        self.queue.append(index)
        self.connection.send(item)

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.process.kill()
            else:
                self.connection.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


def check_within_budget(work: List[Tuple[Path, str]], settings: Settings, jobs: int, budget: Budget,
                        check: Callable[[Path, str, Settings, bool], object]) -> List[object]:
    """Each file's report, analysed in at most ``jobs`` workers under ``budget``."""
    from multiprocessing.connection import wait

    reports: Dict[int, object] = {}
    order = sorted(range(len(work)), key=lambda i: -_size(work[i][0]))  # biggest first
    pending: Deque[int] = deque(order)
    workers: List[_Worker] = []
    try:
        while pending or any(w.queue for w in workers):
            # No more workers than files left to start (one file: one worker).
            while pending and len(workers) < jobs and len(workers) * _AHEAD < len(pending) + sum(len(w.queue) for w in workers):
                workers.append(_Worker(settings, budget, check))
            for worker in workers:
                while pending and len(worker.queue) < _AHEAD:
                    index = pending.popleft()
                    worker.give(index, work[index])
            busy = [w for w in workers if w.queue]
            timeout = None
            if budget.seconds > 0:
                timeout = max(0.0, min(w.started + budget.seconds for w in busy) - time.monotonic())
            ready = wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout)
            for worker in busy:
                index = worker.queue[0]
                if worker.connection in ready:
                    try:
                        kind, report = worker.connection.recv()
                    except (EOFError, OSError):
                        pass  # it died: below
                    else:
                        if kind == "start":
                            worker.started = time.monotonic()
                        else:
                            reports[index] = report
                            worker.queue.popleft()
                            worker.started = time.monotonic() + _STARTING  # until the next "start"
                        continue
                display = work[index][1]
                if worker.connection in ready or worker.process.sentinel in ready:
                    reports[index] = over_memory(display, budget.memory_mb)
                elif budget.seconds > 0 and time.monotonic() >= worker.started + budget.seconds:
                    reports[index] = over_time(display, budget.seconds)
                else:
                    continue
                worker.queue.popleft()
                pending.extendleft(reversed(worker.queue))  # sent ahead, never started: to another worker
                worker.stop(kill=True)
                workers.remove(worker)
    finally:
        for worker in workers:
            worker.stop(kill=bool(worker.queue))
    return [reports[i] for i in range(len(work))]


def run_each(work: List[Tuple[object, str]], settings: Settings, jobs: int, budget: Optional[Budget],
             check: Callable[[object, str, Settings, bool], object]) -> List[object]:
    """``check`` on each (item, display) of ``work``, in order: within ``budget`` (in workers, a
    file over it a Report with the notice) when it has a limit, else here, one after the other.
    An item is a path, or the source text itself (standard input): ``check`` knows which."""
    if budget is not None and budget.enabled and work:
        return check_within_budget(work, settings, max(1, jobs), budget, check)  # type: ignore[arg-type]
    return [check(item, display, settings, False) for item, display in work]


def _size(path: object) -> int:
    if isinstance(path, str):
        return len(path)  # source text (standard input), not a path
    try:
        return path.stat().st_size  # type: ignore[attr-defined]
    except OSError:
        return 0
