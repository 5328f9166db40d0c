"""shadowzarr-neo: references to electrophysiology recordings read by NEO's raw readers."""

from __future__ import annotations

from shadowzarr_neo.errors import ComputedStream
from shadowzarr_neo.generate import generate_rfs_neo
from shadowzarr_neo.virtual import virtual_arrays_neo

__version__ = "0.1.0"

__all__ = ["ComputedStream", "generate_rfs_neo", "virtual_arrays_neo"]
