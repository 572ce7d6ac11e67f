"""The results cache and the worker processes: same findings, less work."""

from __future__ import annotations

import pytest

import retrylint.budget
import retrylint.cache
import retrylint.runner

from .conftest import CLEAN, FIXED_FOREVER, codes


@pytest.fixture
def analysed(monkeypatch):
    """The files the engine actually analyses in this process (cache misses)."""
    seen = []
    real = retrylint.runner.check_path

    def counting(path, display, settings, **kwargs):
        seen.append(display)
        return real(path, display, settings, **kwargs)

    monkeypatch.setattr(retrylint.runner, "check_path", counting)
    # Analysed here, not in budget workers (whose calls this list would not see).
    monkeypatch.setattr(retrylint.budget, "DEFAULT_SECONDS", 0)
    monkeypatch.setattr(retrylint.budget, "DEFAULT_MEMORY_MB", 0)
    return seen


def test_a_warm_run_analyses_nothing_and_reports_the_same(project, run, analysed):
    project.write("a.py", FIXED_FOREVER)
    project.write("b.py", CLEAN)
    cold = run("check", "--jobs", "1", ".")
    assert sorted(analysed) == ["a.py", "b.py"]
    assert (project.root / ".retrylint_cache").is_dir()
    analysed.clear()
    warm = run("check", "--jobs", "1", ".")
    assert analysed == []
    assert warm == cold and cold[0] == 1


def test_a_changed_file_is_analysed_again(project, run, analysed):
    project.write("a.py", CLEAN)
    project.write("b.py", CLEAN)
    assert run("check", "--jobs", "1", ".")[0] == 0
    analysed.clear()
    project.write("b.py", FIXED_FOREVER)
    code, out, _ = run("check", "--jobs", "1", ".")
    assert analysed == ["b.py"]
    assert code == 1 and "b.py:" in out and "a.py:" not in out


def test_other_settings_or_another_version_miss_the_cache(project, run, analysed, monkeypatch):
    project.write("a.py", FIXED_FOREVER)
    run("check", "--jobs", "1", ".")
    analysed.clear()
    code, out, _ = run("check", "--jobs", "1", "--select", "RTY202", ".")
    assert analysed == ["a.py"] and codes(out) == ["RTY202"]
    analysed.clear()
    monkeypatch.setattr(retrylint.cache, "__version__", "99.0")
    run("check", "--jobs", "1", ".")
    assert analysed == ["a.py"]


def test_no_cache_and_cache_dir(project, run, analysed, tmp_path_factory):
    project.write("a.py", FIXED_FOREVER)
    run("check", "--no-cache", ".")
    run("check", "--no-cache", ".")
    assert analysed == ["a.py", "a.py"]
    assert not (project.root / ".retrylint_cache").exists()
    elsewhere = tmp_path_factory.mktemp("cache")
    run("check", "--cache-dir", str(elsewhere), ".")
    assert any(elsewhere.rglob("*.pickle"))
    assert not (project.root / ".retrylint_cache").exists()


def test_a_corrupt_cache_is_ignored(project, run, analysed):
    project.write("a.py", FIXED_FOREVER)
    run("check", ".")
    for pickle_file in (project.root / ".retrylint_cache").rglob("*.pickle"):
        pickle_file.write_bytes(b"not a pickle")
    analysed.clear()
    code, out, err = run("check", ".")
    assert code == 1 and codes(out) == ["RTY101", "RTY202"] and analysed == ["a.py"]
    assert "Traceback" not in err


def test_workers_find_exactly_what_one_process_finds(project, run):
    for index in range(20):  # above the minimum for starting workers
        project.write(f"pkg/m{index:02}.py", FIXED_FOREVER if index % 3 else CLEAN)
    serial = run("check", "--no-cache", "--jobs", "1", "pkg")
    parallel = run("check", "--no-cache", "--jobs", "2", "pkg")
    assert parallel == serial
    assert serial[0] == 1 and len(codes(serial[1])) == 2 * 13


def test_the_summary_counts_every_file(project, run):
    project.write("a.py", FIXED_FOREVER)
    project.write("b.py", CLEAN)
    project.write("c.py", "def broken(:\n")
    err = run("check", "--no-cache", ".")[2]
    assert "Checked 3 files: 1 with findings, 1 not parsed (RTY001), 0 could not be analysed, 0 failed." in err


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_bad_jobs_is_a_usage_error(project, run, value):
    with pytest.raises(SystemExit) as exit_info:
        run("check", "--jobs", value, ".")
    assert exit_info.value.code == 2
