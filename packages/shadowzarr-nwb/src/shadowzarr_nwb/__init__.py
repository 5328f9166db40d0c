"""shadowzarr-nwb: virtual NWB files written through hdmf-zarr, and the NeuroConv bridge.

``write_virtual_nwb(nwbfile, path)`` writes an NWBFile whose large datasets are VirtualArray
placeholders as a reference file system: hdmf-zarr writes the structure, the VirtualArrays give
the chunk locations. :mod:`shadowzarr_nwb.neuroconv_bridge` swaps the data iterators of an NWB
file NeuroConv built for placeholders. ``read_nwb(refs_or_url)`` reads an NWBFile through
references in one call, its IO kept open as long as the NWBFile is used.
"""

from __future__ import annotations

from shadowzarr_nwb.errors import NotVirtualizable, VirtualDatasetMismatch
from shadowzarr_nwb.placeholders import find_placeholder, virtual_datasets
from shadowzarr_nwb.read import NotAnNWBSource, ReferencesNWBZarrIO, open_nwb, read_nwb
from shadowzarr_nwb.write import virtual_nwb_rfs, write_virtual_nwb

__version__ = "0.1.0"

__all__ = [
    "NotAnNWBSource",
    "NotVirtualizable",
    "ReferencesNWBZarrIO",
    "VirtualDatasetMismatch",
    "find_placeholder",
    "open_nwb",
    "read_nwb",
    "virtual_datasets",
    "virtual_nwb_rfs",
    "write_virtual_nwb",
]
