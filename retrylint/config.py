"""Loading ``[tool.retrylint]`` and turning it, with the command line, into Settings.

Unknown keys, wrong types and unknown rule codes are errors (exit 2), never ignored.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .codes import CODES, NAMES
from .settings import (
    DEFAULT_DEAD_LETTER_ATTEMPT_FIELDS,
    DEFAULT_DEAD_LETTER_FIRST_RECEIVED_FIELDS,
    DEFAULT_DEAD_LETTER_REASON_FIELDS,
    DEFAULT_PERMANENT_EXCEPTIONS,
    Settings,
)

#: In one folder, the first of these that configures retrylint wins (ruff's order:
#: ``.ruff.toml`` > ``ruff.toml`` > ``pyproject.toml``). A ``pyproject.toml`` counts only with a
#: ``[tool.retrylint]`` table; a ``retrylint.toml`` always counts, even empty.
CONFIG_FILES = (".retrylint.toml", "retrylint.toml", "pyproject.toml")

#: key → (type description, validator)
_LIST_OF_STR = "a list of strings"
KEYS: Dict[str, str] = {
    "select": _LIST_OF_STR,
    "ignore": _LIST_OF_STR,
    "extend-select": _LIST_OF_STR,
    "per-file-ignores": "a table of glob → list of codes",
    "exclude": _LIST_OF_STR,
    "extend-exclude": _LIST_OF_STR,
    "max-delay": "a positive number of seconds",
    "permanent-exceptions": _LIST_OF_STR,
    "transient-exceptions": _LIST_OF_STR,
    "respect-gitignore": "true or false",
    "dead-letter-pattern": "a regular expression for dead-letter queue names",
    "dead-letter-reason-fields": _LIST_OF_STR,
    "dead-letter-attempt-fields": _LIST_OF_STR,
    "dead-letter-first-received-fields": _LIST_OF_STR,
}

#: The keys that add names to a default list of dead-letter context fields (RTY402).
_FIELD_KEYS = ("dead-letter-reason-fields", "dead-letter-attempt-fields", "dead-letter-first-received-fields")


class ConfigError(Exception):
    """A problem in the configuration or the command line's rule selection."""


@dataclass
class Config:
    """What the user wrote (config file and command line), before resolution."""

    path: Optional[Path] = None
    root: Path = field(default_factory=Path.cwd)
    select: Optional[List[str]] = None
    ignore: List[str] = field(default_factory=list)
    extend_select: List[str] = field(default_factory=list)
    per_file_ignores: Dict[str, List[str]] = field(default_factory=dict)
    exclude: Optional[List[str]] = None
    extend_exclude: List[str] = field(default_factory=list)
    max_delay: Optional[float] = None
    permanent_exceptions: List[str] = field(default_factory=list)
    transient_exceptions: List[str] = field(default_factory=list)
    respect_gitignore: bool = True
    dead_letter_pattern: Optional[str] = None
    dead_letter_reason_fields: List[str] = field(default_factory=list)
    dead_letter_attempt_fields: List[str] = field(default_factory=list)
    dead_letter_first_received_fields: List[str] = field(default_factory=list)


def find_config(start: Path) -> Optional[Path]:
    """The nearest config file at or above ``start`` that configures retrylint."""
    start = start.resolve()
    for directory in [start, *start.parents]:
        for name in CONFIG_FILES:
            candidate = directory / name
            if candidate.is_file() and _configures_retrylint(candidate):
                return candidate
    return None


def _configures_retrylint(path: Path) -> bool:
    if path.name != "pyproject.toml":
        return True
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        # A broken pyproject.toml that mentions us is still ours: report the error on load.
        try:
            return "[tool.retrylint" in path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return isinstance(data.get("tool"), dict) and "retrylint" in data["tool"]


def load_config(path: Path) -> Config:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: not UTF-8 ({exc.reason})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    if path.name == "pyproject.toml":
        section = data.get("tool", {}).get("retrylint", {}) if isinstance(data.get("tool"), dict) else {}
        where = f"{path} [tool.retrylint]"
    else:
        section = data.get("tool", {}).get("retrylint", data) if isinstance(data.get("tool"), dict) else data
        where = str(path)
        if section is not data:
            # Settings at the top level and a [tool.retrylint] table: one of them would be dropped
            # silently; an ignored key is an error, never ignored.
            others = [key for key in data if key != "tool"]
            if others:
                raise ConfigError(f"{path}: settings both at the top level ({', '.join(repr(k) for k in others)}) "
                                  "and in [tool.retrylint]: use one of them")
            where = f"{path} [tool.retrylint]"
    if not isinstance(section, dict):
        raise ConfigError(f"{where}: expected a table")
    return _from_table(section, where, path)


def _from_table(table: Dict[str, Any], where: str, path: Optional[Path]) -> Config:
    config = Config(path=path, root=path.parent.resolve() if path else Path.cwd())
    for key, value in table.items():
        if key not in KEYS:
            hint = _closest(key, KEYS)
            raise ConfigError(f"{where}: unknown key {key!r}" + (f" (did you mean {hint!r}?)" if hint else ""))
        expected = KEYS[key]
        attribute = key.replace("-", "_")
        if expected == _LIST_OF_STR:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: {key} must be {expected}, got {value!r}")
            setattr(config, attribute, list(value))
        elif key == "per-file-ignores":
            if not isinstance(value, dict) or not all(
                isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
            ):
                raise ConfigError(f"{where}: {key} must be {expected}, got {value!r}")
            config.per_file_ignores = {str(k): list(v) for k, v in value.items()}
        elif key == "max-delay":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{where}: {key} must be {expected}, got {value!r}")
            config.max_delay = float(value)
        elif key == "respect-gitignore":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: {key} must be {expected}, got {value!r}")
            config.respect_gitignore = value
        elif key == "dead-letter-pattern":
            config.dead_letter_pattern = _dead_letter_pattern(value, f"{where}: {key}")
    for key in _FIELD_KEYS:
        for name in getattr(config, key.replace("-", "_")):
            if not any(c.isalnum() for c in name):
                raise ConfigError(f"{where}: {key} must name fields (letters or digits), got {name!r}")
    # Validate codes now, so that a typo in the file is reported with the file's name.
    for key in ("select", "ignore", "extend-select"):
        values = getattr(config, key.replace("-", "_"))
        if values:
            expand_codes(values, f"{where} {key}")
    for pattern, codes in config.per_file_ignores.items():
        expand_codes(codes, f"{where} per-file-ignores[{pattern!r}]")
    return config


def _dead_letter_pattern(value: Any, where: str) -> str:
    import re

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be {KEYS['dead-letter-pattern']} (a non-empty string), got {value!r}")
    try:
        compiled = re.compile(value, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{where} is not a valid regular expression ({exc}): {value!r}") from None
    if compiled.search("") is not None:
        raise ConfigError(f"{where} matches every name (it matches the empty string): {value!r}")
    return value


def _closest(key: str, choices: Iterable[str]) -> Optional[str]:
    import difflib

    matches = difflib.get_close_matches(key, list(choices), n=1)
    return matches[0] if matches else None


def expand_codes(selectors: Sequence[str], where: str) -> FrozenSet[str]:
    """``RTY2`` → every RTY2xx code; ``ALL``; rule names (``fixed-delay-retry``) work too."""
    out = set()
    for selector in selectors:
        token = selector.strip()
        if not token:
            continue
        if token.upper() == "ALL":
            out |= set(NAMES)
            continue
        if token in CODES:
            out.add(CODES[token])
            continue
        matched = {code for code in NAMES if code.startswith(token.upper())}
        if not matched or not token.upper().startswith("RTY"):
            known = ", ".join(sorted(NAMES))
            raise ConfigError(f"{where}: unknown rule code or prefix {selector!r} (known codes: {known})")
        out |= matched
    return frozenset(out)


def resolve(
    config: Config,
    select: Optional[Sequence[str]] = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    exclude: Optional[Sequence[str]] = None,
    extend_exclude: Sequence[str] = (),
) -> Settings:
    """Settings from the file, overridden by the command line (as ruff does).

    The rule selection is built in two layers, the file's and then the command line's; each
    layer starts from its ``select`` when it has one (else from the layer before), adds its
    ``extend-select`` and removes its ``ignore``. So ``--select RTY202`` enables RTY202 even
    when the file ignores it, and ``--ignore`` removes a rule whatever the file selects."""
    enabled = frozenset(NAMES)
    if config.select is not None:
        enabled = expand_codes(config.select, "select")
    enabled |= expand_codes(list(config.extend_select), "extend-select")
    enabled -= expand_codes(list(config.ignore), "ignore")
    if select is not None:
        enabled = expand_codes(select, "--select")
    enabled |= expand_codes(list(extend_select), "--extend-select")
    enabled -= expand_codes(list(ignore), "--ignore")
    if exclude is not None:
        excluded: Tuple[str, ...] = tuple(exclude)
    else:
        excluded = tuple(config.exclude) if config.exclude is not None else DEFAULT_EXCLUDE
    per_file: Tuple[Tuple[str, FrozenSet[str]], ...] = tuple(
        (pattern, expand_codes(codes, "per-file-ignores")) for pattern, codes in config.per_file_ignores.items()
    )
    settings = Settings(
        enabled=frozenset(enabled),
        per_file_ignores=per_file,
        exclude=excluded,
        extend_exclude=tuple(config.extend_exclude) + tuple(extend_exclude),
        respect_gitignore=config.respect_gitignore,
        permanent_exceptions=DEFAULT_PERMANENT_EXCEPTIONS + tuple(config.permanent_exceptions),
        transient_exceptions=tuple(config.transient_exceptions),
        dead_letter_reason_fields=DEFAULT_DEAD_LETTER_REASON_FIELDS + tuple(config.dead_letter_reason_fields),
        dead_letter_attempt_fields=DEFAULT_DEAD_LETTER_ATTEMPT_FIELDS + tuple(config.dead_letter_attempt_fields),
        dead_letter_first_received_fields=DEFAULT_DEAD_LETTER_FIRST_RECEIVED_FIELDS
        + tuple(config.dead_letter_first_received_fields),
    )
    if config.dead_letter_pattern is not None:
        settings = replace(settings, dead_letter_pattern=config.dead_letter_pattern)
    if config.max_delay is not None:
        settings = replace(settings, max_delay=config.max_delay)
    return settings


#: Folders skipped when walking a directory (``exclude`` replaces this list; ``extend-exclude`` adds to it).
DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytype",
    ".ruff_cache",
    ".retrylint_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)
