#!/usr/bin/env python3
"""Narrowing must be lossless: compare every file's findings with and without it.

    python bench/narrowing_check.py                       # the running Python's stdlib
    python bench/narrowing_check.py bench/.corpus /path/to/site-packages --jobs 2
    python bench/narrowing_check.py $(python bench/score.py --list-files)   # the labeled files

Prints the files whose findings (code, position, message), notice or internal error differ,
and a count. Exit status 1 when any differs. The unnarrowed side parses every file with
libcst: expect minutes on a large tree. tests/retrylint/test_narrowing.py runs the same
comparison on a sample in the test suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from retrylint.engine import check_path, settings_with
from retrylint.rules import RULES

SETTINGS = settings_with(tuple(rule.code for rule in RULES))


def _summary(report):
    return sorted((f.code, f.location.line, f.location.column, f.message) for f in report.findings), report.notice, report.error


def compare(path: str):
    narrowed = _summary(check_path(Path(path), path, SETTINGS))
    whole = _summary(check_path(Path(path), path, SETTINGS, narrowing=False))
    return path, narrowed == whole, narrowed, whole


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", default=[sysconfig.get_paths()["stdlib"]])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    files = [p for p in args.paths if os.path.isfile(p)]
    for root in (p for p in args.paths if not os.path.isfile(p)):
        skip_site = "site-packages" not in root  # the stdlib's own site-packages is not the stdlib
        for directory, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (skip_site and d == "site-packages"))
            files += [os.path.join(directory, n) for n in sorted(names) if n.endswith(".py")]
    started = time.perf_counter()
    differ = findings = 0
    with ProcessPoolExecutor(args.jobs) as pool:
        for path, same, narrowed, whole in pool.map(compare, files, chunksize=8):
            findings += len(whole[0])
            if not same:
                differ += 1
                print(f"DIFFERS {path}\n  narrowed: {narrowed}\n  whole:    {whole}")
    print(f"{len(files)} files, {findings} findings without narrowing, {differ} files differ "
          f"({time.perf_counter() - started:.0f} s)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
