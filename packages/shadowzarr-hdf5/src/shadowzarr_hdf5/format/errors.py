"""Errors of the HDF5 format reader, placed in the shared shadowzarr hierarchy.

::

    ShadowzarrError
    ├── UnsupportedFeatureError (ValueError)
    │   └── Hdf5FormatError                 bytes that are not the HDF5 structure expected there
    │       └── NotChunkedError             a compact, contiguous or virtual layout: no index
    └── SourceError (OSError)
        ├── SourceNotFoundError (FileNotFoundError)   HTTP 404 / no such file
        └── SourceChangedError                         the ETag or size changed between requests

Errors of requests (timeouts, framing, access) are the transport's:
``shadowzarr_store.transport.errors``. `NotNative` is not a user-facing error: the header
reader's signal that h5py must answer for a structure it does not read.
"""

from __future__ import annotations

import struct

from shadowzarr_spec.errors import (
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
    UnsupportedFeatureError,
)

__all__ = [
    "MALFORMED",
    "Hdf5FormatError",
    "NotChunkedError",
    "NotNative",
    "SourceChangedError",
    "SourceError",
    "SourceNotFoundError",
    "UnsupportedFeatureError",
]


class Hdf5FormatError(UnsupportedFeatureError):
    """The bytes at an address are not the HDF5 structure that should be there (or one we skip)."""


class NotChunkedError(Hdf5FormatError):
    """The dataset's layout is compact, contiguous or virtual: it has no chunk index."""


class NotNative(Exception):
    """Raised for a structure outside what the header reader handles; never user-facing."""


MALFORMED = (Hdf5FormatError, IndexError, ValueError, struct.error)
"""What parsing bytes that are not what the reader expects raises: left to h5py to judge."""
