"""Issue 15, audit report 15: fixes that never break the program, noqa directives that name
rules, files that could not be analysed, and what the CLI promises."""

from __future__ import annotations

import ast

import pytest

from retrylint.engine import settings_with
from retrylint.rules import RULES
from retrylint.runner import fix_source

ALL = settings_with(tuple(rule.code for rule in RULES))

LOOP = """
def publish(client, event):
    delay = 1.0
    for _ in range(5):
        try:
            return client.publish(event)
        except ConnectionError:
            time.sleep(delay)
            delay *= 2
    raise RuntimeError("publish failed")
"""


def fixed(source: str) -> str:
    return fix_source(source, "case.py", ALL, True).fixed


# -- report item 2: `random` bound at module level to something else -------------------------

SHADOWS = [
    "random = object()\n",
    "def random():\n    return 4\n",
    "class random:\n    pass\n",
    "from x import random\n",
    "import numpy.random as random\n",
    "if True:\n    random = 3\n",
    "for random in []:\n    pass\n",
    "try:\n    pass\nexcept OSError as random:\n    pass\n",
    "with open('f') as random:\n    pass\n",
    "def seed():\n    global random\n    random = 4\n",
]


@pytest.mark.parametrize("imported", ["", "import random\n"])
@pytest.mark.parametrize("after", [True, False])
@pytest.mark.parametrize("shadow", SHADOWS)
def test_random_uniform_is_never_written_where_random_is_bound_at_module_level(shadow, after, imported):
    head = imported + "import time\n\n"
    source = head + (LOOP + "\n\n" + shadow if after else shadow + "\n\n" + LOOP)
    out = fixed(source)
    assert "random.uniform" not in out, out
    assert out == source  # no fix is offered there (and no import is added)


def test_an_existing_alias_of_the_random_module_is_used_when_random_is_taken():
    source = "import random as rng\nimport time\n\nrandom = 3\n\n" + LOOP
    out = fixed(source)
    assert "time.sleep(rng.uniform(0, delay))" in out
    assert out.count("import random") == 1
    assert "random.uniform" not in out.replace("rng.uniform", "")


def test_an_alias_rebound_at_module_level_is_not_used_either():
    source = "import random as rng\nimport time\n\n" + LOOP + "\n\nrng = None\n"
    assert fixed(source) == source


def test_the_fix_still_applies_when_random_is_only_the_module():
    source = "import time\n\n" + LOOP + "\n\ndef other(random):\n    return random\n"
    out = fixed(source)
    assert "time.sleep(random.uniform(0, delay))" in out
    ast.parse(out)
