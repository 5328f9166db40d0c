"""Errors of the Icechunk bridge, leaves of shadowzarr's one hierarchy."""

from __future__ import annotations

from shadowzarr_spec.errors import ShadowzarrError, UnsupportedFeatureError

__all__ = ["MissingVirtualChunkContainerError", "SelectionNotSupportedError"]


class MissingVirtualChunkContainerError(ShadowzarrError, ValueError):
    """The repository has no virtual chunk container for some of the places the references
    point into, so Icechunk could not read (or even store) those chunks.

    ``prefixes`` lists a URL prefix to give a container for each of them.
    """

    def __init__(self, prefixes: list[str]) -> None:
        self.prefixes = list(prefixes)
        shown = ", ".join(self.prefixes)
        super().__init__(
            f"the repository has no virtual chunk container for {shown}; add "
            "icechunk.VirtualChunkContainer(<prefix>, <store>) to its config for each one "
            "(and authorize it with authorize_virtual_chunk_access when opening the repository)"
        )


class SelectionNotSupportedError(UnsupportedFeatureError):
    """An array read through a selection has no Icechunk counterpart: its bytes are interleaved
    with others' in the file. ``copy_selections=True`` copies its data instead."""
