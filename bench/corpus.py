#!/usr/bin/env python3
"""Download and extract the pinned real-world corpus used by bench/score.py.

Every package is pinned to one version.  For each pin the script asks pip for a
wheel first (pure-Python wheels are platform independent; for packages that only
ship binary wheels a manylinux/cp311 wheel is requested explicitly so that every
machine gets the same file) and falls back to the sdist.  The archive is
extracted into ``bench/.corpus/<dist>-<version>/`` (git-ignored):

* a wheel is unpacked as is (so ``bench/.corpus/rq-3.0.0/rq/worker.py``);
* an sdist is unpacked with its single top-level folder stripped.

Label files refer to corpus files as ``<dist>-<version>/<path inside the archive>``.

The script is idempotent: a package whose folder already exists (and holds the
``.complete`` marker written after a successful extraction) is skipped.

Usage::

    python bench/corpus.py            # fetch everything that is missing
    python bench/corpus.py --list     # print the pins and exit
    python bench/corpus.py --only rq arq
    python bench/corpus.py --force    # re-extract even when present
    python bench/corpus.py --pin cassandra_driver==3.29.2   # fetch before labeling
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS_DIR = HERE / ".corpus"
DOWNLOAD_DIR = HERE / ".work" / "downloads"
MARKER = ".complete"

# (distribution name as written in the corpus folder, pinned version)
PINS: list[tuple[str, str]] = [
    # asked for by the brief
    ("boto3", "1.44.8"),
    ("s3transfer", "0.19.3"),
    ("botocore", "1.44.8"),
    ("azure_core", "1.41.0"),
    ("openai", "3.57.0"),
    ("slack_sdk", "3.48.0"),
    ("kubernetes", "37.0.2"),
    ("docker", "7.2.0"),
    ("elasticsearch", "9.5.1"),
    ("pymongo", "4.20.1"),
    ("huey", "3.5.4"),
    ("rq", "3.0.0"),
    ("arq", "0.28.0"),
    ("aiokafka", "0.14.0"),
    ("httpcore", "1.0.9"),
    # extra packages with hand-written retries / look-alikes (all have labeled sites)
    ("redis", "8.1.0"),
    ("kombu", "5.7.0"),
    ("celery", "5.7.0"),
    ("google_auth", "2.63.0"),
    ("sentry_sdk", "2.75.0"),
    ("kafka_python", "3.0.12"),
    ("s3fs", "2026.9.0"),
    ("fsspec", "2026.9.0"),
    ("tweepy", "4.17.0"),
    ("huggingface_hub", "2.4.0"),
    ("distributed", "2026.8.0"),
    ("gunicorn", "27.0.1"),
    ("nats_py", "2.16.0"),
    ("websockets", "17.4"),
    ("discord_py", "2.7.1"),
    ("ldap3", "2.9.1"),
    ("instaloader", "4.16"),
    ("stomp_py", "9.0.0"),
    ("paho_mqtt", "2.2.0"),
    ("python_gitlab", "8.6.0"),
    # labeled in around_retry.toml (RTY503 look-alike) but never pinned before
    ("linode_api4", "5.48.0"),
]

# Requesting a fixed target makes binary-only packages resolve to the same wheel
# on every machine (only their .py files are used).
BINARY_TARGET = [
    "--python-version", "3.11",
    "--implementation", "cp",
    "--abi", "cp311",
    "--abi", "abi3",
    "--abi", "none",
    "--platform", "manylinux_2_28_x86_64",
    "--platform", "manylinux_2_17_x86_64",
    "--platform", "manylinux2014_x86_64",
    "--platform", "manylinux1_x86_64",
    "--platform", "any",
]


def all_pins() -> list[tuple[str, str]]:
    """PINS, plus the ``[pins]`` table of every labels file (``dist = "version"``).

    Each labeled corpus declares the packages it needs next to its labels, so that
    corpora can grow without editing this script.
    """
    import tomllib

    pins = list(PINS)
    seen = {_norm(d) for d, _ in pins}
    for labels in sorted((HERE / "labels").glob("*.toml")):
        with open(labels, "rb") as fh:
            table = tomllib.load(fh).get("pins", {})
        for dist, version in table.items():
            if _norm(dist) not in seen:
                pins.append((dist, str(version)))
                seen.add(_norm(dist))
    return pins


def _pip(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           "--disable-pip-version-check", *args]
    return subprocess.run(cmd, capture_output=True, text=True)


def _norm(name: str) -> str:
    return name.replace("-", "_").replace(".", "_").lower()


def _find_archive(folder: Path, dist: str, version: str) -> Path | None:
    want = _norm(dist)
    for p in sorted(folder.iterdir()):
        n = p.name
        if not (n.endswith(".whl") or n.endswith(".tar.gz") or n.endswith(".zip")):
            continue
        stem = n.split(f"-{version}", 1)
        if len(stem) == 2 and _norm(stem[0]) == want:
            return p
    return None


def download(dist: str, version: str) -> Path:
    """Return the path of the downloaded archive (wheel preferred, sdist fallback)."""
    target = DOWNLOAD_DIR / f"{dist}-{version}"
    target.mkdir(parents=True, exist_ok=True)
    found = _find_archive(target, dist, version)
    if found:
        return found
    spec = f"{dist}=={version}"
    attempts = [
        ["--only-binary", ":all:", "-d", str(target), spec],
        ["--only-binary", ":all:", *BINARY_TARGET, "-d", str(target), spec],
        ["--no-binary", ":all:", "-d", str(target), spec],
    ]
    errors = []
    for args in attempts:
        res = _pip(*args)
        found = _find_archive(target, dist, version)
        if found:
            return found
        errors.append(res.stderr.strip().splitlines()[-1:] or ["(no output)"])
    raise RuntimeError(f"could not download {spec}: {errors}")


def _safe_dest(root: Path, name: str) -> Path | None:
    dest = (root / name).resolve()
    if root.resolve() not in dest.parents and dest != root.resolve():
        return None
    return dest


def extract(archive: Path, dest: Path) -> int:
    """Extract *archive* into *dest*; return the number of files written."""
    tmp = Path(tempfile.mkdtemp(prefix="corpus-", dir=dest.parent))
    count = 0
    try:
        if archive.name.endswith(".whl") or archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                names = zf.namelist()
                strip = archive.name.endswith(".zip") and _single_top(names)
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    name = info.filename
                    if strip:
                        name = name.split("/", 1)[1] if "/" in name else ""
                    if not name:
                        continue
                    out = _safe_dest(tmp, name)
                    if out is None:
                        continue
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    count += 1
        else:
            with tarfile.open(archive) as tf:
                members = [m for m in tf.getmembers() if m.isfile()]
                strip = _single_top([m.name for m in members])
                for m in members:
                    name = m.name
                    if strip:
                        name = name.split("/", 1)[1] if "/" in name else ""
                    if not name:
                        continue
                    out = _safe_dest(tmp, name)
                    if out is None:
                        continue
                    out.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(m)
                    if src is None:
                        continue
                    with src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    count += 1
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
        (dest / MARKER).write_text(archive.name + "\n")
        return count
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _single_top(names: list[str]) -> bool:
    tops = {n.split("/", 1)[0] for n in names if n}
    return len(tops) == 1 and all("/" in n for n in names if n)


def _show(path: Path) -> str:
    try:
        return str(path.relative_to(HERE.parent))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="only these distributions")
    ap.add_argument("--force", action="store_true", help="re-extract even if present")
    ap.add_argument("--list", action="store_true", help="print the pins and exit")
    ap.add_argument("--pin", nargs="*", metavar="DIST==VERSION",
                    help="fetch only these, pinned here (for a labels file not written yet)")
    args = ap.parse_args(argv)

    pins = all_pins()
    if args.pin:
        # A labeler fetches the packages before the labels file (and its [pins]) exists.
        pins = [tuple(spec.split("==", 1)) for spec in args.pin if "==" in spec]
        if len(pins) != len(args.pin):
            print("--pin wants DIST==VERSION", file=sys.stderr)
            return 2
    if args.only:
        wanted = {_norm(n) for n in args.only}
        pins = [p for p in pins if _norm(p[0]) in wanted]
        missing = wanted - {_norm(p[0]) for p in pins}
        if missing:
            print(f"unknown distribution(s): {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    if args.list:
        for dist, version in pins:
            print(f"{dist}=={version}")
        return 0

    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    failures = 0
    for dist, version in pins:
        dest = CORPUS_DIR / f"{dist}-{version}"
        if (dest / MARKER).exists() and not args.force:
            print(f"skip     {dist}=={version} (already in {_show(dest)})")
            continue
        try:
            archive = download(dist, version)
            n = extract(archive, dest)
        except Exception as exc:  # report and go on with the others
            failures += 1
            print(f"FAILED   {dist}=={version}: {exc}", file=sys.stderr)
            continue
        print(f"fetched  {dist}=={version} <- {archive.name}: {n} files "
              f"-> {_show(dest)}")
    if failures:
        print(f"{failures} package(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
