"""The command's bars: the shared display (`shadowzarr_store.progress_display`), stacked.

Worker processes never draw: they send their counts to the parent (`ProgressEvents`), which
owns every bar. The command draws only when a person watches (a terminal or a notebook); in a
pipe or a log file it prints each result as a line of its own instead.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from shadowzarr_store.progress_display import ProgressDisplay

__all__ = ["Bars"]


class Bars:
    """The bars of one command, stacked in the order they are added.

    ``bars.add("files", total=12, unit="files")``; ``bars["files"].update(1)``;
    ``bars.write(text)`` prints a line above the bars without breaking them.
    """

    def __init__(self, *, enabled: bool | None = None) -> None:
        # Imported here: `shadowzarr --help` loads no zarr (the store package imports it).
        from shadowzarr_store.progress_display import interactive

        self.enabled = interactive() if enabled is None else enabled
        self._bars: dict[str, ProgressDisplay] = {}

    def add(
        self,
        name: str,
        *,
        total: int | None = None,
        unit: str = "items",
        bytes_: bool = False,
        description: str | None = None,
    ) -> ProgressDisplay:
        from shadowzarr_store.progress_display import progress_display

        bar = progress_display(
            description or name,
            total=total,
            unit=unit,
            bytes_=bytes_,
            show=self.enabled,
            position=len(self._bars),
        )
        self._bars[name] = bar
        return bar

    def __getitem__(self, name: str) -> ProgressDisplay:
        return self._bars[name]

    def __contains__(self, name: str) -> bool:
        return name in self._bars

    def write(self, message: str) -> None:
        """A line on stderr (above the bars while they are drawn)."""
        if self._bars:
            next(iter(self._bars.values())).write(message)
        else:
            print(message, file=sys.stderr)

    def close(self) -> None:
        for bar in self._bars.values():  # top first: a terminal keeps them in this order
            bar.close()
        self._bars.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
