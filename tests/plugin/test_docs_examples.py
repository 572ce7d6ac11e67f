"""The examples in docs/plugin.md run as written, against a small real client."""

import re
from pathlib import Path

import hypothesis  # noqa: F401  (kept loaded across pytester's in-process runs)
import requests  # noqa: F401

# Loaded here, so pytester's in-process runs (which drop modules they import) all share them.
import pytest_retry_check.assertions  # noqa: F401,E402
import pytest_retry_check.plugin  # noqa: F401,E402
import pytest_retry_check.strategies  # noqa: F401,E402

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugin.md"

# A client as a service team would write it: requests + urllib3 Retry, full of real settings.
CLIENT = '''
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


class OrdersClient:
    def __init__(self, base_url):
        self.base_url = base_url
        retry = Retry(total=5, backoff_factor=1, backoff_max=20, backoff_jitter=1,
                      status_forcelist=(429, 500, 502, 503, 504), allowed_methods=None)
        self.session = requests.Session()
        self.session.mount("http://", HTTPAdapter(max_retries=retry))

    def get_order(self, order_id):
        response = self.session.get(f"{self.base_url}/orders/{order_id}", timeout=5)
        response.raise_for_status()
        return response.json()
'''


def python_blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_ten_line_example_is_ten_lines_and_passes(pytester):
    example = python_blocks()[0]
    assert len(example.rstrip("\n").splitlines()) == 10
    pytester.mkpydir("myservice")
    pytester.path.joinpath("myservice", "clients.py").write_text(CLIENT)
    pytester.makepyfile(test_example=example)
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=1)


def test_the_hypothesis_recipe_passes(pytester):
    recipe = next(block for block in python_blocks() if "@given" in block)
    pytester.makepyfile(test_recipe=CLIENT + "\n" + recipe)
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=1)


README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_plugin_example() -> str:
    section = README.read_text(encoding="utf-8").split("## The pytest plugin", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_plugin_example_passes_as_written(pytester):
    pytester.makepyfile(test_readme=_readme_plugin_example())
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=1)


def test_the_readme_plugin_example_fails_on_an_unbounded_policy(pytester):
    # The README says: with wait_exponential() and stop_after_attempt(8), the same test fails
    # and shows the schedule.
    example = _readme_plugin_example()
    changed = example.replace("stop_after_attempt(6)", "stop_after_attempt(8)").replace(
        "wait_random_exponential(max=20)", "wait_exponential()"
    )
    assert changed != example
    pytester.makepyfile(test_readme=changed)
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*retry check 'bounded' failed: 8 attempts, more than max_attempts=6*", "*#            at        waited  result*"])
