"""The refusal virtual_arrays_neo can leave out rather than raise.

::

    NotVirtualizable (shadowzarr_spec.errors)
    └── ComputedStream      a stream whose values NEO computes from stored words
"""

from __future__ import annotations

from shadowzarr_spec.errors import NotVirtualizable

__all__ = ["ComputedStream"]


class ComputedStream(NotVirtualizable):
    """A stream whose values NEO computes rather than reads (Intan's digital channels unpacked
    from bits, Intan's stimulation current): the rest of the recording can still be referenced."""
