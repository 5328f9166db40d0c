"""The one progress display of the workspace: generation, materialize, the catalog, `RemoteArray`
prefetches and the command all draw through `progress_display`.

Where it goes decides what it looks like:

- a person watches (stderr is a terminal, or this runs in a Jupyter kernel): ``tqdm.auto``, a
  bar redrawn in place or a notebook widget;
- stderr is a file or a pipe (a CI log, a batch job) and progress was asked for: plain lines,
  one at the start, one every `LINE_SECONDS` or each tenth of the way, and one at the end. tqdm
  on a file that is no terminal redraws with carriage returns, which a log shows as one endless
  line, so these lines are written here instead;
- ``show=False``: nothing.

Rates and the time left count the work of this run only: work an earlier, interrupted run did
(``resumed``) fills the bar but is named apart and moves no rate.
"""

from __future__ import annotations

import sys
import time
import warnings
from typing import IO, TYPE_CHECKING, Any, Self

from shadowzarr_spec.units import format_bytes, format_rate

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["LINE_SECONDS", "ProgressDisplay", "format_seconds", "interactive", "progress_display"]

LINE_SECONDS = 10.0
"""The longest wait between two plain lines in a log (besides one line per tenth done)."""


def interactive() -> bool:
    """Whether a person watches: stderr is a terminal, or this runs in a Jupyter kernel."""
    if _isatty(sys.stderr):
        return True
    return _in_notebook()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def format_seconds(seconds: float) -> str:
    """``12.4`` → ``"12 s"``, ``754`` → ``"12 min 34 s"``, ``7384`` → ``"2 h 3 min"``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


class ProgressDisplay:
    """Counts towards a total and shows them; this base shows nothing (``show=False``).

    ``update(1)`` after each item, or ``moveto(done, resumed=...)`` with a running count;
    ``detail`` is a short text shown after the counts (the current path, "3/7 arrays").
    """

    def __init__(self, description: str, total: int | None, unit: str, bytes_: bool) -> None:
        self.description = description
        self.total = total
        self.unit = unit
        self.bytes_ = bytes_
        self.done = 0
        self.resumed = 0
        self.detail = ""
        self.started = time.monotonic()
        self.closed = False

    def update(self, count: int = 1, *, detail: str | None = None) -> None:
        self.moveto(self.done + count, resumed=self.resumed, detail=detail)

    def moveto(self, done: int, *, resumed: int = 0, detail: str | None = None) -> None:
        self.done, self.resumed = done, resumed
        if detail is not None:
            self.detail = detail
        self._shown()

    def set_total(self, total: int | None) -> None:
        self.total = total
        self._shown()

    def write(self, message: str) -> None:
        """A line on stderr (above a bar while one is drawn)."""
        print(message, file=sys.stderr, flush=True)

    def close(self) -> None:
        self.closed = True

    def _shown(self) -> None:
        """Called after every change; a display draws when it sees fit."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def line(self) -> str:
        """``generate data.h5: 1,204/5,000 datasets (24%), 12 s elapsed, ~38 s left``."""
        elapsed = time.monotonic() - self.started
        moved = max(0, self.done - self.resumed)
        if self.bytes_:
            counts = f"{format_bytes(self.done)} of " + (
                "?" if self.total is None else format_bytes(self.total)
            )
        else:
            counts = f"{self.done:,}/" + ("?" if self.total is None else f"{self.total:,}")
            counts += f" {self.unit}"
        parts = [f"{self.description}: {counts}"]
        if self.total:
            parts[0] += f" ({100 * self.done // self.total}%)"
        if self.resumed:
            resumed = format_bytes(self.resumed) if self.bytes_ else f"{self.resumed:,}"
            parts.append(f"{resumed} resumed from an earlier run")
        if self.detail:
            parts.append(self.detail)
        if self.bytes_ and moved:
            parts.append(format_rate(moved, elapsed))
        parts.append(f"{format_seconds(elapsed)} elapsed")
        if self.total and moved and self.done < self.total and elapsed > 0:
            parts.append(f"~{format_seconds((self.total - self.done) * elapsed / moved)} left")
        return ", ".join(parts)


class _Lines(ProgressDisplay):
    """Plain lines for a log: at the start, every `LINE_SECONDS` or tenth, and at the end."""

    def __init__(self, *args: Any, file: IO[str], seconds: float) -> None:
        super().__init__(*args)
        self._file = file
        self._seconds = seconds
        self._last_time = self.started
        self._last_tenth = 0
        self._printed: tuple[int, str] | None = None
        self._print()

    def _shown(self) -> None:
        now = time.monotonic()
        tenth = 10 * self.done // self.total if self.total else 0
        if tenth > self._last_tenth or now - self._last_time >= self._seconds:
            self._last_time, self._last_tenth = now, tenth
            self._print()

    def _print(self) -> None:
        if not self.closed:
            self._printed = (self.done, self.detail)
            self._file.write(self.line() + "\n")
            self._file.flush()

    def write(self, message: str) -> None:
        self._file.write(message + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._printed != (self.done, self.detail):  # the end, unless just printed
            self._print()
        super().close()


class _Bar(ProgressDisplay):
    """A tqdm.auto bar: redrawn in place on a terminal, an ipywidgets widget in a notebook."""

    def __init__(self, *args: Any, file: IO[str], position: int | None) -> None:
        super().__init__(*args)
        self.bar = _new_bar(self, file, position)

    def _shown(self) -> None:
        bar = self.bar
        bar.total = self.total
        bar.initial = self.resumed  # done before this run: not part of tqdm's rate
        bar.set_postfix_str(self.detail, refresh=False)
        bar.update(self.done - bar.n)

    def write(self, message: str) -> None:
        type(self.bar).write(message, file=sys.stderr)

    def close(self) -> None:
        if not self.closed:
            self.bar.refresh()
            self.bar.close()
        super().close()


def _new_bar(display: ProgressDisplay, file: IO[str], position: int | None) -> Any:
    import shutil

    tqdm_class = _bar_class()
    size = shutil.get_terminal_size((100, 24))
    if display.bytes_:
        bar_format = (
            "{desc}: {percentage:3.0f}%|{bar}| {done_bytes} of {total_bytes} "
            "[{elapsed}<{remaining}, {byte_rate}{postfix}]"
        )
    else:
        bar_format = (
            "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
            + display.unit
            + " [{elapsed}<{remaining}{postfix}]"
        )
    options: dict[str, Any] = {
        "total": display.total,
        "desc": display.description,
        "unit": "B" if display.bytes_ else display.unit,
        "bar_format": bar_format,
        "position": position,
        "leave": True,
        "file": file,
        "mininterval": 0.2,
        # A terminal that reports no width (a pty under `script`, some CI runners) still gets
        # bars of a readable width.
        "ncols": min(size.columns, 120),
        "nrows": size.lines,
    }
    try:
        return tqdm_class(**options)
    except ImportError:  # a notebook without ipywidgets: tqdm's text bar, which Jupyter shows
        from tqdm.std import tqdm

        return _with_run_rate(tqdm)(**options)


def _bar_class() -> Any:
    with warnings.catch_warnings():
        # tqdm.auto warns once when a notebook lacks ipywidgets; _new_bar falls back instead.
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm

    # No monitor thread: the command forks generator workers after its bars exist.
    tqdm.monitor_interval = 0
    return _with_run_rate(tqdm)


def _with_run_rate(tqdm_class: Any) -> Any:
    """``tqdm_class`` whose rate counts this run's work only (``initial`` is resumed work), with
    byte counts in binary units labelled KiB/MiB."""

    class RunRateBar(tqdm_class):  # type: ignore[misc]
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

    return RunRateBar


def progress_display(
    description: str,
    *,
    total: int | None,
    unit: str = "items",
    bytes_: bool = False,
    show: bool | None = None,
    file: IO[str] | None = None,
    position: int | None = None,
    seconds: float = LINE_SECONDS,
) -> ProgressDisplay:
    """A display of ``total`` ``unit`` (bytes with ``bytes_``) on stderr.

    ``show``: None (default) shows a bar or widget when a person watches (`interactive`) and
    nothing otherwise; True shows the bar when a person watches and plain lines, at most one
    each ``seconds`` or tenth of the way, when stderr is a file or a pipe; False shows nothing.
    """
    out = file if file is not None else sys.stderr
    watched = _isatty(out) or (file is None and _in_notebook())
    if show is False or (show is None and not watched):
        return ProgressDisplay(description, total, unit, bytes_)
    if watched:
        return _Bar(description, total, unit, bytes_, file=out, position=position)
    return _Lines(description, total, unit, bytes_, file=out, seconds=seconds)
