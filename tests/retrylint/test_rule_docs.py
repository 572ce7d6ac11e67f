"""Every rule's url points to a page in the repository, generated from its docstring, and the
pages are current (re-run ``python docs/rules/generate.py`` after changing a docstring)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from retrylint.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "docs" / "rules" / "generate.py"


def test_every_rule_url_names_a_page_in_the_repository():
    for rule in RULES:
        url = rule.url()
        assert url == f"https://github.com/retrylint/retrylint/blob/main/docs/rules/{rule.code}.md"
        page = ROOT / url.split("/blob/main/", 1)[1]
        assert page.is_file(), page
        text = page.read_text(encoding="utf-8")
        assert f"# {rule.name} ({rule.code})" in text
        assert rule.docs().splitlines()[0] in text


def test_the_pages_are_what_the_generator_writes():
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, "run `python docs/rules/generate.py`:\n" + done.stdout + done.stderr


def test_the_check_notices_a_stale_page(tmp_path):
    for page in (ROOT / "docs" / "rules").glob("*.md"):
        (tmp_path / page.name).write_bytes(page.read_bytes())
    check = [sys.executable, str(GENERATOR), "--check", "--dir", str(tmp_path)]
    assert subprocess.run(check, capture_output=True, text=True).returncode == 0
    stale = tmp_path / "RTY202.md"
    stale.write_text(stale.read_text(encoding="utf-8").replace("fixed-delay-retry", "old-name"), encoding="utf-8")
    done = subprocess.run(check, capture_output=True, text=True)
    assert done.returncode == 1 and "stale: docs/rules/RTY202.md" in done.stdout
