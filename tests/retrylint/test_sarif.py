"""SARIF output validates against the SARIF 2.1.0 JSON schema.

The schema is Microsoft's copy of the OASIS SARIF 2.1.0 schema, shipped in the
``@microsoft/sarif-multitool-linux`` npm package; the test streams just that file out
of the package tarball (a few hundred KB of a 43 MB download) and pins its hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import urllib.request
from pathlib import Path

import jsonschema
import pytest

from .conftest import FIXED_FOREVER

SCHEMA_URL = "https://registry.npmjs.org/@microsoft/sarif-multitool-linux/-/sarif-multitool-linux-5.7.0.tgz"
SCHEMA_MEMBER = "package/sarif-2.1.0.json"
SCHEMA_SHA256 = "1c49a0f2b60444c71bb14878e21e0d882198eff4c539861b133093ad89ed798c"


def _cached_schema(cache: Path) -> bytes:
    target = cache / "sarif-2.1.0.json"
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == SCHEMA_SHA256:
        return target.read_bytes()
    with urllib.request.urlopen(SCHEMA_URL, timeout=60) as response:  # noqa: S310 - pinned https URL
        with tarfile.open(fileobj=response, mode="r|gz") as archive:
            for member in archive:
                if member.name == SCHEMA_MEMBER:
                    extracted = archive.extractfile(member)
                    assert extracted is not None
                    data = extracted.read()
                    break
            else:  # pragma: no cover - the pinned package always has it
                raise AssertionError(f"{SCHEMA_MEMBER} not in {SCHEMA_URL}")
    assert hashlib.sha256(data).hexdigest() == SCHEMA_SHA256, "the SARIF schema changed"
    cache.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return data


@pytest.fixture(scope="session")
def sarif_schema(tmp_path_factory):
    cache = Path(os.environ.get("RETRYLINT_TEST_CACHE", Path.home() / ".cache" / "retrylint-tests"))
    try:
        data = _cached_schema(cache)
    except OSError:
        data = _cached_schema(tmp_path_factory.mktemp("sarif"))
    return json.loads(data)


def _validate(document, schema):
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_sarif_with_findings_is_valid(project, run, sarif_schema):
    project.write("app.py", FIXED_FOREVER)
    project.write("broken.py", "def f(:\n")
    code, out, _ = run("check", "--output-format", "sarif", ".")
    assert code == 1
    document = json.loads(out)
    _validate(document, sarif_schema)
    run_ = document["runs"][0]
    results = run_["results"]
    assert {r["ruleId"] for r in results} == {"RTY001", "RTY101", "RTY202"}
    rules = run_["tool"]["driver"]["rules"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    location = next(r for r in results if r["ruleId"] == "RTY101")["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "app.py"
    assert location["region"]["startLine"] == 4


def test_sarif_without_findings_is_valid(project, run, sarif_schema):
    project.write("app.py", "x = 1\n")
    code, out, _ = run("check", "--output-format", "sarif", "app.py")
    assert code == 0
    document = json.loads(out)
    _validate(document, sarif_schema)
    assert document["runs"][0]["results"] == []


def test_a_broken_document_fails_validation(sarif_schema):
    # The validation is real: a result without its message is rejected.
    with pytest.raises(AssertionError):
        _validate({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "X"}]}]},
                  sarif_schema)


def _sarif(run, *paths):
    code, out, err = run("check", "--no-cache", "--output-format", "sarif", *paths)
    return json.loads(out)


def test_uris_are_relative_to_the_repository_root_never_dot_dot(project, run, sarif_schema, monkeypatch):
    (project.root / ".git").mkdir()
    project.write("pkg/app.py", FIXED_FOREVER)
    (project.root / "tools").mkdir()
    monkeypatch.chdir(project.root / "tools")  # run from a subfolder, as a CI step might
    document = _sarif(run, "../pkg/app.py")
    _validate(document, sarif_schema)
    run_ = document["runs"][0]
    # The folder holding .git (the current directory is a real path, tmp_path may not be).
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] in {project.root.resolve().as_uri() + "/",
                                                              project.root.as_uri() + "/"}
    for result in run_["results"]:
        artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert artifact == {"uri": "pkg/app.py", "uriBaseId": "%SRCROOT%"}


def test_partial_fingerprints_survive_lines_moving_and_tell_findings_apart(project, run, sarif_schema):
    project.write("app.py", FIXED_FOREVER)
    first = _sarif(run, "app.py")["runs"][0]["results"]
    project.write("app.py", "# a comment\n\n\n" + FIXED_FOREVER.lstrip("\n"))
    moved = _sarif(run, "app.py")
    _validate(moved, sarif_schema)
    moved = moved["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in moved] == \
        [r["locations"][0]["physicalLocation"]["region"]["startLine"] + 3 for r in first]
    prints = [r["partialFingerprints"]["primaryLocationLineHash"] for r in first]
    assert prints == [r["partialFingerprints"]["primaryLocationLineHash"] for r in moved]
    assert len(set(prints)) == len(prints) == 2
