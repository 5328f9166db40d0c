"""What a source is, told from its first bytes: for addresses whose name has no suffix (DANDI's
``…/assets/<id>/download/``, object-store keys, ``blob`` URLs), and for the CLI's and
`read_nwb`'s choice of generator.

`read_head` is the one read this needs, sent through the transport with the caller's access
options (headers, ``allowed_urls``, ``storage_options``); `sniff_format` looks only at bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowzarr_store.transport import (
    RangeNotSatisfiable,
    Transport,
    TransportOptions,
    redact,
    run_blocking,
)
from shadowzarr_store.transport.status import REDIRECTS

if TYPE_CHECKING:
    from shadowzarr_store.remote.address import SourceFormat

__all__ = [
    "HDF5_SIGNATURE",
    "HEAD_BYTES",
    "TIFF_SIGNATURES",
    "is_folder_url",
    "read_head",
    "sniff_format",
]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
HEAD_BYTES = 4096
"""Enough for an HDF5 superblock after a user block of up to 2 KiB (it starts at 0, 512, 1024,
2048…), a TIFF header and the start of a JSON reference file."""


def read_head(
    source: str, size: int = HEAD_BYTES, *, options: TransportOptions | None = None
) -> bytes:
    """The first ``size`` bytes (fewer if the source is shorter) of a local file, URL or object.

    One range request through the transport, as the generators would send it (``options``:
    their headers, ``allowed_urls``, ``storage_options``; DANDI download URLs resolved).

    Raises
    ------
    SourceNotFoundError
        No such file, or HTTP 404.
    SourceError
        Any other failure (a refused URL, a server that ignores ``Range``), naming the address
        with any credentials redacted.
    """

    async def head() -> bytes:
        transport = Transport(options or TransportOptions())
        try:
            return (await transport.read(source, 0, size)).data
        except RangeNotSatisfiable:
            return b""  # an empty file
        finally:
            await transport.aclose()

    return run_blocking(head())


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


def is_folder_url(url: str, *, options: TransportOptions | None = None) -> bool:
    """Whether an http(s) ``url`` is a folder: its server redirects it to the same URL with a
    ``/`` (what nginx and Apache answer for a directory). One GET that follows no redirect;
    asked only after the URL's head could not be read as a file (a reference folder answers
    with a listing, a 403 or the redirect, never with a file's bytes)."""
    if not url.startswith(("http://", "https://")) or url.endswith("/") or "?" in url:
        return False
    settings = options or TransportOptions()

    async def ask() -> bool:
        transport = Transport(settings)
        try:
            transport.access.check(url)
            headers = settings.header_rules.for_url(url)
            status, location, _ = await transport.http.ask_redirect(url, headers, redact(url))
        finally:
            await transport.aclose()
        return status in REDIRECTS and location == url + "/"

    return run_blocking(ask())
