"""[tool.retrylint] keys for dead-letter queues: applied, validated, errors reported with exit 2."""

from __future__ import annotations

from .conftest import CLEAN, codes

GRAVEYARD = """
import redis

r = redis.Redis()

def fail(job):
    r.lpush("jobs:graveyard", job.payload)
"""

CUSTOM_FIELDS = """
import json, redis

r = redis.Redis()

def fail(job, exc, runs, born_at):
    r.lpush("jobs:dlq", json.dumps({"job": job.payload, "error": str(exc), "runs": runs, "born_at": born_at}))
"""


def test_dead_letter_pattern_names_the_dlqs(project, run):
    project.write("app.py", GRAVEYARD.replace("job.payload", '{"job": job.payload}'))
    assert codes(run("check", "--select", "RTY402", "app.py")[1]) == []
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-pattern = "graveyard|dlq"\n')
    code, out, _ = run("check", "--select", "RTY402", "app.py")
    assert codes(out) == ["RTY402"] and "dead letter sent to `jobs:graveyard`" in out


def test_field_names_extend_the_defaults(project, run):
    project.write("app.py", CUSTOM_FIELDS)
    out = run("check", "--select", "RTY402", "app.py")[1]
    assert "without the attempt count and the first-received time" in out
    project.write(
        "pyproject.toml",
        "[tool.retrylint]\n"
        'dead-letter-attempt-fields = ["runs"]\n'
        'dead-letter-first-received-fields = ["born_at"]\n',
    )
    assert codes(run("check", "--select", "RTY402", "app.py")[1]) == []
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-reason-fields = ["why"]\n')
    out = run("check", "--select", "RTY402", "app.py")[1]
    assert "without the attempt count and the first-received time" in out  # "error" still counts


def test_invalid_pattern_is_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-pattern = "dlq("\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "dead-letter-pattern is not a valid regular expression" in err
    assert "Traceback" not in err


def test_pattern_matching_everything_is_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-pattern = "dlq|"\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "matches every name" in err


def test_pattern_of_the_wrong_type_is_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-pattern = ["dlq"]\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "dead-letter-pattern must be a regular expression" in err


def test_fields_of_the_wrong_type_are_an_error(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-reason-fields = "why"\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "dead-letter-reason-fields must be a list of strings" in err
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-attempt-fields = ["--"]\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "dead-letter-attempt-fields must name fields" in err


def test_misspelt_key_gets_a_hint(project, run):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", '[tool.retrylint]\ndead-letter-patern = "dlq"\n')
    code, _, err = run("check", "app.py")
    assert code == 2 and "(did you mean 'dead-letter-pattern'?)" in err
