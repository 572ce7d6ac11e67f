"""``retrylint explain``: golden outputs (text and JSON), the doctrine's 51 s example among them.

Set RETRYLINT_UPDATE_GOLDEN=1 to rewrite the expected files after an intended change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden" / "explain"
CASES = sorted(p.stem for p in GOLDEN.glob("*.py"))


def _explain(run, monkeypatch, name: str, *extra: str) -> str:
    monkeypatch.chdir(GOLDEN)
    code, out, err = run("explain", f"{name}.py", *extra)
    assert code == 0, err
    return out


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("fmt, suffix", [("text", ".txt"), ("json", ".json")])
def test_golden(run, monkeypatch, name, fmt, suffix):
    out = _explain(run, monkeypatch, name, "--output-format", fmt)
    expected = GOLDEN / f"{name}{suffix}"
    if os.environ.get("RETRYLINT_UPDATE_GOLDEN"):
        expected.write_text(out, encoding="utf-8")
    assert out == expected.read_text(encoding="utf-8")


def test_doctrine_example_is_51_seconds(run, monkeypatch):
    out = _explain(run, monkeypatch, "doctrine_51s")
    assert out.count("schedule:    1, 2, 4, 8, 16, 20 s = 51 s") == 1
    assert out.count("schedule:    0–1, 0–2, 0–4, 0–8, 0–16, 0–20 s = 51 s") == 2
    data = json.loads(_explain(run, monkeypatch, "doctrine_51s", "--output-format", "json"))
    assert [d["total_wait_worst"] for d in data] == [51.0, 51.0, 51.0]
    assert [s["max"] for s in data[0]["schedule"]] == [1, 2, 4, 8, 16, 20]
    assert data[1]["total_wait_expected"] == 25.5


def test_explain_one_line_picks_the_innermost_site(run, monkeypatch):
    out = _explain(run, monkeypatch, "doctrine_51s", "--output-format", "json")
    assert len(json.loads(out)) == 3
    monkeypatch.chdir(GOLDEN)
    code, out, _ = run("explain", "doctrine_51s.py:24", "--output-format", "json")
    sites = json.loads(out)
    assert code == 0 and len(sites) == 1 and sites[0]["source"] == "loop"


def test_explain_errors(run, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, _, err = run("explain", "missing.py")
    assert code == 2 and "path does not exist" in err
    (tmp_path / "broken.py").write_text("def f(:\n")
    code, _, err = run("explain", "broken.py")
    assert code == 2 and "SyntaxError" in err
    (tmp_path / "none.py").write_text("x = 1\n")
    code, out, _ = run("explain", "none.py")
    assert code == 0 and "no retry site found in none.py" in out


def test_quiet_explain_prints_the_sites_only(run, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "none.py").write_text("x = 1\n")
    code, out, _ = run("explain", "--quiet", "none.py")
    assert code == 0 and out == ""
    with pytest.raises(SystemExit):
        run("explain", "-h")
    assert 'no "no retry site found"' in " ".join(capsys.readouterr().out.split())


def test_an_exception_reached_through_self_is_named_as_written(run, tmp_path, monkeypatch):
    """``except self.client.exceptions.BadRequestException`` (boto3's modeled errors, awswrangler):
    named as the source spells it, never libcst's ``f.<locals>.self.client…``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "api.py").write_text(
        "import time\n\nclass Api:\n    def run(self, sql):\n        for _ in range(5):\n            try:\n"
        "                return self.client.execute(sql)\n"
        "            except self.client.exceptions.BadRequestException:\n                time.sleep(1)\n"
    )
    code, out, _ = run("explain", "api.py")
    assert "retries on:  self.client.exceptions.BadRequestException" in out
    assert "<locals>" not in out
