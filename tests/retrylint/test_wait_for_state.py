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


def test_a_poll_that_polls_through_failures_is_no_retry_at_all():
    # Not RTY101, and not RTY202 either: the fixed pace is the poll's own, not a retry schedule.
    assert _both(POLL_RETRYING) == set()


def test_a_poll_whose_failures_fall_through_to_its_own_sleep_is_no_retry():
    source = """
def wait_done(client, job_id):
    while True:
        try:
            job = client.get_job(job_id)
            if job["state"] in ("SUCCEEDED", "FAILED"):
                return job
        except botocore.exceptions.EndpointConnectionError:
            pass
        time.sleep(10)
"""
    assert _both(source) == set()


def test_a_poll_asking_its_result_whether_it_is_done_is_no_retry():
    source = """
def wait_done(client, name):
    while True:
        try:
            operation = client.get_operation(name)
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(5)
            continue
        if operation.done():
            return operation
        time.sleep(5)
"""
    assert _both(source) == set()


def test_an_enum_state_is_a_state_and_an_http_status_enum_is_not():
    source = """
def wait_done(client, job_id):
    while True:
        try:
            status = client.get_job(job_id).current_state
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(10)
            continue
        if status == JobState.JOB_STATE_DONE:
            return
        time.sleep(10)
"""
    assert _both(source) == set()
    http = source.replace("client.get_job(job_id).current_state", "client.get(job_id).status_code").replace(
        "JobState.JOB_STATE_DONE", "HTTPStatus.OK").replace("def wait_done", "def get_job")
    assert "RTY202" in _both(http)  # a failed status going round at a fixed pace is a retry


def test_a_while_test_on_the_state_the_attempt_reads_is_a_poll():
    # airflow's dataproc ``wait_for_job``, renamed so that only the state decides
    source = """
def job_outcome(client, job_id, timeout=None):
    state = None
    while state not in (JobStatus.State.ERROR, JobStatus.State.DONE, JobStatus.State.CANCELLED):
        time.sleep(10)
        try:
            job = client.get_job(job_id)
            state = job.status.state
        except botocore.exceptions.EndpointConnectionError:
            pass
    return state
"""
    assert _both(source) == set()
    # The twin: a flag that only says "it worked" is no state; this retries ``send``.
    retry = source.replace("state not in (JobStatus.State.ERROR, JobStatus.State.DONE, JobStatus.State.CANCELLED)",
                           "state is None").replace("client.get_job(job_id)", "client.send(job_id)")
    assert "RTY202" in _both(retry)


def test_a_readiness_wait_named_for_waiting_is_a_poll():
    # mlflow's ``wait_server_ready``: ping a starting server at a fixed pace until it answers
    source = """
def wait_server_ready(client, timeout=30):
    begin = time.time()
    while True:
        time.sleep(0.3)
        try:
            client.ping()
            return
        except botocore.exceptions.EndpointConnectionError:
            pass
        if time.time() - begin > timeout:
            raise TimeoutError()
"""
    assert _both(source) == set()
    # A health ping in a function that does not say it waits is judged as a retry at a fixed
    # delay, as the labeled sets do (C1: opensearch-py's ``get_test_client`` health loop; H1: a
    # broker health ping re-sent until a deadline). The same loop doing work is a fixed-delay
    # retry whatever the name; so is one that *ensures* a state (kafka's
    # ``ensure_coordinator_ready`` retries the lookup).
    assert "RTY202" in _both(source.replace("def wait_server_ready", "def call_server"))
    assert _both(source.replace("def wait_server_ready", "def wait_for")) == set()
    work = source.replace("client.ping()", "client.lookup_coordinator()")
    for name in ("def call_server", "def ensure_server_ready"):
        assert "RTY202" in _both(work.replace("def wait_server_ready", name)), name
    # A readiness wait that goes round at once on a failure is still a hot loop.
    hot = source.replace("        time.sleep(0.3)\n", "").replace("            pass\n", "            continue\n")
    assert "RTY201" in _both(hot.replace("def wait_server_ready", "def call_server"))


def test_a_one_attempt_boto_waiter_going_round_on_waiter_error_is_a_poll():
    source = """
async def run(self, waiter, args):
    while True:
        try:
            await waiter.wait(**args, WaiterConfig={"MaxAttempts": 1})
            return
        except botocore.exceptions.WaiterError:
            await asyncio.sleep(self.waiter_delay)
"""
    assert _codes("import asyncio\n" + source) == set()


def test_an_outcome_in_the_body_is_a_failed_call_not_a_state():
    # ``"ok"`` is the answer of one call: going round until it says so retries the call.
    source = """
def send(client, payload):
    while True:
        try:
            answer = client.send(payload)
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(10)
            continue
        if answer["status"] == "ok":
            return answer
        time.sleep(10)
"""
    assert "RTY202" in _both(source)


def test_a_cancellation_check_is_not_the_state_awaited():
    # ``self._stopped.is_set()`` is not the attempt's result: the loop still retries ``fetch``.
    source = """
def fetch(self, client, key):
    while True:
        try:
            return client.get_object(key)
        except botocore.exceptions.EndpointConnectionError:
            if self.state == "CLOSED":
                return None
            time.sleep(10)
"""
    assert "RTY202" in _both(source)


def test_a_failure_path_that_goes_round_at_once_is_an_immediate_retry():
    hot = POLL_RETRYING.replace("            time.sleep(10)\n            continue", "            continue")
    assert hot != POLL_RETRYING
    assert "RTY201" in _both(hot)


def test_a_deadline_bounds_the_failure_path():
    assert "RTY101" not in _both(POLL_WITH_DEADLINE)


def test_a_cap_on_the_failure_path_bounds_it():
    assert "RTY101" not in _both(POLL_COUNTED_ON_FAILURE)


def test_a_periodic_task_that_tries_again_at_the_next_tick_is_not_a_retry():
    assert _codes(LEASE_RENEWER) == set()


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


def test_a_wait_named_function_whose_delay_grows_is_judged_as_a_retry():
    # Backing off ``2 ** attempt`` is a retry schedule, whatever the function is called.
    source = """
def wait_until_ready(client, url):
    for attempt in range(6):
        try:
            return client.get(url)
        except botocore.exceptions.EndpointConnectionError:
            time.sleep(2 ** attempt)
    raise TimeoutError(url)
"""
    assert "RTY203" in _both(source)


def test_a_loop_that_reads_a_file_another_process_writes_is_a_poll():
    # distributed utils.py ``json_load_robust`` and deploy/subprocess.py: the file may not exist yet
    source = """
import json, os

def load_config(fn, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(fn):
            try:
                with open(fn) as f:
                    cfg = json.load(f)
                if cfg:
                    return cfg
            except (ValueError, KeyError):
                pass
        time.sleep(0.1)


def read_identity(path):
    while True:
        try:
            with path.open(mode="r") as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError):
            time.sleep(0.1)
"""
    assert _codes(source) == set()
    # The twin: opening a connection is no file read.
    connection = """
def reconnect(self):
    while True:
        try:
            return self.connection.open()
        except OSError:
            time.sleep(1)
"""
    assert {"RTY101", "RTY202"} <= _codes(connection)


def test_a_sensor_pokes_at_its_own_pace():
    # airflow http triggers: ``HttpSensorTrigger.run`` waits for an endpoint to stop answering 404
    source = """
import asyncio

class HttpSensorTrigger:
    async def run(self, hook):
        while True:
            try:
                await hook.run(endpoint=self.endpoint)
                return
            except botocore.exceptions.EndpointConnectionError:
                await asyncio.sleep(self.poke_interval)
"""
    assert _codes(source) == set()
    assert "RTY202" in _codes(source.replace("class HttpSensorTrigger", "class HttpClient"))
    # A class that reads a sensor is no airflow sensor: its retry of a read is judged as one.
    assert "RTY202" in _codes(source.replace("class HttpSensorTrigger", "class SensorReader"))


STATUS_POLL = """
def wait_available(client, cluster_id):
    delay = 1
    while True:
        delay = min(delay * 2, 5)
        response = client.describe_clusters(ClusterIdentifier=cluster_id)
        if response.status_code == 200:
            state = response.json()["state"]
            if state in (ClusterState.AVAILABLE, ClusterState.FAILED):
                return response
            time.sleep(delay)
        elif response.status_code in (503, 504):
            time.sleep(delay)
        else:
            return response
"""


def test_a_failed_status_polled_at_the_polls_own_pace_is_no_retry():
    # dashscope's ``wait``: a 503 waits ``wait_seconds`` as "still running" does
    assert _both(STATUS_POLL) == set()


def test_a_failed_status_going_round_at_once_in_a_poll_is_an_immediate_retry():
    hot = STATUS_POLL.replace("        elif response.status_code in (503, 504):\n            time.sleep(delay)",
                              "        elif response.status_code in (503, 504):\n            continue")
    assert hot != STATUS_POLL
    assert "RTY201" in _both(hot)


def test_a_failed_status_retried_with_no_state_awaited_is_still_a_retry():
    # The twin: the 200 branch returns at once, so nothing is polled; 503 backs off without jitter.
    retry = STATUS_POLL.replace(
        '            state = response.json()["state"]\n'
        "            if state in (ClusterState.AVAILABLE, ClusterState.FAILED):\n"
        "                return response\n"
        "            time.sleep(delay)\n",
        "            return response\n")
    assert retry != STATUS_POLL
    assert "RTY203" in _both(retry)
