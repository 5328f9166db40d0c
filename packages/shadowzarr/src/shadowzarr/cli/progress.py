"""Progress that shows a bar on a terminal and stays silent when piped."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A minimal bar: ``update(done, total)``; draws at most ten times a second."""

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._last = 0.0

    def update(self, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and (total is None or done < total):
            return
        self._last = now
        if total:
            filled = int(30 * done / total)
            bar = "#" * filled + "-" * (30 - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        else:
            self.stream.write(f"\r{self.label} {done}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
