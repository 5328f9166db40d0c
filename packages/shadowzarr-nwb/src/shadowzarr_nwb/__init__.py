"""shadowzarr-nwb: virtual NWB files written through hdmf-zarr, and the NeuroConv bridge.

``write_virtual_nwb(nwbfile, path)`` writes an NWBFile whose large datasets are VirtualArray
placeholders as a reference file system: hdmf-zarr writes the structure, the VirtualArrays give
the chunk locations. :mod:`shadowzarr_nwb.neuroconv_bridge` swaps the data iterators of an NWB
file NeuroConv built for placeholders.
"""

from __future__ import annotations

from shadowzarr_nwb.errors import NotVirtualizable, VirtualDatasetMismatch
from shadowzarr_nwb.placeholders import find_placeholder, virtual_datasets
from shadowzarr_nwb.write import virtual_nwb_rfs, write_virtual_nwb

__version__ = "0.1.0"

__all__ = [
    "NotVirtualizable",
    "VirtualDatasetMismatch",
    "find_placeholder",
    "virtual_datasets",
    "virtual_nwb_rfs",
    "write_virtual_nwb",
]
