"""Start-up and cache: a clean file is checked without importing the engine or libcst (once
the engine's gates are saved), the quick verdict agrees with the engine, the code table agrees
with the rules, and parallel runs sharing a cache keep each other's entries."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from retrylint.cache import Cache
from retrylint.codes import NAMES
from retrylint.engine import TRIGGERS, check_path, settings_with
from retrylint.quick import is_clean
from retrylint.records import Report
from retrylint.rules import RULES

from .conftest import CLEAN, FIXED_FOREVER

ALL = settings_with(tuple(rule.code for rule in RULES))
PROBE = (
    "import sys\n"
    "from retrylint.cli import main\n"
    "code = main(['check', '-q', *sys.argv[1:]])\n"
    "print(code, 'libcst' in sys.modules, 'retrylint.engine' in sys.modules)\n"
)


def probe(cwd: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_code_table_is_the_rules_table():
    assert NAMES == {rule.code: rule.name for rule in RULES}


def test_a_clean_file_is_checked_without_libcst(project):
    project.write("clean.py", '"""Nothing to retry."""\n\nimport os\n\nprint(os.getcwd())\n')
    project.write("retry.py", FIXED_FOREVER)
    assert probe(project.root, "retry.py") == "1 True True"  # a file with a retry needs the engine
    project.write("clean.py", '"""Nothing to retry, changed."""\n\nimport os\n\nprint(os.sep)\n')
    assert probe(project.root, "clean.py") == "0 False False"  # a changed clean file does not
    assert probe(project.root, "clean.py") == "0 False False"  # nor an unchanged one (the cache)
    assert probe(project.root, "retry.py") == "1 False False"  # nor cached findings


def _samples():
    here = Path(__file__).resolve().parents[2]
    files = sorted((here / "retrylint").rglob("*.py")) + sorted((here / "tests" / "retrylint").rglob("*.py"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files += sorted(stdlib.glob("*.py"))[:150] + sorted((stdlib / "email").glob("*.py"))
    return files


def test_the_quick_verdict_agrees_with_the_engine():
    gates = [trigger.text for trigger in TRIGGERS if not trigger.context]
    clean = 0
    for path in _samples():
        data = path.read_bytes()
        if is_clean(data, gates):
            clean += 1
            report = check_path(path, str(path), ALL)
            assert (report.findings, report.notice, report.error) == ([], None, None), path
    assert clean > 15  # the samples include files it decides (retrylint's own say "retry": not quick)
    # What the engine reports (a NUL byte, a syntax error, an undecodable file) or analyses (a
    # retry) never gets the quick verdict.
    for data in (b"x = 1\x00\n", b"def f(:\n", b"# coding: bogus\nx = 1\n", b"x = '\xe9'\n",
                 FIXED_FOREVER.encode()):
        assert not is_clean(data, gates), data
    assert is_clean(b"x = 1\n", gates)


def test_two_runs_saving_one_cache_keep_both_their_entries(tmp_path):
    path = tmp_path / "cache" / "0.1.0" / "key.pickle"
    first, second = Cache(path), Cache(path)  # both read the (empty) cache before either writes
    first.put(tmp_path / "a.py", "digest-a", Report("a.py"))
    second.put(tmp_path / "b.py", "digest-b", Report("b.py"))
    first.save()
    second.save()
    with open(path, "rb") as handle:
        entries = pickle.load(handle)
    assert sorted(Path(p).name for p in entries) == ["a.py", "b.py"]
    assert Cache(path).get(tmp_path / "a.py", "digest-a") is not None


@pytest.mark.skipif(os.name != "posix", reason="runs processes side by side")
def test_parallel_batches_keep_every_entry(project, tmp_path):
    """As pre-commit does: several processes at once, each with its own batch of files."""
    batches = []
    for batch in range(4):
        names = []
        for index in range(12):
            name = f"b{batch}_{index}.py"
            project.write(name, FIXED_FOREVER if index % 3 == 0 else CLEAN)
            names.append(name)
        batches.append(names)
    cache = tmp_path / "shared-cache"
    processes = [
        subprocess.Popen([sys.executable, "-m", "retrylint", "check", "-q", "--jobs", "1", "--cache-dir", str(cache),
                          *names], cwd=project.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for names in batches
    ]
    for process in processes:
        process.wait(timeout=300)
    entries = {}
    for pickled in cache.rglob("*.pickle"):
        if not pickled.name.startswith("gates-"):
            with open(pickled, "rb") as handle:
                entries.update(pickle.load(handle))
    assert len(entries) == 48


def test_reports_from_budget_workers_need_no_libcst_in_the_main_process(project):
    project.write("retry.py", FIXED_FOREVER)
    # The worker analyses the file; what it sends back is plain data.
    assert probe(project.root, "--no-cache", "retry.py") == "1 False False"
    assert probe(project.root, "--no-cache", "--fix", "retry.py") == "1 False False"


def test_fix_skips_files_the_saved_gates_show_clean(project, run, monkeypatch):
    import retrylint.runner

    project.write("clean.py", "import os\n\nprint(os.sep)\n")
    project.write("retry.py", FIXED_FOREVER)
    run("check", "clean.py", "retry.py")  # saves the gates in the cache directory
    fixed = []
    real = retrylint.runner.fix_path

    def counting(path, display, settings, **kwargs):
        fixed.append(display)
        return real(path, display, settings, **kwargs)

    monkeypatch.setattr(retrylint.runner, "fix_path", counting)
    code, out, _ = run("check", "--fix", "--file-timeout", "0", "--file-memory", "0", "clean.py", "retry.py")
    assert fixed == ["retry.py"] and code == 1 and "RTY101" in out
    fixed.clear()
    run("check", "--fix", "--no-cache", "--file-timeout", "0", "--file-memory", "0", "clean.py", "retry.py")
    assert fixed == ["clean.py", "retry.py"]
