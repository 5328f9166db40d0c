"""Reading a shard of the grouped view: its synthesized index, then the stored chunks it shows,
each read through the store's own path (`StoredReads`) or, for packs, straight from the chunk
manifest (`read_runs`), all at once so the merger can join them."""

from __future__ import annotations

import asyncio
import bisect
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from shadowzarr_spec import ChunkDecodeError, ReferenceFormatError, ShadowzarrError, array_info
from shadowzarr_spec.keys import array_of_chunk_key, chunk_key, join
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store.merge import gathered_reads
from shadowzarr_store.resolve import byte_window, fill_element, fill_pattern
from shadowzarr_store.transport.prefault import populate
from shadowzarr_store.views.narrow_ranges import is_narrow, plan_narrow
from shadowzarr_store.views.packed_reads import read_runs

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from shadowzarr_spec import ReferenceFileSystem
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.metadata_gate import MetadataGate
    from shadowzarr_store.missing_codecs import MissingCodecs
    from shadowzarr_store.source_reader import SourceReader
    from shadowzarr_store.stored_reads import StoredReads
    from shadowzarr_store.views.grouped import GroupedView, GroupLayout, ShardIndex
    from shadowzarr_store.views.shard_indexes import Group, ShardIndexes

__all__ = ["GroupedReads", "pack_kind"]

_THREAD_PACKING_BYTES = 1024 * 1024
"""Packs of at least this many bytes are rearranged in a worker thread."""


def pack_kind(
    path: str, index_only: bool, gate: MetadataGate, missing_codecs: MissingCodecs
) -> str | None:
    """How the grouped view may pack the stored chunks of ``path`` (see `GroupedView`):
    only arrays read straight from one chunk manifest (``index_only``), whose one array codec is
    ``bytes``; ``"plain"`` without byte codecs, ``"decoded"`` with byte codecs of bounded
    output."""
    if not index_only:
        return None
    try:
        checks = gate.array(path)
    except ShadowzarrError:
        return None  # refused: its chunks are refused as stored
    if (
        checks is None
        or checks.shards is not None
        or checks.filters
        or checks.serializer_name != "bytes"
    ):
        return None
    if not checks.layers:
        return "plain"
    if checks.stored_bound is None or missing_codecs.refuses(path):
        return None
    return "decoded"


class GroupedReads:
    """The grouped view's reads of one store: ``view`` says which arrays it shows as shards,
    ``shard_indexes`` computes their indexes, ``stored`` reads each stored chunk; ``owner``
    names the store in errors."""

    def __init__(
        self,
        view: GroupedView,
        shard_indexes: ShardIndexes,
        stored: StoredReads,
        reader: SourceReader,
        gate: MetadataGate,
        missing_codecs: MissingCodecs,
        rfs: ReferenceFileSystem,
        owner: object,
    ) -> None:
        self.view = view
        self.shard_indexes = shard_indexes
        self._stored = stored
        self._reader = reader
        self._gate = gate
        self._missing_codecs = missing_codecs
        self._rfs = rfs
        self._owner = owner
        self._pack_fills: dict[str, bytes] = {}

    # -- keys -----------------------------------------------------------------------------------

    def group_of(self, key: str) -> Group | None:
        """(array, shard coordinates, layout) when ``key`` is a shard of the grouped view."""
        split = array_of_chunk_key(key)
        if split is None:
            return None
        layout = self.view.layout(split[0])
        return None if layout is None else (split[0], split[1], layout)

    def chunks_root(self, key: str) -> str | None:
        """``path/c`` when ``key`` lies inside the chunks of an array shown as shards."""
        group = self.group_of(key)
        return None if group is None else join(group[0], "c")

    def shard_key(self, key: str) -> str | None:
        """The shard key that shows stored chunk ``key``; None when it is shown as stored."""
        group = self.group_of(key)
        if group is None:
            return None
        path, coords, layout = group
        return chunk_key(path, layout.shard_of(coords))

    # -- reading: shards here, every other key as stored ---------------------------------------

    async def get_key(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        group = self.group_of(key)
        if group is None:
            return await self._stored.get_key(key, prototype, byte_range)
        return await self.get_shard(key, group, prototype, byte_range)

    async def get_key_ranges(
        self, key: str, byte_ranges: Sequence[ByteRequest | None], prototype: BufferPrototype
    ) -> list[Buffer | None]:
        group = self.group_of(key)
        if group is None:
            return await self._stored.get_key_ranges(key, byte_ranges, prototype)
        return await self.get_shard_ranges(key, group, byte_ranges, prototype)

    async def key_exists(self, key: str) -> bool:
        group = self.group_of(key)
        if group is None:
            return await self._stored.key_exists(key)
        return not (await self.shard_indexes.get(key, group)).empty

    async def key_size(self, key: str) -> int:
        group = self.group_of(key)
        if group is None:
            return await self._stored.key_size(key)
        index = await self.shard_indexes.get(key, group)
        if index.empty:
            raise FileNotFoundError(key)
        return index.total

    async def get_shard(
        self, key: str, group: Group, prototype: BufferPrototype, byte_range: ByteRequest | None
    ) -> Buffer | None:
        """Bytes ``byte_range`` of a shard: the index, then its stored chunks' logical bytes,
        each inner chunk read through the stored path (checks, padding, caches as unsharded),
        all at once so the merger can join them."""
        index = await self._checked_index(key, group)
        if index.empty:
            return None
        if index.members > 1:
            window = byte_window(byte_range, index.total)
            if is_narrow(index, *window):
                cut = await self._narrow(key, group[2], index, [window])
                if cut is not None:
                    return prototype.buffer.from_bytes(cut[0])
        return await self._shard_range(key, group[2], index, prototype, byte_range)

    async def get_shard_ranges(
        self,
        key: str,
        group: Group,
        byte_ranges: Sequence[ByteRequest | None],
        prototype: BufferPrototype,
    ) -> list[Buffer | None]:
        """Ranges of one shard: its index once, then every range at once (the narrow ranges
        of packed inner chunks from just the stored chunks they lie in, `narrow_ranges`)."""
        index = await self._checked_index(key, group)
        if index.empty:
            return [None] * len(byte_ranges)
        layout = group[2]
        narrow: list[int] = []
        if index.members > 1:
            windows = [byte_window(r, index.total) for r in byte_ranges]
            narrow = [i for i, (a, b) in enumerate(windows) if is_narrow(index, a, b)]
        answers: list[Buffer | None] = [None] * len(byte_ranges)
        if narrow:
            cut = await self._narrow(key, layout, index, [windows[i] for i in narrow])
            if cut is None:
                narrow = []
            else:
                for i, data in zip(narrow, cut, strict=True):
                    answers[i] = prototype.buffer.from_bytes(data)
        if not narrow:  # zarr's usual ask: whole inner chunks
            return list(
                await asyncio.gather(
                    *(self._shard_range(key, layout, index, prototype, r) for r in byte_ranges)
                )
            )
        rest = sorted(set(range(len(byte_ranges))) - set(narrow))
        found = await asyncio.gather(
            *(self._shard_range(key, layout, index, prototype, byte_ranges[i]) for i in rest)
        )
        for i, buffer in zip(rest, found, strict=True):
            answers[i] = buffer
        return answers

    async def _narrow(
        self, key: str, layout: GroupLayout, index: ShardIndex, windows: list[tuple[int, int]]
    ) -> list[bytes] | None:
        """Narrow ranges of packed inner chunks, cut from the stored chunks they lie in (read
        at once); None when they trace to too many elements (then whole packs)."""
        plan = plan_narrow(layout, index, windows)
        if plan is None:
            return None
        checks = self._gate.chunk_checks(key)
        block = await self._read_members(key, layout, index, plan.positions, checks)
        return plan.answers(block, layout.itemsize)

    async def _read_members(
        self,
        key: str,
        layout: GroupLayout,
        index: ShardIndex,
        wanted: np.ndarray,
        checks: ArrayChecks | None,
    ) -> np.ndarray:
        """Stored chunks ``wanted`` (positions in the shard) of a packed shard as (chunks,
        bytes of one), read at once (and decoded, for decoded packs); one not stored is the
        fill."""
        nbytes = layout.chunk_nbytes
        block = np.empty((len(wanted), nbytes), dtype=np.uint8)
        stored = index.stored[wanted]
        if not stored.all():
            fill = fill_pattern(self._pack_fill(key), 0, nbytes)
            block[~stored] = np.frombuffer(fill, dtype=np.uint8)
        positions = wanted[stored]
        if not len(positions):
            return block
        if layout.decoded:
            assert checks is not None
            encoded = await read_runs(
                self._reader, index.entries, positions, None, checks.stored_bound
            )
            if encoded is None:
                reads = [(index.keys[i], None, index.values[i]) for i in positions.tolist()]
                parts = await self._stored_parts(key, reads, default_buffer_prototype(), checks)
                encoded = [part.as_numpy_array().data for part in parts]
            names = [str(index.keys[i]) for i in positions.tolist()]
            url = index.entries[0] if index.entries is not None else key
            decoded = await asyncio.to_thread(_decode_members, checks, encoded, names, url)
            block[stored] = np.frombuffer(decoded, dtype=np.uint8).reshape(-1, nbytes)
            return block
        fetched = await read_runs(self._reader, index.entries, positions, nbytes)
        if fetched is not None:
            pieces = cast("list[np.ndarray]", fetched)
            block[stored] = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
            return block
        reads = [(index.keys[i], None, index.values[i]) for i in positions.tolist()]
        parts = await self._stored_parts(key, reads, default_buffer_prototype(), checks)
        rows = np.flatnonzero(stored)
        for row, (i, part) in zip(
            rows.tolist(), zip(positions.tolist(), parts, strict=True), strict=True
        ):
            data = part.as_numpy_array().view(np.uint8)
            if len(data) != nbytes:
                raise self._wrong_size(index.keys[i], len(data), nbytes)
            block[row] = data
        return block

    async def _checked_index(self, key: str, group: Group) -> ShardIndex:
        self._missing_codecs.check_chunk(key)
        self._gate.chunk_checks(key)  # a refused array's shards are refused too
        return await self.shard_indexes.get(key, group)

    async def _shard_range(
        self,
        key: str,
        layout: GroupLayout,
        index: ShardIndex,
        prototype: BufferPrototype,
        byte_range: ByteRequest | None,
    ) -> Buffer:
        start, end = byte_window(byte_range, index.total)
        head = index.index[start : min(end, len(index.index))]
        checks = self._gate.chunk_checks(key)  # the shard's array is its inner chunks' array
        first = max(bisect.bisect_right(index.offsets, start) - 1, 0)
        touched = []  # (inner chunk, its part [a, b))
        for j in range(first, len(index.offsets)):
            offset, size = index.offsets[j], index.sizes[j]
            if offset >= end:
                break
            if size and offset + size > start:
                touched.append((j, max(start, offset) - offset, min(end, offset + size) - offset))
        pieces: list[bytes | memoryview]
        if index.members > 1 and not touched:
            pieces = [head]
        elif index.members > 1:
            packed = [j for j, _, _ in touched]
            if all((a, b) == (0, index.sizes[j]) for j, a, b in touched):
                # whole inner chunks (zarr's usual ask): packed straight into the answer
                answer = np.empty(end - start, dtype=np.uint8)
                populate(answer, later=True)  # mapped by another thread while the bytes come
                answer[: len(head)] = np.frombuffer(head, dtype=np.uint8)
                body = answer[len(head) :].reshape(len(packed), -1)
                await self._read_packs(key, layout, index, packed, checks, into=body)
                return prototype.buffer.from_array_like(answer)
            packs = await self._read_packs(key, layout, index, packed, checks)
            pieces = [head] if head else []
            pieces += [packs[i, a:b].data for i, (_, a, b) in enumerate(touched)]
        else:
            reads: list[tuple[str | None, ByteRequest | None, Any]] = [
                (
                    index.keys[j],
                    None if (a, b) == (0, index.sizes[j]) else RangeByteRequest(a, b),
                    index.values[j],
                )
                for j, a, b in touched
            ]
            if len(reads) == 1 and not head:  # zarr's usual ask: one inner chunk, exactly
                inner, rng, value = reads[0]
                assert inner is not None
                part = await self._stored.get_stored(inner, prototype, rng, value, checks)
                if part is None:
                    raise self._vanished(inner, key)
                return part
            parts = await self._stored_parts(key, reads, prototype, checks)
            pieces = [head] if head else []
            pieces += [part.as_numpy_array().data for part in parts]
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        return prototype.buffer.from_array_like(np.frombuffer(data, dtype=np.uint8))

    async def _stored_parts(
        self,
        key: str,
        reads: Sequence[tuple[str | None, ByteRequest | None, Any]],
        prototype: BufferPrototype,
        checks: ArrayChecks | None,
    ) -> list[Buffer]:
        """Stored chunks of shard ``key`` read at once (the merger joins neighbours)."""
        with gathered_reads():
            parts = await asyncio.gather(
                *(
                    self._stored.get_stored(str(inner), prototype, rng, value, checks)
                    for inner, rng, value in reads
                )
            )
        for (inner, _, _), part in zip(reads, parts, strict=True):
            if part is None:
                raise self._vanished(str(inner), key)
        return cast("list[Buffer]", parts)

    async def _read_packs(
        self,
        key: str,
        layout: GroupLayout,
        index: ShardIndex,
        inner: list[int],
        checks: ArrayChecks | None,
        into: np.ndarray | None = None,
    ) -> np.ndarray:
        """Inner chunks ``inner`` of a packed shard, (inner chunks, bytes of one), written into
        ``into`` if given: their stored chunks read at once (and decoded, for decoded packs)
        and rearranged; a stored chunk that is not stored is the fill."""
        members, nbytes = layout.members, layout.chunk_nbytes
        wanted = (np.asarray(inner, dtype=np.int64)[:, None] * members + np.arange(members)).ravel()
        block = np.empty((len(wanted), nbytes), dtype=np.uint8)
        stored = index.stored[wanted]
        if not stored.all():
            fill = fill_pattern(self._pack_fill(key), 0, nbytes)
            block[~stored] = np.frombuffer(fill, dtype=np.uint8)
        positions = wanted[stored]
        if layout.decoded:
            assert checks is not None
            encoded = await read_runs(
                self._reader, index.entries, positions, None, checks.stored_bound
            )
            if encoded is None:  # not straight from the index: chunk by chunk, checked
                reads = [(index.keys[i], None, index.values[i]) for i in positions.tolist()]
                parts = await self._stored_parts(key, reads, default_buffer_prototype(), checks)
                encoded = [part.as_numpy_array().data for part in parts]
            names = [str(index.keys[i]) for i in positions.tolist()]
            url = index.entries[0] if index.entries is not None else key
            # one worker-thread hop for the lot; zlib, zstd and blosc let go of the GIL, so
            # two packs decode on two cores
            decoded = await asyncio.to_thread(_decode_members, checks, encoded, names, url)
            block[stored] = np.frombuffer(decoded, dtype=np.uint8).reshape(-1, nbytes)
            return layout.pack_bytes(block.reshape(len(inner), members, nbytes), into)
        fetched = await read_runs(self._reader, index.entries, positions, nbytes)
        if fetched is None:  # not straight from the index, or not plain: chunk by chunk
            reads = [(index.keys[i], None, index.values[i]) for i in positions.tolist()]
            parts = await self._stored_parts(key, reads, default_buffer_prototype(), checks)
            for row, (i, part) in enumerate(zip(positions.tolist(), parts, strict=True)):
                data = part.as_numpy_array().view(np.uint8)
                if len(data) != nbytes:
                    raise self._wrong_size(index.keys[i], len(data), nbytes)
                block[np.flatnonzero(stored)[row]] = data
        elif bool(stored.all()):
            # no copy to join the answers: each is rearranged straight from its own bytes
            pieces = cast("list[np.ndarray]", fetched)
            return await _packed(block.nbytes, layout.pack_rows, pieces, into)
        elif fetched:
            # a shard at the array's end: its stored chunks are placed, then rearranged
            rows = np.flatnonzero(stored)
            pieces = cast("list[np.ndarray]", fetched)
            return await _packed(block.nbytes, _place_and_pack, layout, block, rows, pieces, into)
        return layout.pack_bytes(block.reshape(len(inner), members, nbytes), into)

    def _pack_fill(self, key: str) -> bytes:
        """One fill element of the array of shard ``key`` in stored byte order (a pack's stored
        chunk that was never written)."""
        split = array_of_chunk_key(key)
        assert split is not None
        found = self._pack_fills.get(split[0])
        if found is None:
            info = array_info(self._rfs, split[0])
            found = (fill_element(info) if info is not None else None) or b""
            self._pack_fills[split[0]] = found
        return found

    def _wrong_size(self, inner: str | None, size: int, nbytes: int) -> ChunkDecodeError:
        return ChunkDecodeError(
            f"{self._owner!r}: stored chunk {inner!r} holds {size} bytes; an uncompressed "
            f"chunk of its array holds {nbytes}"
        )

    def _vanished(self, inner: str, key: str) -> ReferenceFormatError:
        return ReferenceFormatError(
            f"{self._owner!r}: stored chunk {inner!r} of shard {key!r} vanished while it was read"
        )


async def _packed(nbytes: int, pack: Callable[..., np.ndarray], *args: Any) -> np.ndarray:
    """``pack(*args)`` rearranging ``nbytes`` of stored chunks: in a worker thread from
    `_THREAD_PACKING_BYTES` on (numpy lets go of the GIL while it rearranges, so the loop
    thread, which bounds a sequential read, receives meanwhile), else at once."""
    if nbytes < _THREAD_PACKING_BYTES:
        return pack(*args)
    return await asyncio.to_thread(pack, *args)


def _place_and_pack(
    layout: GroupLayout,
    block: np.ndarray,
    rows: np.ndarray,
    pieces: Sequence[np.ndarray],
    into: np.ndarray | None,
) -> np.ndarray:
    """`GroupLayout.pack_bytes` of ``block`` (stored chunks, bytes of one) once ``pieces``
    (consecutive runs of stored chunks) are written to its ``rows``: a run landing on
    consecutive rows is one slice copy, not a gather."""
    at = 0
    for piece in pieces:
        count = len(piece)
        first, last = int(rows[at]), int(rows[at + count - 1])
        if last - first == count - 1:
            block[first : last + 1] = piece
        else:
            block[rows[at : at + count]] = piece
        at += count
    packs = block.reshape(-1, layout.members, layout.chunk_nbytes)
    return layout.pack_bytes(packs, into)


def _decode_members(checks: ArrayChecks, encoded: list[Any], names: list[str], where: str) -> bytes:
    """Stored chunks decoded one after another (in a worker thread), joined."""
    return b"".join(
        checks.decoded_chunk(data, name, where) for data, name in zip(encoded, names, strict=True)
    )
