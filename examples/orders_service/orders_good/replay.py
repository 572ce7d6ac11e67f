"""Put dead letters back on their queue, by hand, after the cause is fixed (doctrine §4).

    python -m orders_good.replay --queue orders --since 2026-09-06T12:00 --limit 500 --rate 10

Only letters that failed at or after ``--since``, at most ``--limit`` of them, at ``--rate``
messages per second: putting 5,000 orders back at once makes a new spike on the API that has
just recovered. Letters outside the window go back to the dead-letter queue untouched.
Exit codes: 0 done, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from typing import List, Optional, Sequence

from kombu import Connection

from .consumer import FIRST_RECEIVED


def replay(connection: Connection, queue: str, since: datetime.datetime, limit: int, rate: float) -> int:
    """Move up to ``limit`` letters that failed since ``since`` back to ``queue``, ``rate`` per
    second; returns how many moved."""
    dead_letters = connection.SimpleQueue(f"{queue}.dlq")
    work = connection.SimpleQueue(queue)
    interval = 1.0 / rate
    kept: List[dict] = []
    moved = 0
    try:
        while moved < limit:
            try:
                letter = dead_letters.get_nowait()
            except dead_letters.Empty:
                break
            entry = letter.payload
            if _parse(entry["failed_at"]) < since:
                kept.append(entry)
            else:
                if moved:
                    time.sleep(interval)
                # The order itself goes back, with when it was first received.
                work.put(entry["message"], headers={FIRST_RECEIVED: entry["first_received"]})
                moved += 1
            letter.ack()
    finally:
        for entry in kept:  # outside the window: back where they were, unchanged
            dead_letters.put(entry)
    return moved


def _parse(value: str) -> datetime.datetime:
    when = datetime.datetime.fromisoformat(value)
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text}")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1000:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1000 messages per second, got {text}")
    return value


def _since(text: str) -> datetime.datetime:
    try:
        return _parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date and time: {text!r} (e.g. 2026-09-06T12:00)") from None


def main(argv: Optional[Sequence[str]] = None, connection: Optional[Connection] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orders_good.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", required=True, help="the work queue whose dead letters to replay (reads QUEUE.dlq)")
    parser.add_argument("--since", required=True, type=_since, help="only letters that failed at or after this time")
    parser.add_argument("--limit", required=True, type=_positive_int, help="at most this many letters")
    parser.add_argument("--rate", type=_rate, default=5.0, help="messages per second (default 5)")
    parser.add_argument("--broker", default=os.environ.get("ORDERS_BROKER_URL", "memory://"), help="kombu broker URL")
    args = parser.parse_args(argv)
    if connection is None:
        connection = Connection(args.broker)
    moved = replay(connection, args.queue, args.since, args.limit, args.rate)
    print(f"replayed {moved} letter(s) from {args.queue}.dlq to {args.queue} at {args.rate:g}/s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
