"""xarray engine ``"shadowzarr"``: ``xr.open_dataset("session.shadowzarr")`` reads references.

The engine opens an `RfsStore` and hands it to xarray's own Zarr backend (``zarr_format=3``, no
consolidated metadata), so decoding, coordinates, ``chunks=`` and ``open_mfdataset`` behave
exactly as for any Zarr store. `RfsStore` options go in ``store_options={…}`` (or
``backend_kwargs={"store_options": {…}}``); ``storage_options={…}`` and ``proxy=`` are taken
directly too, as fsspec-based engines take them. Two differences: ``chunks={}`` gives a dask
chunk per shard of the store's grouped view (`preferred_chunks`), not one per stored chunk (the
sharded view's note ``shadowzarr_view`` is not shown as an attribute); attributes are
decoded by the attribute conventions first and shaped as netCDF readers give them
(:mod:`shadowzarr_store.xarray_attributes`), so a float32 ``scale_factor`` decodes its variable
as float32 and NaN attributes are NaN, as with the netCDF4 engine.

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
import posixpath
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import ReferenceFileSystem

try:
    from xarray.backends import BackendEntrypoint
    from xarray.backends.common import datatree_from_dict_with_io_cleanup
    from xarray.backends.store import StoreBackendEntrypoint
    from xarray.backends.zarr import ZarrBackendEntrypoint, ZarrStore
    from xarray.core.utils import close_on_error
except ImportError as exc:  # xarray loads this module only where it is installed
    raise ImportError(
        "shadowzarr_store.xarray_backend is the xarray engine 'shadowzarr', which needs xarray: "
        "pip install 'shadowzarr-store[xarray]'"
    ) from exc

from shadowzarr_store.open_rfs import open_rfs_store
from shadowzarr_store.recognise import is_v3_reference_path
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.views.sharded import VIEW_ATTRIBUTE
from shadowzarr_store.xarray_attributes import FILL_ATTR, xarray_attributes

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
        store = _store(filename_or_obj, store_options, storage_options, proxy)
        return ZarrBackendEntrypoint().open_dataset(
            store,
            store=_ConventionZarrStore.open_group(
                store, group=group, mode="r", consolidated=False, zarr_format=3
            ),
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
        groups = self.open_groups_as_dict(
            filename_or_obj,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
            group=group,
            store_options=store_options,
            storage_options=storage_options,
            proxy=proxy,
        )
        return datatree_from_dict_with_io_cleanup(groups)

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
        """Every group below ``group`` (as xarray's Zarr backend opens them), by path."""
        parent = posixpath.normpath("/" + group) if group else "/"
        stores = _ConventionZarrStore.open_store(
            _store(filename_or_obj, store_options, storage_options, proxy),
            group=parent,
            mode="r",
            consolidated=False,
            consolidate_on_close=False,
            zarr_format=3,
        )
        groups: dict[str, xr.Dataset] = {}
        for path, store in stores.items():
            with close_on_error(store):
                dataset = StoreBackendEntrypoint().open_dataset(store, **decoders)
            groups[posixpath.relpath(path, parent) if group else path] = dataset
        return groups


class _ConventionZarrStore(ZarrStore):
    """xarray's ZarrStore with each array's and group's attributes decoded by the attribute
    conventions (:func:`xarray_attributes`); an enum's mapping goes to the variable's encoding
    as xarray's netCDF backends put it (``dtype`` with ``enum`` and ``enum_name`` metadata)."""

    def _fetch_members(self) -> dict[str, Any]:
        import zarr

        members = dict(super()._fetch_members())
        self._linked = _soft_linked_arrays(self.zarr_group, members)
        members.update(self._linked)
        self._enums: dict[str, dict[str, Any]] = {}
        for name, member in members.items():
            if isinstance(member, zarr.Array):
                shaped = xarray_attributes(member.attrs.asdict(), member.dtype)
                attributes = dict(shaped.attributes)
                attributes.pop(VIEW_ATTRIBUTE, None)  # the store's note; dask's chunks say it
                members[name] = _with_attributes(member, attributes)
                if shaped.enum is not None:
                    self._enums[name] = {"enum": shaped.enum}
                    if shaped.enum_name is not None:
                        self._enums[name]["enum_name"] = shaped.enum_name
        return members

    def open_store_variable(self, name: str) -> Any:
        variable = super().open_store_variable(name)  # type: ignore[no-untyped-call]
        preferred = preferred_chunks(variable.dims, variable.encoding.get("shards"))
        if preferred is not None:
            variable.encoding["preferred_chunks"] = preferred
        for where in (variable.attrs, variable.encoding):
            if FILL_ATTR in where:
                where[FILL_ATTR] = _typed_fill(where[FILL_ATTR], variable.dtype)
        enum = getattr(self, "_enums", {}).get(name)
        if enum is not None:
            variable.encoding["dtype"] = np.dtype(variable.dtype, metadata=enum)
        return variable

    def get_attrs(self) -> dict[str, Any]:
        shaped = xarray_attributes(self.zarr_group.attrs.asdict())
        attributes = {k: v for k, v in shaped.attributes.items() if k not in _NETCDF_RESERVED}
        linked = getattr(self, "_linked", None)
        if linked is None:  # the members are fetched on first use
            linked = _soft_linked_arrays(self.zarr_group, dict(self.zarr_group.members()))
        links = attributes.get(LINKS_ATTR)
        if linked and isinstance(links, list):
            rest = [e for e in links if not (isinstance(e, dict) and _linked_entry(e, linked))]
            if rest:
                attributes[LINKS_ATTR] = rest
            else:
                del attributes[LINKS_ATTR]
        return attributes


def _linked_entry(entry: dict[str, Any], linked: Mapping[str, Any]) -> bool:
    """Whether a ``_LINKS`` entry is one of the variables made from soft links."""
    name, path = entry.get("name"), entry.get("path")
    if entry.get("source") != "." or not isinstance(name, str) or not isinstance(path, str):
        return False
    return name in linked and posixpath.normpath(path).strip("/") == linked[name].path


LINKS_ATTR = "_LINKS"
"""A group's links that are not its members (soft links, external links), as generated."""


def _soft_linked_arrays(group: Any, members: Mapping[str, Any]) -> dict[str, Any]:
    """Soft links of ``group`` to arrays of the same references, by link name, as variables:
    netCDF-C (and so the netCDF4 engine) follows a soft link and shows a variable under the
    link's name. Links to groups, to other files, to nothing, or named as a member are left
    in ``_LINKS``."""
    import zarr

    links = group.attrs.asdict().get(LINKS_ATTR)
    if not isinstance(links, list):
        return {}
    root: Any = None
    linked: dict[str, Any] = {}
    for entry in links:
        if not isinstance(entry, dict) or entry.get("source") != ".":
            continue
        name, path = entry.get("name"), entry.get("path")
        if not isinstance(name, str) or not isinstance(path, str) or not path.startswith("/"):
            continue
        if not name or "/" in name or name in members or name in linked:
            continue
        target = posixpath.normpath(path).strip("/")
        if not target or target.startswith(".."):
            continue
        if root is None:
            root = zarr.open_group(store=group.store, path="", mode="r", zarr_format=3)
        try:
            node = root[target]
        except (KeyError, ValueError):
            continue  # a dangling link
        if isinstance(node, zarr.Array):
            linked[name] = node
    return linked


_NETCDF_RESERVED = frozenset(
    {"_NCProperties", "_IsNetcdf4", "_SuperblockVersion", "_nc3_strict", "_Netcdf4Dimid",
     "_Netcdf4Coordinates"}
)  # fmt: skip
"""The global attributes netCDF-C keeps to itself, by their exact names: a user's own
``_NCPROPERTIES`` (a GOLD mission file has one) is an attribute like any other."""


def _typed_fill(value: Any, dtype: np.dtype) -> Any:
    """A number ``_FillValue`` as a numpy scalar of its variable's type, as netCDF4 gives it
    (xarray's Zarr backend gives a Python number, a float as a double)."""
    if dtype.kind not in "iuf" or isinstance(value, bool | np.bool_):
        return value
    if not isinstance(value, int | float | np.integer | np.floating):
        return value
    try:
        with np.errstate(all="ignore"):
            typed = np.asarray(value).astype(dtype)
            same = typed == value or (np.isnan(typed) and np.isnan(value))  # not another range
    except (OverflowError, ValueError, TypeError):
        return value
    return typed[()] if same else value


def preferred_chunks(dims: tuple[str, ...], shards: Any) -> dict[str, int] | None:
    """Dask chunks of whole shards, for ``chunks={}``: xarray prefers an array's (inner)
    chunks, which in the grouped view are the stored chunks of a few KiB, one dask task each
    (1,250 tasks for 2.5 MB of 1 KiB chunks). A shard is what the store reads in about one
    request, so a task per shard costs about one request per task. None without shards."""
    if not isinstance(shards, tuple) or len(shards) != len(dims):
        return None
    if not all(isinstance(size, int) and size > 0 for size in shards):
        return None
    return dict(zip(dims, shards, strict=True))


def _with_attributes(array: Any, attributes: dict[str, Any]) -> Any:
    """The same zarr array (same store and chunks) showing other attributes, held in memory."""
    import dataclasses

    import zarr
    from zarr.core.array import AsyncArray

    inner = array._async_array
    metadata = dataclasses.replace(inner.metadata, attributes=attributes)
    return zarr.Array(AsyncArray(metadata, inner.store_path, inner.config))


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
