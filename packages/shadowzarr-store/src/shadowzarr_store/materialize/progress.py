"""What materialize reports while it runs: one step per region (or chunk) copied or verified.

The counts are bytes of array data (decoded values), summed over every array, so one bar covers
the whole run; verification is a phase of its own with its own total, so a bar shows it instead
of sitting at "done" while every array is read back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shadowzarr_store.progress_display import ProgressDisplay, progress_display

__all__ = ["MaterializeStep", "Progress", "ProgressReporter", "StepDisplays", "region_bytes"]

type Phase = Literal["copy", "verify"]


@dataclass(frozen=True, slots=True)
class MaterializeStep:
    """Where materialize is: ``done`` of ``total`` bytes of the ``phase``, last on ``path``."""

    phase: Phase
    path: str
    done: int
    total: int
    arrays_done: int
    arrays: int
    resumed: int = 0
    """The part of ``done`` an earlier, interrupted run had copied: counted as done, but not
    moved by this run (a rate is ``(done - resumed) / seconds``)."""


type Progress = Callable[[MaterializeStep], None]
"""Called after each region copied or verified (from the event loop: keep it quick)."""


def region_bytes(region: tuple[slice, ...], itemsize: int) -> int:
    """Bytes of the values in ``region``."""
    return int(math.prod(part.stop - part.start for part in region)) * itemsize


class ProgressReporter:
    """Accumulates steps into one running count per phase and passes them to the callback."""

    def __init__(self, callback: Progress | None, totals: dict[Phase, int], arrays: int) -> None:
        self._callback = callback
        self._totals = totals
        self._done: dict[Phase, int] = dict.fromkeys(totals, 0)
        self._arrays = arrays
        self._arrays_done: dict[Phase, int] = dict.fromkeys(totals, 0)
        self._resumed: dict[Phase, int] = dict.fromkeys(totals, 0)

    def advance(self, phase: Phase, path: str, nbytes: int, *, resumed: bool = False) -> None:
        """``nbytes`` more done; ``resumed``: found done by an earlier run, not moved now."""
        self._done[phase] = self._done.get(phase, 0) + nbytes
        if resumed:
            self._resumed[phase] = self._resumed.get(phase, 0) + nbytes
        self._report(phase, path)

    def array_done(self, phase: Phase, path: str) -> None:
        self._arrays_done[phase] = self._arrays_done.get(phase, 0) + 1
        self._report(phase, path)

    def _report(self, phase: Phase, path: str) -> None:
        if self._callback is not None:
            self._callback(
                MaterializeStep(
                    phase,
                    path,
                    self._done.get(phase, 0),
                    self._totals.get(phase, 0),
                    self._arrays_done.get(phase, 0),
                    self._arrays,
                    self._resumed.get(phase, 0),
                )
            )


class StepDisplays:
    """``progress=True``/None: the shared display (`progress_display`), one per phase, in
    bytes, with the arrays done beside them and resumed work named apart from this run's."""

    def __init__(self, show: bool | None) -> None:
        self._show = show
        self._displays: dict[Phase, ProgressDisplay] = {}

    def __call__(self, step: MaterializeStep) -> None:
        display = self._displays.get(step.phase)
        if display is None:
            # Both stay open: arrays are copied and verified in turn, so the phases alternate.
            display = progress_display(
                f"materialize {step.phase}",
                total=step.total,
                bytes_=True,
                show=self._show,
                position=len(self._displays),
            )
            self._displays[step.phase] = display
        display.moveto(
            step.done, resumed=step.resumed, detail=f"{step.arrays_done}/{step.arrays} arrays"
        )

    def close(self) -> None:
        for display in self._displays.values():
            display.close()
