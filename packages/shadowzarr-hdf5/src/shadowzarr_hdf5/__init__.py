"""shadowzarr-hdf5: references for HDF5, NWB and MATLAB v7.3 files, read through h5py.

``generate_rfs`` is the entry point. The ``remote`` subpackage (HTTP file object with chunk-index
prefetch) is imported only when a remote file or index parsing needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .generate import generate_rfs

__all__ = ["generate_rfs"]


def __getattr__(name: str) -> Any:
    if name == "generate_rfs":
        from .generate import generate_rfs

        return generate_rfs
    raise AttributeError(f"module 'shadowzarr_hdf5' has no attribute {name!r}")
