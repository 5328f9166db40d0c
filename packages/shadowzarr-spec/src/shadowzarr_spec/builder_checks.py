"""What `RfsBuilder.build` checks of each array before it is written: gen entries inside the
chunk grid, a selection that fits its records, no reference past the recorded end of its file,
and metadata zarr-python accepts (asked once per kind of array)."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from shadowzarr_spec.builder_arrays import ArrayDraft, ChunkBlock
from shadowzarr_spec.codec_packages import codec_names, package_for_codec
from shadowzarr_spec.errors import BuilderError
from shadowzarr_spec.gen import GenEntry
from shadowzarr_spec.metadata import array_metadata
from shadowzarr_spec.model import MISSING_CHUNK, FileRef, IndexRef, Selection, SourceInfo

__all__ = ["CHECKED_GEN_KEYS", "check_file_ends", "validate_array"]

CHECKED_GEN_KEYS = 1 << 16
"""Gen entries with at most this many keys have each reference checked against the recorded
file size when the builder builds (a larger one is trusted: its keys are computed one by one)."""


def check_file_ends(
    path: str,
    array: ArrayDraft,
    gen: Iterable[GenEntry],
    sources: Mapping[str, SourceInfo],
    index: IndexRef | None,
) -> None:
    """Refuse a reference running past the recorded size of its file: readers refuse it
    (never padding), so a generator must clip a last chunk to the bytes there are. Gen
    entries are checked key by key up to `CHECKED_GEN_KEYS` keys each."""
    sizes = {url: info.size for url, info in sources.items() if info.size is not None}
    if not sizes:
        return

    def refuse(url: str, where: str, end: int) -> None:
        raise BuilderError(
            f"array {path!r}: {where} ends at byte {end} of {url}, past the end of the "
            f"file ({sizes[url]} bytes recorded)"
        )

    for segment in array.segments:
        if isinstance(segment, ChunkBlock):
            if segment.url in sizes and len(segment.offsets):
                ends = segment.offsets.astype(np.int64) + segment.sizes.astype(np.int64)
                row = int(np.argmax(ends))
                if int(ends[row]) > sizes[segment.url]:
                    where = f"chunk {tuple(segment.coords[row].tolist())}"
                    refuse(segment.url, where, int(ends[row]))
            continue
        for coords, ref in segment.items():
            if not isinstance(ref, FileRef) or ref.url not in sizes or ref.offset is None:
                continue
            if ref.offset + (ref.size or 0) > sizes[ref.url]:
                refuse(ref.url, f"chunk {coords}", ref.offset + (ref.size or 0))
    if index is not None and index.url in sizes and index.table is not None:
        table = index.table.reshape(-1, 2)
        written = ~((table[:, 0] == MISSING_CHUNK) & (table[:, 1] == MISSING_CHUNK))
        if written.any():
            ends = table[written, 0].astype(np.int64) + table[written, 1].astype(np.int64)
            if int(ends.max()) > sizes[index.url]:
                refuse(index.url, "a chunk of its chunk manifest", int(ends.max()))
    for entry in gen:
        if entry.count > CHECKED_GEN_KEYS:
            continue
        for key, ref in entry.items():
            if ref.url in sizes and (ref.offset or 0) + (ref.size or 0) > sizes[ref.url]:
                refuse(ref.url, f"{key!r} (gen entry)", (ref.offset or 0) + (ref.size or 0))


def validate_array(
    path: str,
    array: ArrayDraft,
    gen: Iterable[GenEntry],
    selection: Selection | None,
) -> None:
    """Gen entries inside the chunk grid, a selection that fits, metadata zarr-python takes."""
    grid = array.grid
    for entry in gen:
        for axis, bound in enumerate(_gen_key_bounds(entry, path)):
            if bound is not None and bound >= (grid[axis] if grid else 1):
                raise BuilderError(
                    f"array {path!r}: gen entry {entry.key!r} reaches beyond the chunk grid {grid}"
                )
    if selection is not None:
        if any(codec.get("name") not in ("bytes", "transpose") for codec in array.codecs):
            raise BuilderError(f"array {path!r}: a selection applies to uncompressed data only")
        itemsize = _itemsize(array.data_type)
        chunk_bytes = math.prod(array.chunk_shape) * itemsize
        if itemsize and chunk_bytes % selection.kept_size:
            raise BuilderError(
                f"array {path!r}: a chunk of {chunk_bytes} bytes is not a whole number of "
                f"selected records of {selection.kept_size} bytes"
            )
    _validate_with_zarr(path, array)


def _gen_key_bounds(entry: GenEntry, path: str) -> list[int | None]:
    """The largest chunk coordinate a gen entry's key reaches on each axis."""
    tail = entry.key[len(path) + 1 :] if path else entry.key
    parts = tail.split("/")[1:]
    bounds: list[int | None] = []
    for part in parts:
        if part.startswith("{{"):
            name = part.strip("{}").strip()
            bounds.append(max(entry.dimensions[name], default=None))
        else:
            bounds.append(int(part))
    return bounds


def _itemsize(data_type: Any) -> int:
    try:
        from zarr.core.dtype import get_data_type_from_json
    except ImportError:
        return 0
    try:
        return int(get_data_type_from_json(data_type, zarr_format=3).to_native_dtype().itemsize)
    except (TypeError, ValueError):
        return 0


_ACCEPTED: set[str] = set()
"""The kinds of array metadata zarr-python took already in this process (what it accepts does
not change while the process runs): a catalog's worker generating thousands of NWB files asks
about each kind once, not once per file."""
_MOST_ACCEPTED = 4096


def _validate_with_zarr(path: str, array: ArrayDraft) -> None:
    """Ask zarr-python whether it accepts the metadata, when zarr-python is installed.

    Arrays alike in everything but their sizes and names (an NWB file's thousands of small
    columns) are asked about once (`_ACCEPTED`)."""
    try:
        from zarr.core.metadata.v3 import ArrayV3Metadata
        from zarr.errors import UnknownCodecError
        from zarr.registry import get_codec_class
    except ImportError:
        return
    rank = len(array.shape)
    if any(int(n) < 0 for n in array.shape) or any(int(c) <= 0 for c in array.chunk_shape):
        raise BuilderError(f"array {path!r}: shape and chunk shape must be positive")
    # The chunk shape counts where a codec checks it (a shard holds whole inner chunks).
    sharded = "sharding_indexed" in codec_names(array.codecs)
    # repr, not JSON: half the time, and a key that tells apart more is only asked about more
    kind = repr(
        (rank, len(array.chunk_shape), array.data_type, array.fill_value, array.codecs,
         array.dimension_names is not None and len(array.dimension_names),
         list(array.chunk_shape) if sharded else None)
    )  # fmt: skip
    if kind in _ACCEPTED:
        return
    document = array_metadata(
        shape=array.shape,
        data_type=array.data_type,
        chunk_shape=array.chunk_shape,
        fill_value=array.fill_value,
        # A copy: a codec's from_dict may rewrite its configuration in place (imagecodecs'
        # JPEG codec turns the base64 tables it was given into bytes, which JSON cannot hold).
        codecs=copy.deepcopy(array.codecs),
        attributes={},
        dimension_names=array.dimension_names,
    )
    try:
        ArrayV3Metadata.from_dict(document)
    except UnknownCodecError as exc:
        unknown = []
        for name in codec_names(array.codecs):
            try:
                get_codec_class(name)
            except UnknownCodecError:
                unknown.append(name)
        if not unknown or any(package_for_codec(name) is None for name in unknown):
            raise BuilderError(f"array {path!r}: zarr-python refuses its metadata: {exc}") from exc
        # A codec this machine lacks but a known package provides (imagecodecs' LZF where only
        # h5py is installed) is the reader's to have: generating references decodes nothing.
        return
    except (TypeError, ValueError, KeyError) as exc:
        raise BuilderError(f"array {path!r}: zarr-python refuses its metadata: {exc}") from exc
    if len(_ACCEPTED) >= _MOST_ACCEPTED:
        _ACCEPTED.clear()
    _ACCEPTED.add(kind)
