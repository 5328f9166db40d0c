"""shadowzarr-neo: references to electrophysiology recordings read by NEO's raw readers."""

from __future__ import annotations

from shadowzarr_neo.generate import generate_rfs_neo

__version__ = "0.1.0"

__all__ = ["generate_rfs_neo"]
