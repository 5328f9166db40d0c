"""A small progress bar on stderr for prefetches (no third-party dependency)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["ProgressCallback", "progress_reporter"]

type ProgressCallback = Callable[[int, int], None]
"""``progress(done, total)`` after each chunk."""


def progress_reporter(progress: ProgressCallback | bool | None) -> ProgressCallback:
    """The callback to call: the user's, a bar (True, or None on a terminal) or nothing."""
    if callable(progress):
        return progress
    show = sys.stderr.isatty() if progress is None else progress
    return _Bar() if show else _silent


def _silent(done: int, total: int) -> None:
    return None


class _Bar:
    def __init__(self) -> None:
        self._shown = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._shown < 0.1:
            return
        self._shown = now
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\rfetch [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
