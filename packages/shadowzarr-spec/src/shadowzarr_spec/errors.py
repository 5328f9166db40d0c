"""The one error hierarchy of shadowzarr, shared by every package.

::

    ShadowzarrError
    ├── ReferenceFormatError (ValueError)       a reference file or rfs dict is malformed
    │   ├── GenExpressionError                  a gen template is not allowed arithmetic
    │   └── UnsafePathError                     a path escapes where it may point
    ├── BuilderError (ValueError)               RfsBuilder holds something invalid (names the array)
    ├── UnsupportedFeatureError (ValueError)    a feature refused (names dataset or array, reason)
    │   └── NotVirtualizable                    data that cannot be referenced without copying
    └── SourceError (OSError)                   reading a source failed (names source and range)
        ├── SourceNotFoundError (FileNotFoundError)
        ├── SourceChangedError                  size or ETag differs from the one recorded
        ├── SourceAccessError (PermissionError) a URL or path the settings do not allow
        ├── DatasetNotFoundError (LookupError)  the source holds no dataset/array of that name
        └── ChunkDecodeError                    a chunk damaged, too large, or failing a check

Leaves also inherit a builtin so that ``except ValueError`` / ``except OSError`` keep working.
Every error is chained to its cause (``raise ... from exc``) and its message names the key, array
or URL and what went wrong. A message never carries a credential: the user name and password of
any URL in it and credential-like query values (signatures, tokens, keys) are replaced by
``***`` when the error is made, whatever code made it.

``UnsupportedDatasetWarning`` (a ``UserWarning``) says that a generator left datasets out or
inlined them instead of refusing the whole file; the references record which and why.
``ConventionTypeWarning`` (a ``UserWarning``) names datasets stored under a shadowzarr type
convention (``_STRUCTURED_DTYPE``, ``_VLEN_DTYPE``): a plain Zarr reader sees their bytes.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "BuilderError",
    "ChunkDecodeError",
    "ConventionTypeWarning",
    "DatasetNotFoundError",
    "GenExpressionError",
    "NotVirtualizable",
    "ReferenceFormatError",
    "ShadowzarrError",
    "SourceAccessError",
    "SourceChangedError",
    "SourceError",
    "SourceNotFoundError",
    "UnsafePathError",
    "UnsupportedDatasetWarning",
    "UnsupportedFeatureError",
]


_USERINFO: Final = re.compile(r"(?<=://)[^/\s@'\"<>]*@")
_SECRET_QUERY: Final = re.compile(
    r"(?i)([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|sig|token|"
    r"access_token|api_key|apikey|key|password|secret)=)[^&\s'\"#]*"
)


def redact_credentials(text: str) -> str:
    """``text`` with URL user names and passwords and credential-like query values hidden."""
    return _SECRET_QUERY.sub(r"\1***", _USERINFO.sub("***@", text))


class ShadowzarrError(Exception):
    """Base of every error shadowzarr raises on purpose (its message redacted of credentials)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact_credentials(a) if isinstance(a, str) else a for a in args))


class ReferenceFormatError(ShadowzarrError, ValueError):
    """A reference file system does not follow the format."""


class GenExpressionError(ReferenceFormatError):
    """A gen template holds something other than integer arithmetic over its dimensions."""


class UnsafePathError(ReferenceFormatError):
    """A key or index path would escape the reference directory."""


class BuilderError(ShadowzarrError, ValueError):
    """RfsBuilder was given something that would not read back correctly."""


class UnsupportedFeatureError(ShadowzarrError, ValueError):
    """A source holds a feature that cannot be referenced exactly."""


class NotVirtualizable(UnsupportedFeatureError):
    """Data whose values differ from the stored bytes, so references cannot express it."""


class SourceError(ShadowzarrError, OSError):
    """Reading bytes from a source file failed."""


class SourceNotFoundError(SourceError, FileNotFoundError):
    """The source file or URL does not exist (404, or no such file)."""


class SourceChangedError(SourceError):
    """The source no longer matches the size or ETag recorded when the references were made."""


class DatasetNotFoundError(SourceError, LookupError):
    """The source (named in the message) holds no dataset, array, series or level of the name
    asked for (also named)."""


class SourceAccessError(SourceError, PermissionError):
    """The settings do not allow reading from this location."""


class ChunkDecodeError(SourceError):
    """A chunk's bytes are corrupt: a checksum mismatch, or more data than the chunk can hold."""


class UnsupportedDatasetWarning(UserWarning):
    """Some datasets could not be referenced and were omitted (or inlined) instead."""


class ConventionTypeWarning(UserWarning):
    """Some datasets have a type Zarr v3 cannot name (compounds with array fields, sequences of
    numbers); they are stored under a documented convention, which a plain Zarr reader sees as
    bytes and ``shadowzarr_spec.hdf5_types.read_native`` decodes."""
