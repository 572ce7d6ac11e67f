"""retrylint on the example: nothing in the good consumer, every expected code in the bad twin.

The CLI runs as CI runs it (a subprocess, exit codes included); the engine is asked, too, what it
saw in the good twin, so "nothing found" cannot come from not looking.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from retrylint.engine import check_path
from retrylint.model import DeadLetterKind
from retrylint.settings import Settings

HERE = Path(__file__).resolve().parents[1]

#: (file, line, code) of every finding in the bad twin: each mistake, exactly once.
EXPECTED_BAD = {
    ("orders_bad/consumer.py", 29, "RTY301"),  # except Exception: 404s retried too
    ("orders_bad/consumer.py", 30, "RTY202"),  # every 100 ms
    ("orders_bad/consumer.py", 32, "RTY402"),  # dead letter without reason/attempts/first-received
    ("orders_bad/consumer.py", 40, "RTY101"),  # while True, no bound
    ("orders_bad/consumer.py", 40, "RTY201"),  # … and no pause
    ("orders_bad/consumer.py", 54, "RTY203"),  # 2 ** attempt, no jitter
    ("orders_bad/consumer.py", 54, "RTY204"),  # … and no cap
    ("orders_bad/redrive.py", 17, "RTY403"),  # the auto-redrive drains everything, unpaced
    ("orders_bad/redrive.py", 19, "RTY401"),  # dead letters re-published automatically
    ("orders_bad/redrive.py", 28, "RTY403"),  # the "replay tool" has no --limit and no rate
}


def retrylint(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "retrylint", "check", "--output-format", "json", *paths],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_good_consumer_is_clean():
    result = retrylint("orders_good", "orders_api.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == []


def test_the_bad_twin_has_every_expected_finding_and_no_other():
    result = retrylint("orders_bad")
    assert result.returncode == 1, result.stderr
    found = {(Path(f["filename"]).relative_to(HERE).as_posix(), f["location"]["row"], f["code"]) for f in json.loads(result.stdout)}
    assert found == EXPECTED_BAD


def test_retrylint_sees_the_retry_loop_the_dead_letter_and_the_replay_of_the_good_consumer():
    consumer = check_path(HERE / "orders_good/consumer.py", "consumer.py", Settings(), want_policies=True)
    [loop] = consumer.policies
    assert (loop.bound.attempts, loop.delay.kind.value, loop.delay.base, loop.delay.cap) == (5, "exponential", 1.0, 20.0)
    assert loop.delay.jitter.kind.value == "full" and loop.delay.honours_retry_after
    [letter] = consumer.dead_letters
    assert letter.kind is DeadLetterKind.WRITE and letter.queue == "orders.dlq"
    assert set(letter.carries) == {"message", "reason", "attempts", "first_received"}

    replay = check_path(HERE / "orders_good/replay.py", "replay.py", Settings(), want_policies=True)
    [move] = replay.dead_letters
    assert move.kind is DeadLetterKind.REPLAY and move.trigger == "cli" and move.automatic is False
    assert move.rate_limited and move.batch_limited
