"""shadowzarr: read huge remote HDF5/NWB, TIFF and electrophysiology files as Zarr v3.

The names below come from the ``shadowzarr-*`` sub-packages and are imported on first use, so a
reader-only install (spec + store) imports without h5py, tifffile or neo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr._lazy import EXPORTS, load_attribute

__version__ = "0.1.0"
__all__ = [  # the names of _lazy.EXPORTS (a test holds the two equal)
    "AddressError",
    "BuilderError",
    "CachePolicy",
    "DatasetNotFoundError",
    "GenExpressionError",
    "LocalCache",
    "NotVirtualizable",
    "OfflineError",
    "ReferenceFileSystem",
    "ReferenceFormatError",
    "RemoteArray",
    "RfsBuilder",
    "RfsStore",
    "ShadowzarrError",
    "SourceChangedError",
    "SourceError",
    "SourceNotFoundError",
    "UnsafePathError",
    "UnsupportedFeatureError",
    "VirtualArray",
    "columns_selection",
    "decode_attributes",
    "generate_catalog",
    "generate_rfs",
    "generate_rfs_neo",
    "generate_rfs_tiff",
    "load_rfs",
    "materialize",
    "open_array",
    "open_nwb",
    "open_rfs",
    "parse_json",
    "read_nwb",
    "session_traffic",
    "stack",
    "virtual_arrays_neo",
    "write_rfs",
]

if TYPE_CHECKING:
    from shadowzarr_catalog import generate_catalog
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_neo import generate_rfs_neo, virtual_arrays_neo
    from shadowzarr_nwb import open_nwb, read_nwb
    from shadowzarr_spec import (
        BuilderError,
        DatasetNotFoundError,
        GenExpressionError,
        NotVirtualizable,
        ReferenceFileSystem,
        ReferenceFormatError,
        RfsBuilder,
        ShadowzarrError,
        SourceChangedError,
        SourceError,
        SourceNotFoundError,
        UnsafePathError,
        UnsupportedFeatureError,
        VirtualArray,
        columns_selection,
        decode_attributes,
        parse_json,
        stack,
    )
    from shadowzarr_store import (
        LocalCache,
        RfsStore,
        load_rfs,
        materialize,
        open_rfs,
        session_traffic,
        write_rfs,
    )
    from shadowzarr_store.remote import AddressError, CachePolicy, OfflineError, RemoteArray
    from shadowzarr_tiff import generate_rfs_tiff

    from shadowzarr.remote_array import open_array


def __getattr__(name: str) -> Any:
    if name in EXPORTS:
        value = load_attribute(name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'shadowzarr' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})
