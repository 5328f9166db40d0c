"""HDF5 virtual datasets (VDS) whose mappings line up with their sources' chunks.

A VDS maps boxes of source datasets (in this file or others) onto boxes of itself; HDF5 reads
a source at read time and gives the fill value where none is mapped, or where a source file is
missing. When every mapping takes a whole box of one source and puts it on a box that starts
and ends on a common chunk grid (the sources' chunk shape, an axis of size one where the VDS
adds one), each source chunk is one chunk of the VDS, and the references point at the source
files' chunks directly. Everything else raises UnsupportedFeatureError naming the dataset and
the reason (then the unsupported-dataset policy applies): the values are never guessed, and a
missing source is never read as fill values.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_store.transport import is_local

from .context import Source
from .object_paths import ObjectPaths
from .plan.chunks import chunk_locations, read_filters
from .plan.dataset_plan import References
from .plan.fill_values import stored_fill
from .plan.filters import codecs_for

__all__ = ["VirtualMapping", "check_sources_present", "plan_virtual"]


@dataclass(frozen=True, slots=True)
class VirtualMapping:
    """One mapping: the source box ``[source_start, +block)`` onto ``[start, +vds_block)``."""

    file_name: str
    dataset_name: str
    start: tuple[int, ...]
    vds_block: tuple[int, ...]
    source_start: tuple[int, ...] | None
    """None: the whole source dataset (an ALL selection)."""
    source_block: tuple[int, ...] | None


def plan_virtual(
    dataset: h5py.Dataset, path: str, source: Source, data_type: np.dtype, fill_value: Any
) -> tuple[tuple[int, ...], tuple[dict[str, Any], ...], References]:
    """The chunk shape, codecs and chunk references of a VDS whose mappings are regular: its
    sources' chunks."""
    shape = tuple(int(n) for n in dataset.shape)
    mappings = [_mapping(m, path) for m in dataset.virtual_sources()]
    if not mappings:
        raise _refusal(path, "it maps no source")
    opened: dict[str, tuple[h5py.File | None, Source]] = {}
    try:
        pieces = [_piece(m, path, dataset, source, shape, opened) for m in mappings]
    finally:
        for file, _ in opened.values():
            if file is not None:
                file.close()
    chunk_shape = _common(path, [p.chunk_shape for p in pieces], "chunk shapes")
    codecs = _common(path, [p.codecs for p in pieces], "filter pipelines")
    for piece in pieces:
        if piece.dtype != np.dtype(data_type):
            raise _refusal(path, f"a source of type {piece.dtype}, not {data_type}")
        if not piece.complete and not _same_fill(piece.fill, fill_value, data_type):
            raise _refusal(
                path, "a source with unwritten chunks whose fill value differs from the VDS's"
            )
    taken: set[tuple[int, ...]] = set()
    references = []
    for piece in pieces:
        for coords, url, offset, size in piece.chunks:
            if coords in taken:
                raise _refusal(path, "mappings that overlap")
            taken.add(coords)
            references.append((coords, url, offset, size))
    return chunk_shape, tuple(codecs), References(tuple(references))


def check_sources_present(dataset: h5py.Dataset, path: str, base: str) -> None:
    """Raise when a source file or dataset is missing: HDF5 would read its box as fill."""
    for found in dataset.virtual_sources():
        name = found.file_name
        if name == ".":
            target = dataset.file
            if found.dset_name not in target:
                raise _refusal(path, f"its source {found.dset_name!r} is missing")
            continue
        location = _source_path(name, base, path)
        if not os.path.exists(location):
            raise _refusal(path, f"its source file {name!r} is missing (HDF5 reads fill values)")
        with h5py.File(location, "r") as other:
            if found.dset_name not in other:
                raise _refusal(path, f"its source {name}:{found.dset_name} is missing")


@dataclass(frozen=True, slots=True)
class _Piece:
    chunk_shape: tuple[int, ...]
    codecs: list[dict[str, Any]]
    dtype: np.dtype
    fill: Any
    chunks: list[tuple[tuple[int, ...], str, int, int]]
    complete: bool
    """Every source chunk of the mapped box is stored (its fill value never shows)."""


def _mapping(found: Any, path: str) -> VirtualMapping:
    name = found.file_name
    if "%" in name or "%" in found.dset_name:
        raise _refusal(path, "printf-style source names (%b) map unlimited sources")
    start, block = _box(found.vspace, path, "its own selection")
    kind = found.src_space.get_select_type()
    if kind == h5py.h5s.SEL_ALL:
        return VirtualMapping(name, found.dset_name, start, block, None, None)
    source_start, source_block = _box(found.src_space, path, "a source selection")
    return VirtualMapping(name, found.dset_name, start, block, source_start, source_block)


def _box(space: Any, path: str, what: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(start, size) of a selection that is one box: a regular hyperslab of one block."""
    if space.get_select_type() != h5py.h5s.SEL_HYPERSLABS or not space.is_regular_hyperslab():
        raise _refusal(path, f"{what} is not a regular hyperslab")
    start, _stride, count, block = space.get_regular_hyperslab()
    unlimited = h5py.h5s.UNLIMITED
    if any(c == unlimited or b == unlimited for c, b in zip(count, block, strict=True)):
        raise _refusal(path, "an unlimited mapping")
    if any(c != 1 for c in count):
        raise _refusal(path, f"{what} repeats a block (a pattern of {tuple(count)} blocks)")
    return tuple(int(s) for s in start), tuple(int(b) for b in block)


def _piece(
    mapping: VirtualMapping,
    path: str,
    vds: h5py.Dataset,
    source: Source,
    shape: tuple[int, ...],
    opened: dict[str, tuple[h5py.File | None, Source]],
) -> _Piece:
    dataset, where = _open_source(mapping, path, vds, source, opened)
    src_shape = tuple(int(n) for n in dataset.shape)
    src_start = mapping.source_start or (0,) * len(src_shape)
    src_block = mapping.source_block or src_shape
    if math.prod(src_block) != math.prod(mapping.vds_block):
        raise _refusal(path, "a mapping whose source and destination sizes differ")
    layout = dataset.id.get_create_plist().get_layout()
    if layout == h5py.h5d.CHUNKED:
        chunks = tuple(int(c) for c in dataset.chunks)
    elif layout == h5py.h5d.CONTIGUOUS and src_block == src_shape:
        chunks = src_shape  # one block: a single uncompressed chunk
    else:
        raise _refusal(path, f"a source ({mapping.dataset_name}) that is neither chunked nor whole")
    axes = _axis_map(mapping.vds_block, src_block, path)
    vds_chunks = tuple(chunks[a] if a is not None else 1 for a in axes)
    for axis, a in enumerate(axes):
        if a is None:
            continue
        if mapping.start[axis] % chunks[a] or src_start[a] % chunks[a]:
            raise _refusal(path, "a mapping that does not start on its source's chunk grid")
        # A box may end inside a chunk only at the VDS's edge: the rest lies outside it.
        at_edge = mapping.start[axis] + mapping.vds_block[axis] == shape[axis]
        if src_block[a] % chunks[a] and not at_edge:
            raise _refusal(path, "a mapping that ends inside a source chunk")
    for a in range(len(src_block)):
        if a not in axes and chunks[a] != 1:
            raise _refusal(path, "a mapping that takes part of a source chunk's rows")
    codecs, stored = _source_chunks(dataset, where, layout, mapping, src_start, src_block)
    expected = math.prod(
        -(-(s + b) // c) - s // c for s, b, c in zip(src_start, src_block, chunks, strict=True)
    )
    return _Piece(
        complete=len(stored) == expected,
        chunk_shape=vds_chunks,
        codecs=codecs,
        dtype=np.dtype(dataset.dtype),
        fill=stored_fill(dataset),
        chunks=[
            (_vds_coords(coords, mapping, src_start, chunks, axes), url, offset, size)
            for coords, url, offset, size in stored
        ],
    )


def _axis_map(
    vds_block: tuple[int, ...], src_block: tuple[int, ...], path: str
) -> list[int | None]:
    """For each VDS axis, the source axis it shows (None: an axis of one the VDS adds)."""
    vds_axes = [i for i, n in enumerate(vds_block) if n != 1]
    src_axes = [i for i, n in enumerate(src_block) if n != 1]
    if [vds_block[i] for i in vds_axes] != [src_block[i] for i in src_axes]:
        raise _refusal(path, f"a mapping that reshapes {src_block} into {vds_block}")
    out: list[int | None] = [None] * len(vds_block)
    for v, s in zip(vds_axes, src_axes, strict=True):
        out[v] = s
    # Axes of one on both sides pair up in order, when the ranks agree.
    if len(vds_block) == len(src_block):
        for axis in range(len(vds_block)):
            if out[axis] is None and axis not in src_axes:
                out[axis] = axis
    return out


def _vds_coords(
    coords: tuple[int, ...],
    mapping: VirtualMapping,
    src_start: tuple[int, ...],
    chunks: tuple[int, ...],
    axes: list[int | None],
) -> tuple[int, ...]:
    out = []
    for axis, a in enumerate(axes):
        if a is None:
            out.append(mapping.start[axis])
        else:
            first = mapping.start[axis] + coords[a] * chunks[a] - src_start[a]
            out.append(first // chunks[a])
    return tuple(out)


def _source_chunks(
    dataset: h5py.Dataset,
    where: Source,
    layout: int,
    mapping: VirtualMapping,
    src_start: tuple[int, ...],
    src_block: tuple[int, ...],
) -> tuple[list[dict[str, Any]], list[tuple[tuple[int, ...], str, int, int]]]:
    """The source's codecs and its stored chunks inside the mapped box."""
    dtype = np.dtype(dataset.dtype)
    if layout == h5py.h5d.CONTIGUOUS:
        offset = dataset.id.get_offset()
        codecs = codecs_for((), dtype, dataset.name)
        if offset is None:
            return codecs, []
        size = math.prod(dataset.shape) * dtype.itemsize
        return codecs, [((0,) * dataset.ndim, where.url, int(offset), int(size))]
    locations = chunk_locations(dataset, where)
    masks = set(locations.masks.tolist())
    if len(masks) > 1:
        raise _refusal(dataset.name, "a source whose chunks skip different filters")
    codecs = codecs_for(
        read_filters(dataset), dtype, dataset.name, skip_mask=masks.pop() if masks else 0
    )
    chunks = dataset.chunks
    first = [s // c for s, c in zip(src_start, chunks, strict=True)]
    last = [-(-(s + b) // c) for s, b, c in zip(src_start, src_block, chunks, strict=True)]
    found = []
    for coords, offset, size in zip(
        locations.coords.tolist(), locations.offsets.tolist(), locations.sizes.tolist(), strict=True
    ):
        if all(f <= c < e for c, f, e in zip(coords, first, last, strict=True)):
            found.append((tuple(coords), where.url, int(offset), int(size)))
    return codecs, found


def _open_source(
    mapping: VirtualMapping,
    path: str,
    vds: h5py.Dataset,
    source: Source,
    opened: dict[str, tuple[h5py.File | None, Source]],
) -> tuple[h5py.Dataset, Source]:
    name = mapping.file_name
    if name == ".":
        file, where = vds.file, source
    else:
        if name not in opened:
            if not is_local(source.url):
                raise _refusal(path, f"its source file {name!r} is another file of a remote VDS")
            location = _source_path(name, source.base, path)
            if not os.path.exists(location):
                raise _refusal(path, f"its source file {name!r} is missing")
            other = h5py.File(location, "r")
            opened[name] = (other, _source_of(other, location))
        file, where = opened[name]
    if file is None or mapping.dataset_name not in file:
        raise _refusal(path, f"its source {name}:{mapping.dataset_name} is missing")
    found = file[mapping.dataset_name]
    if not isinstance(found, h5py.Dataset):
        raise _refusal(path, f"its source {name}:{mapping.dataset_name} is not a dataset")
    return found, where


def _source_of(file: h5py.File, location: str) -> Source:
    def read(offset: int, size: int) -> bytes:
        with open(location, "rb") as handle:
            handle.seek(offset)
            return handle.read(size)

    return Source(
        file=file,
        url=os.path.abspath(location),
        base=os.path.dirname(location),
        paths=ObjectPaths(file),
        read_bytes=read,
    )


def _source_path(name: str, base: str, path: str) -> str:
    if not is_local(base):
        raise _refusal(path, f"its source file {name!r} is another file of a remote VDS")
    return name if os.path.isabs(name) else os.path.normpath(os.path.join(base, name))


def _common(path: str, values: list[Any], what: str) -> Any:
    if any(v != values[0] for v in values[1:]):
        raise _refusal(path, f"sources with different {what}")
    return values[0]


def _same_fill(source_fill: Any, fill: Any, dtype: np.dtype) -> bool:
    a = np.asarray(source_fill if source_fill is not None else 0).astype(dtype)
    b = np.asarray(fill if fill is not None else 0).astype(dtype)
    return a.tobytes() == b.tobytes()


def _refusal(path: str, why: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"dataset {path!r}: a virtual dataset with {why}")
