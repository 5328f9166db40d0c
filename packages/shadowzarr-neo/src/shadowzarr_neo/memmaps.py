"""Where in its file a numpy memmap, or a slice of one, starts.

``numpy.memmap`` keeps the ``offset`` it was opened with even in views, so a slice's own
position has to come from how far its data lies from the start of the mapping.
"""

from __future__ import annotations

import mmap
import os

import numpy as np

__all__ = ["memmap_position"]


def memmap_position(view: np.memmap) -> tuple[str, int]:
    """(path, byte offset in the file) of the first element of ``view``."""
    mapping = view._mmap  # type: ignore[attr-defined]
    if mapping is None or view.filename is None:
        raise ValueError("not a view of a file-backed memmap")
    # np.memmap maps from offset rounded down to the allocation granularity
    mapped_from = view.offset - view.offset % mmap.ALLOCATIONGRANULARITY
    start = np.frombuffer(mapping, dtype=np.uint8, count=0).__array_interface__["data"][0]
    here = view.__array_interface__["data"][0]
    return os.fspath(view.filename), mapped_from + (here - start)
