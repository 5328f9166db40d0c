"""The one error hierarchy of shadowzarr, shared by every package.

::

    ShadowzarrError
    ├── ReferenceFormatError (ValueError)       a reference file or rfs dict is malformed
    │   ├── GenExpressionError                  a gen template is not allowed arithmetic
    │   └── UnsafePathError                     a path escapes where it may point
    ├── BuilderError (ValueError)               RfsBuilder holds something invalid (names the array)
    ├── UnsupportedFeatureError (ValueError)    a generator refuses a feature (names dataset, reason)
    │   └── NotVirtualizable                    data that cannot be referenced without copying
    └── SourceError (OSError)                   reading a source failed (names source and range)
        ├── SourceNotFoundError (FileNotFoundError)
        ├── SourceChangedError                  size or ETag differs from the one recorded
        ├── SourceAccessError (PermissionError) a URL or path the settings do not allow
        ├── DatasetNotFoundError (LookupError)  the source holds no dataset/array of that name
        └── ChunkDecodeError                    a chunk failed its checksum or decoded too large

Leaves also inherit a builtin so that ``except ValueError`` / ``except OSError`` keep working.

``UnsupportedDatasetWarning`` (a ``UserWarning``) says that a generator left datasets out or
inlined them instead of refusing the whole file; the references record which and why.
"""

from __future__ import annotations

__all__ = [
    "BuilderError",
    "ChunkDecodeError",
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


class ShadowzarrError(Exception):
    """Base of every error shadowzarr raises on purpose."""


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
