"""Results cache: a file whose content, retrylint and settings are unchanged is not analysed again.

One pickle per (retrylint version, retrylint's own code, settings) under the cache directory
(default ``.retrylint_cache`` in the project root, as ruff's ``.ruff_cache``), mapping each
file's absolute path to the BLAKE2 digest of its bytes and its report, stored as plain tuples
(reading it back imports neither the engine nor libcst). A changed file, a new
retrylint or another configuration simply misses. A broken or unreadable cache is ignored:
the cache must never be the reason a run fails.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from . import __version__
from .fix_model import Edit, Fix
from .model import Location
from .records import Record, Report
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


@functools.lru_cache(maxsize=None)
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


def _encode(report) -> tuple:
    findings = tuple(
        (f.code, f.name, f.message, f.path, (f.location.line, f.location.column, f.location.end_line, f.location.end_column),
         f.url, None if f.fix is None else (f.fix.safety, f.fix.message,
                                           tuple((e.line, e.column, e.end_line, e.end_column, e.content) for e in f.fix.edits)))
        for f in report.findings
    )
    return (report.path, report.notice, findings, tuple(report.dependencies))


def _decode(data: tuple) -> Report:
    path, notice, findings, dependencies = data
    return Report(path, notice=notice, dependencies=tuple(dependencies), findings=[
        Record(code, name, message, where, Location(*location), url,
               None if fix is None else Fix(fix[0], fix[1], tuple(Edit(*edit) for edit in fix[2])))
        for code, name, message, where, location, url, fix in findings
    ])


class Cache:
    def __init__(self, path: Path) -> None:
        self.path = path
        #: the cache directory (``path`` is ``root/<version>/<key>.pickle``)
        self.root = path.parent.parent
        #: absolute path → (content digest, encoded report)
        self.entries: Dict[str, Tuple[str, tuple]] = {}
        #: what this run added: only these are written back (see save)
        self.added: Dict[str, Tuple[str, tuple]] = {}
        self.entries = self._load()
        #: digests of dependency files, read once per run (many files import one config module)
        self._digests: Dict[str, Optional[str]] = {}

    def _current_digest(self, path: str) -> Optional[str]:
        if path not in self._digests:
            try:
                with open(path, "rb") as handle:
                    self._digests[path] = digest(handle.read())
            except OSError:
                self._digests[path] = None
        return self._digests[path]

    def _load(self) -> Dict[str, Tuple[str, tuple]]:
        try:
            with open(self.path, "rb") as handle:
                loaded = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    @classmethod
    def open(cls, directory: Path, settings: Settings) -> "Cache":
        return cls(directory / __version__ / f"{key(settings)}.pickle")

    def get(self, path: Path, content_digest: str) -> Optional[Report]:
        entry = self.entries.get(str(path.absolute()))
        if entry is not None and entry[0] == content_digest:
            try:
                report = _decode(entry[1])
            except (TypeError, ValueError):
                return None  # a cache written by another layout: analyse again
            # A value read from another module (``from .config import MAX_RETRIES``): the
            # result holds only while that module is unchanged too.
            if all(self._current_digest(other) == seen for other, seen in report.dependencies):
                return report
        return None

    def put(self, path: Path, content_digest: str, report) -> None:
        if report.error:
            return  # an internal error is worth retrying next time
        entry = (content_digest, _encode(report))
        self.entries[str(path.absolute())] = self.added[str(path.absolute())] = entry

    @property
    def dirty(self) -> bool:
        return bool(self.added)

    def save(self) -> None:
        """Write this run's entries. Parallel runs (pre-commit starts one per batch of files)
        share the file: under a lock, the entries on disk now are read again and this run's
        are merged into them, so no run overwrites what another one just wrote."""
        if not self.added:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.path.parent.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Automatically created by retrylint.\n*\n")
            with _locked(self.path.with_suffix(".lock")):
                merged = self._load()
                merged.update(self.added)
                handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
                with os.fdopen(handle, "wb") as out:
                    pickle.dump(merged, out, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, self.path)  # atomic: readers never see half a cache
            self.entries = merged
            self.added = {}
        except OSError:
            pass


class _locked:
    """An exclusive lock on ``path`` (``fcntl.flock``; ``msvcrt.locking`` on Windows)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: the cache directory (``path`` is ``root/<version>/<key>.pickle``)
        self.root = path.parent.parent
        self.handle = None

    def __enter__(self) -> "_locked":
        self.handle = open(self.path, "a+b")
        try:
            import fcntl

            fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows
            import msvcrt

            self.handle.seek(0)
            msvcrt.locking(self.handle.fileno(), msvcrt.LK_LOCK, 1)
        return self

    def __exit__(self, *exc) -> None:
        assert self.handle is not None
        try:
            try:
                import fcntl

                fcntl.flock(self.handle.fileno(), fcntl.LOCK_UN)
            except ImportError:  # pragma: no cover - Windows
                import msvcrt

                self.handle.seek(0)
                msvcrt.locking(self.handle.fileno(), msvcrt.LK_UNLCK, 1)
        finally:
            self.handle.close()
