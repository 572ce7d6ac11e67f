"""Telling the herd check's clients giving up (fine) from clients that are broken (not a herd).

A client that raises is usually giving up after its retries: a legitimate end. But a client that
raises before it ever called the downstream, or raises a programming error (a ``TypeError`` from
a bad argument, an ``AttributeError`` from a typo), was never exercising its retry policy: the
check must say "the client under test raised", with the traceback, and not judge a herd.
"""

from __future__ import annotations

import collections
import os
import sys
import traceback
from typing import Any, List, Optional, Sequence, Tuple

#: Exceptions that mean the code is wrong, whatever the downstream answered.
PROGRAMMING_ERRORS = (
    TypeError,
    AttributeError,
    NameError,
    ImportError,
    AssertionError,
    NotImplementedError,
    RecursionError,
    SyntaxError,
)

#: What no retry policy raises on purpose when it gives up: a bug in the give-up path (an
#: exception built with the wrong arguments, a delay table too short, a dead-letter write the
#: queue object does not support), not giving up.
BUG_ERRORS = PROGRAMMING_ERRORS + (LookupError, ArithmeticError)


def programming_error(error: Optional[BaseException]) -> Optional[BaseException]:
    """The exception that says the code is broken: ``error`` itself, or inside it (an exception
    group's member, a tenacity ``RetryError``'s last attempt); None when it is not a bug."""
    if error is None:
        return None
    if isinstance(error, BUG_ERRORS):
        return error
    if sys.version_info >= (3, 11) and isinstance(error, BaseExceptionGroup):  # noqa: F821
        for member in error.exceptions:
            found = programming_error(member)
            if found is not None:
                return found
    last = getattr(error, "last_attempt", None)
    if getattr(last, "failed", False) is True:
        try:
            inner = last.exception()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001
            return None
        if isinstance(inner, BUG_ERRORS):
            return inner
    return None


_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

#: Stop running clients after this many broken ones: the verdict is in, and each may be slow.
STOP_AFTER = 20


def is_client_bug(error: Optional[BaseException], calls: int, after_ok: bool = False) -> bool:
    """True when a client's exception says the client is broken rather than giving up: it
    raised before calling the downstream, raised a programming error (see ``BUG_ERRORS``), or
    raised after the downstream answered successfully (``after_ok``: nothing to give up on)."""
    if error is None:
        return False
    return calls == 0 or after_ok or programming_error(error) is not None


def raised_counts(errors: Sequence[Optional[BaseException]]) -> Tuple[Tuple[str, int], ...]:
    """How many clients raised each exception type, most common first."""
    counts = collections.Counter(type(e).__name__ for e in errors if e is not None)
    return tuple(counts.most_common())


def describe_bugs(bugs: Sequence[Tuple[Any, ...]], ran: int, clients: int, stopped: bool) -> str:
    """``bugs``: (client index, exception, calls made[, raised after a successful answer]). The
    first one with its traceback, then counts."""
    index, first, calls = bugs[0][:3]
    after_ok = len(bugs[0]) > 3 and bool(bugs[0][3])
    kinds = collections.Counter(type(b[1]).__name__ for b in bugs)
    names = " and ".join(f"{n} {name}" for name, n in kinds.most_common())
    of = f"of the first {ran} clients (stopped there)" if stopped else f"of {clients} clients"
    lines = [
        f"the client under test raised {type(first).__name__}: {len(bugs)} {of} raised {names}"
        + (", before calling the downstream" if calls == 0 else "")
        + (", after the downstream answered successfully" if after_ok and calls else ""),
        "this is a bug in the client or the test, not a herd: no retry policy was judged.",
        f"client #{index} (after {calls} call(s) to the downstream):",
    ]
    tb = first.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename.startswith(_OWN_DIR):
        tb = tb.tb_next  # start at the client, not at our runner
    text = "".join(traceback.format_exception(type(first), first, tb))
    lines.append("  " + text.rstrip("\n").replace("\n", "\n  "))
    return "\n".join(lines)


def format_counts(counts: Sequence[Tuple[str, int]]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts)


def bugs_of(results: Sequence[object], calls: Sequence[int], last_ok: Sequence[bool] = ()) -> List[Tuple[int, BaseException, int, bool]]:
    """(index, exception, calls, after a successful answer) of the broken clients among
    ``results`` (ClientResults); ``last_ok``: per client, whether its last call succeeded."""
    found = []
    oks = list(last_ok) + [False] * (len(results) - len(last_ok))
    for result, made, ok in zip(results, calls, oks):
        error = getattr(result, "error", None)
        if getattr(result, "outcome", "") == "raised" and is_client_bug(error, made, ok):
            found.append((result.index, error, made, ok))  # type: ignore[attr-defined]
    return found
