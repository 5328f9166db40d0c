"""What a source is, told from its first bytes: for addresses whose name has no suffix (DANDI's
``…/assets/<id>/download/``, object-store keys, ``blob`` URLs).

`read_head` is the one network read this needs, kept in one small function so the HTTP
transport can be swapped underneath it; `sniff_format` looks only at bytes.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from shadowzarr_spec import SourceError, SourceNotFoundError

if TYPE_CHECKING:
    from shadowzarr_store.remote.address import SourceFormat

__all__ = ["HDF5_SIGNATURE", "HEAD_BYTES", "TIFF_SIGNATURES", "read_head", "sniff_format"]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
HEAD_BYTES = 4096
"""Enough for an HDF5 superblock after a user block of up to 2 KiB (it starts at 0, 512, 1024,
2048…), a TIFF header and the start of a JSON reference file."""


def read_head(source: str, size: int = HEAD_BYTES, *, timeout: float = 60.0) -> bytes:
    """The first ``size`` bytes (fewer if the source is shorter) of a local file or URL.

    One ranged GET; a server that ignores ``Range`` is read no further than ``size`` bytes.
    Redirects (DANDI's download URLs) are followed; no credentials are sent.

    Raises
    ------
    SourceNotFoundError
        No such file, or HTTP 404.
    SourceError
        Any other failure, naming the address.
    """
    if "://" not in source or source.startswith("file://"):
        path = source.removeprefix("file://")
        try:
            with open(path, "rb") as stream:
                return stream.read(size)
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"no such source: {path}") from exc
        except OSError as exc:
            raise SourceError(f"{path}: cannot read its first bytes: {exc.strerror}") from exc
    request = urllib.request.Request(source, headers={"Range": f"bytes=0-{size - 1}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bytes(response.read(size))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise SourceNotFoundError(f"{source}: not found (HTTP 404)") from exc
        if exc.code == 416:  # an empty file
            return b""
        raise SourceError(f"{source}: reading its first bytes answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SourceError(f"{source}: cannot read its first bytes: {reason}") from exc


def sniff_format(head: bytes) -> SourceFormat | None:
    """``"hdf5"``, ``"tiff"`` or ``"references"`` (a JSON object) from a source's first bytes."""
    if head[:4] in TIFF_SIGNATURES:
        return "tiff"
    offset = 0
    while offset + len(HDF5_SIGNATURE) <= len(head):
        if head[offset : offset + len(HDF5_SIGNATURE)] == HDF5_SIGNATURE:
            return "hdf5"
        offset = 512 if offset == 0 else offset * 2
    if head.lstrip()[:1] == b"{":
        return "references"
    return None
