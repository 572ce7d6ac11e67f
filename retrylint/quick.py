"""The quick verdict on a file with no retry word that compiles: nothing to report, decided
without importing the engine, its extractors and libcst (two thirds of a second of start-up,
which a pre-commit hook pays on every commit).

It mirrors the engine's own first step exactly (``engine.check_source``): the engine reports
nothing for a file whose bytes match none of the narrowing gates (the words any retry site
needs) and whose text compiles (CPython's parser and symbol table). The gates are the
engine's, saved in the cache directory by the first run that imported the engine, under a key
of retrylint's version and code, so they are never stale. Anything else (a gate matches, the
file does not decode or compile, no saved gates yet) goes to the engine.
``tests/retrylint/test_startup.py`` checks the mirror against the engine.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import symtable
import tempfile
import tokenize
import warnings
from pathlib import Path
from typing import List, Optional, Sequence

from . import __version__


def gates_path(directory: Path) -> Path:
    from .cache import _code_fingerprint

    key = hashlib.blake2b(f"{__version__}\n{_code_fingerprint()}".encode(), digest_size=12).hexdigest()
    return directory / __version__ / f"gates-{key}.pickle"


def load_gates(directory: Path) -> Optional[List[object]]:
    try:
        with open(gates_path(directory), "rb") as handle:
            gates = pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return gates if isinstance(gates, list) else None


def save_gates(directory: Path) -> None:
    """Save the engine's gates (the engine is imported by now, or this imports it)."""
    target = gates_path(directory)
    if target.exists():
        return
    from .engine import TRIGGERS

    gates = [trigger.text for trigger in TRIGGERS if not trigger.context]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        with os.fdopen(handle, "wb") as out:
            pickle.dump(gates, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, target)
    except (OSError, pickle.PicklingError, AttributeError, TypeError):
        pass


def is_clean(data: bytes, gates: Sequence[object]) -> bool:
    """True when the engine would report nothing for a file holding ``data``."""
    if b"\0" in data:
        return False  # the engine reports it (RTY001)
    if any(gate.search(data) for gate in gates):  # type: ignore[attr-defined]
        return False
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, "<file>", "exec")
    except Exception:  # noqa: BLE001 - SyntaxError, RecursionError, MemoryError: the engine decides
        return False
    return True
