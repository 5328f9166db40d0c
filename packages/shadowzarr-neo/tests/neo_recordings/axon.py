"""Axon ABF1 and ABF2 files: the real ones in ``tests/data/ephys/axon`` (see its README).

Writing ABF headers by hand would only test our reading of the specification against itself,
so these come from real acquisitions: gap-free, episodic, int16 and float32 files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neo.rawio import AxonRawIO

from ._common import WrittenRecording, ephys_data

if TYPE_CHECKING:
    from pathlib import Path

AXON_FILES = tuple(sorted((ephys_data() / "axon").glob("*.abf")))


def axon_recording(path: Path) -> WrittenRecording:
    """A real ABF file; its values are those NEO reads (nothing was written)."""
    return WrittenRecording(AxonRawIO, {"filename": str(path)}, {}, (path,))
