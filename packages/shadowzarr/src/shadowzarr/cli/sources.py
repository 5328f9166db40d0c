"""Which files to generate references for, and what format each one is in: the store's
`detect_format` rules (shared with the catalog: signatures, suffixes, netCDF-3), with the
command's own refusals on top (a truncated HDF5 file, text, a raw recording described by the
user)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from shadowzarr_store.remote.sniff import NETCDF3_SIGNATURES, SOURCE_SUFFIXES, named_format
from shadowzarr_store.transport import (
    RangeNotSatisfiable,
    Transport,
    TransportOptions,
    is_local,
    redact,
    run_blocking,
    token_header,
    transport_for,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["command_format", "expand_sources"]

DANDISET_MARKER = "/api/dandisets/"


def _through_transport[T](options: TransportOptions, use: Callable[[Transport], Awaitable[T]]) -> T:
    async def run() -> T:
        transport = transport_for(options)
        try:
            return await use(transport)
        finally:
            await transport.aclose()

    return run_blocking(run())


def command_format(
    source: str, options: TransportOptions | None = None, *, raw_layout: bool = False
) -> str:
    """``hdf5``, ``netcdf3``, ``tiff``, ``neo`` (a directory, or a file a NEO reader takes by
    its name) or, with ``raw_layout`` (the user described a raw binary recording),
    ``neo:RawBinarySignalRawIO`` for a file of no known format; from the first bytes, read as
    the generators would (their headers, their ``allowed_urls``).

    Refused, naming the source: a file whose name says HDF5 or TIFF but whose bytes do not, an
    HDF5 file shorter than its superblock records (a partial download), and a file of no format
    shadowzarr generates (text, or bytes no reader takes)."""
    from shadowzarr_store.remote.errors import SourceFormatError
    from shadowzarr_store.remote.sniff import HEAD_BYTES, sniff_format

    from shadowzarr.cli.head_checks import hdf5_recorded_size, looks_like_text

    if is_local(source) and Path(source).is_dir():
        return "neo"
    head, size = _head(source, HEAD_BYTES, options or TransportOptions())
    if head[:4] in NETCDF3_SIGNATURES:  # the HDF5 package's generator reads netCDF-3 too
        return "netcdf3"
    kind = sniff_format(head)
    shown = redact(source)
    if kind == "hdf5":
        recorded = hdf5_recorded_size(head)
        if recorded is not None and size is not None and size < recorded:
            raise SourceFormatError(
                f"{shown} is {size:,} bytes but its HDF5 superblock says the file has "
                f"{recorded:,}: truncated or partial download?"
            )
    if kind in ("hdf5", "tiff"):
        return kind
    named = named_format(source)
    if named is not None:
        raise SourceFormatError(
            f"{shown} is not an {named.upper()} file: its first bytes are not the "
            f"{named.upper()} signature (a text or HTML page, or a partial download?)"
        )
    if raw_layout:
        return "neo:RawBinarySignalRawIO"
    neo_reads = _neo_reads(source)
    if neo_reads:
        return "neo"
    if kind == "references":
        looks = "shadowzarr references: read them with shadowzarr info or get"
    elif looks_like_text(head):
        looks = "text"
    else:
        looks = "an unknown binary format"
    hint = "" if neo_reads is not None else "; NEO recordings need shadowzarr[neo]"
    raise SourceFormatError(
        f"not a format shadowzarr generates: {shown} (looks like {looks}). It reads HDF5/NWB, "
        "TIFF and NEO recordings; a raw binary recording needs --dtype, --channels and "
        f"--sampling-rate{hint}"
    )


def _head(source: str, size: int, options: TransportOptions) -> tuple[bytes, int | None]:
    """The first ``size`` bytes of ``source`` and the size of the whole file (None: unknown)."""

    async def read(transport: Transport) -> tuple[bytes, int | None]:
        try:
            answer = await transport.read(source, 0, size)
        except RangeNotSatisfiable:
            return b"", 0  # an empty file
        return bytes(answer.data), answer.total

    return _through_transport(options, read)


def _neo_reads(source: str) -> bool | None:
    """Whether a NEO raw reader takes ``source`` by its suffix (None: NEO is not installed).
    A name without a suffix is taken by none: NEO would offer AxoGraph's reader for it."""
    try:
        import neo.rawio
    except ImportError:
        return None
    suffix = Path(source.split("?", 1)[0].rstrip("/")).suffix
    return bool(suffix) and neo.rawio.get_rawio(source) is not None


def expand_sources(source: str, options: TransportOptions | None = None) -> list[str]:
    """One source, the files of a folder, the lines of an ``@list`` file, or a dandiset's assets."""
    if source.startswith("@"):
        lines = Path(source[1:]).read_text(encoding="utf-8").splitlines()
        return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    if DANDISET_MARKER in source and "/assets/" not in source.split(DANDISET_MARKER, 1)[1]:
        return _dandiset_assets(source, options or TransportOptions())
    path = Path(source)
    if is_local(source) and path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in SOURCE_SUFFIXES)
        return [str(p) for p in files] or [source]
    return [source]


def _dandiset_assets(url: str, options: TransportOptions) -> list[str]:
    """Download URLs of every asset of a dandiset version (follows the API's pagination); the
    API key goes only to the DANDI API host it belongs to, and never over plain http."""
    api = url.split(DANDISET_MARKER, 1)[0]
    variable = options.dandi_api_hosts.get(urlsplit(api).netloc)
    token = token_header(api, variable) if variable else {}
    listing_options = _with_headers(options, {f"{api}/api/": token}) if token else options

    async def pages(transport: Transport) -> list[str]:
        urls: list[str] = []
        listing: str | None = url.rstrip("/") + "/assets/?page_size=1000"
        while listing:
            page = json.loads(await transport.read_whole(listing))
            for asset in page.get("results", []):
                urls.append(f"{api}/api/assets/{asset['asset_id']}/download/")
            listing = page.get("next")
        return urls

    return _through_transport(listing_options, pages)


def _with_headers(options: TransportOptions, extra: dict[str, dict[str, str]]) -> TransportOptions:
    rules = {rule.prefix: dict(rule.headers) for rule in options.header_rules.rules}
    return dataclasses.replace(options, headers={**rules, **extra})
