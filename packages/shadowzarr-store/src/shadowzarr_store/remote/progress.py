"""What a prefetch reports: the caller's callback, or the shared display (`progress_display`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shadowzarr_store.progress_display import progress_display

__all__ = ["ProgressCallback", "progress_reporter"]

type ProgressCallback = Callable[[int, int], None]
"""``progress(done, total)`` after each chunk."""


@contextmanager
def progress_reporter(
    progress: ProgressCallback | bool | None, total: int, description: str = "fetch"
) -> Iterator[ProgressCallback]:
    """The callback to call with ``(done, total)``: the user's, or a display of ``total``
    chunks (True: a bar, or lines in a log; None: a bar when a person watches; False: none),
    closed on leaving."""
    if callable(progress):
        yield progress
        return
    with progress_display(description, total=total, unit="chunks", show=progress) as display:
        yield lambda done, _total: display.moveto(done)
