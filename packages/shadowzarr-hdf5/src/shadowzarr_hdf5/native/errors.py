"""The one signal of this package: a structure it does not read, so h5py must."""

from __future__ import annotations

import struct

from ..remote.errors import Hdf5FormatError

__all__ = ["MALFORMED", "NotNative"]


class NotNative(Exception):
    """Raised for a structure outside what the header reader handles; never user-facing."""


MALFORMED = (Hdf5FormatError, IndexError, ValueError, struct.error)
"""What parsing bytes that are not what the reader expects raises: left to h5py to judge."""
