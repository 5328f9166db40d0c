"""Typed entries of a reference file system, so no reader asks "a list of one or three?".

A reference file is parsed once (see :mod:`shadowzarr_spec.parse`) into these frozen values;
URLs are stored with templates already expanded and interned, so a million references to one
file share one string.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.file_refs import FileRef, InlineRef, Ref, checked_file_ref

if TYPE_CHECKING:
    from shadowzarr_spec.gen import GenEntry

__all__ = [
    "MISSING_CHUNK",
    "FileRef",
    "IndexRef",
    "InlineRef",
    "Ref",
    "ReferenceFileSystem",
    "Selection",
    "SourceInfo",
    "UnsupportedDataset",
    "UnsupportedOutcome",
    "checked_file_ref",
]

MISSING_CHUNK = np.uint64(2**64 - 1)
"""Offset and size stored in a chunk manifest for a chunk that was never written."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which bytes of each fixed-size record belong to an array (interleaved channels, headers)."""

    record_size: int
    keep: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if not 0 < self.record_size < 2**63:  # a record is one axis of a numpy array
            raise ReferenceFormatError(
                f"selection record_size must be positive and below 2**63, got {self.record_size}"
            )
        if not self.keep:
            raise ReferenceFormatError("selection keeps no bytes")
        for start, stop in self.keep:
            if not 0 <= start < stop <= self.record_size:
                raise ReferenceFormatError(
                    f"selection range [{start}, {stop}) does not fit a record of "
                    f"{self.record_size} bytes"
                )

    @property
    def kept_size(self) -> int:
        """Bytes an array gets from each record."""
        return sum(stop - start for start, stop in self.keep)

    def apply(self, data: bytes | memoryview) -> bytes:
        """Keep the selected bytes of every whole record in ``data``, joined in order."""
        n_records = len(data) // self.record_size
        flat = np.frombuffer(data, dtype=np.uint8, count=n_records * self.record_size)
        records = flat.reshape(n_records, self.record_size)
        if len(self.keep) == 1:
            start, stop = self.keep[0]
            return records[:, start:stop].tobytes()
        return np.concatenate([records[:, a:b] for a, b in self.keep], axis=1).tobytes()

    def to_json(self) -> dict[str, object]:
        return {"record_size": self.record_size, "keep": [list(r) for r in self.keep]}


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What a source file looked like when the references were made, to detect changes.

    Remote sources have a size and an ETag. A local file has no ETag: its modification time
    (``mtime_ns``) and ``sample_hash`` (a hash of a few fixed samples of its bytes, see the
    README) identify it, so a rewrite of the same size is noticed.
    """

    size: int | None = None
    etag: str | None = None
    mtime_ns: int | None = None
    sample_hash: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for name in ("size", "etag", "mtime_ns", "sample_hash"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


type UnsupportedOutcome = Literal["omitted", "inlined"]


@dataclass(frozen=True, slots=True)
class UnsupportedDataset:
    """A dataset no reference can describe, and what the generator did with it.

    ``omitted``: it is not in the references at all; ``inlined``: its values (decoded by the
    native library) are held in the references instead of pointing into the source.
    """

    outcome: UnsupportedOutcome
    reason: str

    def __post_init__(self) -> None:
        if self.outcome not in ("omitted", "inlined"):
            raise ReferenceFormatError(
                f"unknown outcome {self.outcome!r} of an unsupported dataset"
            )

    def to_json(self) -> dict[str, str]:
        return {"outcome": self.outcome, "reason": self.reason}


@dataclass(frozen=True, slots=True, eq=False)
class IndexRef:
    """Where the chunks of one large array are: an index array stored at ``path`` or in memory.

    ``table`` (in memory) is a uint64 array shaped like the chunk grid plus a last axis of 2
    holding (offset, nbytes), :data:`MISSING_CHUNK` for chunks never written. ``path`` is relative
    to the folder holding refs.json (or an absolute URL). ``files``: some of the stored index
    array's own files (``zarr.json``, ``c/0/0/0``, ...) carried in refs.json itself, so a reader
    of remote references gets a small index in the same round trip as refs.json; the files at
    ``path`` hold the same bytes for readers that do not look here.
    """

    url: str
    path: str | None = None
    table: np.ndarray | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.path is None) == (self.table is None):
            raise ReferenceFormatError("a chunk manifest needs exactly one of a path or a table")
        if self.files and self.path is None:
            raise ReferenceFormatError("a chunk manifest carries files only beside its stored path")
        if self.table is not None and (
            self.table.dtype != np.uint64 or self.table.ndim < 1 or self.table.shape[-1] != 2
        ):
            raise ReferenceFormatError(
                f"a chunk manifest must be uint64 with a last axis of 2, got "
                f"{self.table.dtype} {self.table.shape}"
            )


@dataclass(slots=True)
class ReferenceFileSystem:
    """A parsed reference file system.

    ``base`` is the folder (local path or URL) holding refs.json, against which index paths and
    relative source paths are resolved; None for references built in memory. ``refs`` is a
    dict, or after parsing a file that lists many chunks a `~shadowzarr_spec.listed_refs.
    ListedRefs`, which holds them as columns and behaves as that dict would.
    """

    refs: MutableMapping[str, Ref] = field(default_factory=dict)
    gen: list[GenEntry] = field(default_factory=list)
    indexes: dict[str, IndexRef] = field(default_factory=dict)
    selections: dict[str, Selection] = field(default_factory=dict)
    sources: dict[str, SourceInfo] = field(default_factory=dict)
    version: int = 1
    base: str | None = None
    unsupported: dict[str, UnsupportedDataset] = field(default_factory=dict)
    """Datasets of the source that no reference describes (path → outcome and reason). Stored
    under the top-level key ``unsupported``, which Zarr readers never see."""

    @property
    def omitted(self) -> dict[str, str]:
        """Path → reason of every dataset left out of the references."""
        return {p: u.reason for p, u in self.unsupported.items() if u.outcome == "omitted"}

    @property
    def required_version(self) -> int:
        """2 when anything beyond plain kerchunk is used, else 1."""
        return 2 if (self.gen or self.indexes or self.selections) else 1
