"""Errors of one-call remote arrays.

ShadowzarrError
└── SourceError (OSError)
    └── OfflineError: a read needed the network while the array was offline
ShadowzarrError
└── ValueError
    └── AddressError: a source string that names no array
"""

from __future__ import annotations

from shadowzarr_spec.errors import ShadowzarrError, SourceError

__all__ = ["AddressError", "OfflineError"]


class OfflineError(SourceError):
    """A read needed bytes that are not cached while the array is offline."""


class AddressError(ShadowzarrError, ValueError):
    """A source string (URL, path, ``::`` form) that does not name one array."""
