"""[tool.retrylint] keys for dead-letter queues: applied, validated, errors reported with exit 2."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize(
    "setting, error",
    [
        ('dead-letter-pattern = "dlq("', "dead-letter-pattern is not a valid regular expression"),
        ('dead-letter-pattern = "dlq|"', "dead-letter-pattern matches every name (it matches the empty string)"),
        ('dead-letter-pattern = ["dlq"]', "dead-letter-pattern must be a regular expression for dead-letter queue names"),
        ('dead-letter-reason-fields = "why"', "dead-letter-reason-fields must be a list of strings"),
        ('dead-letter-attempt-fields = ["--"]', "dead-letter-attempt-fields must name fields (letters or digits)"),
        ('dead-letter-patern = "dlq"', "unknown key 'dead-letter-patern' (did you mean 'dead-letter-pattern'?)"),
    ],
)
def test_bad_settings_are_errors(project, run, setting, error):
    project.write("app.py", CLEAN)
    project.write("pyproject.toml", f"[tool.retrylint]\n{setting}\n")
    code, _, err = run("check", "app.py")
    assert code == 2 and error in err and "Traceback" not in err
