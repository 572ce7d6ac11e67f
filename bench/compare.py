#!/usr/bin/env python3
"""Compare two versions of retrylint: on every labeled set, or finding by finding.

    # score every label set with two checkouts (e.g. a `git worktree` of the base commit)
    python bench/compare.py scores /tmp/base-worktree .
    python bench/compare.py scores /tmp/base-worktree . --skip 'blind_review_i*'

    # what changed between two `retrylint check --output-format json` reports
    python bench/compare.py reports before.json after.json

``scores`` runs each checkout's own ``bench/score.py`` (so each measures its own engine) on
this checkout's label files and corpus, with the codes each set labels: ``dlq.toml`` RTY4,
``around_retry.toml`` RTY501–RTY504, ``around_retry_real.toml`` RTY502/RTY504, every other set
RTY1–RTY3. Sets whose name matches ``--skip`` (a glob) are left out: keep blind sets out of a
development loop. ``reports`` matches findings by (file inside the corpus, line, code).
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels"
CORPUS = HERE / ".corpus"
SELECT = {
    "dlq": "RTY4",
    "around_retry": "RTY501,RTY502,RTY503,RTY504",
    "around_retry_real": "RTY502,RTY504",
}
DEFAULT_SELECT = "RTY1,RTY2,RTY3"


def score(root: Path, labels: Path) -> dict:
    completed = subprocess.run(
        [sys.executable, str(root / "bench" / "score.py"), "--labels", str(labels), "--corpus", str(CORPUS),
         "--select", SELECT.get(labels.stem, DEFAULT_SELECT), "--json"],
        capture_output=True, text=True, cwd=root,
    )
    if completed.returncode != 0 or not completed.stdout.strip():
        raise RuntimeError(f"{root}: {labels.name}: {completed.stderr.strip() or 'no output'}")
    return json.loads(completed.stdout)["overall"]


def _row(counts: dict) -> str:
    precision = counts.get("precision") or 0.0
    recall = counts.get("recall") or 0.0
    return f"{counts['tp']:4d} {counts['fp']:4d} {counts['fn']:4d}  P {precision:.3f}  R {recall:.3f}"


def scores(a: Path, b: Path, skip: list) -> int:
    print(f"{'set':28s} {'A: tp   fp   fn':32s} | B: tp   fp   fn")
    worse = 0
    for labels in sorted(LABELS.glob("*.toml")):
        if any(fnmatch.fnmatch(labels.stem, pattern) for pattern in skip):
            continue
        try:
            first, second = score(a, labels), score(b, labels)
        except RuntimeError as error:
            print(f"{labels.stem:28s} error: {error}")
            worse += 1
            continue
        fell = (second.get("recall") or 0) < (first.get("recall") or 0)
        worse += fell
        print(f"{labels.stem:28s} {_row(first)} | {_row(second)}{'  recall fell' if fell else ''}")
    return 1 if worse else 0


def _findings(path: Path) -> dict:
    found = {}
    for item in json.loads(path.read_text()):
        where = item["filename"].split(".corpus/")[-1]
        found[(where, item["location"]["row"], item["code"])] = item["message"]
    return found


def reports(a: Path, b: Path) -> int:
    first, second = _findings(a), _findings(b)
    gone = sorted(set(first) - set(second))
    new = sorted(set(second) - set(first))
    changed = sorted(k for k in set(first) & set(second) if first[k] != second[k])
    print(f"A {len(first)}  B {len(second)}  gone {len(gone)}  new {len(new)}  changed {len(changed)}")
    print("gone by code", dict(collections.Counter(k[2] for k in gone)))
    print("new by code", dict(collections.Counter(k[2] for k in new)))
    for tag, keys, source in (("GONE", gone, first), ("NEW", new, second)):
        for key in keys:
            print(tag, f"{key[0]}:{key[1]}", key[2], source[key][:160])
    for key in changed:
        print("CHANGED", f"{key[0]}:{key[1]}", key[2], "\n   ", first[key][:150], "\n   ", second[key][:150])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    on_sets = commands.add_parser("scores", help="score every label set with two checkouts")
    on_sets.add_argument("a", type=Path)
    on_sets.add_argument("b", type=Path)
    on_sets.add_argument("--skip", action="append", default=[], help="glob of label-set names to leave out")
    on_reports = commands.add_parser("reports", help="diff two JSON reports")
    on_reports.add_argument("a", type=Path)
    on_reports.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "scores":
        return scores(args.a.resolve(), args.b.resolve(), args.skip)
    return reports(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
