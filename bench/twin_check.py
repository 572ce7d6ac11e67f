#!/usr/bin/env python3
"""Sync and async twins must get the same verdict.

Packages ship generated twins (``pymongo/synchronous`` and ``pymongo/asynchronous``,
``_shared/policies.py`` and ``policies_async.py``, ``_sync``/``_async`` folders). For each
twin pair of files this compares, function by function, the rule codes retrylint reports,
and prints the functions whose verdicts differ.

    python bench/twin_check.py bench/.corpus          # every twin pair found under a tree

Exit status 1 when a pair differs.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

from retrylint.engine import check_path, settings_with
from retrylint.rules import RULES

SETTINGS = settings_with(tuple(rule.code for rule in RULES if rule.code.startswith(("RTY1", "RTY2", "RTY3"))))
#: How an async twin's path differs from its sync one.
_TWIN_PARTS = (("asynchronous", "synchronous"), ("_async", "_sync"), ("aio", ""))


def twin_of(path: Path) -> Path | None:
    """The sync twin of an async file, when the package has one."""
    text = str(path)
    for async_part, sync_part in _TWIN_PARTS:
        token = f"/{async_part}/"
        if token in text:
            candidate = Path(text.replace(token, f"/{sync_part}/" if sync_part else "/", 1))
            if candidate.is_file():
                return candidate
    stem = re.sub(r"(_async|_aio|async_)$", "", path.stem)
    if stem != path.stem:
        candidate = path.with_name(stem + path.suffix)
        if candidate.is_file():
            return candidate
    return None


def verdicts(path: Path) -> dict[str, set[str]]:
    """Rule codes per enclosing function name (``Class.method``)."""
    tree = ast.parse(path.read_text(encoding="utf-8-sig"))
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.lineno, node.end_lineno or node.lineno, node.name.lstrip("_")))
    out: dict[str, set[str]] = defaultdict(set)
    for finding in check_path(path, str(path), SETTINGS).findings:
        row = finding.location.line
        inside = [s for s in spans if s[0] <= row <= s[1]]
        name = min(inside, key=lambda s: s[1] - s[0])[2] if inside else "<module>"
        out[re.sub(r"^a(?=[a-z])|_async$|async_", "", name)].add(finding.code)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path)
    args = parser.parse_args(argv)
    pairs = 0
    differing = 0
    for root in args.roots:
        for path in sorted(root.rglob("*.py")):
            twin = twin_of(path)
            if twin is None:
                continue
            pairs += 1
            mine, theirs = verdicts(path), verdicts(twin)
            for name in sorted(set(mine) | set(theirs)):
                if mine.get(name, set()) != theirs.get(name, set()):
                    differing += 1
                    print(f"{path} :: {name}: async {sorted(mine.get(name, ()))} vs sync {sorted(theirs.get(name, ()))}")
    print(f"{pairs} twin file pairs, {differing} functions with different verdicts")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
