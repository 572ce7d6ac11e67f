#!/usr/bin/env python3
"""Score retrylint's RTY1xx-RTY3xx findings against the hand-labeled corpus.

Usage::

    python bench/corpus.py                      # once: fetch the pinned packages
    python bench/score.py                       # run the checker and print the table
    python bench/score.py --json                # machine-readable numbers
    python bench/score.py --findings out.json   # score a saved JSON report instead
    python bench/score.py --list-files          # the corpus files that are linted
    python bench/score.py --selftest            # check the scoring core on made-up data

The checker is run as::

    python -m retrylint check --output-format json --exit-zero \
        --select RTY1,RTY2,RTY3 <files>

and its output (ruff's JSON shape: a list of objects with ``code``, ``filename``,
``location.row`` ...) is matched to the labels in ``bench/labels/handwritten.toml``.

Scoring (see bench/labels/README.md):

* every label names a site: ``file`` (relative to ``bench/.corpus``) and ``line``
  (the ``for``/``while``/``async for`` keyword, or the ``def`` of a recursive
  retry).  Its span is the AST node starting at that line, up to ``end_lineno``.
* a finding belongs to the innermost labeled span of its file containing its row.
  If the site's ``expect`` list has the finding's code it is a true positive
  (each (site, code) counts once; repeats are ignored), otherwise a false
  positive.  Findings outside every labeled span of a reviewed file are false
  positives too.  Findings in files that were not reviewed are ignored.
* every expected (site, code) without a finding is a false negative.
* precision = TP / (TP + FP), recall = TP / (TP + FN), per rule and overall.

Exit status: 0 when scoring ran (whatever the numbers), 1 when --selftest fails,
2 when the labels are invalid, the corpus is missing or the checker did not
produce a JSON report.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_LABELS = HERE / "labels" / "handwritten.toml"
DEFAULT_CORPUS = HERE / ".corpus"
SELECT = "RTY1,RTY2,RTY3"
KINDS = ("loop", "recursion", "not-a-retry", "call", "decorator")
SCORED_CODE = re.compile(r"^RTY[1-5]\d\d$")
# The rules this corpus is meant to measure (shown even when they have no counts).
RULES = ("RTY101", "RTY103", "RTY201", "RTY202", "RTY203", "RTY204",
         "RTY301", "RTY302", "RTY303")


# --------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Label:
    file: str
    line: int
    kind: str
    expect: tuple[str, ...]
    note: str = ""
    #: optional grouping for a per-group table (a retry library, a broker family)
    group: str = ""


@dataclass(frozen=True)
class Finding:
    file: str  # relative to the corpus root, like Label.file
    row: int
    code: str
    message: str = ""


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        d = self.tp + self.fp
        return self.tp / d if d else None

    @property
    def recall(self) -> float | None:
        d = self.tp + self.fn
        return self.tp / d if d else None

    def as_dict(self) -> dict:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn,
                "precision": self.precision, "recall": self.recall}


@dataclass
class Result:
    per_rule: dict[str, Counts] = field(default_factory=dict)
    overall: Counts = field(default_factory=Counts)
    true_positives: list[dict] = field(default_factory=list)
    false_positives: list[dict] = field(default_factory=list)
    false_negatives: list[dict] = field(default_factory=list)
    duplicates: int = 0
    ignored: int = 0  # findings in files that were not reviewed
    unscored: list[dict] = field(default_factory=list)  # e.g. RTY001

    def as_dict(self) -> dict:
        return {
            "per_rule": {k: v.as_dict() for k, v in sorted(self.per_rule.items())},
            "overall": self.overall.as_dict(),
            "false_positives": self.false_positives,
            "false_negatives": self.false_negatives,
            "true_positives": len(self.true_positives),
            "duplicates": self.duplicates,
            "ignored_outside_reviewed_files": self.ignored,
            "unscored_findings": self.unscored,
        }


# --------------------------------------------------------------------------- core
def innermost(spans: list[tuple[int, int, Label]], row: int) -> Label | None:
    """The label whose span contains ``row`` and starts last (then ends first)."""
    best = None
    for start, end, label in spans:
        if start <= row <= end:
            if best is None or (start, -end) > (best[0], -best[1]):
                best = (start, end, label)
    return best[2] if best else None


def score(labels: list[Label], findings: list[Finding],
          spans: dict[tuple[str, int], tuple[int, int]],
          reviewed: set[str] | None = None) -> Result:
    """Pure scoring function.

    ``spans`` maps (file, line) of every label to its (start_row, end_row).
    ``reviewed`` is the set of files whose findings are scored (defaults to the
    files that have labels).
    """
    if reviewed is None:
        reviewed = {lb.file for lb in labels}
    else:
        reviewed = set(reviewed) | {lb.file for lb in labels}
    by_file: dict[str, list[tuple[int, int, Label]]] = {}
    for lb in labels:
        start, end = spans[(lb.file, lb.line)]
        by_file.setdefault(lb.file, []).append((start, end, lb))

    res = Result()
    for code in RULES:
        res.per_rule[code] = Counts()

    def counts(code: str) -> Counts:
        return res.per_rule.setdefault(code, Counts())

    matched: set[tuple[str, int, str]] = set()
    for f in sorted(findings, key=lambda x: (x.file, x.row, x.code)):
        if not SCORED_CODE.match(f.code):
            res.unscored.append({"file": f.file, "row": f.row, "code": f.code,
                                 "message": f.message})
            continue
        if f.file not in reviewed:
            res.ignored += 1
            continue
        site = innermost(by_file.get(f.file, []), f.row)
        if site is not None and f.code in site.expect:
            key = (site.file, site.line, f.code)
            if key in matched:
                res.duplicates += 1
                continue
            matched.add(key)
            counts(f.code).tp += 1
            res.true_positives.append({"file": f.file, "row": f.row, "code": f.code,
                                       "site_line": site.line})
            continue
        counts(f.code).fp += 1
        if site is None:
            where, site_line, note = "outside labeled sites", None, ""
        elif site.kind == "not-a-retry":
            where, site_line, note = "not-a-retry site", site.line, site.note
        else:
            where, site_line, note = f"{site.kind} site, code not expected", site.line, site.note
        res.false_positives.append({"file": f.file, "row": f.row, "code": f.code,
                                    "message": f.message, "where": where,
                                    "site_line": site_line, "note": note})

    for lb in labels:
        for code in lb.expect:
            if (lb.file, lb.line, code) not in matched:
                counts(code).fn += 1
                res.false_negatives.append({"file": lb.file, "line": lb.line,
                                            "code": code, "kind": lb.kind,
                                            "note": lb.note})

    for c in res.per_rule.values():
        res.overall.tp += c.tp
        res.overall.fp += c.fp
        res.overall.fn += c.fn
    return res


# --------------------------------------------------------------------------- labels
class LabelError(Exception):
    pass


def load_labels(path: Path) -> tuple[list[Label], list[str]]:
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    files = list(data.get("files", []))
    labels: list[Label] = []
    errors: list[str] = []
    seen: set[tuple[str, int]] = set()
    for i, raw in enumerate(data.get("site", []), 1):
        try:
            lb = Label(file=str(raw["file"]), line=int(raw["line"]), kind=str(raw["kind"]),
                       expect=tuple(raw.get("expect", [])), note=str(raw.get("note", "")),
                       group=str(raw.get("group", "")))
        except (KeyError, TypeError, ValueError) as exc:
            errors.append(f"site #{i}: bad entry ({exc!r}): {raw}")
            continue
        if lb.kind not in KINDS:
            errors.append(f"{lb.file}:{lb.line}: unknown kind {lb.kind!r}")
        if lb.kind == "not-a-retry" and lb.expect:
            errors.append(f"{lb.file}:{lb.line}: a not-a-retry site cannot expect codes")
        for code in lb.expect:
            if not SCORED_CODE.match(code):
                errors.append(f"{lb.file}:{lb.line}: expected code {code!r} is not RTY1xx-5xx")
        if (lb.file, lb.line) in seen:
            errors.append(f"{lb.file}:{lb.line}: labeled twice")
        seen.add((lb.file, lb.line))
        labels.append(lb)
    if errors:
        raise LabelError("\n".join(errors))
    return labels, files


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def compute_spans(labels: list[Label], corpus: Path) -> dict[tuple[str, int], tuple[int, int]]:
    """Span of each label: the loop (or def, for recursion) that starts at its line."""
    spans: dict[tuple[str, int], tuple[int, int]] = {}
    errors: list[str] = []
    trees: dict[str, ast.AST | None] = {}
    for lb in labels:
        if lb.file not in trees:
            path = corpus / lb.file
            try:
                trees[lb.file] = ast.parse(path.read_text(encoding="utf-8-sig"), filename=str(path))
            except (OSError, SyntaxError, UnicodeDecodeError) as exc:
                trees[lb.file] = None
                errors.append(f"{lb.file}: cannot parse ({exc})")
        tree = trees[lb.file]
        if tree is None:
            continue
        policy_like = lb.kind in ("call", "decorator")
        if lb.kind == "not-a-retry" and not any(isinstance(n, _LOOPS + _DEFS) and n.lineno == lb.line
                                                 for n in ast.walk(tree)):
            policy_like = True  # a look-alike policy (``Retry(total=0)``) or decorator, spanned as one
        if policy_like:
            # A library policy: the statement (or decorator expression) starting at the line.
            decorators = [d for n in ast.walk(tree) if isinstance(n, _DEFS + (ast.ClassDef,))
                          for d in n.decorator_list if d.lineno == lb.line]
            if lb.kind == "decorator" or (lb.kind == "not-a-retry" and decorators):
                nodes = decorators
            else:
                nodes = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == lb.line]
                if not nodes:
                    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.expr) and n.lineno == lb.line]
            if not nodes:
                errors.append(f"{lb.file}:{lb.line}: no {lb.kind} starts at this line")
                continue
            node = min(nodes, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)  # the innermost
            spans[(lb.file, lb.line)] = (node.lineno, node.end_lineno or node.lineno)
            continue
        wanted = _DEFS if lb.kind == "recursion" else _LOOPS
        fallback = _LOOPS + _DEFS
        nodes = [n for n in ast.walk(tree) if isinstance(n, wanted) and n.lineno == lb.line]
        if not nodes and lb.kind == "not-a-retry":
            nodes = [n for n in ast.walk(tree) if isinstance(n, fallback) and n.lineno == lb.line]
        if not nodes:
            errors.append(f"{lb.file}:{lb.line}: no {'def' if lb.kind == 'recursion' else 'loop'} "
                          f"starts at this line")
            continue
        node = max(nodes, key=lambda n: n.end_lineno or n.lineno)  # outermost at that line
        spans[(lb.file, lb.line)] = (node.lineno, node.end_lineno or node.lineno)
    if errors:
        raise LabelError("\n".join(errors))
    return spans


# --------------------------------------------------------------------------- checker
def relativize(filename: str, corpus: Path, base: Path | None = None) -> str:
    """Path of ``filename`` relative to the corpus root (relative names are taken
    relative to ``base``: the directory the checker ran in)."""
    p = Path(filename)
    if not p.is_absolute():
        p = (base or Path.cwd()) / p
    try:
        return p.resolve().relative_to(corpus.resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def parse_findings(report: list, corpus: Path, base: Path | None = None) -> list[Finding]:
    out = []
    for item in report:
        loc = item.get("location") or {}
        out.append(Finding(file=relativize(str(item.get("filename", "")), corpus, base),
                           row=int(loc.get("row") or 0),
                           code=str(item.get("code") or ""),
                           message=str(item.get("message") or "")))
    return out


def run_checker(files: list[str], corpus: Path, select: str = SELECT) -> list:
    paths = [str((corpus / f).resolve()) for f in files]
    report: list = []
    chunk = 200
    for i in range(0, len(paths), chunk):
        cmd = [sys.executable, "-m", "retrylint", "check", "--output-format", "json",
               "--exit-zero", "--select", select, *paths[i:i + chunk]]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(HERE.parent))
        text = proc.stdout.strip()
        try:
            part = json.loads(text) if text else []
        except json.JSONDecodeError:
            raise RuntimeError(
                f"checker did not print a JSON report (exit {proc.returncode}).\n"
                f"command: {' '.join(cmd[:9])} ...\nstdout: {proc.stdout[:2000]}\n"
                f"stderr: {proc.stderr[:2000]}")
        if not isinstance(part, list):
            raise RuntimeError(f"checker JSON is not a list: {text[:500]}")
        report.extend(part)
    return report


# --------------------------------------------------------------------------- output
def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def print_report(res: Result, labels: list[Label], reviewed: set[str], out=sys.stdout) -> None:
    kinds = {k: sum(1 for lb in labels if lb.kind == k) for k in KINDS}
    pairs = sum(len(lb.expect) for lb in labels)
    print(f"corpus: {len(reviewed)} files, {len(labels)} labeled sites "
          f"({kinds['loop']} loop, {kinds['recursion']} recursion, "
          f"{kinds['not-a-retry']} not-a-retry), {pairs} must-fire (site, code) pairs",
          file=out)
    print(file=out)
    print(f"{'rule':<8} {'TP':>4} {'FP':>4} {'FN':>4}  {'precision':>9}  {'recall':>7}", file=out)
    print("-" * 44, file=out)
    for code in sorted(res.per_rule):
        c = res.per_rule[code]
        print(f"{code:<8} {c.tp:>4} {c.fp:>4} {c.fn:>4}  {_pct(c.precision):>9}  "
              f"{_pct(c.recall):>7}", file=out)
    print("-" * 44, file=out)
    c = res.overall
    print(f"{'overall':<8} {c.tp:>4} {c.fp:>4} {c.fn:>4}  {_pct(c.precision):>9}  "
          f"{_pct(c.recall):>7}", file=out)
    if res.duplicates:
        print(f"({res.duplicates} repeated finding(s) of an already matched (site, code) ignored)",
              file=out)
    if res.ignored:
        print(f"({res.ignored} finding(s) in files that were not reviewed ignored)", file=out)

    print(f"\nFALSE POSITIVES ({len(res.false_positives)})", file=out)
    for fp in res.false_positives:
        site = f" [site line {fp['site_line']}]" if fp["site_line"] else ""
        print(f"  {fp['file']}:{fp['row']} {fp['code']} -- {fp['where']}{site}", file=out)
        if fp["message"]:
            print(f"      checker: {fp['message']}", file=out)
        if fp["note"]:
            print(f"      label:   {fp['note']}", file=out)

    print(f"\nFALSE NEGATIVES ({len(res.false_negatives)})", file=out)
    for fn in res.false_negatives:
        print(f"  {fn['file']}:{fn['line']} {fn['code']} ({fn['kind']})", file=out)
        if fn["note"]:
            print(f"      label:   {fn['note']}", file=out)

    if res.unscored:
        print(f"\nUNSCORED FINDINGS ({len(res.unscored)}; e.g. RTY001 parse errors)", file=out)
        for u in res.unscored:
            print(f"  {u['file']}:{u['row']} {u['code']} {u['message']}", file=out)


# --------------------------------------------------------------------------- selftest
def selftest() -> int:
    passed = failed = 0

    def check(name: str, cond: bool) -> None:
        nonlocal passed, failed
        if cond:
            passed += 1
        else:
            failed += 1
            print(f"FAIL: {name}")

    a = "pkg-1.0/pkg/a.py"
    b = "pkg-1.0/pkg/b.py"
    labels = [
        Label(a, 10, "loop", ("RTY101", "RTY202"), "outer retry"),
        Label(a, 14, "not-a-retry", (), "inner item loop"),
        Label(a, 40, "recursion", ("RTY103",), "recursive retry"),
        Label(a, 60, "not-a-retry", (), "poller"),
        Label(b, 5, "loop", ("RTY301",), "b retry"),
    ]
    spans = {(a, 10): (10, 30), (a, 14): (14, 18), (a, 40): (40, 50),
             (a, 60): (60, 64), (b, 5): (5, 9)}
    findings = [
        Finding(a, 10, "RTY101"),            # TP
        Finding(a, 25, "RTY202"),            # TP (inside outer span, after inner)
        Finding(a, 26, "RTY202"),            # duplicate of a matched pair: ignored
        Finding(a, 15, "RTY202"),            # inner not-a-retry span: FP
        Finding(a, 61, "RTY101"),            # not-a-retry poller: FP
        Finding(a, 100, "RTY201"),           # outside any span in a reviewed file: FP
        Finding(a, 10, "RTY303"),            # unexpected code at a retry site: FP
        Finding("other.py", 3, "RTY101"),    # file not reviewed: ignored
        Finding(a, 1, "RTY001"),             # not a scored code
        # RTY103 at a:40 is missing -> FN; RTY301 at b:5 is missing -> FN
    ]
    res = score(labels, findings, spans)
    r = res.per_rule
    check("RTY101 tp", r["RTY101"].tp == 1)
    check("RTY101 fp", r["RTY101"].fp == 1)
    check("RTY202 tp", r["RTY202"].tp == 1)
    check("RTY202 fp (innermost span wins)", r["RTY202"].fp == 1)
    check("RTY201 fp outside spans", r["RTY201"].fp == 1)
    check("RTY303 fp unexpected code", r["RTY303"].fp == 1)
    check("RTY103 fn", r["RTY103"].fn == 1 and r["RTY103"].tp == 0)
    check("RTY301 fn", r["RTY301"].fn == 1)
    check("duplicates", res.duplicates == 1)
    check("ignored", res.ignored == 1)
    check("unscored", len(res.unscored) == 1 and res.unscored[0]["code"] == "RTY001")
    check("overall", (res.overall.tp, res.overall.fp, res.overall.fn) == (2, 4, 2))
    check("overall precision", res.overall.precision == 2 / 6)
    check("overall recall", res.overall.recall == 2 / 4)
    check("rule without counts has no precision", r["RTY204"].precision is None)
    kinds = {fp["where"] for fp in res.false_positives}
    check("fp where", kinds == {"not-a-retry site", "outside labeled sites",
                                "loop site, code not expected"})

    # an explicitly reviewed file without labels: every finding there is a FP
    res2 = score(labels, [Finding("pkg-1.0/pkg/c.py", 3, "RTY202")], spans,
                 reviewed={"pkg-1.0/pkg/c.py"})
    check("reviewed file without labels", res2.per_rule["RTY202"].fp == 1)
    # no findings at all: every expected pair is a FN, precision undefined
    res3 = score(labels, [], spans)
    check("empty findings", res3.overall.fn == 4 and res3.overall.precision is None)
    # perfect run
    res4 = score(labels, [Finding(a, 10, "RTY101"), Finding(a, 11, "RTY202"),
                          Finding(a, 45, "RTY103"), Finding(b, 6, "RTY301")], spans)
    check("perfect", res4.overall.precision == 1.0 and res4.overall.recall == 1.0)

    # innermost helper on touching/nested spans
    l1, l2 = Label(a, 1, "loop", ()), Label(a, 3, "loop", ())
    check("innermost nested", innermost([(1, 10, l1), (3, 5, l2)], 4) is l2)
    check("innermost outer", innermost([(1, 10, l1), (3, 5, l2)], 6) is l1)
    check("innermost none", innermost([(1, 10, l1)], 11) is None)

    # span computation and label validation on a temporary file
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "p").mkdir()
        (root / "p" / "m.py").write_text(
            "import time\n"
            "def f(n=0):\n"
            "    for i in range(3):\n"
            "        try:\n"
            "            return g()\n"
            "        except OSError:\n"
            "            time.sleep(1)\n"
            "    return f(n + 1)\n"
            "\n"
            "async def h():\n"
            "    while True:\n"
            "        async for x in q():\n"
            "            pass\n")
        ls = [Label("p/m.py", 3, "loop", ()), Label("p/m.py", 2, "recursion", ()),
              Label("p/m.py", 11, "not-a-retry", ()), Label("p/m.py", 12, "not-a-retry", ())]
        sp = compute_spans(ls, root)
        check("span for", sp[("p/m.py", 3)] == (3, 7))
        check("span def", sp[("p/m.py", 2)] == (2, 8))
        check("span while", sp[("p/m.py", 11)] == (11, 13))
        check("span async for", sp[("p/m.py", 12)] == (12, 13))
        try:
            compute_spans([Label("p/m.py", 4, "loop", ())], root)
            check("bad line rejected", False)
        except LabelError:
            check("bad line rejected", True)
        (root / "l.toml").write_text(
            'files = ["p/m.py"]\n[[site]]\nfile = "p/m.py"\nline = 3\nkind = "not-a-retry"\n'
            'expect = ["RTY101"]\n')
        try:
            load_labels(root / "l.toml")
            check("not-a-retry with expect rejected", False)
        except LabelError:
            check("not-a-retry with expect rejected", True)
        rep = [{"code": "RTY202", "message": "m", "filename": str(root / "p" / "m.py"),
                "location": {"row": 7, "column": 13}, "end_location": {"row": 7, "column": 25},
                "url": None}]
        fs = parse_findings(rep, root)
        check("relativize", fs[0].file == "p/m.py" and fs[0].row == 7)
        rep[0]["filename"] = "p/m.py"
        fs = parse_findings(rep, root, base=root)
        check("relativize relative name", fs[0].file == "p/m.py")

    print(f"selftest: {passed} passed, {failed} failed")
    return 1 if failed else 0


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Score retrylint on the labeled corpus.")
    ap.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--findings", type=Path,
                    help="score this saved JSON report instead of running the checker")
    ap.add_argument("--json", action="store_true", help="print machine-readable numbers")
    ap.add_argument("--list-files", action="store_true", help="print the scored files and exit")
    ap.add_argument("--selftest", action="store_true", help="test the scoring core and exit")
    ap.add_argument("--select", default=SELECT, help=f"codes the checker reports (default {SELECT})")
    args = ap.parse_args(argv)

    if args.selftest:
        return selftest()

    try:
        labels, files = load_labels(args.labels)
    except (OSError, tomllib.TOMLDecodeError, LabelError) as exc:
        print(f"invalid labels {args.labels}:\n{exc}", file=sys.stderr)
        return 2
    reviewed = sorted(set(files) | {lb.file for lb in labels})
    if args.list_files:
        for f in reviewed:
            print(args.corpus / f)
        return 0

    missing = [f for f in reviewed if not (args.corpus / f).is_file()]
    if missing:
        print(f"{len(missing)} corpus file(s) missing under {args.corpus}, e.g. {missing[0]}\n"
              f"run: {Path(sys.executable).name} bench/corpus.py", file=sys.stderr)
        return 2
    try:
        spans = compute_spans(labels, args.corpus)
    except LabelError as exc:
        print(f"labels do not match the corpus:\n{exc}", file=sys.stderr)
        return 2

    try:
        if args.findings:
            report = json.loads(args.findings.read_text(encoding="utf-8"))
            base = Path.cwd()
        else:
            report = run_checker(reviewed, args.corpus, args.select)
            base = HERE.parent  # the checker runs from the repository root
        if not isinstance(report, list):
            raise RuntimeError("the findings JSON is not a list of findings")
    except (OSError, json.JSONDecodeError, RuntimeError) as exc:
        print(f"could not get findings: {exc}", file=sys.stderr)
        return 2
    findings = parse_findings(report, args.corpus, base)
    res = score(labels, findings, spans, set(reviewed))
    groups = sorted({lb.group for lb in labels if lb.group})
    by_group = {}
    for group in groups:
        # Per group: its labels, and the findings that fall inside its labeled spans.
        mine = [lb for lb in labels if lb.group == group]
        inside = [f for f in findings if any(
            lb.file == f.file and spans[(lb.file, lb.line)][0] <= f.row <= spans[(lb.file, lb.line)][1]
            for lb in mine)]
        by_group[group] = score(mine, inside, spans, set()).overall

    if args.json:
        out = res.as_dict()
        if by_group:
            out["per_group"] = {g: c.as_dict() for g, c in by_group.items()}
        out["corpus"] = {
            "files": len(reviewed), "sites": len(labels),
            "kinds": {k: sum(1 for lb in labels if lb.kind == k) for k in KINDS},
            "must_fire_pairs": sum(len(lb.expect) for lb in labels),
        }
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        print_report(res, labels, set(reviewed))
        if by_group:
            print("\nper group (findings inside the group's labeled sites):")
            print(f"{'group':<22} {'TP':>4} {'FP':>4} {'FN':>4}  precision   recall")
            for group, c in by_group.items():
                print(f"{group:<22} {c.tp:>4} {c.fp:>4} {c.fn:>4}     {_pct(c.precision)}   {_pct(c.recall)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
