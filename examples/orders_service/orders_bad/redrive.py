"""Dead letters back to work, automatically and all at once."""

from __future__ import annotations

import time

from kombu import Connection

from .consumer import DEAD_LETTER_QUEUE, QUEUE


def redrive_forever(connection: Connection) -> None:
    """A background job that keeps putting dead letters back: if the cause is not fixed, the
    same orders go round forever (RTY401)."""
    dead_letters = connection.SimpleQueue(DEAD_LETTER_QUEUE)
    work = connection.SimpleQueue(QUEUE)
    while True:
        letter = dead_letters.get(block=True, timeout=60)
        work.put(letter.payload)
        letter.ack()


def replay_all(connection: Connection) -> int:
    """The "replay tool": the whole dead-letter queue back at once (RTY403)."""
    dead_letters = connection.SimpleQueue(DEAD_LETTER_QUEUE)
    work = connection.SimpleQueue(QUEUE)
    moved = 0
    while True:
        try:
            letter = dead_letters.get_nowait()
        except dead_letters.Empty:
            return moved
        work.put(letter.payload)
        letter.ack()
        moved += 1
