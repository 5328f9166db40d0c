"""The NeuroConv bridge: NeuroConv builds the NWB file, references replace its data iterators.

::

    from shadowzarr_nwb.neuroconv_bridge import allow_zarr3, virtualize
    allow_zarr3()                      # before importing neuroconv (NeuroConv 0.10 with zarr 3)
    from neuroconv.datainterfaces import SpikeGLXRecordingInterface
    nwbfile = interface.create_nwbfile(metadata=interface.get_metadata())
    virtualize(nwbfile)
    write_virtual_nwb(nwbfile, "session.nwb.shadowzarr")

NeuroConv, SpikeInterface and roiextractors are not dependencies of shadowzarr: they need
zarr<3, so they install beside it only with that requirement overridden
(``tools/neuroconv-env/build.sh``). Nothing here imports them.
"""

from __future__ import annotations

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_nwb.neuroconv_bridge.compat import allow_zarr3
from shadowzarr_nwb.neuroconv_bridge.virtualize import virtualize

__all__ = ["NotVirtualizable", "allow_zarr3", "virtualize"]
