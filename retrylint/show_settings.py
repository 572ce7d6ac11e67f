"""``retrylint check --show-settings PATH``: which configuration applies to PATH, and what it says
once the command line is applied (as ``ruff check --show-settings``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .resolver import Resolver


def show_settings(resolver: "Resolver", path: str) -> str:
    target = Path(path)
    scope = resolver.for_directory(target) if target.is_dir() else resolver.for_file(target)
    settings = scope.settings
    config = scope.config.path
    rows = [
        ("select", sorted(settings.enabled)),
        ("per-file-ignores", {pattern: sorted(codes) for pattern, codes in settings.per_file_ignores}),
        ("exclude", list(settings.exclude)),
        ("extend-exclude", list(settings.extend_exclude)),
        ("respect-gitignore", settings.respect_gitignore),
        ("max-delay", settings.max_delay),
        ("permanent-exceptions", list(settings.permanent_exceptions)),
        ("transient-exceptions", list(settings.transient_exceptions)),
        ("dead-letter-pattern", settings.dead_letter_pattern),
        ("dead-letter-reason-fields", list(settings.dead_letter_reason_fields)),
        ("dead-letter-attempt-fields", list(settings.dead_letter_attempt_fields)),
        ("dead-letter-first-received-fields", list(settings.dead_letter_first_received_fields)),
    ]
    lines = [
        f"Resolved settings for: {path}",
        f"Settings path: {config if config is not None else '(none: the defaults)'}",
        f"Project root: {scope.root}",
        "",
    ]
    for key, value in rows:
        lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"
