"""The structure of an NWB file, written by hdmf-zarr into a temporary local Zarr store.

hdmf-zarr writes groups, attributes, object ids, references, the cached specification and every
dataset holding real data; for a placeholder it creates the array's metadata only, because the
placeholder is a data chunk iterator that yields no chunk. The store's files are then read back
as inline references, one per file.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shadowzarr_nwb.placeholders import virtual_datasets

if TYPE_CHECKING:
    from pynwb import NWBFile
    from shadowzarr_spec import VirtualArray

__all__ = ["WrittenStructure", "write_structure"]


@dataclass(frozen=True, slots=True)
class WrittenStructure:
    """Every file of the store hdmf-zarr wrote (key → bytes) and the virtual datasets in it."""

    files: dict[str, bytes]
    virtual: dict[str, VirtualArray]


def write_structure(nwbfile: NWBFile) -> WrittenStructure:
    """Write ``nwbfile`` with NWBZarrIO to a temporary store and read its files into memory."""
    from hdmf_zarr import NWBZarrIO

    with tempfile.TemporaryDirectory(prefix="shadowzarr-nwb-") as scratch:
        store = Path(scratch) / "structure.nwb.zarr"
        with NWBZarrIO(str(store), mode="w") as io:
            io.write(nwbfile)
            virtual = virtual_datasets(io.manager.get_builder(nwbfile))
        return WrittenStructure(files=_read_files(store), virtual=virtual)


def _read_files(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files
