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


def _byte_bar_class() -> Any:
    """tqdm (or its notebook widget) counting bytes: sizes in binary units labelled KiB/MiB, and
    a rate of the bytes moved in this run only. A resumed run sets ``bar.initial`` to the bytes
    an earlier run had done, which count towards the bar but not towards the rate."""
    from shadowzarr_spec.units import format_bytes, format_rate
    from tqdm.auto import tqdm

    class ByteBar(tqdm):  # type: ignore[misc]
        @property
        def format_dict(self) -> dict[str, Any]:
            fields: dict[str, Any] = super().format_dict
            done, total = fields.get("n") or 0, fields.get("total")
            elapsed = fields.get("elapsed") or 0.0
            moved = max(0.0, done - (fields.get("initial") or 0))
            fields["rate"] = moved / elapsed if elapsed > 0 and moved > 0 else None
            fields["done_bytes"] = format_bytes(done)
            fields["total_bytes"] = "?" if total is None else format_bytes(total)
            fields["byte_rate"] = format_rate(moved, elapsed)
            return fields

    return ByteBar


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
        kind = _byte_bar_class() if bytes_ else tqdm
        bar = kind(
            total=total,
            unit="B" if bytes_ else unit,
            desc=description or name,
            bar_format=(
                "{desc}: {percentage:3.0f}%|{bar}| {done_bytes} of {total_bytes} "
                "[{elapsed}<{remaining}, {byte_rate}{postfix}]"
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
