#!/usr/bin/env python3
"""How fast is retrylint on a large tree, against ruff and against libcst alone?

One run times, on the same files (default: the running Python's standard library, without
site-packages), in alternation so that machine noise hits all of them alike:

* ``ruff check --select E,F,B --no-cache`` (the baseline the targets are stated against);
* ``retrylint check --no-cache`` is not used: *cold* is a run with an empty cache directory
  (every file analysed, the cache written), *warm* the same command again (nothing changed);
* "ast parses every file": ``ast.parse`` on every file, in as many processes as retrylint
  uses: the syntax check every file gets (RTY001), a floor for retrylint's cold run;
* "libcst parses every file": ``libcst.parse_module`` on every file, in as many processes as
  retrylint uses (the floor a checker that parses everything with libcst cannot beat).

It prints each median, the ratios to ruff, and retrylint's peak memory (the main process
and its largest worker, from ``getrusage``). Targets (issue 7): cold <= 4x ruff, warm <= 1x
ruff, peak RSS <= 300 MB.

    python bench/speed_bench.py                     # stdlib, 3 rounds
    python bench/speed_bench.py --path src/ --rounds 5 --jobs 2
    python bench/speed_bench.py --skip-libcst       # the libcst baseline takes a minute or more
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

# Runs retrylint in-process and reports its own and its workers' peak RSS.
_RETRYLINT = r"""
import json, resource, sys
from retrylint.cli import main
code = main(sys.argv[1:])
me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"exit": code, "self_kb": me, "child_kb": kids}), file=sys.stderr)
"""

# Parses every file in N processes, biggest first: with the standard ``ast`` (the syntax
# check every file gets, RTY001: a floor for retrylint's cold run) or with libcst (the floor
# of a checker that parses everything with libcst).
_PARSE_ALL = r"""
import os, sys, warnings
from concurrent.futures import ProcessPoolExecutor
import {module}

def parse(path):
    warnings.simplefilter("ignore")
    try:
        {module}.{function}(open(path, "rb").read())
        return 1
    except Exception:
        return 0

root, jobs = sys.argv[1], int(sys.argv[2])
files = []
for directory, dirs, names in os.walk(root):
    dirs[:] = [d for d in dirs if d not in ("site-packages", "__pycache__")]
    files += [os.path.join(directory, n) for n in names if n.endswith(".py")]
files.sort(key=lambda p: -os.path.getsize(p))
with ProcessPoolExecutor(jobs) as pool:
    parsed = sum(pool.map(parse, files, chunksize=8))
print(parsed, len(files))
"""
_AST = _PARSE_ALL.format(module="ast", function="parse")
_LIBCST = _PARSE_ALL.format(module="libcst", function="parse_module")


def _timed(command, **kwargs):
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, **kwargs)
    return time.perf_counter() - started, completed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", default=sysconfig.get_paths()["stdlib"], help="tree to check (default: the stdlib)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-libcst", action="store_true", help="do not time the libcst-parses-everything baseline")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    args = parser.parse_args()

    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        print("ruff not found: pip install ruff", file=sys.stderr)
        return 2
    python = sys.executable
    times = {"ruff": [], "retrylint cold": [], "retrylint warm": [], "ast parse": [], "libcst parse": []}
    memory = []
    files = None
    for round_ in range(args.rounds):
        seconds, done = _timed([ruff, "check", "--select", "E,F,B", "--no-cache", "--exit-zero", "-q", args.path])
        times["ruff"].append(seconds)
        cache = tempfile.mkdtemp(prefix="retrylint-bench-cache-")
        try:
            command = [python, "-c", _RETRYLINT, "check", "--exit-zero", "--output-format", "json",
                       "--jobs", str(args.jobs), "--cache-dir", cache, args.path]
            for label in ("retrylint cold", "retrylint warm"):
                seconds, done = _timed(command)
                if done.returncode != 0:
                    print(done.stderr[-2000:], file=sys.stderr)
                    return 1
                times[label].append(seconds)
                stats = json.loads(done.stderr.strip().splitlines()[-1])
                if label == "retrylint cold":
                    memory.append(stats)
                    counts = [line for line in done.stderr.splitlines() if line.startswith("Checked ")]
                    files = counts[-1] if counts else files
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        seconds, done = _timed([python, "-c", _AST, args.path, str(args.jobs)])
        times["ast parse"].append(seconds)
        if not args.skip_libcst and round_ == 0:
            seconds, done = _timed([python, "-c", _LIBCST, args.path, str(args.jobs)])
            times["libcst parse"].append(seconds)
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items() if v), file=sys.stderr)

    medians = {k: statistics.median(v) for k, v in times.items() if v}
    base = medians["ruff"]
    print(f"tree: {args.path}")
    if files:
        print(files.strip())
    print(f"jobs: {args.jobs}, rounds: {args.rounds} (libcst baseline: {len(times['libcst parse'])})")
    print(f"{'':18} {'median s':>9} {'x ruff':>7}")
    for label, value in medians.items():
        print(f"{label:18} {value:9.2f} {value / base:7.2f}")
    worst = max(memory, key=lambda m: m["self_kb"] + args.jobs * m["child_kb"])
    print(f"peak RSS: main process {worst['self_kb'] / 1024:.0f} MB, largest worker {worst['child_kb'] / 1024:.0f} MB "
          f"(all {args.jobs} workers at their peak at once: {(worst['self_kb'] + args.jobs * worst['child_kb']) / 1024:.0f} MB)")
    if args.json:
        print(json.dumps({"medians": medians, "times": times, "memory": memory}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
