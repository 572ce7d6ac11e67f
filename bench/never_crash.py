#!/usr/bin/env python3
"""Never-crash corpus run: retrylint over the standard library and ~70 popular packages.

It creates a throwaway virtual environment (default ``/tmp/retrylint-corpus-venv``), installs
popular packages with a lot of Python in it one by one (a package that fails to install is
skipped and counted), then runs the real command line, ``python -m retrylint check
--exit-zero --output-format json``, over every ``.py`` file of the running Python's standard
library and of that environment's site-packages, and prints:

* files checked, files with findings, findings per code;
* "could not analyse" notices, with their reasons grouped and counted;
* RTY001 (unreadable, undecodable, syntax errors), grouped by kind;
* internal errors (must be 0), each with its path and message;
* crashes (must be 0): a run that exits with anything but 0 or 2, prints a traceback, is
  killed by a signal, prints an error line that is not a file's internal error, or does not
  finish within ``--timeout``; each is narrowed down to the file(s) that cause it;
* the wall time.

Files are named explicitly (no exclude pattern, no .gitignore applies: ``site-packages`` itself
and build/dist folders inside packages are checked too) and given to the command line in chunks,
so that one crash costs one chunk, which is then re-run file by file to find the culprit.

    python bench/never_crash.py                              # install, then run (tens of minutes)
    python bench/never_crash.py --reuse-venv                 # keep an existing corpus venv
    python bench/never_crash.py --no-stdlib --details /tmp/never_crash.json

Exit status: 0 when there are no internal errors and no crashes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

DEFAULT_VENV = "/tmp/retrylint-corpus-venv"

#: Popular packages with a lot of Python, retry code among it (SDKs, brokers, HTTP clients,
#: task queues) and a lot of unusual syntax (numpy/sympy/mypy/black/parso test data, Django's
#: generated code, the Kubernetes client). Installed one by one; failures are skipped.
PACKAGES: Tuple[str, ...] = (
    # web frameworks and HTTP
    "django", "flask", "werkzeug", "jinja2", "fastapi", "starlette", "tornado", "twisted",
    "requests", "urllib3", "httpx", "httpcore", "aiohttp",
    # retry libraries
    "tenacity", "backoff", "stamina", "retrying", "retry",
    # cloud SDKs
    "boto3", "botocore", "s3transfer", "google-api-core", "google-cloud-pubsub", "google-cloud-storage",
    "azure-core", "azure-servicebus", "azure-storage-blob", "openai", "anthropic", "kubernetes",
    # brokers and task queues
    "celery", "kombu", "redis", "pika", "aio-pika", "confluent-kafka", "kafka-python", "aiokafka",
    "dramatiq", "rq", "huey", "pymongo", "elasticsearch", "psycopg",
    # data and science
    "numpy", "pandas", "scipy", "sympy", "networkx", "matplotlib", "scikit-learn", "sqlalchemy", "alembic",
    # tooling
    "pytest", "hypothesis", "attrs", "setuptools", "pip", "sphinx", "docutils", "pygments", "black",
    "mypy", "pylint", "astroid", "parso", "jedi", "ipython", "libcst",
    # everything else
    "click", "typer", "rich", "pydantic", "pyyaml", "paramiko", "sentry-sdk", "opentelemetry-sdk",
    "marshmallow", "jsonschema", "scrapy", "ansible-core",
)

_WARNING = re.compile(r"^retrylint: warning: (?P<path>.*?): (?P<reason>could not analyse.*)$")
_INTERNAL = re.compile(r"^retrylint: error: (?P<path>.*?): (?P<reason>internal error.*)$")


# ---------------------------------------------------------------- the corpus venv


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def make_venv(venv: Path, packages: Sequence[str], reuse: bool, log) -> Tuple[List[str], List[str]]:
    """Create (or reuse) the venv and install ``packages``: (installed, failed)."""
    marker = venv / "never-crash-installed.json"
    if reuse and marker.is_file() and venv_python(venv).exists():
        recorded = json.loads(marker.read_text())
        log(f"reusing {venv} ({len(recorded['installed'])} packages installed earlier)")
        return recorded["installed"], recorded["failed"]
    if not venv_python(venv).exists():
        log(f"creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv_python(venv))
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=False)
    installed: List[str] = []
    failed: List[str] = []
    for index, package in enumerate(packages, 1):
        started = time.monotonic()
        # Wheels only: a package that would need a compiler is skipped, not built for minutes.
        result = subprocess.run(
            [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--only-binary=:all:", package],
            capture_output=True, text=True,
        )
        took = time.monotonic() - started
        if result.returncode == 0:
            installed.append(package)
            log(f"  [{index}/{len(packages)}] {package}: installed ({took:.0f} s)")
        else:
            failed.append(package)
            last = (result.stderr.strip().splitlines() or ["?"])[-1]
            log(f"  [{index}/{len(packages)}] {package}: FAILED ({last[:160]})")
    marker.write_text(json.dumps({"installed": installed, "failed": failed}, indent=1))
    return installed, failed


def site_packages(venv: Path) -> Path:
    python = str(venv_python(venv))
    out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def python_files(top: Path, skip: Iterable[Path] = ()) -> List[Path]:
    """Every ``.py`` file under ``top`` (symlinks not followed), except under ``skip``."""
    skipped = {p.resolve() for p in skip}
    found: List[Path] = []
    for directory, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and (here / d).resolve() not in skipped)
        found.extend(here / name for name in sorted(filenames) if name.endswith(".py"))
    return found


# ---------------------------------------------------------------- running the command line


@dataclass
class Outcome:
    """What one command-line run over some files said."""

    returncode: Optional[int]  # None: timed out
    findings: List[dict] = field(default_factory=list)
    notices: List[Tuple[str, str]] = field(default_factory=list)
    internal: List[Tuple[str, str]] = field(default_factory=list)
    #: Why this run counts as a crash ("" when it does not).
    crash: str = ""
    stderr_tail: str = ""


@dataclass
class Totals:
    files: int = 0
    findings: List[dict] = field(default_factory=list)
    notices: List[Tuple[str, str]] = field(default_factory=list)
    internal: List[Tuple[str, str]] = field(default_factory=list)
    crashes: List[dict] = field(default_factory=list)


def cli_flags(workdir: Path) -> List[str]:
    """Flags this retrylint understands: no cache (every file analysed) where there is one."""
    help_text = subprocess.run([sys.executable, "-m", "retrylint", "check", "--help"], capture_output=True,
                               text=True, cwd=workdir).stdout
    flags = ["--exit-zero", "--output-format", "json", "--config", str(workdir / "retrylint.toml")]
    if "--no-cache" in help_text:
        flags.append("--no-cache")
    return flags


def run_cli(files: Sequence[Path], flags: Sequence[str], workdir: Path, timeout: float, jobs: Optional[int]) -> Outcome:
    command = [sys.executable, "-m", "retrylint", "check", *flags]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    # Absolute paths, run from a scratch directory: no project config, cache or .gitignore applies.
    command += [str(p) for p in files]
    try:
        result = subprocess.run(command, capture_output=True, text=True, cwd=workdir, timeout=timeout,
                                errors="replace")
    except subprocess.TimeoutExpired as exc:
        tail = exc.stderr.decode("utf-8", "replace")[-1500:] if isinstance(exc.stderr, bytes) else (exc.stderr or "")[-1500:]
        return Outcome(None, crash=f"no result after {timeout:.0f} s (hang?)", stderr_tail=tail)
    outcome = Outcome(result.returncode, stderr_tail=result.stderr[-3000:])
    unexplained: List[str] = []
    for line in result.stderr.splitlines():
        warning = _WARNING.match(line)
        internal = _INTERNAL.match(line)
        if warning:
            outcome.notices.append((_absolute(warning["path"], workdir), warning["reason"]))
        elif internal:
            outcome.internal.append((_absolute(internal["path"], workdir), internal["reason"]))
        elif line.startswith("retrylint: error:") or "Traceback (most recent call last)" in line:
            unexplained.append(line)
    try:
        outcome.findings = json.loads(result.stdout) if result.stdout.strip() else []
    except json.JSONDecodeError as exc:
        outcome.crash = f"stdout is not JSON ({exc})"
    for finding in outcome.findings:
        if isinstance(finding.get("filename"), str):
            finding["filename"] = _absolute(finding["filename"], workdir)
    if result.returncode < 0:
        outcome.crash = f"killed by signal {-result.returncode}"
    elif result.returncode not in (0, 2):  # --exit-zero: findings exit 0; internal errors exit 2
        outcome.crash = f"exit code {result.returncode}"
    elif result.returncode == 2 and not outcome.internal:
        outcome.crash = "exit code 2 without an internal error reported for a file"
    if any("Traceback" in line for line in unexplained) or "Traceback (most recent call last)" in result.stderr:
        outcome.crash = outcome.crash or "a traceback on stderr"
    elif unexplained and not outcome.crash:
        outcome.crash = f"unexplained error output: {unexplained[0][:200]}"
    return outcome


def _absolute(display: str, workdir: Path) -> str:
    """retrylint shows paths relative to its working directory (the scratch one)."""
    return os.path.normpath(os.path.join(workdir, display))


def check_corpus(files: Sequence[Path], chunk: int, timeout: float, jobs: Optional[int], log) -> Totals:
    totals = Totals(files=len(files))
    with tempfile.TemporaryDirectory(prefix="never-crash-") as scratch:
        workdir = Path(scratch)
        (workdir / "retrylint.toml").write_text("# defaults: every rule\n")
        flags = cli_flags(workdir)
        log(f"retrylint check {' '.join(flags)} FILES…")
        chunks = [files[i:i + chunk] for i in range(0, len(files), chunk)]
        started = time.monotonic()
        for number, part in enumerate(chunks, 1):
            outcome = run_cli(part, flags, workdir, timeout, jobs)
            if outcome.crash:
                log(f"  chunk {number}: CRASH ({outcome.crash}); re-running its {len(part)} files one by one")
                _bisect(part, flags, workdir, timeout, totals, log)
            else:
                _add(totals, outcome)
            if number % 5 == 0 or number == len(chunks):
                done = sum(len(c) for c in chunks[:number])
                rate = done / max(time.monotonic() - started, 1e-9)
                log(f"  {done}/{len(files)} files, {rate:.1f} files/s, {len(totals.internal)} internal errors, "
                    f"{len(totals.crashes)} crashes")
    return totals


def _add(totals: Totals, outcome: Outcome) -> None:
    totals.findings.extend(outcome.findings)
    totals.notices.extend(outcome.notices)
    totals.internal.extend(outcome.internal)


def _bisect(files: Sequence[Path], flags: Sequence[str], workdir: Path, timeout: float, totals: Totals, log) -> None:
    """Re-run a crashed chunk in halves down to single files: record each file that crashes alone."""
    if len(files) == 1:
        outcome = run_cli(files, flags, workdir, timeout, 1)
        if outcome.crash:
            log(f"    {files[0]}: {outcome.crash}")
            totals.crashes.append({"path": str(files[0]), "why": outcome.crash, "returncode": outcome.returncode,
                                   "stderr_tail": outcome.stderr_tail})
        else:
            _add(totals, outcome)
        return
    middle = len(files) // 2
    for half in (files[:middle], files[middle:]):
        outcome = run_cli(half, flags, workdir, timeout, 1)
        if outcome.crash:
            _bisect(half, flags, workdir, timeout, totals, log)
        else:
            _add(totals, outcome)


# ---------------------------------------------------------------- the summary


def _reason_key(reason: str) -> str:
    """A notice reason without what differs per file: line numbers, token lists."""
    key = re.sub(r"\d+", "N", reason)
    key = re.sub(r"expected one of .*", "expected one of …", key)
    key = re.sub(r"error at N:N: .*", "error at N:N: …", key)
    return key[:160]


def _rty001_kind(message: str) -> str:
    if message.startswith("cannot read file") or message == "is a directory":
        return "unreadable"
    if message.startswith(("cannot decode", "bad encoding", "binary file")):
        return "undecodable (" + message.split(":")[0] + ")"
    if message.startswith("SyntaxError"):
        return "syntax error"
    return "other: " + message[:80]


def summarise(totals: Totals, roots: Dict[str, Path], installed: Sequence[str], failed: Sequence[str],
              wall: float) -> str:
    lines: List[str] = []
    add = lines.append
    add("=" * 78)
    add("retrylint never-crash corpus run")
    add("=" * 78)
    for label, root in roots.items():
        add(f"{label}: {root}")
    add(f"packages installed: {len(installed)} of {len(installed) + len(failed)}"
        + (f" (failed: {', '.join(failed)})" if failed else ""))
    add("")
    by_file = defaultdict(list)
    for finding in totals.findings:
        by_file[finding.get("filename")].append(finding)
    rty001 = [f for f in totals.findings if f.get("code") == "RTY001"]
    real = [f for f in totals.findings if f.get("code") != "RTY001"]
    add(f"files checked:                {totals.files}")
    add(f"files with findings:          {len({f.get('filename') for f in real})}")
    add(f"findings (excluding RTY001):  {len(real)}")
    for code, count in sorted(Counter(f.get("code") for f in real).items()):
        add(f"    {code}: {count}")
    add(f"RTY001 (files not parsed):    {len(rty001)}")
    for kind, count in Counter(_rty001_kind(f.get("message", "")) for f in rty001).most_common():
        add(f"    {count:5}  {kind}")
    add(f"'could not analyse' notices:  {len(totals.notices)}")
    for key, count in Counter(_reason_key(reason) for _, reason in totals.notices).most_common():
        add(f"    {count:5}  {key}")
    add(f"internal errors:              {len(totals.internal)}   (must be 0)")
    for path, reason in totals.internal:
        add(f"    {path}: {reason[:300]}")
    add(f"crashes:                      {len(totals.crashes)}   (must be 0)")
    for crash in totals.crashes:
        add(f"    {crash['path']}: {crash['why']}")
        tail = [line for line in crash["stderr_tail"].splitlines() if line.strip()][-3:]
        for line in tail:
            add(f"        | {line[:200]}")
    add(f"wall time (checking):         {wall:.0f} s ({totals.files / max(wall, 1e-9):.1f} files/s)")
    if totals.notices:
        add("")
        add("notices, per file:")
        for path, reason in totals.notices:
            add(f"    {path}: {reason[:200]}")
    if rty001:
        add("")
        add("RTY001, per file:")
        for finding in sorted(rty001, key=lambda f: f.get("filename", "")):
            row = (finding.get("location") or {}).get("row")
            add(f"    {finding.get('filename')}:{row}: {finding.get('message', '')[:160]}")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=DEFAULT_VENV, help=f"the corpus venv (default {DEFAULT_VENV})")
    parser.add_argument("--reuse-venv", action="store_true", help="use an existing corpus venv as it is")
    parser.add_argument("--packages", nargs="*", help="install these instead of the built-in list")
    parser.add_argument("--no-stdlib", action="store_true", help="check only the venv's site-packages")
    parser.add_argument("--no-venv", action="store_true", help="check only the standard library")
    parser.add_argument("--chunk", type=int, default=400, help="files per command-line run (default 400)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take (default 1800)")
    parser.add_argument("--jobs", type=int, default=None, help="retrylint --jobs (default: its own)")
    parser.add_argument("--details", metavar="JSON", help="also write every notice, error and crash here")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    roots: Dict[str, Path] = {}
    installed: List[str] = []
    failed: List[str] = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files: List[Path] = []
    if not args.no_stdlib:
        roots["stdlib"] = stdlib
        # pyenv and many distributions keep the global site-packages inside the stdlib folder.
        files += python_files(stdlib, skip=[stdlib / "site-packages", stdlib / "dist-packages"])
    if not args.no_venv:
        venv = Path(args.venv)
        installed, failed = make_venv(venv, args.packages or PACKAGES, args.reuse_venv, log)
        log(f"packages installed: {len(installed)} of {len(installed) + len(failed)}")
        roots["site-packages"] = site_packages(venv)
        files += python_files(roots["site-packages"])
    jobs_text = f", --jobs {args.jobs}" if args.jobs else ""
    log(f"checking {len(files)} files in chunks of {args.chunk}{jobs_text}")
    started = time.monotonic()
    totals = check_corpus(files, args.chunk, args.timeout, args.jobs, log)
    wall = time.monotonic() - started
    print(summarise(totals, roots, installed, failed, wall), end="")
    if args.details:
        Path(args.details).write_text(json.dumps({
            "files": totals.files, "installed": installed, "failed": failed, "wall_s": wall,
            "notices": totals.notices, "internal_errors": totals.internal, "crashes": totals.crashes,
            "findings": totals.findings,
        }, indent=1))
    return 1 if totals.internal or totals.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
