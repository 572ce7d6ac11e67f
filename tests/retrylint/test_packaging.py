"""Package metadata in the current format: the license is an SPDX expression (PEP 639), which
needs setuptools 77, and no legacy license classifier beside it (the build then warns)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_license_is_an_spdx_expression():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    license_ = data["project"]["license"]
    assert isinstance(license_, str)
    try:
        from packaging.licenses import canonicalize_license_expression
    except ImportError:  # packaging < 24.2
        assert license_ == "MIT"
    else:
        assert canonicalize_license_expression(license_) == license_
    assert not any(c.startswith("License ::") for c in data["project"].get("classifiers", []))
    requires = data["build-system"]["requires"]
    assert any(r.replace(" ", "").startswith("setuptools>=") and int(r.split(">=")[1].split(".")[0].split(",")[0]) >= 77
               for r in requires), requires


def test_the_license_text_ships():
    """The metadata says MIT; the text it names is in the repository and declared as the
    license file (PEP 639 ``license-files``), so wheels and sdists carry it."""
    root = Path(__file__).resolve().parents[2]
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    files = data["project"]["license-files"]
    assert files == ["LICENSE"]
    assert "MIT License" in (root / "LICENSE").read_text(encoding="utf-8")
