"""The two values a reference key holds: bytes inline, or a byte range of a file.

Apart from :mod:`shadowzarr_spec.model` (which re-exports them) so that :mod:`shadowzarr_spec.gen`,
which renders gen entries into `FileRef` values, needs nothing of the model that holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = ["FileRef", "InlineRef", "Ref", "checked_file_ref"]


@dataclass(frozen=True, slots=True)
class InlineRef:
    """Bytes held in the reference file itself (metadata, small datasets, strings)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class FileRef:
    """``size`` bytes at ``offset`` of ``url``; both None means the whole file."""

    url: str
    offset: int | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        if (self.offset is None) != (self.size is None):
            raise ReferenceFormatError(f"reference to {self.url!r} needs both offset and size")
        if self.offset is not None and (self.offset < 0 or self.size < 0):  # type: ignore[operator]
            raise ReferenceFormatError(
                f"reference to {self.url!r} has a negative offset or size "
                f"({self.offset}, {self.size})"
            )


def checked_file_ref(url: str, offset: int, size: int) -> FileRef:
    """A `FileRef` of an offset and size the caller has already checked (non-negative, both
    given), as whole columns: the dataclass constructor, with its check, costs twice as much,
    which shows when a generator lists 100,000s of chunks."""
    ref = _new_object(FileRef)
    _set_url(ref, url)
    _set_offset(ref, offset)
    _set_size(ref, size)
    return ref


_new_object = object.__new__
# The slots' own descriptors: they store a value without the frozen class's __setattr__.
_slots: dict[str, Any] = dict(vars(FileRef))
_set_url = _slots["url"].__set__
_set_offset = _slots["offset"].__set__
_set_size = _slots["size"].__set__

type Ref = InlineRef | FileRef
