"""Finding the files to check: walk directories, honour exclude patterns and .gitignore."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import pathspec

from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from .resolver import Resolver

SOURCE_SUFFIXES = (".py",)


class PathNotFound(Exception):
    pass


@dataclass(frozen=True)
class Candidate:
    path: Path
    #: Named on the command line (checked even if its suffix is not .py).
    explicit: bool


def discover(paths: Sequence[str], settings: Settings, root: Path, force_exclude: bool = False,
             resolver: Optional["Resolver"] = None, errors: Optional[List[Tuple[str, str]]] = None) -> List[Candidate]:
    """The files to check under ``paths``. With a ``resolver``, each folder's own configuration
    (the nearest one) decides what is excluded below it; otherwise ``settings`` and ``root`` do.
    A folder that cannot be read is appended to ``errors`` as (path, reason), never skipped
    silently (``os.walk`` would)."""
    seen: Dict[Path, Candidate] = {}

    def rules(directory: Path) -> _Rules:
        if resolver is None:
            return _Rules(tuple(settings.exclude) + tuple(settings.extend_exclude), root, settings.respect_gitignore)
        scope = resolver.for_directory(directory)
        return _Rules(tuple(scope.settings.exclude) + tuple(scope.settings.extend_exclude), scope.root,
                      scope.settings.respect_gitignore)

    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise PathNotFound(raw)
        if path.is_dir():
            for found in _walk(path, rules, errors):
                key = Path(os.path.realpath(found)) if not found.is_symlink() else found.absolute()
                seen.setdefault(key, Candidate(found, False))
        else:
            if force_exclude:
                here = rules(Path(os.path.abspath(path)).parent)
                if is_excluded(path, here.patterns, here.root):
                    continue
            seen.setdefault(path.absolute(), Candidate(path, True))
    return sorted(seen.values(), key=lambda c: str(c.path))


@dataclass(frozen=True)
class _Rules:
    """What decides exclusion inside one folder."""

    patterns: Tuple[str, ...]
    root: Path
    respect_gitignore: bool


class _Patterns:
    """Exclude patterns compiled once: literal names in a set, globs in one expression
    (``fnmatch`` per pattern and per path part was most of a warm run's time)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        cleaned = [p.rstrip("/") for p in patterns]
        literal = [p for p in cleaned if not any(c in p for c in "*?[")]
        self.literals = frozenset(os.path.normcase(p) for p in literal)
        globs = [p for p in cleaned if p not in literal]
        self.glob = re.compile("|".join(fnmatch.translate(os.path.normcase(g)) for g in globs)) if globs else None

    def match(self, text: str) -> bool:
        text = os.path.normcase(text)
        return text in self.literals or (self.glob is not None and self.glob.match(text) is not None)


_COMPILED: Dict[Tuple[str, ...], _Patterns] = {}


def _compiled(patterns: Iterable[str]) -> _Patterns:
    key = tuple(patterns)
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = _Patterns(key)
    return found


def is_excluded(path: Path, patterns: Iterable[str], root: Path, below: Optional[Path] = None) -> bool:
    """``path`` matches an exclude pattern, as a whole (relative to the project root) or by one
    of its parts. ``below``: a directory named on the command line; only parts under it count,
    as in ruff (``retrylint check build/tools`` checks that folder although ``build`` is excluded)."""
    compiled = _compiled(patterns)
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root) if _under(absolute, str(root)) else absolute
    relative = relative.replace(os.sep, "/")
    parts = relative.split("/")
    if below is not None:
        top = os.path.abspath(below)
        if _under(absolute, top):
            parts = os.path.relpath(absolute, top).replace(os.sep, "/").split("/")
    if compiled.match(relative):
        return True
    return any(compiled.match(part) for part in parts)


def _under(path: str, directory: str) -> bool:
    directory = os.path.abspath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _walk(top: Path, rules: Callable[[Path], _Rules], errors: Optional[List[Tuple[str, str]]]) -> Iterable[Path]:
    top_rules = rules(top)
    ignores: List[Tuple[Path, pathspec.PathSpec]] = _parent_gitignores(top) if top_rules.respect_gitignore else []
    if _ignored(top, ignores, is_dir=True):
        # Named on the command line although an enclosing repository ignores it (a Python
        # installed under ~/.pyenv/versions): check it, as ruff and git's own tools would.
        ignores = []

    def unreadable(error: OSError) -> None:
        if errors is not None:
            name = error.filename if error.filename is not None else str(top)
            errors.append((os.path.normpath(os.path.relpath(name) if os.path.isabs(name) else str(name)),
                           f"cannot read directory: {error.strerror or error}"))

    for directory, dirnames, filenames in os.walk(top, followlinks=False, onerror=unreadable):
        here = Path(directory)
        here_rules = rules(here)
        if here_rules.respect_gitignore:
            spec = _gitignore(here)
            if spec is not None:
                ignores = [(base, s) for base, s in ignores if _is_relative_to(here, base)] + [(here, spec)]
            else:
                ignores = [(base, s) for base, s in ignores if _is_relative_to(here, base)]
        active = ignores if here_rules.respect_gitignore else []
        kept = []
        for name in sorted(dirnames):
            child = here / name
            if is_excluded(child, here_rules.patterns, here_rules.root, below=top) or _ignored(child, active, is_dir=True):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            child = here / name
            if is_excluded(child, here_rules.patterns, here_rules.root, below=top) or _ignored(child, active, is_dir=False):
                continue
            yield child


def _is_relative_to(path: Path, base: Path) -> bool:
    try:
        path.relative_to(base)
        return True
    except ValueError:
        return False


def _gitignore(directory: Path) -> Optional[pathspec.PathSpec]:
    path = directory / ".gitignore"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _parent_gitignores(top: Path) -> List[Tuple[Path, pathspec.PathSpec]]:
    """.gitignore files above ``top`` up to the repository root apply to it too."""
    out: List[Tuple[Path, pathspec.PathSpec]] = []
    current = top.absolute()
    for parent in current.parents:
        spec = _gitignore(parent)
        if spec is not None:
            out.append((parent, spec))
        if (parent / ".git").exists():
            break
    else:
        return []
    return list(reversed(out))


def _ignored(path: Path, ignores: List[Tuple[Path, pathspec.PathSpec]], is_dir: bool) -> bool:
    absolute = path.absolute()
    for base, spec in ignores:
        try:
            relative = absolute.relative_to(base.absolute()).as_posix()
        except ValueError:
            continue
        if spec.match_file(relative + ("/" if is_dir else "")):
            return True
    return False
