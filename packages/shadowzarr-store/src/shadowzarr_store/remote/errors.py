"""Errors of one-call remote arrays.

ShadowzarrError
└── SourceError (OSError)
    └── OfflineError: a read needed the network while the array was offline
ShadowzarrError
└── ValueError
    └── AddressError: a source string that names no array
        └── SourceFormatError: a source whose bytes are not of the format it claims
"""

from __future__ import annotations

from shadowzarr_spec.errors import ShadowzarrError, SourceError

__all__ = ["AddressError", "OfflineError", "SourceFormatError"]


class OfflineError(SourceError):
    """A read needed bytes that are not cached while the array is offline."""


class AddressError(ShadowzarrError, ValueError):
    """A source string (URL, path, ``::`` form) that does not name one array."""


class SourceFormatError(AddressError):
    """A source whose first bytes are not those of the format its name (or the caller) says,
    or of any format read here (named in the message)."""
