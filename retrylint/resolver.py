"""Which configuration applies to which file: the nearest one above it, as ruff finds it.

Every file is checked with the settings of the nearest configuration at or above its folder
(``.retrylint.toml`` > ``retrylint.toml`` > ``pyproject.toml`` with ``[tool.retrylint]`` within a
folder, see :data:`retrylint.config.CONFIG_FILES`); a file with none above it uses the one found
from the current directory, else the defaults. ``--config FILE`` applies one file to everything.
The command line's options are applied on top of each (:func:`retrylint.config.resolve`), so the
result does not depend on the order in which paths are named.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .config import CONFIG_FILES, Config, _configures_retrylint, load_config, resolve
from .settings import Settings


@dataclass(frozen=True)
class Overrides:
    """What the command line says about settings (None / empty: the file decides)."""

    select: Optional[List[str]] = None
    ignore: List[str] = field(default_factory=list)
    extend_select: List[str] = field(default_factory=list)
    exclude: Optional[List[str]] = None
    extend_exclude: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Scope:
    """One configuration and the settings it resolves to."""

    config: Config
    settings: Settings

    @property
    def root(self) -> Path:
        return self.config.root


class Resolver:
    def __init__(self, overrides: Overrides = Overrides(), config_file: Optional[Path] = None,
                 cwd: Optional[Path] = None) -> None:
        self.overrides = overrides
        self.cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self._scopes: Dict[Optional[Path], Scope] = {}
        self._nearest: Dict[str, Optional[Path]] = {}
        self._fixed: Optional[Scope] = self._scope(config_file) if config_file is not None else None
        self._fallback: Optional[Scope] = None

    def _scope(self, path: Optional[Path]) -> Scope:
        scope = self._scopes.get(path)
        if scope is None:
            config = load_config(path) if path is not None else Config(root=self.cwd)
            o = self.overrides
            exclude = self._from_cwd(o.exclude, config.root) if o.exclude is not None else None
            settings = resolve(config, select=o.select, ignore=o.ignore, extend_select=o.extend_select,
                               exclude=exclude, extend_exclude=self._from_cwd(o.extend_exclude, config.root))
            scope = self._scopes[path] = Scope(config, settings)
        return scope

    def _from_cwd(self, patterns: List[str], root: Path) -> List[str]:
        """Command-line patterns are written from the current directory, as ruff reads them;
        a configuration's patterns from its own folder. ``vendor/*`` typed in ``src/`` under a
        ``pyproject.toml`` one level up is ``src/vendor/*`` for that configuration; a bare name
        (``vendor``) matches a part of any path, wherever it was typed."""
        here = os.path.relpath(self.cwd, root).replace(os.sep, "/")
        if here == ".":
            return list(patterns)
        out = []
        for pattern in patterns:
            if "/" not in pattern.strip("/"):
                out.append(pattern)
            elif here.startswith("../") or here == "..":
                below = os.path.relpath(root, self.cwd).replace(os.sep, "/") + "/"
                # the configuration lies below the current directory: patterns into it lose that prefix
                out.append(pattern[len(below):] if pattern.startswith(below) else pattern)
            else:
                out.append(f"{here}/{pattern.lstrip('/')}")
        return out

    def nearest_config(self, directory: str) -> Optional[Path]:
        """The configuration file at or above ``directory`` (absolute), memoised per folder."""
        if directory in self._nearest:
            return self._nearest[directory]
        found: Optional[Path] = None
        for name in CONFIG_FILES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and _configures_retrylint(Path(candidate)):
                found = Path(candidate)
                break
        if found is None:
            parent = os.path.dirname(directory)
            if parent and parent != directory:
                found = self.nearest_config(parent)
        self._nearest[directory] = found
        return found

    def for_directory(self, directory: Path) -> Scope:
        """The scope for the files directly inside ``directory``."""
        if self._fixed is not None:
            return self._fixed
        found = self.nearest_config(os.path.abspath(directory))
        if found is not None:
            return self._scope(found)
        return self.fallback()

    def for_file(self, path: Path) -> Scope:
        return self.for_directory(Path(os.path.abspath(path)).parent)

    def fallback(self) -> Scope:
        """For a file without a configuration above it: the current directory's, else defaults."""
        if self._fixed is not None:
            return self._fixed
        if self._fallback is None:
            self._fallback = self._scope(self.nearest_config(str(self.cwd)))
        return self._fallback

    def scopes(self) -> Sequence[Scope]:
        return list(self._scopes.values())
