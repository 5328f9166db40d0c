"""Errors of the remote HDF5 layer, placed in the shared shadowzarr hierarchy.

::

    ShadowzarrError
    ├── UnsupportedFeatureError (ValueError)
    │   └── Hdf5FormatError                 bytes that are not the HDF5 structure expected there
    └── SourceError (OSError)
        ├── SourceNotFoundError (FileNotFoundError)   HTTP 404 / no such file
        └── SourceChangedError                         the ETag or size changed between requests

Errors of requests (timeouts, framing, access) are the transport's:
``shadowzarr_store.transport.errors``.
"""

from __future__ import annotations

from shadowzarr_spec.errors import (
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
    UnsupportedFeatureError,
)

__all__ = [
    "Hdf5FormatError",
    "NotChunkedError",
    "SourceChangedError",
    "SourceError",
    "SourceNotFoundError",
    "UnsupportedFeatureError",
]


class Hdf5FormatError(UnsupportedFeatureError):
    """The bytes at an address are not the HDF5 structure that should be there (or one we skip)."""


class NotChunkedError(Hdf5FormatError):
    """The dataset's layout is compact, contiguous or virtual: it has no chunk index."""
