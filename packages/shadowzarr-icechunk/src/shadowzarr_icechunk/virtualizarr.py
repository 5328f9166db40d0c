"""VirtualiZarr ManifestStores and ManifestArrays as reference file systems and VirtualArrays.

A manifest holds, for each array, three grid-shaped tables (path, offset, length) and the
inline chunks; they become references here without a Python object per chunk for the big
part: an array with more than ``manifest_threshold`` chunks in one file gets a chunk manifest
built from the tables directly, and only the rest is listed in refs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import (
    FileRef,
    IndexRef,
    InlineRef,
    ReferenceFileSystem,
    VirtualArray,
    array_info,
)
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.json_text import dumps_strict, parse_json
from shadowzarr_spec.keys import chunk_key, join, metadata_key
from shadowzarr_spec.manifest import new_index_table

from shadowzarr_icechunk.locations import UrlFor
from shadowzarr_icechunk.node_metadata import clean_document

if TYPE_CHECKING:
    from virtualizarr.manifests import ManifestArray, ManifestGroup, ManifestStore

__all__ = ["manifest_group_to_rfs", "manifest_store_to_rfs", "virtual_array"]

MANIFEST_THRESHOLD = 1000


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def manifest_store_to_rfs(
    manifest_store: ManifestStore,
    *,
    url_for: UrlFor | None = None,
    manifest_threshold: int = MANIFEST_THRESHOLD,
) -> ReferenceFileSystem:
    """A VirtualiZarr ManifestStore (from any of its parsers) as a reference file system.

    Groups, arrays and attributes are written as the store holds them (non-finite attributes
    following the Non-Finite Attributes convention); an array with more than
    ``manifest_threshold`` chunks in one file gets a chunk manifest. ``url_for`` maps the
    manifest's locations (None keeps one), for example ``s3://`` objects to https URLs.
    """
    return manifest_group_to_rfs(
        manifest_store._group, url_for=url_for, manifest_threshold=manifest_threshold
    )


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def manifest_group_to_rfs(
    group: ManifestGroup,
    *,
    url_for: UrlFor | None = None,
    manifest_threshold: int = MANIFEST_THRESHOLD,
) -> ReferenceFileSystem:
    """:func:`manifest_store_to_rfs` for the root ManifestGroup of a store."""
    rfs = ReferenceFileSystem()
    _add_group(rfs, "", group, url_for, manifest_threshold)
    rfs.version = rfs.required_version
    return rfs


def virtual_array(manifest_array: ManifestArray) -> VirtualArray:
    """One ManifestArray as a VirtualArray, to stack, transpose or put in an NWB file.

    An uncompressed array stored in one piece of one file becomes a contiguous VirtualArray,
    so it can be sliced along any axis.
    """
    rfs = ReferenceFileSystem()
    _add_array(rfs, "array", manifest_array, None, threshold=None)
    chunked = VirtualArray.from_rfs(rfs, "array")
    contiguous = _contiguous(rfs, manifest_array, chunked)
    return contiguous if contiguous is not None else chunked


# -- building -----------------------------------------------------------------------------


def _add_group(
    rfs: ReferenceFileSystem,
    path: str,
    group: ManifestGroup,
    url_for: UrlFor | None,
    threshold: int,
) -> None:
    document = {
        "zarr_format": 3,
        "node_type": "group",
        "attributes": dict(group.metadata.attributes or {}),
    }
    rfs.refs[metadata_key(path)] = InlineRef(_encode(document))
    for name, array in group.arrays.items():
        _add_array(rfs, join(path, name), array, url_for, threshold)
    for name, child in group.groups.items():
        _add_group(rfs, join(path, name), child, url_for, threshold)


def _add_array(
    rfs: ReferenceFileSystem,
    path: str,
    array: ManifestArray,
    url_for: UrlFor | None,
    threshold: int | None,
) -> None:
    from virtualizarr.manifests.manifest import INLINED_CHUNK_PATH
    from zarr.core.buffer import default_buffer_prototype

    raw = array.metadata.to_buffer_dict(default_buffer_prototype())["zarr.json"].to_bytes()
    document = parse_json(raw)
    # References name chunks "a/c/0/1" whatever encoding the parsed file used; the manifest
    # holds grid coordinates, so the keys are ours to choose.
    document["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": "/"}}
    rfs.refs[metadata_key(path)] = InlineRef(_encode(document))
    manifest = array.manifest
    paths = np.asarray(manifest._paths)
    offsets = np.asarray(manifest._offsets)
    lengths = np.asarray(manifest._lengths)
    grid = paths.shape
    for coords, data in manifest._inlined.items():
        rfs.refs[chunk_key(path, coords)] = InlineRef(bytes(data))
    referenced = (paths != "") & (paths != INLINED_CHUNK_PATH)
    if not referenced.any():
        return
    urls, codes = np.unique(paths[referenced], return_inverse=True)
    code_grid = np.full(grid, -1, dtype=np.int64)
    code_grid[referenced] = codes
    counts = np.bincount(codes, minlength=len(urls))
    locations = [_mapped(str(url), url_for) for url in urls]
    listed = referenced
    biggest = int(np.argmax(counts))
    if threshold is not None and counts[biggest] > threshold:
        in_index = code_grid == biggest
        table = new_index_table(grid)
        table[in_index, 0] = offsets[in_index]
        table[in_index, 1] = lengths[in_index]
        rfs.indexes[path] = IndexRef(url=locations[biggest], table=table)
        listed = referenced & ~in_index
    for row in np.argwhere(listed).tolist():
        position: tuple[int, ...] = tuple(row)
        rfs.refs[chunk_key(path, position)] = FileRef(
            locations[code_grid[position]], int(offsets[position]), int(lengths[position])
        )


def _contiguous(
    rfs: ReferenceFileSystem, manifest_array: ManifestArray, chunked: VirtualArray
) -> VirtualArray | None:
    """The array as one C-ordered run of bytes, when that is what its chunks are."""
    info = array_info(rfs, "array")
    assert info is not None
    if [c.get("name") for c in info.codecs] != ["bytes"] or not info.shape:
        return None
    if tuple(info.chunk_shape[1:]) != tuple(info.shape[1:]):
        return None
    manifest = manifest_array.manifest
    paths = np.asarray(manifest._paths).ravel()
    if paths.size == 0 or manifest._inlined or np.any(paths != paths[0]) or paths[0] == "":
        return None
    offsets = np.asarray(manifest._offsets, dtype=np.int64).ravel()
    lengths = np.asarray(manifest._lengths, dtype=np.int64).ravel()
    itemsize = chunked.dtype.itemsize
    chunk_bytes = math.prod(info.chunk_shape) * itemsize
    total = math.prod(info.shape) * itemsize
    expected = offsets[0] + np.arange(paths.size, dtype=np.int64) * chunk_bytes
    if not np.array_equal(offsets, expected):
        return None
    if np.any(lengths[:-1] != chunk_bytes) or lengths[-1] < total - chunk_bytes * (paths.size - 1):
        return None
    result = VirtualArray.contiguous(str(paths[0]), info.shape, chunked.dtype, int(offsets[0]))
    result.attributes = dict(chunked.attributes)
    return result


def _mapped(url: str, url_for: UrlFor | None) -> str:
    if url_for is None:
        return url
    mapped = url_for(url)
    return url if mapped is None else mapped


def _encode(document: dict[str, Any]) -> bytes:
    return dumps_strict(clean_document(document)).encode("utf-8")
