"""The one place that turns a key and a byte range into physical reads of source files.

A key's *logical* value is what zarr decodes: the referenced bytes, with a selection's records
reduced to the kept bytes and a short uncompressed chunk padded with the fill value. A byte range
of that logical value maps back to whole records of the source, so a partial read fetches only
the records that hold the bytes asked for.

Padding fills only what a reference leaves short of a chunk where every element left out lies
outside the array (`shadowzarr_spec.short_chunks`): a shorter chunk, a longer one, a reference
running past the recorded end of its file and a source answering fewer bytes than a reference
holds are errors, never fill values (the package README of shadowzarr-spec has the rule).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import (
    MISSING_CHUNK,
    ChunkDecodeError,
    FileRef,
    InlineRef,
    ReferenceFileSystem,
    ReferenceFormatError,
    Selection,
    SourceError,
    array_info,
)
from shadowzarr_spec.keys import array_of_chunk_key, chunk_key
from shadowzarr_spec.listed_refs import ChunkColumns, ListedRefs
from shadowzarr_spec.short_chunks import bytes_needed, stored_order
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.dtype import get_data_type_from_json

if TYPE_CHECKING:
    from shadowzarr_spec import ArrayInfo
    from shadowzarr_spec.keys import ParsedKey
    from zarr.abc.store import ByteRequest

    from shadowzarr_store.manifests import ManifestReader

__all__ = [
    "ChunkLayout",
    "ReadPlan",
    "Resolver",
    "SourceValue",
    "byte_window",
    "fill_element",
    "finish_inline",
    "finish_whole",
    "listed_table",
    "plan_read",
    "plan_value",
]


@dataclass(frozen=True, slots=True)
class ChunkLayout:
    """How the stored bytes of one array's chunks become the bytes zarr decodes."""

    chunk_nbytes: int | None
    """Full size of an uncompressed chunk, the padding target; None when chunks are encoded."""
    fill: bytes
    """One element of the fill value in stored byte order (empty without padding)."""
    selection: Selection | None
    shape: tuple[int, ...] = ()
    chunk_shape: tuple[int, ...] = ()
    order: tuple[int, ...] = ()
    """The array's axes in the order a chunk stores them (its ``transpose`` codecs)."""

    def check_length(self, length: int, key: str, where: str, coords: tuple[int, ...]) -> None:
        """Refuse ``length`` logical bytes for uncompressed chunk ``key`` (at ``coords``) unless
        it is the whole chunk or leaves out only elements outside the array
        (`ChunkDecodeError`)."""
        full = self.chunk_nbytes
        if full is None or length == full:
            return
        if length > full:
            raise ChunkDecodeError(
                f"{where}: {_array_and_key(key)} holds {length} bytes, more than the {full} "
                "bytes of a chunk"
            )
        itemsize = len(self.fill)
        need = bytes_needed(self.shape, self.chunk_shape, self.order, itemsize, coords)
        if length < need:
            raise ChunkDecodeError(
                f"{where}: {_array_and_key(key)} holds {length} bytes of an uncompressed chunk "
                f"of {full}; its elements inside the array need {need} (a chunk may be short "
                "only by elements outside the array)"
            )


def _coords_of(key: str) -> tuple[int, ...]:
    """The coordinates of chunk ``key`` (none for another key), for callers that have not
    parsed it."""
    split = array_of_chunk_key(key)
    return () if split is None else split[1]


def _array_and_key(key: str) -> str:
    split = array_of_chunk_key(key)
    return f"chunk {key!r}" if split is None else f"chunk {key!r} of array {split[0]!r}"


@dataclass(frozen=True, slots=True)
class SourceValue:
    """A key whose value lives in a source file."""

    key: str
    url: str
    offset: int | None
    size: int | None
    layout: ChunkLayout | None
    file_size: int | None = None
    """The size the references record for the file, if any: the only proof of a short file."""


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """How one read of a key is answered: which physical bytes of ``url`` (``[start, end)``;
    the whole file when ``whole_file``; none when ``inline`` holds the value) and how they
    become the logical bytes zarr decodes. ``logical_start``, ``want``, ``data_want`` and
    ``skip`` place a ranged read; a value read whole is cut to ``byte_range`` once read."""

    key: str
    url: str
    """The source read; ``"inline reference"`` for a value held in the references."""
    start: int
    end: int
    logical_start: int
    want: int
    data_want: int
    skip: int
    layout: ChunkLayout | None
    chunk_offset: int = 0
    """Where the key's reference starts in the file."""
    file_size: int | None = None
    byte_range: ByteRequest | None = None
    """The part of the logical value asked for (None: all of it)."""
    inline: bytes | None = None
    """The value itself, when the references hold it: nothing is read."""
    whole_file: bool = False
    """The whole of ``url``, whose length is known only once it is read (``start, end`` are
    ``0, -1``, as the caches name a whole file)."""
    coords: tuple[int, ...] = ()
    """The chunk's coordinates (a short uncompressed chunk is checked by them)."""
    stored_size: int | None = None
    """The bytes the reference holds, held against its array's bound before anything is read
    (None: unknown, or not comparable: a selection or a padded uncompressed chunk)."""
    identity: object = None
    """Names the stored bytes of a ranged reference (a shard checked once is not checked
    again); None for an inline value or a whole file (their bytes name themselves)."""
    value: InlineRef | SourceValue | None = None
    """The reference planned (a partial read of a shard plans the whole value too)."""

    @property
    def partial(self) -> bool:
        """Whether only part of the value is asked for (zarr then decodes nothing of it, but
        for a shard's inner chunks)."""
        return self.byte_range is not None

    @property
    def reads_nothing(self) -> bool:
        """True when every byte asked for is padding the reference itself proves."""
        return self.inline is None and not self.whole_file and self.end <= self.start

    def whole(self) -> ReadPlan:
        """The plan of the whole value (a shard is checked whole before a partial read)."""
        if self.byte_range is None or self.value is None:
            return self
        return plan_value(self.key, self.value, None, self.layout, self.coords)

    def assemble(self, raw: bytes | memoryview) -> bytes | memoryview:
        """Logical bytes from what the source returned, padded where the reference is shorter
        than the chunk (`plan_read` has checked it may be); a source answering fewer bytes
        than the reference holds is a `SourceError`, never padding."""
        if self.inline is not None or self.whole_file:
            return _finish(self.key, self.url, self.layout, raw, self.byte_range, self.coords)
        selection = self.layout.selection if self.layout is not None else None
        data: bytes | memoryview = selection.apply(raw) if selection is not None else raw
        data = data[self.skip : self.skip + self.data_want]
        if len(data) == self.want:
            return data
        if len(data) < self.data_want:
            why = (
                "the file is shorter than its recorded size"
                if self.file_size is not None
                else "no size is recorded for the file, and a short file cannot be told from "
                "a fault"
            )
            raise SourceError(
                f"{self.url}: bytes {self.start}-{self.end - 1} for {self.key!r} returned "
                f"{len(raw)} bytes, fewer than the reference holds; {why}"
            )
        assert self.layout is not None
        padding = fill_pattern(
            self.layout.fill, self.logical_start + len(data), self.want - len(data)
        )
        return bytes(data) + padding

    def complete(self, raw: bytes | memoryview) -> bool:
        """Whether ``raw`` is every byte of ``[start, end)`` (safe to cache)."""
        return self.whole_file or len(raw) == self.end - self.start


def fill_pattern(fill: bytes, position: int, count: int) -> bytes:
    """``count`` fill bytes as they appear from logical byte ``position`` of a chunk on."""
    if count <= 0:
        return b""
    if not fill:
        return bytes(count)
    phase = position % len(fill)
    repeats = (phase + count) // len(fill) + 1
    return (fill * repeats)[phase : phase + count]


def byte_window(byte_range: ByteRequest | None, length: int) -> tuple[int, int]:
    """``[start, end)`` of a value of ``length`` bytes, clipped like zarr's MemoryStore."""
    match byte_range:
        case None:
            return 0, length
        case RangeByteRequest(start=start, end=end):
            start = min(max(start, 0), length)
            return start, min(max(end, start), length)
        case OffsetByteRequest(offset=offset):
            return min(max(offset, 0), length), length
        case SuffixByteRequest(suffix=suffix):
            return max(length - max(suffix, 0), 0), length
        case _:
            raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


def plan_value(
    key: str,
    value: InlineRef | SourceValue,
    byte_range: ByteRequest | None,
    layout: ChunkLayout | None,
    coords: tuple[int, ...],
) -> ReadPlan:
    """The plan of any reference of chunk ``key`` at ``coords``: held inline (``layout``: its
    array's), a whole file of unknown size, or a range of a file (`plan_read`)."""
    if isinstance(value, InlineRef):
        # No selection: an inline value holds the chunk's own bytes (``add_inline_chunk``).
        plain = (
            None
            if layout is None or layout.chunk_nbytes is None
            else dataclasses.replace(layout, selection=None)
        )
        inline = bytes(value.data)
        return _read_whole(key, "inline reference", plain, byte_range, coords, value, inline)
    if value.offset is None:
        return _read_whole(key, value.url, value.layout, byte_range, coords, value)
    return _plan_range(value, byte_range, coords)


def _read_whole(
    key: str,
    url: str,
    layout: ChunkLayout | None,
    byte_range: ByteRequest | None,
    coords: tuple[int, ...],
    value: InlineRef | SourceValue,
    inline: bytes | None = None,
) -> ReadPlan:
    """The plan of a value whose every byte is read (or held) before any is used: an inline
    value, a whole file of unknown size."""
    return ReadPlan(
        key=key,
        url=url,
        start=0,
        end=-1 if inline is None else len(inline),
        logical_start=0,
        want=0,
        data_want=0,
        skip=0,
        layout=layout,
        file_size=value.file_size if isinstance(value, SourceValue) else None,
        byte_range=byte_range,
        inline=inline,
        whole_file=inline is None,
        coords=coords,
        stored_size=None if inline is None else len(inline),
        value=value,
    )


def plan_read(
    value: SourceValue, byte_range: ByteRequest | None, coords: tuple[int, ...] | None = None
) -> ReadPlan:
    """Which physical bytes answer ``byte_range`` of a ranged value (offset and size known;
    ``coords``: its chunk's, read from its key when not given)."""
    return _plan_range(value, byte_range, _coords_of(value.key) if coords is None else coords)


def _plan_range(
    value: SourceValue, byte_range: ByteRequest | None, coords: tuple[int, ...]
) -> ReadPlan:
    assert value.offset is not None
    assert value.size is not None
    layout = value.layout
    selection = layout.selection if layout is not None else None
    record, kept = (selection.record_size, selection.kept_size) if selection else (1, 1)
    if value.file_size is not None and value.offset + value.size > value.file_size:
        raise SourceError(
            f"{value.url}: the reference of {value.key!r} (bytes {value.offset} to "
            f"{value.offset + value.size}) runs past the end of the file ({value.file_size} "
            "bytes recorded); the references do not match the file"
        )
    data_len = (value.size // record) * kept
    length = data_len
    if layout is not None and layout.chunk_nbytes is not None:
        layout.check_length(data_len, value.key, value.url, coords)
        length = layout.chunk_nbytes
    start, end = byte_window(byte_range, length)
    data_end = min(end, data_len)
    if start < data_end:
        first, last = start // kept, math.ceil(data_end / kept)
        physical = (value.offset + first * record, value.offset + last * record)
        skip = start - first * kept
    else:
        physical, skip = (value.offset, value.offset), 0
    return ReadPlan(
        key=value.key,
        url=value.url,
        start=physical[0],
        end=physical[1],
        logical_start=start,
        want=end - start,
        data_want=max(data_end - start, 0),
        skip=skip,
        layout=layout,
        chunk_offset=value.offset,
        file_size=value.file_size,
        byte_range=byte_range,
        coords=coords,
        stored_size=value.size if layout is None else None,
        identity=(value.url, value.offset, value.size),
        value=value,
    )


def _finish(
    key: str,
    where: str,
    layout: ChunkLayout | None,
    raw: bytes | memoryview,
    byte_range: ByteRequest | None,
    coords: tuple[int, ...],
) -> bytes | memoryview:
    """The logical bytes of a value read whole (a whole file, an inline value)."""
    data: bytes | memoryview = raw
    if layout is not None and layout.selection is not None:
        data = layout.selection.apply(raw)
    if layout is not None and layout.chunk_nbytes is not None:
        layout.check_length(len(data), key, where, coords)
        data = bytes(data) + fill_pattern(layout.fill, len(data), layout.chunk_nbytes - len(data))
    start, end = byte_window(byte_range, len(data))
    return data[start:end]


def finish_whole(
    value: SourceValue, raw: bytes | memoryview, byte_range: ByteRequest | None
) -> bytes | memoryview:
    """The logical bytes of a whole-file reference, given the whole file."""
    return _finish(value.key, value.url, value.layout, raw, byte_range, _coords_of(value.key))


def finish_inline(
    key: str, layout: ChunkLayout | None, inline: bytes, byte_range: ByteRequest | None
) -> bytes | memoryview:
    """The logical bytes of an inline value: a short uncompressed chunk padded like a file's."""
    plan = plan_value(key, InlineRef(inline), byte_range, layout, _coords_of(key))
    return plan.assemble(inline)


def chunk_layout(info: ArrayInfo, selection: Selection | None) -> ChunkLayout | None:
    """The layout of an array's chunks, or None when they are passed through untouched."""
    chunk_nbytes: int | None = None
    fill = b""
    if info.uncompressed:
        element = fill_element(info)
        if element is not None:
            fill = element
            chunk_nbytes = math.prod(info.chunk_shape) * len(element)
    if chunk_nbytes is None and selection is None:
        return None
    order = stored_order(info.codecs, len(info.shape))
    return ChunkLayout(chunk_nbytes, fill, selection, info.shape, info.chunk_shape, order)


def fill_element(info: ArrayInfo) -> bytes | None:
    """One fill-value element in stored byte order, by zarr's own dtype rules; None if variable."""
    try:
        dtype = get_data_type_from_json(info.data_type, zarr_format=3)
        native = dtype.to_native_dtype()
        if native.itemsize == 0 or native.hasobject:
            return None
        scalar = dtype.from_json_scalar(info.fill_value, zarr_format=3)
        endian = "little"
        for codec in info.codecs:
            if isinstance(codec, dict) and codec.get("name") == "bytes":
                endian = (codec.get("configuration") or {}).get("endian") or "little"
        stored = native.newbyteorder("<" if endian == "little" else ">")
        return np.array(scalar, dtype=stored).tobytes()
    except (ValueError, TypeError, KeyError, OverflowError, AttributeError) as exc:
        raise ChunkDecodeError(
            f"array {info.path!r}: cannot compute the fill value {info.fill_value!r} of "
            f"{info.data_type!r}: {exc}"
        ) from exc


def listed_table(rfs: ReferenceFileSystem, path: str) -> ChunkColumns | None:
    """`Resolver.listed_table`, not kept (it scans the keys that are not in columns)."""
    refs = rfs.refs
    if (
        not isinstance(refs, ListedRefs)
        or rfs.gen
        or path not in refs.columns
        or path in rfs.indexes
        or path in rfs.selections
    ):
        return None
    found = refs.only_columns(path)
    return found if found is not None and len(found.urls) == 1 else None


class Resolver:
    """Key → reference, in the order refs, gen, chunk manifest; never expands gen or indexes."""

    def __init__(self, rfs: ReferenceFileSystem, indexes: ManifestReader | None) -> None:
        self._rfs = rfs
        self._indexes = indexes
        self._layouts: dict[str, ChunkLayout | None] = {}
        self._only: dict[str, tuple[ChunkColumns, ChunkColumns | None]] = {}
        """Array path -> (its columns, `ListedRefs.only_columns`), kept while refs hold them."""
        self._lock = threading.Lock()

    def listed_table(self, path: str) -> ChunkColumns | None:
        """The columns that hold every chunk reference of array ``path`` (a version-1 file's
        listed chunks, `ListedRefs`), all into one file, with no gen entry, chunk manifest or
        selection to override or change one; None otherwise. Such an array reads like one with
        a chunk manifest: `entries` picks its chunks out with numpy, no object per chunk."""
        columns = self._columns_of(path)
        if columns is None or len(columns.urls) != 1 or self._rfs.gen:
            return None
        return None if path in self._rfs.indexes or path in self._rfs.selections else columns

    async def entries(self, path: str, points: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
        """(url, offsets, sizes) of chunks ``points`` ((n, ndim) coordinates) of an array whose
        chunk references are one table of entries: its `listed_table`, else its chunk manifest.
        Offsets and sizes are uint64 arrays, both `MISSING_CHUNK` for a chunk not there."""
        columns = self.listed_table(path)
        if columns is None:
            assert self._indexes is not None
            offsets, sizes = await self._indexes.entries(path, points)
            return self._rfs.indexes[path].url, offsets, sizes
        rows = columns.rows_of(points)
        found = rows >= 0
        offsets = np.full(len(rows), MISSING_CHUNK, dtype=np.uint64)
        sizes = offsets.copy()
        held = rows[found]
        offsets[found] = columns.offsets[held]
        sizes[found] = columns.sizes[held]
        return columns.urls[0], offsets, sizes

    def find(self, key: str) -> InlineRef | FileRef | None:
        """The reference of ``key`` from refs or gen (no I/O); None if neither holds it."""
        ref = self._rfs.refs.get(key)
        if ref is not None:
            return ref
        for entry in self._rfs.gen:
            found = entry.lookup(key)
            if found is not None:
                return found
        return None

    async def resolve(self, key: str) -> InlineRef | SourceValue | None:
        ref = self.find(key)
        if ref is None and self._rfs.indexes and self._indexes is not None:
            split = array_of_chunk_key(key)
            if split is not None and split[0] in self._rfs.indexes:
                ref = await self._indexes.lookup(split[0], split[1])
        return self._value(key, ref)

    async def resolve_chunks(
        self, path: str, chunks: list[tuple[int, ...] | None]
    ) -> tuple[list[str | None], list[InlineRef | SourceValue | None]]:
        """The keys and `resolve` of many chunks of array ``path`` (None: no chunk), the chunk
        manifest read once for all of them."""
        prefix = chunk_key(path, ()) + "/"
        keys = [None if c is None else prefix + "/".join(map(str, c)) for c in chunks]
        refs = self._listed_refs(path, chunks, keys)
        if path in self._rfs.indexes and self._indexes is not None:
            wanted = [i for i, (c, r) in enumerate(zip(chunks, refs, strict=True)) if c and not r]
            coords = [chunks[i] or () for i in wanted]
            for i, ref in zip(wanted, await self._indexes.lookup_many(path, coords), strict=True):
                refs[i] = ref
        layout = self.layout_of_key(chunk_key(path, (0,) * len(next(c for c in chunks if c))))
        return keys, [
            None if k is None else self._value(k, r, layout)
            for k, r in zip(keys, refs, strict=True)
        ]

    def _listed_refs(
        self, path: str, chunks: list[tuple[int, ...] | None], keys: list[str | None]
    ) -> list[InlineRef | FileRef | None]:
        """`find` of each of ``keys``: from the columns of ``path`` at once (rows picked with
        numpy, no key parsed) when no other refs key lies under its chunks, else key by key."""
        columns = self._columns_of(path)
        if columns is None:
            return [None if k is None else self.find(k) for k in keys]
        found: list[InlineRef | FileRef | None] = [None] * len(keys)
        wanted = [i for i, c in enumerate(chunks) if c is not None]
        points = np.array([chunks[i] for i in wanted], dtype=np.int64)
        for i, row in zip(wanted, columns.rows_of(points).tolist(), strict=True):
            if row >= 0:
                found[i] = columns.ref(row)
            elif self._rfs.gen:  # a chunk not listed may be a gen entry's
                found[i] = self.find(keys[i])  # type: ignore[arg-type]
        return found

    def _columns_of(self, path: str) -> ChunkColumns | None:
        """`ListedRefs.only_columns` of ``path``, kept (None when refs are a plain dict)."""
        refs = self._rfs.refs
        if not isinstance(refs, ListedRefs):
            return None
        held = refs.columns.get(path)
        if held is None:
            return None
        with self._lock:
            kept = self._only.get(path)
        if kept is not None and kept[0] is held:
            return kept[1]
        found = refs.only_columns(path)
        with self._lock:
            self._only[path] = (held, found)
        return found

    def _value(
        self, key: str, ref: InlineRef | FileRef | None, layout: object = None
    ) -> InlineRef | SourceValue | None:
        if ref is None or isinstance(ref, InlineRef):
            return ref
        offset, size = ref.offset, ref.size
        if size == 0:
            if offset == 0:
                return None  # [url, 0, 0]: a missing chunk (as VirtualiZarr writes them)
            raise ReferenceFormatError(
                f"the reference of {key!r} holds 0 bytes at offset {offset} of {ref.url}: only "
                "[url, 0, 0] (a missing chunk) may be empty"
            )
        recorded = self._rfs.sources.get(ref.url)
        if offset is None and recorded is not None and recorded.size is not None:
            # A whole file of known size is a range like any other: partial reads stay partial.
            offset, size = 0, recorded.size
        file_size = recorded.size if recorded is not None else None
        shown = self.layout_of_key(key) if layout is None else layout
        return SourceValue(key, ref.url, offset, size, shown, file_size)  # type: ignore[arg-type]

    def plan(
        self, parsed: ParsedKey, value: InlineRef | SourceValue, byte_range: ByteRequest | None
    ) -> ReadPlan:
        """How ``byte_range`` of key ``parsed``, resolved to ``value``, is read."""
        layout = None
        if parsed.array is not None and isinstance(value, InlineRef):
            layout = self.layout_of_array(parsed.array)  # a source value carries its own
        return plan_value(parsed.key, value, byte_range, layout, parsed.coords)

    def layout_of_key(self, key: str) -> ChunkLayout | None:
        split = array_of_chunk_key(key)
        return None if split is None else self.layout_of_array(split[0])

    def layout_of_array(self, path: str) -> ChunkLayout | None:
        """How the stored bytes of array ``path``'s chunks become what zarr decodes."""
        with self._lock:
            if path in self._layouts:
                return self._layouts[path]
        info = array_info(self._rfs, path)
        layout = None if info is None else chunk_layout(info, self._rfs.selections.get(path))
        with self._lock:
            self._layouts[path] = layout
        return layout
