"""RfsBuilder: the one way generators describe a reference file system, whatever the format.

Generators add groups, arrays and their chunk locations; :meth:`RfsBuilder.build` checks that
everything will read back (chunk keys inside the grid, selections that fit their records,
metadata zarr-python accepts), encodes attributes with the Non-Finite and Bytes conventions and
returns a :class:`~shadowzarr_spec.model.ReferenceFileSystem`. Every location is recorded
without credentials or signatures (`shadowzarr_spec.signed_urls`): a presigned URL's
signature never reaches a reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shadowzarr_spec.attribute_conventions import encode_attributes
from shadowzarr_spec.builder_arrays import ArrayDraft, ChunkBlock, as_columns
from shadowzarr_spec.builder_checks import CHECKED_GEN_KEYS, check_file_ends, validate_array
from shadowzarr_spec.errors import BuilderError, ReferenceFormatError
from shadowzarr_spec.etags import is_entity_tag
from shadowzarr_spec.gen import Dimension, GenEntry
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.keys import check_key, chunk_key, join, metadata_key
from shadowzarr_spec.listed_refs import ChunkColumns, ListedRefs, note_dict_run
from shadowzarr_spec.metadata import (
    VLEN_BYTES,
    array_metadata,
    default_codecs,
    group_metadata,
    zarr_data_type,
)
from shadowzarr_spec.model import (
    FileRef,
    IndexRef,
    InlineRef,
    Ref,
    ReferenceFileSystem,
    Selection,
    SourceInfo,
    UnsupportedDataset,
    UnsupportedOutcome,
)
from shadowzarr_spec.signed_urls import recorded_location

__all__ = ["CHECKED_GEN_KEYS", "RfsBuilder", "columns_selection"]


class RfsBuilder:
    """Collects groups, arrays and chunk locations, then builds a reference file system."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, Any]] = {}
        self._arrays: dict[str, ArrayDraft] = {}
        self._gen: list[tuple[str, GenEntry]] = []
        self._indexes: dict[str, IndexRef] = {}
        self._selections: dict[str, Selection] = {}
        self._sources: dict[str, SourceInfo] = {}
        self._unsupported: dict[str, UnsupportedDataset] = {}
        self._order: list[str] = []
        """Node paths in the order they were added (consolidated metadata keeps it)."""

    # -- nodes -----------------------------------------------------------------------------
    def add_group(self, path: str, attributes: Mapping[str, Any] | None = None) -> None:
        """Add a group ('' is the root)."""
        path = _node_path(path)
        self._check_free(path)
        self._groups[path] = dict(attributes or {})
        self._order.append(path)

    def add_array(
        self,
        path: str,
        *,
        shape: Sequence[int],
        data_type: Any,
        chunk_shape: Sequence[int] | None = None,
        codecs: list[dict[str, Any]] | None = None,
        fill_value: Any = None,
        attributes: Mapping[str, Any] | None = None,
        dimension_names: Sequence[str | None] | None = None,
    ) -> None:
        """Add an array. ``data_type`` is a numpy dtype (its byte order picks the ``bytes``
        codec's endianness when ``codecs`` is not given) or ``"string"``."""
        path = _node_path(path)
        if not path:
            raise BuilderError("the root must be a group, not an array")
        self._check_free(path)
        shape = tuple(int(s) for s in shape)
        chunk_shape = tuple(int(c) for c in (shape if chunk_shape is None else chunk_shape))
        if len(chunk_shape) != len(shape):
            raise BuilderError(
                f"array {path!r}: chunk shape {chunk_shape} does not match shape {shape}"
            )
        if any(s < 0 for s in shape):
            raise BuilderError(f"array {path!r}: negative shape {shape}")
        if any(c <= 0 for c in chunk_shape):
            raise BuilderError(f"array {path!r}: chunk sizes must be positive, got {chunk_shape}")
        if dimension_names is not None and len(dimension_names) != len(shape):
            raise BuilderError(
                f"array {path!r}: {len(dimension_names)} dimension names for {len(shape)} axes"
            )
        dtype: Any = (
            data_type
            if isinstance(data_type, str) and data_type in ("string", VLEN_BYTES)
            else np.dtype(data_type)
        )
        json_type, json_fill = zarr_data_type(dtype, fill_value)
        self._order.append(path)
        self._arrays[path] = ArrayDraft(
            shape=shape,
            chunk_shape=chunk_shape,
            data_type=json_type,
            fill_value=json_fill,
            codecs=list(codecs) if codecs is not None else default_codecs(dtype),
            attributes=dict(attributes or {}),
            dimension_names=list(dimension_names) if dimension_names is not None else None,
        )

    def set_attributes(self, path: str, attributes: Mapping[str, Any]) -> None:
        """Replace the attributes of a group or array added before."""
        path = _node_path(path)
        if path in self._groups:
            self._groups[path] = dict(attributes)
        else:
            self._array(path).attributes = dict(attributes)

    # -- chunks ----------------------------------------------------------------------------
    def add_chunk(self, path: str, coords: Sequence[int], url: str, offset: int, size: int) -> None:
        """One chunk stored at ``size`` bytes from ``offset`` of ``url``."""
        array = self._array(path)
        self._check_coords(path, array, coords)
        url = recorded_location(url)
        try:
            array.put(tuple(int(c) for c in coords), FileRef(url, int(offset), int(size)))
        except ReferenceFormatError as exc:
            raise BuilderError(f"array {path!r}, chunk {tuple(coords)}: {exc}") from exc

    def add_chunks(
        self,
        path: str,
        coords: np.ndarray | Sequence[Sequence[int]],
        url: str,
        offsets: np.ndarray | Sequence[int],
        sizes: np.ndarray | Sequence[int],
    ) -> None:
        """Many chunks of one file at once: ``coords`` (n, rank), ``offsets`` and ``sizes``
        (n,). The same as `add_chunk` for each row, in order, checked as whole columns, so a
        generator listing 100,000s of chunks pays no Python work per chunk until the build."""
        array = self._array(path)
        url = recorded_location(url)
        grid = np.asarray(array.grid, dtype=np.int64)
        table = np.asarray(coords, dtype=np.int64).reshape(-1, len(grid))
        starts = np.asarray(offsets)
        lengths = np.asarray(sizes)
        if starts.shape != (len(table),) or lengths.shape != (len(table),):
            raise BuilderError(
                f"array {path!r}: {len(table)} chunk coordinates but offsets of shape "
                f"{starts.shape} and sizes of shape {lengths.shape}"
            )
        if not len(table):
            return
        outside = ((table < 0) | (table >= grid)).any(axis=1)
        if outside.any():
            first = tuple(table[int(np.argmax(outside))].tolist())
            raise BuilderError(
                f"array {path!r}: chunk {first} is outside the chunk grid {tuple(array.grid)}"
            )
        for name, column in (("offset", starts), ("size", lengths)):
            if column.dtype.kind not in "iu":
                raise BuilderError(
                    f"array {path!r}: chunk {name}s must be integers, got {column.dtype}"
                )
            if column.dtype.kind == "i" and (column < 0).any():
                row = int(np.argmax(column < 0))
                raise BuilderError(
                    f"array {path!r}, chunk {tuple(table[row].tolist())}: reference to {url!r} "
                    f"has a negative offset or size ({int(starts[row])}, {int(lengths[row])})"
                )
        array.segments.append(ChunkBlock(table, url, starts, lengths))

    def add_inline_chunk(self, path: str, coords: Sequence[int], data: bytes) -> None:
        """A chunk held in the references themselves (already encoded by the array's codecs)."""
        array = self._array(path)
        self._check_coords(path, array, coords)
        array.put(tuple(int(c) for c in coords), InlineRef(bytes(data)))

    def add_index(self, path: str, url: str, table: np.ndarray) -> None:
        """All chunks of a large array in one file: ``table`` is uint64, grid shape + (2,),
        holding (offset, nbytes), 2**64-1 where a chunk was never written."""
        array = self._array(path)
        table = np.asarray(table)
        if table.dtype != np.uint64 or table.shape != (*array.grid, 2):
            raise BuilderError(
                f"array {path!r}: the chunk manifest must be uint64 of shape "
                f"{(*array.grid, 2)}, got "
                f"{table.dtype} {table.shape}"
            )
        self._indexes[_node_path(path)] = IndexRef(url=recorded_location(url), table=table)

    def add_strided_chunks(
        self,
        path: str,
        *,
        url: str,
        start: int,
        stride: int,
        length: int,
        count: int,
        ndim: int | None = None,
        axis: int = 0,
    ) -> None:
        """``count`` chunks along ``axis`` (other chunk coordinates 0), chunk ``i`` at
        ``start + i * stride``, ``length`` bytes each: one gen entry."""
        array = self._array(path)
        ndim = len(array.shape) if ndim is None else ndim
        if ndim != len(array.shape):
            raise BuilderError(f"array {path!r} has {len(array.shape)} axes, not {ndim}")
        if min(start, stride, length, count) < 0 or (count > 0 and length <= 0):
            raise BuilderError(f"array {path!r}: negative start, stride, length or count")
        if count > (array.grid[axis] if array.grid else 1):
            raise BuilderError(
                f"array {path!r}: {count} chunks along axis {axis} exceed the grid {array.grid}"
            )
        coords = ["0"] * ndim
        coords[axis] = "{{i}}"
        key = join(_node_path(path), "/".join(["c", *coords]))
        offset = f"{{{{{start} + i * {stride}}}}}"
        entry = GenEntry(
            key, recorded_location(url), offset, str(length), {"i": Dimension(stop=count)}
        )
        self._gen.append((_node_path(path), entry))

    def add_gen_entry(self, path: str, entry: GenEntry) -> None:
        """A gen entry of any shape (several axes, lists of values); its keys are checked against
        the chunk grid when the builder builds."""
        self._array(path)
        if not entry.key.startswith(join(_node_path(path), "c/")):
            raise BuilderError(
                f"array {path!r}: gen key {entry.key!r} is not one of its chunk keys"
            )
        if recorded_location(entry.url) != entry.url:
            entry = GenEntry.from_json(entry.to_json(url=recorded_location(entry.url)), {})
        self._gen.append((_node_path(path), entry))

    def add_contiguous_chunks(
        self,
        path: str,
        *,
        url: str,
        start: int,
        shape: Sequence[int],
        chunk_shape: Sequence[int],
        itemsize: int,
        row_bytes: int | None = None,
    ) -> None:
        """A C-ordered block of ``shape`` at ``start``, cut into slabs along the first axis.

        ``row_bytes`` is the stored size of one row (first-axis index) when rows are records
        holding other bytes too; the array's selection then says which bytes to keep. A short
        last slab references only the rows there are (the reader pads the rest), never bytes
        past the block, which may lie past the end of the file.
        """
        shape = tuple(int(s) for s in shape)
        chunk_shape = tuple(int(c) for c in chunk_shape)
        if shape[1:] != chunk_shape[1:]:
            raise BuilderError(
                f"array {path!r}: contiguous chunks must span every axis but the first"
            )
        row = math.prod(shape[1:]) * itemsize if row_bytes is None else int(row_bytes)
        slab = chunk_shape[0] * row
        count = math.ceil(shape[0] / chunk_shape[0]) if shape and chunk_shape[0] else 1
        if not shape:
            self.add_chunk(path, (), url, start, itemsize if row_bytes is None else row)
            return
        last_rows = shape[0] - (count - 1) * chunk_shape[0]
        last = (0,) * len(shape)
        if count == 1:
            self.add_chunk(path, last, url, start, last_rows * row)
            return
        whole = count if last_rows == chunk_shape[0] else count - 1
        if whole == 1:
            self.add_chunk(path, last, url, start, slab)
        else:
            self.add_strided_chunks(
                path, url=url, start=start, stride=slab, length=slab, count=whole
            )
        if whole < count:
            self.add_chunk(
                path, (count - 1, *last[1:]), url, start + (count - 1) * slab, last_rows * row
            )

    def add_selection(self, path: str, record_size: int, keep: Sequence[Sequence[int]]) -> None:
        """Read every reference of ``path`` as records and keep only the ``keep`` byte ranges."""
        self._array(path)
        try:
            selection = Selection(int(record_size), tuple((int(a), int(b)) for a, b in keep))
        except ReferenceFormatError as exc:
            raise BuilderError(f"array {path!r}: {exc}") from exc
        self._selections[_node_path(path)] = selection

    def discard(self, path: str) -> None:
        """Forget an array added before, with its chunks, gen entries, index and selection
        (a generator that finds it cannot finish an array it started)."""
        path = _node_path(path)
        if path in self._arrays:
            self._order.remove(path)
        self._arrays.pop(path, None)
        self._indexes.pop(path, None)
        self._selections.pop(path, None)
        self._gen = [(p, entry) for p, entry in self._gen if p != path]

    def record_unsupported(self, path: str, outcome: UnsupportedOutcome, reason: str) -> None:
        """Note that the source's dataset at ``path`` was omitted or inlined, and why."""
        self._unsupported[_node_path(path)] = UnsupportedDataset(outcome, reason)

    def add_source(
        self,
        url: str,
        *,
        size: int | None = None,
        etag: str | None = None,
        mtime_ns: int | None = None,
        sample_hash: str | None = None,
    ) -> None:
        """Record what a source file looks like now, so readers can detect a change (an
        ``etag`` must be one a reference may record: `shadowzarr_spec.etags`)."""
        url = recorded_location(url)
        if etag is not None and not is_entity_tag(etag):
            raise BuilderError(f"source {url!r}: {etag[:120]!r} is not a usable ETag")
        self._sources[url] = SourceInfo(size, etag, mtime_ns, sample_hash)

    def has_source(self, url: str) -> bool:
        """Whether a source has been recorded for ``url``."""
        return recorded_location(url) in self._sources

    # -- build -----------------------------------------------------------------------------
    def build(self, *, consolidate: bool = True) -> ReferenceFileSystem:
        """Validate and return the reference file system."""
        self._add_missing_parents()
        refs: dict[str, Ref] = {}
        columns: dict[str, ChunkColumns] = {}
        runs: list[tuple[str | None, int, int]] = []  # order of the keys, as ListedRefs keeps it
        documents: dict[str, dict[str, Any]] = {}
        for path, attributes in self._groups.items():
            documents[path] = group_metadata(encode_attributes(attributes))
        gen_by_path: dict[str, list[GenEntry]] = {}
        for gen_path, entry in self._gen:
            gen_by_path.setdefault(gen_path, []).append(entry)
        for path, array in self._arrays.items():
            gen = gen_by_path.get(path, ())
            validate_array(path, array, gen, self._selections.get(path))
            check_file_ends(path, array, gen, self._sources, self._indexes.get(path))
            documents[path] = array_metadata(
                shape=array.shape,
                data_type=array.data_type,
                chunk_shape=array.chunk_shape,
                fill_value=array.fill_value,
                codecs=array.codecs,
                attributes=encode_attributes(array.attributes),
                dimension_names=array.dimension_names,
            )
            held = as_columns(path, array)
            if held is not None:
                columns[path] = held
                runs.append((path, 0, len(held)))
                continue
            before = len(refs)
            for segment in array.segments:
                if isinstance(segment, ChunkBlock):
                    refs.update(segment.refs(path))
                else:
                    for coords, ref in segment.items():
                        refs[chunk_key(path, coords)] = ref
            note_dict_run(runs, len(refs) - before)
        if consolidate and "" in documents:
            order = [p for p in dict.fromkeys([*self._order, *documents]) if p in documents]
            documents[""] = {
                **documents[""],
                "consolidated_metadata": _consolidated(documents, order),
            }
        before = len(refs)
        for path, document in documents.items():
            refs[metadata_key(path)] = InlineRef(dumps_strict(document).encode("utf-8"))
        note_dict_run(runs, len(refs) - before)
        for path, _entry in self._gen:
            self._array(path)
        rfs = ReferenceFileSystem(
            refs=ListedRefs(refs, columns, runs) if columns else refs,
            gen=[entry for _, entry in self._gen],
            indexes=dict(self._indexes),
            selections=dict(self._selections),
            sources=dict(self._sources),
            unsupported=dict(self._unsupported),
        )
        rfs.version = rfs.required_version
        return rfs

    # -- helpers ---------------------------------------------------------------------------
    def _array(self, path: str) -> ArrayDraft:
        try:
            return self._arrays[_node_path(path)]
        except KeyError:
            raise BuilderError(f"no array {path!r}: call add_array first") from None

    def _check_free(self, path: str) -> None:
        if path in self._groups or path in self._arrays:
            raise BuilderError(f"{path!r} was added already")

    @staticmethod
    def _check_coords(path: str, array: ArrayDraft, coords: Sequence[int]) -> None:
        grid = array.grid
        if len(coords) != len(grid) or any(
            not 0 <= int(c) < g for c, g in zip(coords, grid, strict=False)
        ):
            raise BuilderError(
                f"array {path!r}: chunk {tuple(coords)} is outside the chunk grid {grid}"
            )

    def _add_missing_parents(self) -> None:
        for path in [*self._groups, *self._arrays]:
            parts = path.split("/") if path else []
            for depth in range(len(parts)):
                parent = "/".join(parts[:depth])
                if parent in self._arrays:
                    raise BuilderError(f"{path!r} lies inside the array {parent!r}")
                self._groups.setdefault(parent, {})


def columns_selection(
    n_columns: int, itemsize: int, columns: slice | Sequence[int]
) -> tuple[int, list[list[int]]]:
    """(record_size, keep) selecting ``columns`` of rows of ``n_columns`` items, in that order,
    with neighbouring columns joined into one range."""
    indices = (
        list(range(n_columns))[columns] if isinstance(columns, slice) else [int(c) for c in columns]
    )
    if not indices:
        raise BuilderError("columns_selection needs at least one column")
    for column in indices:
        if not 0 <= column < n_columns:
            raise BuilderError(f"column {column} is outside 0..{n_columns - 1}")
    keep: list[list[int]] = []
    for column in indices:
        start = column * itemsize
        if keep and keep[-1][1] == start:
            keep[-1][1] = start + itemsize
        else:
            keep.append([start, start + itemsize])
    return n_columns * itemsize, keep


def _node_path(path: str) -> str:
    path = path.strip("/")
    if path:
        check_key(path)
    return path


def _consolidated(documents: dict[str, dict[str, Any]], order: list[str]) -> dict[str, Any]:
    """Consolidated metadata listing the nodes in the order they were added: zarr-python lists
    a group's members in this order (an HDF5 group tracking creation order keeps it)."""
    metadata = {}
    for path in order:
        document = documents[path]
        if not path:
            continue
        if document["node_type"] == "group":
            document = {
                **document,
                "consolidated_metadata": {
                    "kind": "inline",
                    "must_understand": False,
                    "metadata": {},
                },
            }
        metadata[path] = document
    return {"kind": "inline", "must_understand": False, "metadata": metadata}
