"""One progress display per command: tqdm bars drawn by this process only, notebook-aware.

tqdm (``tqdm.auto``: widgets in Jupyter, text on a terminal) is what users already know, and
it redraws several bars in place without their lines interleaving. Worker processes never draw:
they send their counts to the parent (`ProgressEvents`), which owns every bar. Nothing is drawn
when stderr is neither a terminal nor a notebook, so a pipe or a log file stays clean.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any, Self

__all__ = ["Bars", "interactive"]


def interactive() -> bool:
    """Whether a person watches: stderr is a terminal, or this runs in a Jupyter kernel."""
    if sys.stderr.isatty():
        return True
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


class Bars:
    """The bars of one command, stacked in the order they are added.

    ``bars.add("files", total=12, unit="file")``; ``bars["files"].update(1)``;
    ``bars.write(text)`` prints a line above the bars without breaking them.
    """

    def __init__(self, *, enabled: bool | None = None) -> None:
        self.enabled = interactive() if enabled is None else enabled
        self._bars: dict[str, Any] = {}

    def add(
        self,
        name: str,
        *,
        total: float | None = None,
        unit: str = "it",
        bytes_: bool = False,
        description: str | None = None,
    ) -> Any:
        from tqdm.auto import tqdm

        # No monitor thread: the generate command forks workers after its bars exist.
        tqdm.monitor_interval = 0
        bar = tqdm(
            total=total,
            unit="B" if bytes_ else unit,
            unit_scale=bytes_,
            unit_divisor=1024 if bytes_ else 1000,
            desc=description or name,
            bar_format=(
                "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}B of {total_fmt}B "
                "[{elapsed}<{remaining}, {rate_fmt}{postfix}]"
                if bytes_
                else "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                + unit
                + "s [{elapsed}<{remaining}{postfix}]"
            ),
            position=len(self._bars),
            leave=True,
            # A terminal that reports no width (a pty under `script`, some CI runners) still
            # gets bars of a readable width.
            ncols=min(shutil.get_terminal_size((100, 24)).columns, 120),
            nrows=shutil.get_terminal_size((100, 24)).lines,
            disable=not self.enabled,
            file=sys.stderr,
            mininterval=0.2,
        )
        self._bars[name] = bar
        return bar

    def __getitem__(self, name: str) -> Any:
        return self._bars[name]

    def __contains__(self, name: str) -> bool:
        return name in self._bars

    def write(self, message: str) -> None:
        """A line on stderr (above the bars while they are drawn)."""
        if self.enabled and self._bars:
            from tqdm.auto import tqdm

            tqdm.write(message, file=sys.stderr)
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
