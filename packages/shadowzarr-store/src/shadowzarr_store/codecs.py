"""HDF5's Fletcher-32 checksums, verified with errors that name the chunk and its source.

zarr-python ships the ``numcodecs.*`` codecs HDF5 needs (``numcodecs.fletcher32`` verifies its
checksum). imagecodecs' codecs (``imagecodecs_*``) come from the imagecodecs-zarr entry points;
an array whose codec is missing is refused at its first read (`missing_codecs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numcodecs
from shadowzarr_spec import ChunkDecodeError

if TYPE_CHECKING:
    from shadowzarr_spec import ArrayInfo

__all__ = ["ends_with_fletcher32", "verify_fletcher32"]

_FLETCHER32 = numcodecs.Fletcher32()


def ends_with_fletcher32(info: ArrayInfo) -> bool:
    """Whether a stored chunk of this array ends with an HDF5 Fletcher-32 checksum."""
    return bool(info.codecs) and info.codecs[-1].get("name") == "numcodecs.fletcher32"


def verify_fletcher32(data: bytes | memoryview, key: str, url: str) -> None:
    """Raise `ChunkDecodeError` naming the chunk and its source if its checksum does not match.

    zarr verifies the checksum too, but its error names neither the chunk nor the file.
    """
    try:
        _FLETCHER32.decode(data)
    except RuntimeError as exc:
        raise ChunkDecodeError(f"{url}: chunk {key!r} failed its fletcher32 checksum") from exc
