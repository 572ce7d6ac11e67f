"""Status lists kept away from the retry (issue 12, "values that are not local"): a set, a
``frozenset([...])``, an ``HTTPStatus`` tuple or a union of lists, in another module of the checked
tree, in a class attribute or behind ``module.NAME``, decides RTY302 as a literal list written at
the retry does. A list whose statuses all heal, or whose value is not known, fires nothing.
"""

from __future__ import annotations

import json

import pytest

STATUSES = """
from http import HTTPStatus

RETRY_SET = {400, 429, 500, 503}
RETRY_FROZEN = frozenset([401, 502, 503])
RETRY_HTTPSTATUS = (HTTPStatus.CONFLICT, HTTPStatus.BAD_GATEWAY)
BASE = (500, 502)
RETRY_UNION = BASE + (403,)
RETRY_SET_UNION = {429} | {404, 503}
HEALING_SET = {408, 429, 500, 502, 503, 504}
HEALING_FROZEN = frozenset((429, 503))
"""

LOOP = """
import random
import time

import requests

{imports}


def fetch(url):
    for attempt in range(5):
        response = requests.get(url, timeout=10)
        if response.status_code in {statuses}:
            time.sleep(random.uniform(0, 2 ** attempt))
            continue
        return response
    raise RuntimeError(url)
"""

POLICY = """
from urllib3.util.retry import Retry

{imports}

RETRY = Retry(total=3, backoff_factor=0.5, backoff_jitter=1.0, status_forcelist={statuses})
"""


def _rty302(project, run, template, imports, statuses):
    project.write("pkg/__init__.py", "")
    project.write("pkg/statuses.py", STATUSES)
    project.write("pkg/client.py", template.format(imports=imports, statuses=statuses))
    code, out, err = run("check", "--no-cache", "--select", "RTY302", "--output-format", "json", "pkg")
    assert code in (0, 1), err
    return [f["message"] for f in json.loads(out) if f["code"] == "RTY302"]


@pytest.mark.parametrize("name, permanent", [
    ("RETRY_SET", "HTTP 400"),
    ("RETRY_FROZEN", "HTTP 401"),
    ("RETRY_HTTPSTATUS", "HTTP 409"),
    ("RETRY_UNION", "HTTP 403"),
    ("RETRY_SET_UNION", "HTTP 404"),
])
@pytest.mark.parametrize("template", [LOOP, POLICY], ids=["loop", "urllib3"])
def test_a_list_imported_from_another_module_decides(project, run, template, name, permanent):
    (message,) = _rty302(project, run, template, f"from .statuses import {name}", name)
    assert permanent in message


@pytest.mark.parametrize("template", [LOOP, POLICY], ids=["loop", "urllib3"])
def test_a_list_read_as_module_attribute_decides(project, run, template):
    (message,) = _rty302(project, run, template, "from . import statuses", "statuses.RETRY_SET")
    assert "HTTP 400" in message and "429" not in message.split("(")[0]


@pytest.mark.parametrize("name", ["HEALING_SET", "HEALING_FROZEN"])
@pytest.mark.parametrize("template", [LOOP, POLICY], ids=["loop", "urllib3"])
def test_a_list_of_statuses_that_heal_fires_nothing(project, run, template, name):
    assert _rty302(project, run, template, f"from .statuses import {name}", name) == []


def test_a_list_from_a_call_we_cannot_read_fires_nothing(project, run):
    imports = "from .statuses import RETRY_SET\nSTATUSES = sorted(RETRY_SET)"
    assert _rty302(project, run, LOOP, imports, "STATUSES") == []


CLASS_LOOP = """
import random
import time

import requests


class Client:
    RETRY_ON = {retry_on}

    def __init__(self, retry_on=None):
        {init}

    def fetch(self, url):
        for attempt in range(5):
            response = requests.get(url, timeout=10)
            if response.status_code in self.RETRY_ON:
                time.sleep(random.uniform(0, 2 ** attempt))
                continue
            return response
        raise RuntimeError(url)
"""


def _class_case(project, run, retry_on, init="pass"):
    project.write("pkg/__init__.py", "")
    project.write("pkg/client.py", CLASS_LOOP.format(retry_on=retry_on, init=init))
    code, out, err = run("check", "--no-cache", "--select", "RTY302", "--output-format", "json", "pkg")
    assert code in (0, 1), err
    return [f["message"] for f in json.loads(out) if f["code"] == "RTY302"]


def test_a_class_attribute_set_decides(project, run):
    (message,) = _class_case(project, run, "{400, 500, 503}")
    assert "HTTP 400" in message


def test_a_class_attribute_of_healing_statuses_fires_nothing(project, run):
    assert _class_case(project, run, "frozenset({429, 500, 503})") == []


def test_a_class_attribute_a_caller_may_replace_fires_nothing(project, run):
    # ``self.RETRY_ON = retry_on`` in ``__init__``: the value depends on the caller
    assert _class_case(project, run, "{400, 500}", init="self.RETRY_ON = retry_on") == []
