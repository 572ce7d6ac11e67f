"""Retry decorators used as polls (issue 11, "protocol pending polls"; issue 12, wait-for-state).

A tenacity or backoff decorator that waits for a *state* (``retry_if_result`` testing a state
name, an exception the function raises only while the state it read is not the one wanted) is
the library spelling of a wait-for-state loop, which no retry rule reports. Each poll below has
a twin that retries a failure with the same policy and stays reported. Every snippet is executed
first, so the decorators are the real libraries' (and the tests break if an import moves).
"""

from __future__ import annotations

import textwrap

import pytest

from retrylint.engine import check_source, settings_with
from retrylint.rules import RULES

CODES = tuple(rule.code for rule in RULES)

HEAD = """
import backoff
import requests
from tenacity import retry, retry_if_exception_type, retry_if_not_result, retry_if_result, wait_fixed


class QueryNotFinished(Exception):
    pass
"""

#: (id, poll, twin that retries a failure, codes the twin must get)
PAIRS = [
    (
        "result-predicate-tests-a-state",
        """
        @retry(retry=retry_if_result(lambda state: state not in ("SUCCEEDED", "FAILED")), wait=wait_fixed(5))
        def statement_state(client, statement_id):
            return client.describe_statement(Id=statement_id)["Status"]
        """,
        """
        @retry(retry=retry_if_result(lambda response: response.status_code == 503), wait=wait_fixed(5))
        def statement_state(client, statement_id):
            return client.describe_statement(Id=statement_id)
        """,
        {"RTY102", "RTY202"},
    ),
    (
        "not-result-asks-done",
        """
        @retry(retry=retry_if_not_result(lambda job: job.done()), wait=wait_fixed(2))
        def refreshed_job(client, job_id):
            return client.get_job(job_id)
        """,
        """
        @retry(retry=retry_if_not_result(lambda response: response.ok), wait=wait_fixed(2))
        def refreshed_job(client, job_id):
            return client.get_job(job_id)
        """,
        {"RTY102", "RTY202"},
    ),
    (
        "exception-raised-only-while-running",
        """
        @retry(retry=retry_if_exception_type(QueryNotFinished), wait=wait_fixed(5))
        def query_result(client, query_id):
            state = client.get_query_execution(QueryExecutionId=query_id)["State"]
            if state in ("QUEUED", "RUNNING"):
                raise QueryNotFinished(query_id)
            return state
        """,
        """
        @retry(retry=retry_if_exception_type(QueryNotFinished), wait=wait_fixed(5))
        def query_result(client, query_id):
            response = client.get_query_execution(QueryExecutionId=query_id)
            if response is None:
                raise QueryNotFinished(query_id)
            return response
        """,
        {"RTY102", "RTY202"},
    ),
    (
        "backoff-predicate-tests-a-state",
        """
        @backoff.on_predicate(backoff.constant, lambda status: status == "PENDING", interval=3)
        def export_status(client, export_id):
            return client.get_export(export_id)["status"]
        """,
        """
        @backoff.on_predicate(backoff.constant, lambda status: status >= 500, interval=3)
        def export_status(client, export_id):
            return client.get_export(export_id).status_code
        """,
        {"RTY102", "RTY202"},
    ),
    (
        "retrying-object-on-a-not-yet-exception",  # feast's BigQuery block_until_done
        """
        from tenacity import Retrying, stop_after_delay

        class BigQueryJobStillRunning(Exception):
            pass

        def block_until_done(client, job, timeout=1800):
            def _wait_until_done(job):
                if client.get_job(job).state in ["PENDING", "RUNNING"]:
                    raise BigQueryJobStillRunning(job)

            retryer = Retrying(wait=wait_fixed(1), stop=stop_after_delay(timeout),
                               retry=retry_if_exception_type(BigQueryJobStillRunning), reraise=True)
            retryer(_wait_until_done, job)
        """,
        """
        from tenacity import Retrying, stop_after_delay

        def block_until_done(client, job, timeout=1800):
            def _fetch(job):
                return client.get_job(job)

            retryer = Retrying(wait=wait_fixed(1), stop=stop_after_delay(timeout),
                               retry=retry_if_exception_type(requests.ConnectionError), reraise=True)
            retryer(_fetch, job)
        """,
        {"RTY202"},
    ),
]


def _codes(body: str):
    source = HEAD + textwrap.dedent(body)
    compile(source, "polls.py", "exec")
    exec(compile(HEAD, "head.py", "exec"), {})  # the real libraries' names
    report = check_source(source, "polls.py", settings_with(CODES))
    assert report.error is None, report.error
    return {f.code for f in report.findings}


@pytest.mark.parametrize("case_id, poll, twin, twin_codes", PAIRS, ids=[p[0] for p in PAIRS])
def test_a_decorator_that_waits_for_a_state_is_a_poll(case_id, poll, twin, twin_codes):
    assert _codes(poll) == set(), f"{case_id}: a poll, reported"
    assert twin_codes <= _codes(twin), f"{case_id}: the twin retries a failure and must stay reported"


def test_a_poll_that_also_retries_connection_errors_stays_a_retry():
    body = """
    @retry(retry=retry_if_exception_type((QueryNotFinished, requests.ConnectionError)), wait=wait_fixed(5))
    def query_result(client, query_id):
        state = client.get_query_execution(QueryExecutionId=query_id)["State"]
        if state in ("QUEUED", "RUNNING"):
            raise QueryNotFinished(query_id)
        return state
    """
    assert {"RTY102", "RTY202"} <= _codes(body)


def test_an_exception_raised_for_a_state_and_for_a_failure_stays_a_retry():
    body = """
    @retry(retry=retry_if_exception_type(QueryNotFinished), wait=wait_fixed(5))
    def query_result(client, query_id):
        response = client.get_query_execution(QueryExecutionId=query_id)
        if response is None:
            raise QueryNotFinished(query_id)
        state = response["State"]
        if state in ("QUEUED", "RUNNING"):
            raise QueryNotFinished(query_id)
        return state
    """
    assert {"RTY102", "RTY202"} <= _codes(body)


def test_a_function_named_for_waiting_at_a_fixed_pace_is_a_poll_and_backing_off_is_not():
    fixed = """
    @retry(wait=wait_fixed(10))
    def wait_for_cluster(client, name):
        return client.describe_cluster(name)["status"]
    """
    assert _codes(fixed) == set()
    growing = """
    from tenacity import wait_exponential
    @retry(wait=wait_exponential(multiplier=1))
    def wait_for_cluster(client, name):
        return client.describe_cluster(name)["status"]
    """
    assert "RTY203" in _codes(growing)


def test_an_exception_raised_on_the_words_of_an_error_message_stays_a_retry():
    # A conflict ("another bulk operation is already in progress") read from an error's text: the
    # submission failed and is retried, no state of a resource is awaited.
    body = """
    @backoff.on_exception(backoff.expo, QueryNotFinished, max_tries=7, factor=10, jitter=None)
    def submit(client, query):
        errors = client.submit(query).get("userErrors", [])
        for error in errors:
            message = error.get("message", "")
            if "operation is already in progress" in message:
                raise QueryNotFinished(message)
        return errors
    """
    assert "RTY203" in _codes(body)
