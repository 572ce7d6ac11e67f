"""Standard output that survives a reader who stops reading (``retrylint check … | head -1``).

When the pipe closes, further writes are dropped and standard output is pointed at the null
device, so that neither our writes nor the interpreter's final flush raise ``BrokenPipeError``.
The run still finishes (``--fix`` writes every file) and exits with its own code: quiet, as
``grep`` or ``ruff`` are when ``head`` has what it wants.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, TextIO


class PipeSafeWriter:
    """Wraps a text stream; a ``BrokenPipeError`` silences it instead of crashing the run."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            written = self.stream.write(text)
            # Flush now: a pipe's reader may already be gone, and this is where we learn it.
            self.stream.flush()
            return written
        except BrokenPipeError:
            self._silence()
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        self.closed_by_reader = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a real file descriptor (a test's StringIO): nothing will flush it later


def pipe_safe_stdout() -> PipeSafeWriter:
    return PipeSafeWriter(sys.stdout)
