"""What a source is, told from its first bytes: for addresses whose name has no suffix (DANDI's
``…/assets/<id>/download/``, object-store keys, ``blob`` URLs), and for the CLI's and
`read_nwb`'s choice of generator.

`read_head` is the one read this needs, sent through the transport with the caller's access
options (headers, ``allowed_urls``, ``storage_options``); `sniff_format` looks only at bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from shadowzarr_store.remote.errors import SourceFormatError
from shadowzarr_store.transport import (
    RangeNotSatisfiable,
    TransportOptions,
    is_local,
    redact,
    run_blocking,
    transport_for,
)
from shadowzarr_store.transport.status import REDIRECTS

if TYPE_CHECKING:
    from shadowzarr_store.remote.address import SourceFormat

__all__ = [
    "HDF5_SIGNATURE",
    "HDF5_SUFFIXES",
    "HEAD_BYTES",
    "NETCDF3_SIGNATURES",
    "SOURCE_SUFFIXES",
    "TIFF_SIGNATURES",
    "TIFF_SUFFIXES",
    "detect_format",
    "is_folder_url",
    "named_format",
    "read_head",
    "sniff_format",
]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
NETCDF3_SIGNATURES = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
"""netCDF-3 classic, 64-bit offset and 64-bit data (CDF-5): `sniff_format` does not name them
(no remote array reads them); `detect_format` sends them to the HDF5 package's generator."""
HDF5_SUFFIXES = frozenset({".h5", ".hdf5", ".nwb", ".mat", ".he5", ".nc", ".hdf"})
TIFF_SUFFIXES = frozenset({".tif", ".tiff", ".btf"})
SOURCE_SUFFIXES = HDF5_SUFFIXES | TIFF_SUFFIXES
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
        transport = transport_for(options)
        try:
            return bytes((await transport.read(source, 0, size)).data)
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


def detect_format(source: str, options: TransportOptions | None = None) -> str:
    """``hdf5``, ``netcdf3``, ``tiff`` or ``neo`` (a directory, or a file no other generator
    reads), from the first bytes (read as the generators would: their headers, their
    ``allowed_urls``); a file whose name says HDF5 or TIFF but whose bytes do not is refused
    (`SourceFormatError`).

    The one choice of generator, for the ``shadowzarr generate`` command and the catalog."""
    if is_local(source) and Path(source).is_dir():
        return "neo"
    head = read_head(source, options=options)
    if head[:4] in NETCDF3_SIGNATURES:
        return "netcdf3"
    kind = sniff_format(head)
    if kind in ("hdf5", "tiff"):
        return kind
    named = named_format(source)
    if named is not None:
        raise SourceFormatError(
            f"{redact(source)} is not an {named.upper()} file: its first bytes are not the "
            f"{named.upper()} signature (a text or HTML page, or a partial download?)"
        )
    return "neo"


def named_format(source: str) -> str | None:
    """``hdf5`` or ``tiff`` when the name's suffix says so (a query string aside), else None."""
    suffix = Path(source.split("?", 1)[0].rstrip("/")).suffix.lower()
    if suffix in HDF5_SUFFIXES:
        return "hdf5"
    if suffix in TIFF_SUFFIXES:
        return "tiff"
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
        transport = transport_for(settings)
        try:
            transport.access.check(url)
            headers = settings.header_rules.for_url(url)
            status, location, _ = await transport.http.ask_redirect(url, headers, redact(url))
        finally:
            await transport.aclose()
        return status in REDIRECTS and location == url + "/"

    return run_blocking(ask())
