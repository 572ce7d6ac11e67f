"""Results cache: a file whose content, retrylint and settings are unchanged is not analysed again.

One pickle per (retrylint version, retrylint's own code, settings) under the cache directory
(default ``.retrylint_cache`` in the project root, as ruff's ``.ruff_cache``), mapping each
file's absolute path to the BLAKE2 digest of its bytes and its report. A changed file, a new
retrylint or another configuration simply misses. A broken or unreadable cache is ignored:
the cache must never be the reason a run fails.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from . import __version__
from .engine import FileReport
from .settings import Settings

DEFAULT_DIRECTORY = ".retrylint_cache"
_PACKAGE = Path(__file__).resolve().parent


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _canonical(value: Any) -> Any:
    """A stable text form of settings (sets are unordered, patterns are objects)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return sorted(repr(_canonical(v)) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return sorted((repr(k), repr(_canonical(v))) for k, v in value.items())
    if isinstance(value, re.Pattern):
        return ("re", value.pattern, value.flags)
    return repr(value)


def _code_fingerprint() -> str:
    """retrylint's own sources (size and mtime): a development checkout changes without a new version."""
    parts = []
    for directory, _, files in os.walk(_PACKAGE):
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(directory, name))
                parts.append(f"{os.path.relpath(os.path.join(directory, name), _PACKAGE)}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(sorted(parts))


def key(settings: Settings) -> str:
    text = f"{__version__}\n{_code_fingerprint()}\n{_canonical(settings)!r}"
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class Cache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: Dict[str, Tuple[str, FileReport]] = {}
        self.dirty = False
        try:
            with open(path, "rb") as handle:
                loaded = pickle.load(handle)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            self.entries = {}

    @classmethod
    def open(cls, directory: Path, settings: Settings) -> "Cache":
        return cls(directory / __version__ / f"{key(settings)}.pickle")

    def get(self, path: Path, content_digest: str) -> Optional[FileReport]:
        entry = self.entries.get(str(path.absolute()))
        if entry is not None and entry[0] == content_digest:
            return entry[1]
        return None

    def put(self, path: Path, content_digest: str, report: FileReport) -> None:
        if report.error:
            return  # an internal error is worth retrying next time
        self.entries[str(path.absolute())] = (content_digest, report)
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.path.parent.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Automatically created by retrylint.\n*\n")
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            with os.fdopen(handle, "wb") as out:
                pickle.dump(self.entries, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, self.path)  # atomic: parallel runs never read half a cache
        except OSError:
            pass
