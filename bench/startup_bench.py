#!/usr/bin/env python3
"""Start-up: how long ``retrylint check FILE`` takes, process start to exit, on one clean
10-line file, against ``ruff check FILE`` on the same file in the same run (median of N runs,
interleaved so that both see the same machine load).

Three cases, each for both tools:

* ``changed``: the file changes before every run (a new comment), as in a pre-commit hook on
  a commit that touched it: the results cache misses, its saved narrowing gates are used;
* ``unchanged``: the same file again (the cache answers);
* ``no-cache``: ``--no-cache`` (retrylint then imports its engine and libcst).

Usage::

    python bench/startup_bench.py [--runs 20] [--retrylint PATH] [--ruff PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLEAN = '''"""A clean module: ten lines, no retry."""

import os


def main():
    """Print the working directory."""
    here = os.getcwd()  # change {n}
    print(here)
    return 0
'''


ENV = dict(os.environ)


def timed(command, cwd) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command} exited {done.returncode}")
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per tool and case (default 20)")
    here = Path(sys.executable).parent
    parser.add_argument("--retrylint", default=shutil.which("retrylint", path=str(here)) or "retrylint",
                        help="the retrylint executable (default: the one beside this Python)")
    parser.add_argument("--ruff", default=shutil.which("ruff", path=str(here)) or shutil.which("ruff") or "ruff",
                        help="the ruff executable")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE as it is: every run compiles retrylint's sources "
                        "(by default bytecode is written, to a temporary PYTHONPYCACHEPREFIX, as an installed "
                        "package has it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if not args.no_bytecode:
            ENV.pop("PYTHONDONTWRITEBYTECODE", None)
            ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        target = work / "clean.py"
        target.write_text(CLEAN.format(n=0))
        assert len(target.read_text().splitlines()) == 10
        commands = {
            "retrylint": [args.retrylint, "check", "-q", "clean.py"],
            "ruff": [args.ruff, "check", "-q", "clean.py"],
        }
        no_cache = {
            "retrylint": [args.retrylint, "check", "-q", "--no-cache", "clean.py"],
            "ruff": [args.ruff, "check", "-q", "--no-cache", "clean.py"],
        }
        for command in list(commands.values()) + list(no_cache.values()):
            timed(command, work)  # first runs: caches, saved gates and bytecode exist afterwards
        results = {}
        for case in ("changed", "unchanged", "no-cache"):
            times = {tool: [] for tool in commands}
            for n in range(args.runs):
                for tool in commands:
                    if case == "changed":
                        target.write_text(CLEAN.format(n=f"{tool}{n}"))
                    command = no_cache[tool] if case == "no-cache" else commands[tool]
                    times[tool].append(timed(command, work))
            results[case] = {tool: statistics.median(values) for tool, values in times.items()}
    bytecode = "no bytecode (compiled every run)" if args.no_bytecode else "bytecode cached"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {bytecode}, median of {args.runs} runs, ms")
    print(f"{'case':<10} {'retrylint':>10} {'ruff':>8} {'ratio':>7}")
    for case, medians in results.items():
        ratio = medians["retrylint"] / medians["ruff"]
        print(f"{case:<10} {medians['retrylint']:>10.1f} {medians['ruff']:>8.1f} {ratio:>6.1f}x")


if __name__ == "__main__":
    main()
