"""The dead-letter capture: what counts as context, and what the assertion says."""

import dataclasses
import datetime
import json
import sys
import types

import pytest

from pytest_retry_check import DeadLetters, RetryCheckFailed

WHEN = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


@dataclasses.dataclass
class Envelope:
    original_message: dict
    failure_reason: str
    attempt_count: int
    first_received_at: datetime.datetime


@pytest.mark.parametrize(
    "send",
    [
        lambda dlq: dlq.send({"order": 1}, reason="503", attempts=5, first_received=WHEN),
        lambda dlq: dlq.send({"message": {"order": 1}, "error": "503", "attempts": 5, "first_received_at": WHEN.isoformat()}),
        lambda dlq: dlq.publish(json.dumps({"payload": {"order": 1}, "failure_reason": "503", "retry_count": "5", "received_at": 1767225600.0})),
        lambda dlq: dlq.put({"order": 1}, headers={"x-error": "no", "reason": "503", "attempts": 5, "first_seen": WHEN}),
        lambda dlq: dlq(Envelope({"order": 1}, "503", 5, WHEN)),
        lambda dlq: dlq.send({"order": 1}, "503", 5, WHEN),
    ],
    ids=["keywords", "envelope", "json-string", "headers", "dataclass", "positional"],
)
def test_common_shapes_carry_all_four_fields(send, dead_letters):
    send(dead_letters)
    dead_letters.assert_context(messages=[{"order": 1}], attempts=5)
    assert dead_letters[0].message == {"order": 1}


def test_missing_fields_are_named_with_what_was_sent():
    dlq = DeadLetters()
    dlq.send({"order": 1})
    dlq.send({"order": 2}, reason="timeout", attempts=0, first_received="soon")
    with pytest.raises(RetryCheckFailed) as info:
        dlq.assert_context()
    message = str(info.value)
    assert "dead letter #1 lacks: failure reason, attempt count, first-received time" in message
    assert "sent: send({'order': 1})" in message
    assert "dead letter #2 lacks: attempt count (0 is not a whole number >= 1), first-received time ('soon' is not a time)" in message


def test_expected_originals_and_attempts():
    dlq = DeadLetters()
    dlq.send("a", reason="x", attempts=3, first_received=WHEN)
    with pytest.raises(RetryCheckFailed, match=r"originals expected \['a', 'b'\], dead-lettered \['a'\]"):
        dlq.assert_context(messages=["a", "b"])
    with pytest.raises(RetryCheckFailed, match="says 3 attempts, expected 5"):
        dlq.assert_context(attempts=5)


def test_nothing_dead_lettered_fails():
    with pytest.raises(RetryCheckFailed, match="nothing was sent to the dead-letter queue"):
        DeadLetters().assert_context()


def test_patch_replaces_a_publish_function_until_restore(monkeypatch):
    module = types.ModuleType("fake_queue_module")

    def send_to_dlq(message, **context):
        raise AssertionError("the real queue must not be used in this test")

    module.send_to_dlq = send_to_dlq
    monkeypatch.setitem(sys.modules, "fake_queue_module", module)
    dlq = DeadLetters()
    dlq.patch("fake_queue_module.send_to_dlq")
    module.send_to_dlq("m", reason="r", attempts=1, first_received=WHEN)
    dlq.restore()
    assert module.send_to_dlq is send_to_dlq
    dlq.assert_context(messages=["m"])


@pytest.mark.parametrize("target, message", [("nodots", "takes 'package.module.function'"), ("no_such_module_x.f", "cannot patch")])
def test_patch_bad_target(target, message):
    with pytest.raises(ValueError, match=message):
        DeadLetters().patch(target)


def test_send_records_virtual_time(fake_clock, dead_letters):
    import time

    time.sleep(42)
    dead_letters.send("m", reason="r", attempts=1, first_received=WHEN)
    assert dead_letters[0].at == 42
