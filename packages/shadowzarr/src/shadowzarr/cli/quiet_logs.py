"""Keep a pipe clean: third-party warnings and Icechunk's Rust logs only where a person reads.

Icechunk's Rust side logs through ``tracing`` at WARN by default, in colour, to stderr, whether
or not stderr is a terminal; it reads ``ICECHUNK_LOG`` (its filter) and ``NO_COLOR`` when
``icechunk`` is imported. Python libraries warn about things only their developers can act on
(zarr's note that consolidated metadata is not in the v3 specification). So, unless asked for
with ``-v``: Icechunk logs errors only, without colour when stderr is not a terminal, and
warnings of other packages go to the log at debug level; shadowzarr's own warnings stay one
line on stderr. Variables the user set are left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["quiet_third_parties"]

_logger = logging.getLogger("shadowzarr.cli")


@contextlib.contextmanager
def quiet_third_parties(verbose: int) -> Iterator[None]:
    """For the length of one command (``main`` may be called more than once in a process)."""
    if verbose:
        yield
        return
    wanted = {"ICECHUNK_LOG": "error"}
    if not sys.stderr.isatty():
        wanted["NO_COLOR"] = "1"
    added = [name for name in wanted if name not in os.environ]
    os.environ.update({name: wanted[name] for name in added})
    shown = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        yield
    finally:
        warnings.showwarning = shown
        for name in added:
            os.environ.pop(name, None)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
    **_: Any,
) -> None:
    if category.__module__.split(".", 1)[0].startswith("shadowzarr"):
        print(f"shadowzarr: warning: {message}", file=file or sys.stderr)
    else:
        _logger.debug("%s: %s (%s:%s)", category.__name__, message, filename, lineno)
