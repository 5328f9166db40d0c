"""Which generator reads an asset: HDF5 (NWB, MATLAB v7.3) and TIFF told from the first bytes by
the store's `detect_format` (the same choice ``shadowzarr generate`` makes), and for anything
else a NEO reader, when one recognises a local file. What no generator reads is skipped, with
the reason, rather than failed."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowzarr_spec import ReferenceFileSystem
from shadowzarr_store.remote.errors import SourceFormatError
from shadowzarr_store.remote.sniff import detect_format, named_format
from shadowzarr_store.transport import TransportOptions, is_local, local_path

__all__ = ["Skipped", "check_generator_options", "generate", "pick_format"]


class Skipped(Exception):
    """No generator reads this asset (the message says why): an outcome, listed as skipped."""


@dataclass(frozen=True, slots=True)
class Access:
    """The access options every request of one asset's generation carries."""

    headers: Mapping[str, Mapping[str, str]] | None = None
    allowed_urls: tuple[str, ...] | None = None
    storage_options: Mapping[str, Any] | None = None

    def kwargs(self) -> dict[str, Any]:
        found = {
            "headers": self.headers,
            "allowed_urls": self.allowed_urls,
            "storage_options": self.storage_options,
        }
        return {k: v for k, v in found.items() if v is not None}

    def transport(self) -> TransportOptions:
        return TransportOptions(**self.kwargs())


def pick_format(url: str, access: Access, path: str | None = None) -> str:
    """``hdf5``, ``netcdf3``, ``tiff`` or ``neo:<RawIO class>``; raises `Skipped` for anything
    else, and `SourceFormatError` when the asset's ``path`` says HDF5 or TIFF but its bytes do
    not (a DANDI download URL has no suffix to tell it).

    A path named HDF5 (``.nwb``, ``.h5``…) goes to the HDF5 generator without a probe: the
    bulk of an archive then costs no request more than `generate_rfs` itself, and bytes that
    are not HDF5 fail there with `SourceFormatError` all the same (a netCDF-3 file named
    ``.nc`` too: the HDF5 generator reads both)."""
    if named_format(path if path is not None else url) == "hdf5":
        return "hdf5"
    kind = detect_format(url, access.transport())
    if kind in ("hdf5", "netcdf3", "tiff"):
        return kind
    named = named_format(path) if path is not None else None
    if named is not None:
        raise SourceFormatError(
            f"{path}: not an {named.upper()} file, its first bytes are not the {named.upper()} "
            "signature (empty, a text or HTML page, or a partial upload?)"
        )
    if not is_local(url):
        raise Skipped("not HDF5 or TIFF (NEO recordings are read from local files only)")
    try:
        import neo.rawio
    except ImportError:
        raise Skipped(
            "not HDF5 or TIFF; recordings NEO reads need pip install 'shadowzarr-catalog[neo]'"
        ) from None
    reader = neo.rawio.get_rawio(local_path(url))
    if reader is None:
        raise Skipped("not HDF5 or TIFF, and no NEO reader recognises it")
    if reader is neo.rawio.RawBinarySignalRawIO:
        raise Skipped("a raw binary file, whose layout (dtype, channels, rate) it does not record")
    return f"neo:{reader.__name__}"


def generate(
    url: str, kind: str, access: Access, options: Mapping[str, Any]
) -> ReferenceFileSystem:
    """References of one asset through the generator of ``kind``."""
    if kind in ("hdf5", "netcdf3"):  # one generator reads both
        from shadowzarr_hdf5 import generate_rfs

        return generate_rfs(url, progress=False, **access.kwargs(), **options)
    if kind == "tiff":
        try:
            from shadowzarr_tiff import generate_rfs_tiff
        except ModuleNotFoundError as exc:
            raise Skipped("a TIFF file; TIFF needs pip install 'shadowzarr-catalog[tiff]'") from exc
        return generate_rfs_tiff(url, **access.kwargs(), **_accepted(generate_rfs_tiff, options))
    if kind.startswith("neo:"):
        try:
            import neo.rawio
            from shadowzarr_neo import generate_rfs_neo
        except ModuleNotFoundError as exc:
            raise Skipped("NEO recordings need pip install 'shadowzarr-catalog[neo]'") from exc
        path = local_path(url)
        reader = getattr(neo.rawio, kind.partition(":")[2])(filename=str(Path(path)))
        reader.parse_header()
        return generate_rfs_neo(reader)
    raise ValueError(f"unknown format {kind!r}")


def check_generator_options(options: Mapping[str, Any]) -> None:
    """Refuse, before any asset, an option no generator takes (a misspelt option would
    otherwise fail every asset one by one)."""
    from shadowzarr_hdf5 import generate_rfs

    known = set(inspect.signature(generate_rfs).parameters)
    reserved = {"url_or_path", "local_hdf5_path", "progress", "headers", "allowed_urls"}
    unknown = sorted(set(options) - (known - reserved - {"storage_options"}))
    if unknown:
        raise TypeError(
            f"generate_catalog got options no generator takes: {', '.join(unknown)} "
            f"(HDF5's: {', '.join(sorted(known - reserved - {'storage_options'}))})"
        )


def _accepted(function: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options ``function`` takes (HDF5's options are the catalog's; TIFF takes some)."""
    names = set(inspect.signature(function).parameters)
    return {k: v for k, v in options.items() if k in names}
