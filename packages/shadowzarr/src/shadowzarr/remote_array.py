"""shadowzarr.open_array: one dataset of a remote HDF5/NWB, TIFF, Zarr or reference file, in one
call, as a `RemoteArray` (a `zarr.Array` with cache policies, prefetch, offline reads, ``info``,
``traffic`` and export).

The generators are imported only when a source of their format is opened, so opening a Zarr
store or a reference file needs neither h5py nor tifffile.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from shadowzarr._lazy import import_module_for

if TYPE_CHECKING:
    from collections.abc import Mapping

    from shadowzarr_spec import ReferenceFileSystem
    from shadowzarr_store.remote import Address, RemoteArray, SourceFormat

__all__ = ["open_array"]


def open_array(
    source: str | os.PathLike[str] | ReferenceFileSystem | dict[str, Any],
    path: str | None = None,
    *,
    dataset: str | None = None,
    source_format: SourceFormat | None = None,
    series: int | None = None,
    level: int | None = None,
    hdf5_options: dict[str, Any] | None = None,
    **options: Any,
) -> RemoteArray:
    """Open one array in one call.

    ``shadowzarr.open_array("https://…/file.nwb::/acquisition/ElectricalSeries/data")``; the
    slash form ``…/file.h5/group/data`` and ``dataset="group/data"`` say the same. HDF5/NWB:
    references are generated for that dataset only (its headers and chunk index, nothing else).
    TIFF: ``series`` and ``level`` (or ``dataset="0/1"``). Zarr v3 stores (``….zarr/array``) and
    reference files or directories (``.json``, a folder holding ``refs.json``, or references in
    memory, with ``path`` naming the array inside them) open the same way.

    Parameters
    ----------
    path
        The array inside ``source`` (like ``dataset``; kept for references opened by path).
    hdf5_options
        Extra ``shadowzarr_hdf5.generate_rfs`` options (part of the reference-cache key).
    **options
        `shadowzarr_store.remote.open_remote_array` options: ``cache`` ("none", "memory",
        "disk"), ``max_cache_bytes``, ``cache_dir``, ``assume_immutable``, ``offline``,
        ``max_concurrency``, ``memory_cache``/``local_cache`` (shared), blosc2's
        ``cache_policy``, ``cache_path`` (disk cache folder) and ``refs`` (references made
        beforehand), and `RfsStore` options;
        ``headers``, ``allowed_urls``, ``storage_options`` and ``proxy`` also go to the
        generator, and every transport option to the first request (the source's identity):
        it already carries the headers and takes the proxy, and a source outside
        ``allowed_urls`` is refused before any request.
    """
    from shadowzarr_store.remote import open_remote_array

    if path is not None and dataset is not None and path.strip("/") != dataset.strip("/"):
        raise ValueError(f"path={path!r} and dataset={dataset!r} name different arrays")
    hdf5 = dict(hdf5_options or {})
    tiff_path = _tiff_path(series, level)
    return open_remote_array(
        source,
        dataset=dataset if dataset is not None else path,
        source_format=source_format,
        # functools.partial of module-level functions, not closures: the array pickles.
        generators={
            "hdf5": functools.partial(_hdf5, options=hdf5),
            "tiff": functools.partial(_tiff, chosen=tiff_path),
        },
        generator_tag=repr(sorted(hdf5.items())) + f"|tiff:{tiff_path}",
        _called_as="shadowzarr.open_array",
        **options,
    )


def _hdf5(
    address: Address, access: Mapping[str, Any], options: dict[str, Any]
) -> tuple[ReferenceFileSystem, str]:
    from shadowzarr_store.remote import AddressError

    if not address.dataset:
        raise AddressError(
            f"{address.container}: name the dataset (file.h5::/group/data or dataset=…)"
        )
    module = import_module_for("shadowzarr_hdf5", "hdf5", "shadowzarr.open_array of HDF5 files")
    rfs = module.generate_rfs(
        address.container, datasets=[address.dataset], **{"progress": False, **options, **access}
    )
    return rfs, address.dataset


def _tiff_path(series: int | None, level: int | None) -> str | None:
    if series is None and level is None:
        return None
    return f"{series or 0}" + ("" if level is None else f"/{level}")


def _tiff(
    address: Address, access: Mapping[str, Any], chosen: str | None
) -> tuple[ReferenceFileSystem, str]:
    from shadowzarr_spec.keys import join

    module = import_module_for("shadowzarr_tiff", "tiff", "shadowzarr.open_array of TIFF files")
    rfs = module.generate_rfs_tiff(address.container, **access)
    path = address.dataset or chosen or "0"
    if _is_group(rfs, path):  # a pyramid: its full-resolution level unless one was named
        path = join(path, "0")
    if not _is_array(rfs, path):
        raise _no_tiff_array(rfs, address.container, path)
    return rfs, path


def _no_tiff_array(rfs: ReferenceFileSystem, container: str, path: str) -> Exception:
    """The error for a series or level the file does not have, naming the file and listing what
    it has (``level=2`` of a file without a pyramid)."""
    from shadowzarr_spec import DatasetNotFoundError, array_paths

    series, _, level = path.partition("/")
    arrays = sorted(array_paths(rfs))
    if level and _is_array(rfs, series):
        reason = f"series {series} of {container} is not a pyramid: it has no level {level}"
    elif level:
        levels = sorted(p.split("/", 1)[1] for p in arrays if p.startswith(f"{series}/"))
        reason = (
            f"series {series} of {container} has levels {', '.join(levels)}, not {level}"
            if levels
            else f"{container} has no series {series}"
        )
    else:
        reason = f"{container} has no series {series}"
    return DatasetNotFoundError(f"{reason} (its arrays: {', '.join(arrays) or 'none'})")


def _is_array(rfs: ReferenceFileSystem, path: str) -> bool:
    from shadowzarr_spec import array_info

    return array_info(rfs, path) is not None


def _is_group(rfs: ReferenceFileSystem, path: str) -> bool:
    import json

    from shadowzarr_spec import InlineRef

    node = rfs.refs.get(f"{path}/zarr.json")
    return isinstance(node, InlineRef) and json.loads(node.data).get("node_type") == "group"
