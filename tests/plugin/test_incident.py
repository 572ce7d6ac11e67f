"""The doctrine's incident as a test: 2,000 messages failing together, the downstream down for a
while, a capacity limit; the report's peak connection attempts per second."""

from __future__ import annotations

import random
import time

import pytest

from pytest_retry_check import Incident, IncidentCheckFailed, replay_incident
from pytest_retry_check.backoffs import Backoff
from pytest_retry_check.incident import INCIDENT_POLICY


def test_the_incident_policy_makes_the_20000_per_second_spike_and_knocks_the_database_over():
    report = replay_incident(INCIDENT_POLICY)
    # 2,000 clients, one attempt every 100 ms (plus ~2 ms of network): ~20,000 a second.
    assert 19_000 <= report.peak <= 20_000
    assert report.calls == 200_000 and report.gave_up == 2_000 and report.succeeded == 0
    # The database was back at +5 s; the herd kept it over capacity until the tries ran out.
    assert report.knocked_over and report.overloaded[0] >= 5.0
    assert len(report.overloaded) > 90_000
    assert report.back_at is None  # not one attempt got through after the outage
    assert report.per_second()[:3] == [20_000, 20_000, 20_000]


def test_the_failure_message_names_the_peak_the_limit_and_the_knock_over():
    with pytest.raises(IncidentCheckFailed) as failure:
        replay_incident(max_peak=5_000)
    message = str(failure.value)
    assert message.startswith("incident check failed: peak 20,000 connection attempts per second (at +0.000 s), more than max_peak=5,000")
    assert "the incident: 2,000 messages failing together; the downstream down 0-5 s, then taking 2,000 connection attempts per second" in message
    assert "was knocked over again: " in message and "attempts failed over its capacity between +5.000 s" in message
    assert "  +   0 s |##################################################  20,000  <- down" in message
    assert "fix: back off exponentially with full jitter" in message


def test_full_jitter_backoff_stays_far_below_and_lets_the_database_recover():
    policy = Backoff("full", base=0.5, cap=20, max_attempts=8)
    report = replay_incident(policy, max_peak=5_000, recovers=True)
    assert report.peak < 5_000 and not report.knocked_over
    assert report.back_at is not None and report.back_at >= 5.0
    assert report.succeeded > 1_900


def test_recovers_fails_a_policy_that_knocks_the_recovered_database_over():
    # Exponential without jitter: all 2,000 come back together at +7 s, over a capacity of 1,000.
    policy = Backoff("exponential", base=0.5, cap=20, max_attempts=8)
    with pytest.raises(IncidentCheckFailed, match="knocked the recovered downstream over: 1,000 attempts failed"):
        replay_incident(policy, capacity=1_000, recovers=True)
    assert not replay_incident(Backoff("full", base=0.5, cap=20, max_attempts=8), capacity=1_000).knocked_over


def test_real_consumer_code_runs_in_the_incident_and_its_peak_is_counted():
    # The incident's loop, as code: every 100 ms, 100 tries, any error.
    def handle(database):
        for _ in range(100):
            try:
                return database()
            except Exception:
                time.sleep(0.1)

    report = replay_incident(handle, messages=100, capacity=100, outage=2.0)
    assert 950 <= report.peak <= 1_000  # 100 messages x 10 attempts a second
    assert report.knocked_over and report.gave_up == 100


def test_real_jittered_consumer_code_passes_its_limit():
    def handle(database):
        for attempt in range(1, 6):
            try:
                return database()
            except ConnectionError:
                if attempt == 5:
                    raise
                time.sleep(random.uniform(0, min(20.0, 2.0 ** (attempt - 1))))

    report = replay_incident(handle, messages=200, capacity=200, outage=2.0, max_peak=500, recovers=True)
    assert report.succeeded > 150


def test_the_scenario_is_checked():
    with pytest.raises(ValueError, match="messages"):
        Incident(messages=0)
    with pytest.raises(TypeError, match="either incident= or its fields"):
        replay_incident(incident=Incident(), messages=10)
    assert Incident(outage=30).model().outages == ((0.0, 30.0),)


def test_async_consumer_code_runs_as_tasks_on_the_virtual_loop():
    import asyncio

    async def handle(database):
        for attempt in range(1, 6):
            try:
                return await database.acall()
            except ConnectionError:
                if attempt == 5:
                    raise
                await asyncio.sleep(random.uniform(0, min(20.0, 2.0 ** (attempt - 1))))

    report = replay_incident(handle, messages=300, capacity=300, outage=2.0, max_peak=1_000, recovers=True)
    assert 300 <= report.peak < 1_000 and report.succeeded > 250
