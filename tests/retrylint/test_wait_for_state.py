"""Wait-for-state loops (issue 12): where they are retries and where they are polling.

The decision, also in the README ("What counts as a retry"), precision first:

* A loop that asks a remote operation for a state until it reports the one wanted is
  **polling**, whether the call's failures propagate or are caught and the loop goes round at
  the poll's own pace: the failure adds no call the poll would not make, and a missing deadline
  is a hang, not a retry storm. No RTY101.
* The failure path is judged as a retry where it differs from the poll: going round at once
  while the poll sleeps is RTY201 (a hot loop for as long as the outage lasts).
* A periodic task (``while not stop.wait(interval)``) that logs a failed tick and tries again at
  the next one is no retry either.

Reporting the caught-and-polled case as RTY101 was tried and measured: over the whole dev
corpus it added three findings (a job-status trigger, a lease renewer, a re-extraction loop),
none of them a retry worth fixing, so it was not kept.
"""

from __future__ import annotations

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)
HEAD = "import time\nimport botocore.exceptions\n"

POLL = """
def wait_available(client, cluster_id):
    while True:
        status = client.describe_clusters(ClusterIdentifier=cluster_id)["Clusters"][0]["ClusterStatus"]
        if status == "available":
            return
        time.sleep(10)
"""

POLL_RETRYING = """
def wait_available(client, cluster_id):
    while True:
        try:
            status = client.describe_clusters(ClusterIdentifier=cluster_id)["Clusters"][0]["ClusterStatus"]
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(10)
            continue
        if status == "available":
            return
        time.sleep(10)
"""

POLL_WITH_DEADLINE = """
def wait_available(client, cluster_id, timeout=600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = client.describe_clusters(ClusterIdentifier=cluster_id)["Clusters"][0]["ClusterStatus"]
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(10)
            continue
        if status == "available":
            return
        time.sleep(10)
    raise TimeoutError(cluster_id)
"""

POLL_COUNTED_ON_FAILURE = """
def wait_available(client, cluster_id):
    failures = 0
    while True:
        try:
            status = client.describe_clusters(ClusterIdentifier=cluster_id)["Clusters"][0]["ClusterStatus"]
        except botocore.exceptions.EndpointConnectionError:
            failures += 1
            if failures > 5:
                raise
            time.sleep(10)
            continue
        if status == "available":
            return
        time.sleep(10)
"""


def _codes(body: str):
    report = check_source(HEAD + body, "waits.py", settings_with(CODES))
    assert report.error is None, report.error
    return {f.code for f in report.findings}


LEASE_RENEWER = """
import threading

class Renewer:
    def __init__(self, store, interval):
        self._store = store
        self._interval = interval
        self._stop = threading.Event()

    def run(self):
        while not self._stop.wait(self._interval):
            try:
                status = self._store.renew_lease()
            except Exception:
                continue
            if status != "applied":
                return
"""


def _async(body: str) -> str:
    return (
        body.replace("def wait_available", "async def wait_available")
        .replace("client.describe_clusters(", "await client.describe_clusters(")
        .replace("time.sleep(", "await asyncio.sleep(")
    )


def _both(body: str):
    sync = _codes(body)
    asynchronous = _codes("import asyncio\n" + _async(body))
    assert sync == asynchronous, (sync, asynchronous)
    return sync


def test_a_poll_that_lets_failures_propagate_is_not_a_retry():
    assert _both(POLL) == set()


def test_a_poll_that_polls_through_failures_is_not_an_unbounded_retry():
    codes = _both(POLL_RETRYING)
    assert "RTY101" not in codes and "RTY201" not in codes


def test_a_failure_path_that_goes_round_at_once_is_an_immediate_retry():
    hot = POLL_RETRYING.replace("            time.sleep(10)\n            continue", "            continue")
    assert hot != POLL_RETRYING
    assert "RTY201" in _both(hot)


def test_a_deadline_bounds_the_failure_path():
    assert "RTY101" not in _both(POLL_WITH_DEADLINE)


def test_a_cap_on_the_failure_path_bounds_it():
    assert "RTY101" not in _both(POLL_COUNTED_ON_FAILURE)


def test_a_periodic_task_that_tries_again_at_the_next_tick_is_not_a_retry():
    codes = _codes(LEASE_RENEWER)
    assert "RTY101" not in codes and "RTY201" not in codes


def test_the_same_call_retried_forever_without_a_poll_is_still_rty101():
    # The twin that must fire: no state is awaited, the loop only ends when the call succeeds.
    source = """
def fetch(client, cluster_id):
    while True:
        try:
            return client.describe_clusters(ClusterIdentifier=cluster_id)
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(10)
"""
    assert "RTY101" in _both(source)
