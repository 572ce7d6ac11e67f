"""The examples in docs/plugin.md run as written, against a small real client."""

import re
from pathlib import Path

import hypothesis  # noqa: F401  (kept loaded across pytester's in-process runs)
import pytest
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


# -- outputs shown in the docs are real ---------------------------------------------------------------
REAL_OUTPUT = re.compile(
    r"```python\n(?P<code>(?:(?!```).)*)```\n\n<!-- real output of (?P<file>\S+) above(?:, run with (?P<option>\S+))?.*?-->\n"
    r"```text\n(?P<output>.*?)```",
    re.S,
)


def _documented_outputs():
    return [(m.group("file"), m.group("code"), m.group("output"), m.group("option")) for m in REAL_OUTPUT.finditer(DOC.read_text(encoding="utf-8"))]


def test_the_docs_show_real_outputs():
    assert [name for name, _, _, _ in _documented_outputs()] == ["test_bounded.py", "test_orders.py", "test_payments.py", "test_herd.py", "test_budget.py", "test_consumer_visibility.py", "test_incident.py"]


def _pattern(line):
    # "..." stands for lines or text left out; fnmatch's [ ] would be a character class; a
    # separator line's width depends on the terminal.
    line = re.sub(r"^=+ (.*?) =+$", r"*= \1 =*", line)
    return "*" + line.replace("...", "*").replace("[", "?").replace("]", "?")


@pytest.mark.parametrize("name, code, output, option", _documented_outputs(), ids=lambda v: v if str(v).endswith(".py") else "")
def test_each_documented_output_is_what_the_code_prints(pytester, name, code, output, option):
    pytester.makepyfile(**{name[:-3]: code})
    options = [option] if option else []
    result = pytester.runpytest_inprocess(*options, "-p", "no:xdist", "-p", "no:hypothesispytest", "-o", "asyncio_default_fixture_loop_scope=function")
    result.stdout.fnmatch_lines([_pattern(line) for line in output.splitlines() if line.strip() != "..."])


def test_the_jitter_table_verdicts_hold():
    import random
    import time

    from pytest_retry_check import herd_check

    from .herd_clients import make_client

    def band(width):
        def client(downstream):
            for attempt in range(1, 11):
                try:
                    return downstream()
                except ConnectionError:
                    if attempt == 10:
                        raise
                    time.sleep(min(20.0, 2 ** (attempt - 1)) * random.uniform(1 - width, 1 + width))

        return client

    table = DOC.read_text(encoding="utf-8").split("| jitter | peak share | spread | verdict |", 1)[1].split("\n\n", 1)[0]
    verdicts = {row.split("|")[1].strip(): row.split("|")[4].strip().split()[0] for row in table.splitlines()[2:]}
    clients = {"none": make_client("none"), "±1 %": make_client("token"), "±10 %": band(0.1), "±20 %": band(0.2),
               "±50 % band": make_client("band"), "equal": make_client("equal"), "decorrelated": make_client("decorrelated"),
               "full": make_client("full")}
    assert set(verdicts) == set(clients)
    for kind, client in clients.items():
        report = herd_check.measure(client, clients=300)
        assert ("passes" if report.passed else "fails") == verdicts[kind].rstrip(","), (kind, report.summary())
