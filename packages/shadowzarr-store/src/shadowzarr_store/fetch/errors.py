"""Errors of the fetch layer that the layers above handle on purpose."""

from __future__ import annotations

from shadowzarr_spec import SourceError

__all__ = ["RangeNotSatisfiable"]


class RangeNotSatisfiable(SourceError):
    """The range starts at or past the end of the file (HTTP 416).

    An error for a chunk that must be there; for the part of an uncompressed chunk that a short
    last slab leaves past the end of the file it means "all padding".
    """
