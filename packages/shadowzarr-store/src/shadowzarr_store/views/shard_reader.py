"""Reading a grouped view's shard as its `ShardPlan` says: fetch the stored chunks, check them,
assemble the answers.

Every stored chunk a plan needs is fetched in one step (`ShardReader._stored_rows`). An inner
chunk of the grouped view of an uncompressed array packs many stored chunks (see
`shadowzarr_store.views.grouped`). Reading each through the store's per-key path costs tens of
microseconds of Python apiece, as much as zarr's own per-chunk cost that packing removes. When
every one of them comes straight from the chunk manifest as a plain, full-size chunk (or, for
decoded packs, an encoded chunk of bounded size), their ranges are sorted and joined with numpy,
each contiguous run is one read, and the bytes are cut with one gather (`read_runs`). Anything
else (a short or over-long chunk, one past the recorded end of the file, a short answer) goes
back to the per-key path (`StoredReads.get_stored`), which pads, checks and names the chunk in
its errors. Inner chunks of unpacked shards are the stored chunks themselves, read on the
per-key path.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from shadowzarr_spec import ChunkDecodeError, ReferenceFormatError, array_info
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store.merge import gathered_reads
from shadowzarr_store.resolve import fill_element
from shadowzarr_store.transport.prefault import populate

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from shadowzarr_spec import ReferenceFileSystem
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.array_checks import ArrayChecks
    from shadowzarr_store.source_reader import SourceReader
    from shadowzarr_store.stored_reads import StoredReads
    from shadowzarr_store.views.shard_plan import NarrowPlan, RangePlan, ShardPlan

__all__ = ["ShardReader", "read_runs"]

_THREAD_PACKING_BYTES = 1024 * 1024
"""Packs of at least this many bytes are rearranged in a worker thread."""


class ShardReader:
    """Reads of the grouped view's shards of one store: ``stored`` reads a stored chunk on the
    per-key path, ``reader`` the runs of a chunk manifest's entries; ``owner`` names the store
    in errors."""

    def __init__(
        self, stored: StoredReads, reader: SourceReader, rfs: ReferenceFileSystem, owner: object
    ) -> None:
        self._stored = stored
        self._reader = reader
        self._rfs = rfs
        self._owner = owner
        self._fill_rows: dict[str, np.ndarray] = {}

    async def read_plan(
        self, plan: ShardPlan, prototype: BufferPrototype, *, one_get: bool = False
    ) -> list[Buffer | None]:
        """The answer to every range of ``plan``: the narrow ones first (their stored chunks
        read at once), then the others at once, each in its own task (the merger joins what
        they read); ``one_get``: zarr's ``get`` of one range, read in the caller's task."""
        answers: list[Buffer | None] = [None] * len(plan.ranges)
        if plan.narrow is not None:
            block = await self._rows_of(plan, plan.narrow.positions)
            cut = _narrow_answers(plan.narrow, block, plan.layout.itemsize)
            for i, data in zip(plan.narrow_ranges, cut, strict=True):
                answers[i] = prototype.buffer.from_bytes(data)
        rest = [(i, r) for i, r in enumerate(plan.ranges) if r is not None]
        if one_get and rest:
            answers[rest[0][0]] = await self._range(plan, rest[0][1], prototype)
            return answers
        found = await asyncio.gather(*(self._range(plan, r, prototype) for _, r in rest))
        for (i, _), buffer in zip(rest, found, strict=True):
            answers[i] = buffer
        return answers

    async def _range(self, plan: ShardPlan, asked: RangePlan, prototype: BufferPrototype) -> Buffer:
        """One range: the index bytes it covers, then the parts of the inner chunks it touches
        (packs rearranged from their stored chunks, or the stored chunks themselves)."""
        index, head = plan.index, asked.head
        pieces: list[bytes | memoryview] = [head] if head else []
        if index.members > 1 and not asked.touched:
            pieces = [head]
        elif index.members > 1:
            inner = [j for j, _, _ in asked.touched]
            if asked.whole(index.sizes):
                # whole inner chunks (zarr's usual ask): packed straight into the answer
                answer = np.empty(asked.end - asked.start, dtype=np.uint8)
                populate(answer, later=True)  # mapped by another thread while the bytes come
                answer[: len(head)] = np.frombuffer(head, dtype=np.uint8)
                body = answer[len(head) :].reshape(len(inner), -1)
                await self._packs(plan, inner, into=body)
                return prototype.buffer.from_array_like(answer)
            packs = await self._packs(plan, inner)
            pieces += [packs[i, a:b].data for i, (_, a, b) in enumerate(asked.touched)]
        else:
            reads: list[tuple[str | None, ByteRequest | None, Any]] = [
                (
                    index.keys[j],
                    None if (a, b) == (0, index.sizes[j]) else RangeByteRequest(a, b),
                    index.values[j],
                )
                for j, a, b in asked.touched
            ]
            if len(reads) == 1 and not head:  # zarr's usual ask: one inner chunk, exactly
                inner_key, rng, value = reads[0]
                assert inner_key is not None
                part = await self._stored.get_stored(inner_key, prototype, rng, value, plan.checks)
                if part is None:
                    raise self._vanished(inner_key, plan.key)
                return part
            parts = await self._stored_parts(plan, reads, prototype)
            pieces += [part.as_numpy_array().data for part in parts]
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        return prototype.buffer.from_array_like(np.frombuffer(data, dtype=np.uint8))

    async def _packs(
        self, plan: ShardPlan, inner: list[int], into: np.ndarray | None = None
    ) -> np.ndarray:
        """Inner chunks ``inner`` of a packed shard, (inner chunks, bytes of one), written into
        ``into`` if given, rearranged from their stored chunks."""
        layout = plan.layout
        members = layout.members
        wanted = (np.asarray(inner, dtype=np.int64)[:, None] * members + np.arange(members)).ravel()
        stored = plan.index.stored[wanted]
        nbytes = len(wanted) * layout.chunk_nbytes
        pieces = await self._stored_rows(plan, wanted[stored])
        if bool(stored.all()):
            # no copy to join the answers: each is rearranged straight from its own bytes
            return await _packed(nbytes, layout.pack_rows, pieces, into)
        # a shard at the array's end: its stored chunks are placed, then rearranged
        return await _packed(nbytes, self._place_and_pack, plan, stored, pieces, into)

    def _place_and_pack(
        self,
        plan: ShardPlan,
        stored: np.ndarray,
        pieces: Sequence[np.ndarray],
        into: np.ndarray | None,
    ) -> np.ndarray:
        """`GroupLayout.pack_bytes` of stored chunks some of which are not stored."""
        layout = plan.layout
        block = self._placed(plan, stored, pieces)
        return layout.pack_bytes(block.reshape(-1, layout.members, layout.chunk_nbytes), into)

    async def _rows_of(self, plan: ShardPlan, wanted: np.ndarray) -> np.ndarray:
        """Stored chunks ``wanted`` (positions in the shard) as (chunks, bytes of one)."""
        stored = plan.index.stored[wanted]
        return self._placed(plan, stored, await self._stored_rows(plan, wanted[stored]))

    def _placed(
        self, plan: ShardPlan, stored: np.ndarray, pieces: Sequence[np.ndarray]
    ) -> np.ndarray:
        """(chunks, bytes of one) of stored chunks whose ``stored`` ones are ``pieces``
        (consecutive runs of rows), the others the fill: a run landing on consecutive rows is
        one slice copy, not a gather."""
        nbytes = plan.layout.chunk_nbytes
        block = np.empty((len(stored), nbytes), dtype=np.uint8)
        if not stored.all():
            block[~stored] = self._fill_row(plan.path, nbytes)
        rows = np.flatnonzero(stored)
        at = 0
        for piece in pieces:
            count = len(piece)
            first, last = int(rows[at]), int(rows[at + count - 1])
            if last - first == count - 1:
                block[first : last + 1] = piece
            else:
                block[rows[at : at + count]] = piece
            at += count
        return block

    async def _stored_rows(self, plan: ShardPlan, positions: np.ndarray) -> list[np.ndarray]:
        """Stored chunks ``positions`` of a packed shard (each stored), fetched and checked at
        once: consecutive pieces of (chunks, bytes of one), together the chunks in order
        (decoded, for decoded packs). Straight from the chunk manifest where `read_runs` can,
        else chunk by chunk on the per-key path."""
        if not len(positions):
            return []
        layout, index, checks = plan.layout, plan.index, plan.checks
        nbytes = layout.chunk_nbytes
        bound = None
        if layout.decoded:
            assert checks is not None
            bound = checks.stored_bound
        fetched = await read_runs(
            self._reader, index.entries, positions, None if layout.decoded else nbytes, bound
        )
        if fetched is not None and not layout.decoded:
            return cast("list[np.ndarray]", fetched)
        chunks: Sequence[Any] | None = fetched
        if chunks is None:  # not straight from the index: chunk by chunk, checked
            reads = [(index.keys[i], None, index.values[i]) for i in positions.tolist()]
            parts = await self._stored_parts(plan, reads, default_buffer_prototype())
            chunks = [part.as_numpy_array().data for part in parts]
        if layout.decoded:
            assert checks is not None
            names = [str(index.keys[i]) for i in positions.tolist()]
            url = index.entries[0] if index.entries is not None else plan.key
            # one worker-thread hop for the lot; zlib, zstd and blosc let go of the GIL, so
            # two packs decode on two cores
            decoded = await asyncio.to_thread(_decode_members, checks, chunks, names, url)
            return [np.frombuffer(decoded, dtype=np.uint8).reshape(-1, nbytes)]
        rows = np.empty((len(positions), nbytes), dtype=np.uint8)
        for row, (i, chunk) in enumerate(zip(positions.tolist(), chunks, strict=True)):
            data = np.frombuffer(chunk, dtype=np.uint8)
            if len(data) != nbytes:
                raise self._wrong_size(index.keys[i], len(data), nbytes)
            rows[row] = data
        return [rows]

    async def _stored_parts(
        self,
        plan: ShardPlan,
        reads: Sequence[tuple[str | None, ByteRequest | None, Any]],
        prototype: BufferPrototype,
    ) -> list[Buffer]:
        """Stored chunks of the shard read at once on the per-key path (the merger joins
        neighbours)."""
        with gathered_reads():
            parts = await asyncio.gather(
                *(
                    self._stored.get_stored(str(inner), prototype, rng, value, plan.checks)
                    for inner, rng, value in reads
                )
            )
        for (inner, _, _), part in zip(reads, parts, strict=True):
            if part is None:
                raise self._vanished(str(inner), plan.key)
        return cast("list[Buffer]", parts)

    def _fill_row(self, path: str, nbytes: int) -> np.ndarray:
        """A stored chunk of ``nbytes`` of the array at ``path`` that was never written: its
        fill element in stored byte order, repeated (zeros where the fill is variable)."""
        found = self._fill_rows.get(path)
        if found is None or len(found) != nbytes:
            info = array_info(self._rfs, path)
            element = (fill_element(info) if info is not None else None) or b""
            found = np.resize(np.frombuffer(element, dtype=np.uint8), nbytes)
            self._fill_rows[path] = found
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


async def read_runs(
    reader: SourceReader,
    entries: tuple[str, np.ndarray, np.ndarray] | None,
    positions: np.ndarray,
    nbytes: int | None,
    bound: int | None = None,
) -> list[np.ndarray] | list[memoryview] | None:
    """Stored chunks ``positions`` of ``entries`` (url, offsets, sizes). When every one is a
    plain chunk of ``nbytes``: consecutive pieces of (chunks, ``nbytes``) bytes, together the
    chunks in the order asked for (each piece an answer's own bytes where the file holds them
    in that order: no copy to join them). With ``nbytes`` None: encoded chunks of up to
    ``bound`` bytes each, one buffer per chunk. None when the fast path does not apply."""
    if entries is None:
        return None
    if not len(positions):
        return []
    url, offsets, sizes = entries
    where = offsets[positions].astype(np.int64)
    size = sizes[positions].astype(np.int64)
    if nbytes is not None and bool((size != nbytes).any()):
        return None
    if nbytes is None and (bool((size <= 0).any()) or (bound is not None and size.max() > bound)):
        return None
    recorded = reader.rfs.sources.get(url)
    if (
        recorded is not None
        and recorded.size is not None
        and bool((where + size > recorded.size).any())
    ):
        return None
    order = np.argsort(where, kind="stable")
    ordered, lengths = where[order], size[order]
    breaks = np.flatnonzero(ordered[1:] != ordered[:-1] + lengths[:-1]) + 1
    firsts = np.concatenate(([0], breaks)).tolist()
    lasts = np.concatenate((breaks, [len(ordered)])).tolist()
    spans = [
        (int(ordered[a]), int(ordered[b - 1] + lengths[b - 1]))
        for a, b in zip(firsts, lasts, strict=True)
    ]
    with gathered_reads():
        answers = await reader.read_many(url, spans)
    pieces = []
    for (a, b), (raw, cached) in zip(spans, answers, strict=True):
        if len(raw) != b - a:
            return None
        if not cached and reader.caches:
            await reader.remember(url, a, b, raw)
        pieces.append(np.frombuffer(raw, dtype=np.uint8))
    if nbytes is not None and bool((order == np.arange(len(order))).all()):
        return [piece.reshape(-1, nbytes) for piece in pieces]  # the answers' own bytes
    joined = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    if nbytes is None:
        ends = np.cumsum(lengths)
        cut = [
            memoryview(joined[e - n : e])
            for e, n in zip(ends.tolist(), lengths.tolist(), strict=True)
        ]
        found: list[memoryview] = [cut[0]] * len(cut)
        for i, j in enumerate(order.tolist()):
            found[j] = cut[i]
        return found
    joined = joined.reshape(-1, nbytes)
    out = np.empty_like(joined)
    out[order] = joined
    return [out]


async def _packed(nbytes: int, pack: Callable[..., np.ndarray], *args: Any) -> np.ndarray:
    """``pack(*args)`` rearranging ``nbytes`` of stored chunks: in a worker thread from
    `_THREAD_PACKING_BYTES` on (numpy lets go of the GIL while it rearranges, so the loop
    thread, which bounds a sequential read, receives meanwhile), else at once."""
    if nbytes < _THREAD_PACKING_BYTES:
        return pack(*args)
    return await asyncio.to_thread(pack, *args)


def _narrow_answers(narrow: NarrowPlan, block: np.ndarray, itemsize: int) -> list[bytes]:
    """Each narrow range's bytes, cut from ``block`` (the stored chunks of
    ``narrow.positions``, one row of bytes each)."""
    elements = block.view(np.dtype((np.void, itemsize))).reshape(len(block), -1)
    picked = elements[narrow.rows, narrow.within].tobytes()
    return [
        picked[first * itemsize + head : last * itemsize - tail]
        for first, last, head, tail in narrow.spans
    ]


def _decode_members(
    checks: ArrayChecks, encoded: Sequence[Any], names: list[str], where: str
) -> bytes:
    """Stored chunks decoded one after another (in a worker thread), joined."""
    return b"".join(
        checks.decoded_chunk(data, name, where) for data, name in zip(encoded, names, strict=True)
    )
