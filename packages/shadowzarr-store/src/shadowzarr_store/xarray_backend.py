"""xarray engine ``"shadowzarr"``: ``xr.open_dataset("session.shadowzarr")`` reads references.

The engine opens an `RfsStore` and hands it to xarray's own Zarr backend (``zarr_format=3``, no
consolidated metadata), so decoding, coordinates, ``chunks=`` and ``open_mfdataset`` behave
exactly as for any Zarr store. `RfsStore` options go in ``store_options={…}`` (or
``backend_kwargs={"store_options": {…}}``); ``storage_options={…}`` and ``proxy=`` are taken
directly too, as fsspec-based engines take them.

This is the only module of the package that imports xarray; the entry point in
``pyproject.toml`` points here, and ``pip install shadowzarr-store[xarray]`` installs xarray
(without it, importing this module raises an ImportError that says so).

Why kerchunk's engine is told to step aside: xarray asks third-party engines in alphabetical
order whether they can open a path, so ``kerchunk`` is asked before ``shadowzarr``. Its answer
is "every ``.json``", and it then opens the file as Zarr v2, which fails on our v3 keys with a
misleading ``GroupNotFoundError``. When this module is loaded (xarray loads every engine before
guessing), kerchunk's ``guess_can_open`` is wrapped to decline exactly the files this engine
claims: JSON references whose keys are Zarr v3, which kerchunk's engine cannot open. Its answer
for every other file is unchanged.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from shadowzarr_spec import ReferenceFileSystem

try:
    from xarray.backends import BackendEntrypoint
    from xarray.backends.zarr import ZarrBackendEntrypoint
except ImportError as exc:  # xarray loads this module only where it is installed
    raise ImportError(
        "shadowzarr_store.xarray_backend is the xarray engine 'shadowzarr', which needs xarray: "
        "pip install 'shadowzarr-store[xarray]'"
    ) from exc

from shadowzarr_store.open_rfs import open_rfs_store
from shadowzarr_store.recognise import is_v3_reference_path
from shadowzarr_store.rfs_store import RfsStore

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["ShadowzarrBackendEntrypoint"]

type Source = str | os.PathLike[str] | ReferenceFileSystem | dict[str, Any] | RfsStore


class ShadowzarrBackendEntrypoint(BackendEntrypoint):
    """Open reference file systems (``.shadowzarr`` directories, JSON references with Zarr v3
    keys, URLs to either, `ReferenceFileSystem`, dicts, `RfsStore`) with xarray."""

    description = "Open shadowzarr reference file systems (kerchunk JSON with Zarr v3 keys)"
    url = "https://github.com/shadowzarr/shadowzarr"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "drop_variables",
        "use_cftime",
        "decode_timedelta",
        "group",
        "store_options",
        "storage_options",
        "proxy",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, RfsStore | ReferenceFileSystem):
            return True
        if isinstance(filename_or_obj, str | os.PathLike):
            return is_v3_reference_path(filename_or_obj)
        return False

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Source,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        store_options: Mapping[str, Any] | None = None,
        storage_options: Any = None,
        proxy: str | bool | None = None,
    ) -> xr.Dataset:
        return ZarrBackendEntrypoint().open_dataset(
            _store(filename_or_obj, store_options, storage_options, proxy),
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
            group=group,
            consolidated=False,
            zarr_format=3,
        )

    def open_datatree(  # type: ignore[override]
        self,
        filename_or_obj: Source,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        store_options: Mapping[str, Any] | None = None,
        storage_options: Any = None,
        proxy: str | bool | None = None,
    ) -> xr.DataTree:
        return ZarrBackendEntrypoint().open_datatree(
            _store(filename_or_obj, store_options, storage_options, proxy),
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
            group=group,
            consolidated=False,
            zarr_format=3,
        )

    def open_groups_as_dict(  # type: ignore[override]
        self,
        filename_or_obj: Source,
        *,
        group: str | None = None,
        store_options: Mapping[str, Any] | None = None,
        storage_options: Any = None,
        proxy: str | bool | None = None,
        **decoders: Any,
    ) -> dict[str, xr.Dataset]:
        return ZarrBackendEntrypoint().open_groups_as_dict(
            _store(filename_or_obj, store_options, storage_options, proxy),
            group=group,
            consolidated=False,
            zarr_format=3,
            **decoders,
        )


def _store(
    source: Source,
    store_options: Mapping[str, Any] | None,
    storage_options: Any = None,
    proxy: str | bool | None = None,
) -> Any:
    """The `RfsStore` to hand to xarray's Zarr backend (typed Any: xarray's annotations do not
    name zarr stores, which it accepts). ``storage_options`` and ``proxy`` may be given as
    the engine's own arguments, as other engines take them, or inside ``store_options``."""
    options = dict(store_options or {})
    for name, value in (("storage_options", storage_options), ("proxy", proxy)):
        if value is None:
            continue
        if name in options:
            raise ValueError(f"{name} given twice: as an argument and in store_options")
        options[name] = value
    if isinstance(source, RfsStore):
        if options:
            raise ValueError("store_options go with a path or references, not an open RfsStore")
        return source
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    return open_rfs_store(source, **options)


def _decline_in_kerchunk() -> None:
    """Make kerchunk's engine (if installed) decline JSON references with Zarr v3 keys."""
    if importlib.util.find_spec("kerchunk") is None:
        return
    try:
        module = importlib.import_module("kerchunk.xarray_backend")
    except ImportError:  # a kerchunk without an xarray engine: nothing to step aside
        return
    backend = getattr(module, "KerchunkBackend", None)
    original = getattr(backend, "guess_can_open", None)
    if backend is None or original is None or getattr(original, "_shadowzarr_declines", False):
        return

    def guess_can_open(self: Any, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, str | os.PathLike) and is_v3_reference_path(filename_or_obj):
            return False
        return bool(original(self, filename_or_obj))

    guess_can_open._shadowzarr_declines = True  # type: ignore[attr-defined]
    backend.guess_can_open = guess_can_open


_decline_in_kerchunk()
