"""The one signal of this package: a structure it does not read, so h5py must."""

from __future__ import annotations

__all__ = ["NotNative"]


class NotNative(Exception):
    """Raised for a structure outside what the header reader handles; never user-facing."""
