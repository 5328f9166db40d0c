"""RfsStore: a read-only zarr v3 store over a reference file system."""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import os
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np
from shadowzarr_spec import (
    MISSING_CHUNK,
    ChunkDecodeError,
    InlineRef,
    ReferenceFileSystem,
    ReferenceFormatError,
    ShadowzarrError,
    UnsupportedFeatureError,
    array_info,
    parse_json,
)
from shadowzarr_spec.keys import array_of_chunk_key, chunk_key, join
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store.chunk_indexes import ChunkIndexReader
from shadowzarr_store.grouped_view import GroupedView, GroupLayout, ShardIndex, StoredKeys
from shadowzarr_store.loop_shutdown import note_loop
from shadowzarr_store.merge import gathered_reads
from shadowzarr_store.metadata_gate import MetadataGate, is_metadata_key
from shadowzarr_store.missing_codecs import MissingCodecs
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.packed_reads import read_runs
from shadowzarr_store.references import load_rfs
from shadowzarr_store.resolve import (
    ReadPlan,
    Resolver,
    SourceValue,
    byte_window,
    fill_element,
    fill_pattern,
    finish_inline,
    finish_whole,
    plan_read,
)
from shadowzarr_store.sharded_view import ShardedView, ShardLayout
from shadowzarr_store.source_reader import SourceReader
from shadowzarr_store.store_tree import MAX_NODES, StoreTree, Traffic, store_tree
from shadowzarr_store.transport import run_blocking
from shadowzarr_store.transport.stats import StoreStats

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence

    from shadowzarr_spec import GenEntry
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.array_checks import ArrayChecks

__all__ = ["MAX_LISTED_GEN_KEYS", "RfsStore"]

MAX_LISTED_GEN_KEYS = 1 << 20
"""Most keys listed from a gen entry whose keys are not chunks inside an array's grid, and
most keys a listing holds or walks before it answers (``list_dir``, a grouped view's shards)."""


def _within_listing_bound(count: int, what: str) -> None:
    """A listing that must hold (or walk) every key before its first answer stops at
    `MAX_LISTED_GEN_KEYS`: a few bytes of references can claim 10**12 chunks."""
    if count > MAX_LISTED_GEN_KEYS:
        raise UnsupportedFeatureError(
            f"listing {what} would walk more than {MAX_LISTED_GEN_KEYS} keys; list() and "
            "list_prefix() stream the keys one by one instead"
        )


_BYTE_REQUESTS = (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)
_UNRESOLVED = object()
_MISSING_ENTRY = int(MISSING_CHUNK)
_LARGEST_NUMBER = 2**53 - 1
"""The largest offset or size a reference holds (the format's bound on numbers)."""
_SHARD_INDEXES_KEPT = 256
"""Synthesized shard indexes kept per store (each at most 16 KiB)."""


_THREAD_PACKING_BYTES = 1024 * 1024
"""Packs of at least this many bytes are rearranged in a worker thread."""


class _Packing(TypedDict):
    """How a grouped view's shard packs its stored chunks (`ShardIndex.build`'s keywords)."""

    members: int
    inner_nbytes: int


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


class RfsStore(Store):
    """A read-only zarr v3 store whose keys are the references of a reference file system.

    Parameters
    ----------
    rfs
        A `ReferenceFileSystem`, or anything `shadowzarr_store.load_rfs` accepts (a ``.json``
        file, a directory, an http(s)/s3/gs/az URL to either, a dict).
    read_only
        Must stay True: the store never writes.
    **options
        The options below (`StoreOptions`).

    Other Parameters
    ----------------
    validate_sources
        Send ``If-Match`` with the recorded ETag, compare the total size a server reports and the
        size of local files with ``sources``; a mismatch raises `SourceChangedError`.
    merge_gap, max_merge_size, merge_below
        Request merging: reads of one file asked for at the same time are joined when the gap is
        at most ``merge_gap`` bytes (32 KiB), up to ``max_merge_size`` bytes per request (8 MiB;
        0: no merging), for reads of at most ``merge_below`` bytes (None: any size up to
        ``max_merge_size``). Raise ``async.concurrency`` to merge more.
    merge_window
        Seconds to wait for more reads before sending (0: the next event-loop tick).
    local_cache, memory_cache
        A `LocalCache` (SQLite on disk) and/or a `MemoryCache` of source byte ranges.
    max_connections, timeout, deadline, retries, backoff, max_backoff
        HTTP: connections per event loop and host (128: S3-like servers answer one range per
        request, and 1,000 scattered chunks took 13-14 waves at 128 against 24 at 64 and no
        fewer at 256 on the single-range test server), socket timeout in seconds, the most
        seconds one request may take with its retries (``SourceTimeoutError`` after it; 300),
        retries of transient failures (resets, 5xx, short bodies, wrong Content-Range) with
        exponential backoff from ``backoff`` up to ``max_backoff`` seconds.
    max_total_connections
        HTTP: connections per event loop across all hosts (256; never below
        ``max_connections``).
    max_whole_file_bytes
        The most bytes a whole-file read (reference file, index file, chunk without a size)
        takes when the source has no recorded size (2 GiB); a longer answer is refused before
        it is read (``AnswerTooLargeError``). A recorded size is the limit where there is one.
    resolve_url
        ``url -> url | None`` (or a coroutine function): the URL to read for a reference URL;
        None falls back to the default (DANDI download URLs are resolved automatically).
    dandi_api_hosts
        ``{"host[:port]": "ENV_VAR_WITH_TOKEN"}``: the DANDI API hosts and the variables holding
        their tokens; a token is sent only to its own host.
    presigned_url_ttl
        Seconds a presigned DANDI URL is reused.
    index_cache_chunks
        Chunk-index chunks kept in memory.
    sharded_view
        0 (default): chunks as stored. ``"auto"``: uncompressed chunks (``bytes``, optionally
        with ``transpose``) of 2 MiB or more are shown as shards of blocks of about 1 MiB, so
        zarr reads only the blocks a selection touches; an integer: blocks of about that many
        bytes, for chunks at least twice as large. Metadata and chunk values then differ from
        the stored ones, so code copying chunk bytes must leave it off.
    grouped_view
        ``"auto"`` (default): an array of many small chunks (under 256 KiB decoded) is shown
        as shards of up to 1,024 of its stored chunks (about 4 MiB decoded), with an index
        computed from the references, so that zarr asks for every chunk of a shard that a
        selection touches at once and a read costs about one round trip whatever
        ``async.concurrency`` is (see `shadowzarr_store.grouped_view`). An integer: shards of
        about that many decoded bytes. 0 or False: chunks as stored. Values are the same either
        way; keys and metadata differ, so code copying chunk bytes uses `stored_view`.
    allowed_urls
        URL prefixes (``["https://host/path/"]``, ``["s3://bucket/prefix/"]``) that every
        request, redirect hop and presigned URL must fall under, compared in whole path segments
        after percent-decoding and ``..`` are resolved as the server would (None: any); others
        raise `SourceAccessError` before any request.
    allow_local_files
        Whether references may read local files (None: yes, unless they were loaded from a URL).
    headers
        ``{"https://host[:port][/path]": {"Authorization": "Bearer …"}}``: headers sent only with
        requests to that scheme, host and port under that path (the longest prefix wins), also
        not after a redirect elsewhere. Values are never logged, shown in errors or reprs, or
        written to references, caches or materialized copies.
    storage_options
        Object-store settings for ``s3://``, ``gs://`` and ``az://`` sources (read through
        obstore): ``anon=True`` for a public bucket, ``region``, ``endpoint``, ``allow_http``,
        credentials (``access_key_id``/``secret_access_key`` or fsspec's ``key``/``secret``;
        otherwise the environment's ``AWS_*``…). Never shown or written anywhere.
    proxy
        The forward proxy of every request, ``"http://[user:pass@]host:port"`` (https sources
        go through it in a CONNECT tunnel); False or ``""``: none. None (default): the
        environment's ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``, as curl
        reads them. Our HTTP client, aiohttp and obstore all follow it.
    max_chunk_bytes
        Most bytes one decoded chunk may hold (2 GiB); an array with larger chunks is refused
        when it is opened.

    Notes
    -----
    Local sources are checked, on the first read of each by a store, for the identity recorded
    in ``sources`` (size, sampled hash, else modification time); every read after that for the
    same file (device, inode, size, mtime and ctime): see the README, "Change detection".

    Every ``zarr.json`` is validated by zarr's own parser and the store's bounds before zarr
    sees it: a bad array fails when it is opened, with an error naming it, and the others stay
    readable (see `metadata_gate`). Every chunk of an encoded array is decoded once, with
    bounds and checked frames, before zarr decodes it: one that is damaged, or would decompress
    beyond what a chunk of its array holds, raises `ChunkDecodeError` (see `array_checks`).
    An uncompressed chunk may be short only by elements outside the array (the rest reads as
    the fill value); a reference past the recorded end of its file, or a short answer, is an
    error. Only bytes that pass these checks are cached.
    """

    supports_writes: bool = False
    supports_deletes: bool = False
    supports_listing: bool = True

    def __init__(
        self,
        rfs: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
        *,
        read_only: bool = True,
        **options: Any,
    ) -> None:
        if not read_only:
            raise ValueError("RfsStore is read-only; it cannot be opened with read_only=False")
        super().__init__(read_only=True)
        self._options = StoreOptions.from_kwargs(options)
        self._rfs = load_rfs(rfs, **options)
        self._start()

    def _start(self) -> None:
        self._stats = StoreStats()
        self._reader = SourceReader(self._rfs, self._options, self._stats)
        self._indexes = ChunkIndexReader(
            self._rfs,
            self._reader.read_index,
            self._stats,
            self._options.index_cache_chunks,
            check=self._reader.check_index,
        )
        self._resolver = Resolver(self._rfs, self._indexes)
        self._gate = MetadataGate(self._rfs, self._options.max_chunk_bytes)
        self._missing_codecs = MissingCodecs()
        self._view = (
            ShardedView(self._rfs, self._options.sharded_view)
            if self._options.sharded_view
            else None
        )
        sharded = self._view
        self._groups = (
            GroupedView(
                self._rfs,
                self._options.grouped_view,
                skip=None if sharded is None else lambda path: sharded.layout(path) is not None,
                packable=self._pack_kind,
            )
            if self._options.grouped_view
            else None
        )
        self._shard_indexes: dict[str, ShardIndex] = {}
        self._shard_index_builds: dict[tuple[Any, str], asyncio.Future[ShardIndex]] = {}
        self._pack_fills: dict[str, bytes] = {}
        self._index_only: dict[str, bool] = {}
        self._sorted_keys: list[str] = []
        self._sorted_count = -1
        self._node_paths_of: tuple[int, frozenset[str]] = (-1, frozenset())

    # -- properties -----------------------------------------------------------------------------

    @property
    def rfs(self) -> ReferenceFileSystem:
        return self._rfs

    @property
    def options(self) -> StoreOptions:
        return self._options

    def index_table(self, path: str) -> np.ndarray:
        """The whole chunk index of array ``path`` as a (grid..., 2) uint64 table of (offset,
        nbytes) rows, read through this store's transport (exports list every chunk)."""
        grid = self._indexes.grid(path)
        coords = np.indices(grid, dtype=np.int64).reshape(len(grid), -1).T
        offsets, sizes = run_blocking(self._indexes.entries(path, coords))
        return np.stack([offsets, sizes], axis=-1).reshape(*grid, 2)

    @property
    def stats(self) -> StoreStats:
        """Requests, bytes, merged requests, cache hits and index chunk reads so far."""
        return self._stats

    @property
    def traffic(self) -> Traffic:
        """What reading through this store has cost so far, to print or show in a notebook
        (``stats.reset()`` starts a new count)."""
        return Traffic(self._stats.snapshot())

    def tree(self, max_nodes: int = MAX_NODES, prefix: str = "") -> StoreTree:
        """The groups and arrays of the references (under the node ``prefix``): per array its
        shape, data type, chunks as stored and as shown, codecs, the bytes its references point
        at and the files they are in. Read from the references alone; the first ``max_nodes``
        nodes are described."""
        return store_tree(self._rfs, self._shown_metadata, max_nodes, prefix)

    def _repr_html_(self) -> str:
        """The tree in a notebook (``display(group.store)``)."""
        return self.tree()._repr_html_()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """The tree in IPython's text display; ``repr()`` stays one line."""
        printer.text(repr(self) if cycle else self.tree().text())

    # -- reading --------------------------------------------------------------------------------

    def stored_view(self) -> RfsStore:
        """This store with chunks and metadata exactly as stored (no grouped or sharded view):
        for code that copies chunk bytes or reasons about stored chunks. It shares this store's
        sessions, caches, chunk indexes and counters."""
        if self._view is None and self._groups is None:
            return self
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin._options = dataclasses.replace(self._options, sharded_view=0, grouped_view=0)
        twin._view = twin._groups = None
        twin._shard_indexes = {}
        return twin

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        if byte_range is not None and not isinstance(byte_range, _BYTE_REQUESTS):
            raise TypeError(f"Unexpected byte_range, got {byte_range!r}")
        note_loop(asyncio.get_running_loop())
        if self._groups is not None and (group := self._group_of(key)) is not None:
            return await self._get_grouped(key, group, prototype, byte_range)
        return await self._get_stored(key, prototype, byte_range)

    def _group_of(self, key: str) -> tuple[str, tuple[int, ...], GroupLayout] | None:
        """(array, shard coordinates, layout) when ``key`` is a shard of the grouped view."""
        split = array_of_chunk_key(key)
        if split is None or self._groups is None:
            return None
        layout = self._groups.layout(split[0])
        return None if layout is None else (split[0], split[1], layout)

    async def _shard_index(
        self, key: str, group: tuple[str, tuple[int, ...], GroupLayout]
    ) -> ShardIndex:
        """The synthesized index of shard ``key`` (kept: it is rebuilt from references)."""
        found = self._shard_indexes.get(key)
        if found is not None:
            return found
        build = (asyncio.get_running_loop(), key)
        task = self._shard_index_builds.get(build)
        if task is None:  # one build however many reads of the shard arrive at once
            task = asyncio.ensure_future(self._build_shard_index(key, group))
            self._shard_index_builds[build] = task
            task.add_done_callback(lambda _: self._shard_index_builds.pop(build, None))
        return await asyncio.shield(task)

    async def _build_shard_index(
        self, key: str, group: tuple[str, tuple[int, ...], GroupLayout]
    ) -> ShardIndex:
        path, shard, layout = group
        packing: _Packing = {
            "members": layout.members,
            "inner_nbytes": layout.members * layout.chunk_nbytes,
        }
        fast = await self._shard_index_from_chunk_index(path, layout.inner_points(shard), packing)
        chunks = layout.inner_chunks(shard) if fast is None else []
        if fast is not None:
            index = fast
        elif not any(chunks):
            keys: list[str | None] = [None] * len(chunks)
            values: list[InlineRef | SourceValue | None] = [None] * len(chunks)
            index = ShardIndex.build(keys, [None] * len(chunks), tuple(values), **packing)
        else:
            keys, values = await self._resolver.resolve_chunks(path, chunks)
            lengths = [
                await self._logical_length(k, v) if _needs_read(v) else _known_length(k, v, self)
                for k, v in zip(keys, values, strict=True)
            ]
            for inner, value, length in zip(keys, values, lengths, strict=True):
                if length == 0 and inner is not None:
                    await self._refuse_empty(inner, value)
            index = ShardIndex.build(keys, lengths, tuple(values), **packing)
        if len(self._shard_indexes) >= _SHARD_INDEXES_KEPT:
            self._shard_indexes.pop(next(iter(self._shard_indexes)))
        self._shard_indexes[key] = index
        return index

    async def _refuse_empty(self, key: str, value: InlineRef | SourceValue | None) -> None:
        """A stored chunk of no bytes (an empty inline value) would reach zarr's sharding codec
        as an empty inner chunk, which its codecs fail to decode with their own errors: it is
        read on the per-key path, whose checks refuse it with the array's typed error."""
        await self._get_stored(key, default_buffer_prototype(), None, value)
        raise ChunkDecodeError(
            f"{self!r}: stored chunk {key!r} holds no bytes; no chunk of its array decodes "
            "from nothing"
        )

    async def _shard_index_from_chunk_index(
        self, path: str, points: np.ndarray, packing: _Packing
    ) -> ShardIndex | None:
        """The shard index straight from the chunk index's arrays (no object per chunk), for an
        array whose every chunk reference is in its chunk index and has no selection; None
        otherwise. ``points``: the shard's stored chunks (`GroupLayout.inner_points`). Inner
        chunks are resolved again only when read."""
        inside = points[:, 0] >= 0
        if not self._index_only_array(path) or not inside.any():
            return None
        first = chunk_key(path, (0,) * len(self._indexes.grid(path)))
        chunk_layout = self._resolver.layout_of_key(first)
        full = None if chunk_layout is None else chunk_layout.chunk_nbytes
        whole = bool(inside.all())  # the usual shard: no stored chunk past the array's end
        where = np.arange(len(points)) if whole else np.flatnonzero(inside)
        offsets, sizes = await self._indexes.entries(path, points if whole else points[where])
        present = ((offsets != _MISSING_ENTRY) | (sizes != _MISSING_ENTRY)) & (
            (offsets != 0) | (sizes != 0)  # offset 0, size 0: a missing chunk too
        )
        every = bool(present.all())
        held_offsets, held_sizes = (offsets, sizes) if every else (offsets[present], sizes[present])
        if max(
            int(held_offsets.max(initial=0)), int(held_sizes.max(initial=0))
        ) > _LARGEST_NUMBER or not bool(held_sizes.all()):
            # Entries no reference could hold (a damaged index, an empty chunk not at offset
            # 0): the path chunk by chunk refuses them with the error that names the chunk.
            return None
        lengths = np.full(len(points), -1, dtype=np.int64)
        stored_rows = where if every else where[present]
        stored_sizes = held_sizes.astype(np.int64)
        if full is not None:
            # an uncompressed chunk reads at its full size (padded); an over-long reference
            # keeps its size here and fails when read, as unsharded
            stored_sizes = np.where(stored_sizes <= full, full, stored_sizes)
        lengths[stored_rows] = stored_sizes
        is_stored = np.zeros(len(points), dtype=bool)
        is_stored[stored_rows] = True
        keys = StoredKeys(chunk_key(path, ()) + "/", points, is_stored)
        every_offset = np.full(len(points), _MISSING_ENTRY, dtype=np.uint64)
        every_size = every_offset.copy()
        every_offset[where], every_size[where] = offsets, sizes
        entries = (self._rfs.indexes[path].url, every_offset, every_size)
        return ShardIndex.build(
            keys, lengths, (_UNRESOLVED,) * len(points), entries=entries, **packing
        )

    def _index_only_array(self, path: str) -> bool:
        found = self._index_only.get(path)
        if found is None:
            found = self._index_only[path] = self._chunk_index_only(path)
        return found

    def _chunk_index_only(self, path: str) -> bool:
        """Whether every chunk reference of ``path`` comes from its chunk index (no refs or gen
        entry can override one, no selection applies)."""
        if path not in self._rfs.indexes or self._rfs.gen or path in self._rfs.selections:
            return False
        prefix = chunk_key(path, ()) + "/"
        keys = self._keys()
        position = bisect.bisect_left(keys, prefix)
        return not (position < len(keys) and keys[position].startswith(prefix))

    async def _logical_length(
        self, key: str | None, value: InlineRef | SourceValue | None
    ) -> int | None:
        """Bytes zarr would get for stored chunk ``key`` (None: not stored), without reading it
        where the reference says (a whole-file reference of unknown size is read)."""
        match value:
            case None:
                return None
            case InlineRef(data=inline):
                assert key is not None
                return len(finish_inline(key, self._resolver.layout_of_key(key), inline, None))
            case SourceValue(offset=None):
                assert key is not None
                whole = await self._get_stored(key, default_buffer_prototype(), None, value)
                return None if whole is None else len(whole)
            case SourceValue():
                return plan_read(value, None).want
        raise AssertionError("unreachable")

    async def _get_grouped(
        self,
        key: str,
        group: tuple[str, tuple[int, ...], GroupLayout],
        prototype: BufferPrototype,
        byte_range: ByteRequest | None,
    ) -> Buffer | None:
        """Bytes ``byte_range`` of a shard: the index, then its stored chunks' logical bytes,
        each inner chunk read through `_get_stored` (checks, padding, caches as unsharded), all
        at once so the merger can join them."""
        self._missing_codecs.check_chunk(key)
        self._gate.chunk_checks(key)  # a refused array's shards are refused too
        index = await self._shard_index(key, group)
        if index.empty:
            return None
        return await self._shard_range(key, index, prototype, byte_range)

    async def _shard_range(
        self,
        key: str,
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
            group = self._group_of(key)
            assert group is not None
            packed = [j for j, _, _ in touched]
            if all((a, b) == (0, index.sizes[j]) for j, a, b in touched):
                # whole inner chunks (zarr's usual ask): packed straight into the answer
                answer = np.empty(end - start, dtype=np.uint8)
                answer[: len(head)] = np.frombuffer(head, dtype=np.uint8)
                body = answer[len(head) :].reshape(len(packed), -1)
                await self._read_packs(key, group[2], index, packed, checks, into=body)
                return prototype.buffer.from_array_like(answer)
            packs = await self._read_packs(key, group[2], index, packed, checks)
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
                part = await self._get_stored(inner, prototype, rng, value, checks)
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
                    self._get_stored(str(inner), prototype, rng, value, checks)
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
                    raise ChunkDecodeError(
                        f"{self!r}: stored chunk {index.keys[i]!r} holds {len(data)} bytes; an "
                        f"uncompressed chunk of its array holds {nbytes}"
                    )
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

    def _pack_kind(self, path: str) -> str | None:
        """How the grouped view may pack the stored chunks of ``path`` (see `GroupedView`):
        only arrays read straight from one chunk index, whose one array codec is ``bytes``;
        ``"plain"`` without byte codecs, ``"decoded"`` with byte codecs of bounded output."""
        if not self._index_only_array(path):
            return None
        try:
            checks = self._gate.array(path)
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
        if checks.stored_bound is None or self._missing_codecs.refuses(path):
            return None
        return "decoded"

    def _vanished(self, inner: str, key: str) -> ReferenceFormatError:
        return ReferenceFormatError(
            f"{self!r}: stored chunk {inner!r} of shard {key!r} vanished while it was read"
        )

    async def get_ranges(
        self,
        key: str,
        byte_ranges: Sequence[ByteRequest | None],
        *,
        prototype: BufferPrototype,
        max_concurrency: int = 10,
        max_gap_bytes: int = 1 << 20,
        max_coalesced_bytes: int = 16 << 20,
    ) -> AsyncIterator[Sequence[tuple[int, Buffer | None]]]:
        """Every range at once, in one batch: the store's merger joins them (its own gap and
        size limits), instead of zarr's coalescer sending ``max_concurrency`` at a time."""
        group = self._group_of(key) if self._groups is not None else None
        with gathered_reads():
            if group is None:
                buffers = await asyncio.gather(
                    *(self.get(key, prototype, byte_range) for byte_range in byte_ranges)
                )
            else:  # a shard of the grouped view: its index once, then every range at once
                note_loop(asyncio.get_running_loop())
                self._missing_codecs.check_chunk(key)
                self._gate.chunk_checks(key)
                index = await self._shard_index(key, group)
                buffers = (
                    [None] * len(byte_ranges)
                    if index.empty
                    else await asyncio.gather(
                        *(self._shard_range(key, index, prototype, r) for r in byte_ranges)
                    )
                )
        if any(buffer is None for buffer in buffers):
            raise BaseExceptionGroup(
                f"get_ranges of {key!r}", [FileNotFoundError(f"{self!r}: no key {key!r}")]
            )
        yield list(enumerate(buffers))

    async def _get_stored(
        self,
        key: str,
        prototype: BufferPrototype,
        byte_range: ByteRequest | None = None,
        resolved: object = _UNRESOLVED,
        array_checks: object = _UNRESOLVED,
    ) -> Buffer | None:
        """``key`` as stored (or as the sharded view shows it): the read path of every key
        that is not a shard of the grouped view (``resolved``: its reference, if known;
        ``array_checks``: its array's checks, if known, as for an inner chunk of a shard whose
        array passed them: no key parsed again per inner chunk)."""
        if array_checks is _UNRESOLVED:
            self._missing_codecs.check_chunk(key)  # an array whose codec is not installed
            checks = self._gate.chunk_checks(key)  # a refused array's chunks are refused too
        else:
            checks = cast("ArrayChecks | None", array_checks)
        value = (
            await self._resolver.resolve(key)
            if resolved is _UNRESOLVED
            else cast("InlineRef | SourceValue | None", resolved)
        )
        if value is None:
            return None
        if is_metadata_key(key):
            if isinstance(value, InlineRef):
                # stand-ins for codecs this install lacks, before zarr or the gate parses it
                self._missing_codecs.note_metadata(key, value.data)
            value = InlineRef(self._shown_metadata(key, self._gate.serve(key, value)))
        if self._view is not None:
            shown = await self._get_in_view(key, value, byte_range)
            if shown is not None:
                return prototype.buffer.from_array_like(np.frombuffer(shown, dtype=np.uint8))
        # A whole chunk is checked before zarr decodes it. Partial reads are raw bytes, except
        # of a shard, whose inner chunks zarr decodes: the whole shard is checked once.
        whole = checks if byte_range is None else None
        shard = checks if checks is not None and checks.shards is not None else None
        data: bytes | memoryview
        match value:
            case InlineRef(data=inline):
                data = finish_inline(key, self._resolver.layout_of_key(key), inline, byte_range)
                if whole is not None:
                    whole.check_stored_size(len(inline), key, "inline reference")
                    await whole.verify(data, key, "inline reference")
                elif shard is not None:
                    await self._gate.verify_shard(shard, key, inline, "inline reference")
            case SourceValue(offset=None):
                raw, cached = await self._reader.read_whole(value.url)
                data = finish_whole(value, raw, byte_range)
                if whole is not None:
                    await whole.verify(data, key, value.url)
                elif shard is not None:
                    await self._gate.verify_shard(
                        shard, key, finish_whole(value, raw, None), value.url
                    )
                if not cached:
                    await self._reader.remember(value.url, 0, -1, raw)
            case SourceValue():
                if whole is not None and value.layout is None and value.size is not None:
                    whole.check_stored_size(value.size, key, value.url)
                if shard is not None and whole is None:
                    identity = (value.url, value.offset, value.size)
                    if not self._gate.shard_verified(key, identity):
                        shard.check_stored_size(value.size or 0, key, value.url)
                        full = await self._read_plan(plan_read(value, None))
                        await self._gate.verify_shard(shard, key, full, value.url, identity)
                data = await self._read_plan(plan_read(value, byte_range), whole)
        return prototype.buffer.from_array_like(np.frombuffer(data, dtype=np.uint8))

    def _shown_metadata(self, key: str, data: bytes) -> bytes:
        """A ``zarr.json`` as the sharded and grouped views show it (others unchanged)."""
        if not (key == "zarr.json" or key.endswith("/zarr.json")):
            return data
        if self._view is not None:
            data = self._view.rewrite(key, data)
        if self._groups is not None:
            data = self._groups.rewrite(key, data)
        return data

    async def _get_in_view(
        self, key: str, value: InlineRef | SourceValue, byte_range: ByteRequest | None
    ) -> bytes | memoryview | None:
        """The value of ``key`` in the sharded view; None when the view leaves it unchanged."""
        assert self._view is not None
        split = array_of_chunk_key(key)
        layout = None if split is None else self._view.layout(split[0])
        if layout is None:
            return None
        start, end = byte_window(byte_range, layout.total)
        head = layout.index[start : min(end, layout.index_bytes)]
        if end <= layout.index_bytes:
            return head
        data_range = RangeByteRequest(
            max(start, layout.index_bytes) - layout.index_bytes, end - layout.index_bytes
        )
        body: bytes | memoryview
        if isinstance(value, InlineRef):
            body = finish_inline(key, self._resolver.layout_of_key(key), value.data, data_range)
        elif value.offset is None:
            whole, _ = await self._reader.read_whole(value.url)
            body = finish_whole(value, whole, data_range)
        else:
            body = await self._read_plan(plan_read(value, data_range))
        return bytes(head) + bytes(body) if head else body

    async def _read_plan(
        self, plan: ReadPlan, checks: ArrayChecks | None = None
    ) -> bytes | memoryview:
        """The logical bytes of a plan, checked (``checks``: the whole chunk is decoded as zarr
        will) before they are cached; only bytes that pass every check reach a cache."""
        if plan.reads_nothing:
            data = plan.assemble(b"")
        else:
            raw, cached = await self._reader.read(plan.url, plan.start, plan.end)
            data = plan.assemble(raw)
            if checks is not None:
                await checks.verify(data, plan.key, plan.url)
            if not cached and plan.complete(raw):
                await self._reader.remember(plan.url, plan.start, plan.end, raw)
            return data
        if checks is not None:
            await checks.verify(data, plan.key, plan.url)
        return data

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get(key, prototype, rng) for key, rng in key_ranges))
        )

    async def exists(self, key: str) -> bool:
        if (group := self._group_of(key)) is not None:
            return not (await self._shard_index(key, group)).empty
        return await self._resolver.resolve(key) is not None

    async def getsize(self, key: str) -> int:
        if (group := self._group_of(key)) is not None:
            index = await self._shard_index(key, group)
            if index.empty:
                raise FileNotFoundError(key)
            return index.total
        value = await self._resolver.resolve(key)
        match value:
            case None:
                raise FileNotFoundError(key)
            case InlineRef() if is_metadata_key(key):
                return len(self._shown_metadata(key, self._gate.serve(key, value)))
            case _ if (layout := self._view_layout(key)) is not None:
                return layout.total
            case InlineRef(data=inline):
                return len(inline)
            case SourceValue(offset=None):
                info = self._rfs.sources.get(value.url)
                if value.layout is None and info is not None and info.size is not None:
                    return info.size
                whole, _ = await self._reader.read_whole(value.url)
                return len(finish_whole(value, whole, None))
            case SourceValue():
                return plan_read(value, None).want
        raise AssertionError("unreachable")

    def _view_layout(self, key: str) -> ShardLayout | None:
        split = array_of_chunk_key(key)
        if self._view is None or split is None:
            return None
        return self._view.layout(split[0])

    # -- writing (refused) ----------------------------------------------------------------------

    async def set(self, key: str, value: Buffer) -> None:
        self._check_writable()

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        self._check_writable()

    async def delete(self, key: str) -> None:
        self._check_writable()

    async def delete_dir(self, prefix: str) -> None:
        self._check_writable()

    async def clear(self) -> None:
        self._check_writable()

    def with_read_only(self, read_only: bool = False) -> RfsStore:
        if not read_only:
            return super().with_read_only(read_only)  # type: ignore[return-value]
        return type(self)(self._rfs, **self._option_kwargs())

    # -- listing --------------------------------------------------------------------------------

    def _keys(self) -> list[str]:
        """refs keys, sorted once (again only if refs changed size)."""
        refs = self._rfs.refs
        if self._sorted_count != len(refs):
            self._sorted_keys = sorted(refs)
            self._sorted_count = len(refs)
        return self._sorted_keys

    def _node_paths(self) -> frozenset[str]:
        """Every path that holds a node (a ``zarr.json`` in refs) or lies above one."""
        keys = self._keys()
        if self._node_paths_of[0] != len(keys):
            paths: set[str] = set()
            for key in keys:
                if key == "zarr.json" or key.endswith("/zarr.json"):
                    path = key[: -len("zarr.json")].rstrip("/")
                    while path and path not in paths:
                        paths.add(path)
                        path = path.rpartition("/")[0]
            self._node_paths_of = (len(keys), frozenset(paths))
        return self._node_paths_of[1]

    def _is_group(self, path: str) -> bool:
        """Whether ``path`` holds group metadata (its ``zarr.json``, inline, says ``group``):
        any other key stays a plain store key, listed as it is."""
        ref = self._rfs.refs.get(join(path, "zarr.json"))
        if not isinstance(ref, InlineRef):
            return False
        try:
            document = parse_json(ref.data)
        except ShadowzarrError:
            return False
        return isinstance(document, dict) and document.get("node_type") == "group"

    async def list(self) -> AsyncIterator[str]:
        async for key in self.list_prefix(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        async for key in self._listed(prefix, walk_bound=False):
            yield key

    async def _listed(self, prefix: str, *, walk_bound: bool) -> AsyncIterator[str]:
        """The keys `list_prefix` yields; ``walk_bound``: stop at `MAX_LISTED_GEN_KEYS` keys
        walked (for a caller that holds them all before answering)."""
        if self._groups is None:
            async for key in self._stored_keys(prefix):
                yield key
            return
        # Keys as the grouped view shows them: one shard key for its stored chunks. A prefix
        # inside a grouped array's chunks is listed from all of them, then filtered.
        inside = self._group_of(prefix.rstrip("/") or "-")
        scan = join(inside[0], "c") + "/" if inside is not None else prefix
        shards: set[str] = set()
        walked = 0
        async for key in self._stored_keys(scan):
            walked += 1
            if walk_bound:
                _within_listing_bound(walked, f"the keys under {scan!r}")
            group = self._group_of(key)
            if group is not None:
                path, coords, layout = group
                key = chunk_key(path, layout.shard_of(coords))
                if key in shards:
                    continue
                shards.add(key)
                _within_listing_bound(len(shards), f"the shards of {path!r}")
            if key.startswith(prefix):
                yield key

    async def _stored_keys(self, prefix: str) -> AsyncIterator[str]:
        """Every stored key starting with ``prefix`` (refs, then gen, then chunk indexes)."""
        keys = self._keys()
        for position in range(bisect.bisect_left(keys, prefix), len(keys)):
            if not keys[position].startswith(prefix):
                break
            yield keys[position]
        refs = self._rfs.refs
        for entry in self._rfs.gen:
            if entry.prefix.startswith(prefix) or prefix.startswith(entry.prefix):
                for key in self._gen_keys(entry):
                    if key.startswith(prefix) and key not in refs:
                        yield key
        for path in self._rfs.indexes:
            chunk_root = join(path, "c")
            if chunk_root.startswith(prefix) or prefix.startswith(chunk_root):
                for coords in await self._indexes.written_chunks(path):
                    key = join(chunk_root, *map(str, coords))
                    if key.startswith(prefix) and key not in refs:
                        yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        base = prefix.rstrip("/")
        start = f"{base}/" if base else ""
        if self._groups is not None and self._group_of(base or "-") is not None:
            shards = {
                key[len(start) :].split("/", 1)[0]
                async for key in self._listed(start, walk_bound=True)
            }
            for name in sorted(shards):
                yield name
            return
        names: set[str] = set()
        keys = self._keys()
        position = bisect.bisect_left(keys, start)
        while position < len(keys) and keys[position].startswith(start):
            rest = keys[position][len(start) :]
            name, slash, _ = rest.partition("/")
            names.add(name)
            # Skip everything under this child: "name/..." keys sort before "name0".
            position = bisect.bisect_left(keys, start + name + "0") if slash else position + 1
        for entry in self._rfs.gen:
            literal = entry.prefix
            if literal.startswith(start) and "/" in literal[len(start) :]:
                names.add(literal[len(start) :].split("/", 1)[0])
            elif literal.startswith(start) or start.startswith(literal):
                # Every key is walked for a few names: bounded, where list_prefix streams.
                for walked, key in enumerate(self._gen_keys(entry), 1):
                    _within_listing_bound(walked, f"the keys of gen entry {entry.key!r}")
                    if key.startswith(start):
                        names.add(key[len(start) :].split("/", 1)[0])
        for path in self._rfs.indexes:
            chunk_root = join(path, "c")
            if chunk_root.startswith(start) and chunk_root != start.rstrip("/"):
                names.add(chunk_root[len(start) :].split("/", 1)[0])
            elif f"{chunk_root}/".startswith(start) or start.startswith(f"{chunk_root}/"):
                for walked, coords in enumerate(await self._indexes.written_chunks(path), 1):
                    _within_listing_bound(walked, f"the chunks of {path!r}")
                    key = join(chunk_root, *map(str, coords))
                    if key.startswith(start):
                        names.add(key[len(start) :].split("/", 1)[0])
        if self._is_group(base):
            # a group's members are the names that hold a node: a stray key (a hostile or
            # damaged file's) is no member, and zarr's member walk would leave its KeyError
            # unretrieved when another member fails
            nodes = self._node_paths()
            names = {n for n in names if n == "zarr.json" or join(base, n) in nodes}
        for name in sorted(names):
            yield name

    def _gen_keys(self, entry: GenEntry) -> Iterator[str]:
        """The keys a gen entry lists, lazily: only those inside its array's chunk grid (a
        small entry may claim 10**12 chunks); an entry of other keys only if it has at most
        `MAX_LISTED_GEN_KEYS`, else `ReferenceFormatError`."""
        template = entry.chunk_template()
        if template is not None:
            try:
                checks = self._gate.array(template[0])
            except ShadowzarrError:
                return iter(())  # a refused array's chunks are unreadable: none are listed
            if checks is not None:
                keys = entry.keys_in_grid(checks.metadata_grid)
                if keys is not None:
                    return keys
        if entry.count > MAX_LISTED_GEN_KEYS:
            raise ReferenceFormatError(
                f"gen entry {entry.key!r} describes {entry.count} keys that are not chunks "
                f"inside an array's grid; more than {MAX_LISTED_GEN_KEYS} are not listed"
            )
        return (key for key, _ in entry.items())

    # -- lifetime, pickling, equality -----------------------------------------------------------

    def close(self) -> None:
        self._reader.close()
        super().close()

    async def aclose(self) -> None:
        """Close this event loop's HTTP session (for stores used from your own event loop)."""
        await self._reader.aclose()

    def _option_kwargs(self) -> dict[str, Any]:
        return {f.name: getattr(self._options, f.name) for f in dataclasses.fields(self._options)}

    def __getstate__(self) -> dict[str, Any]:
        return {"rfs": self._rfs, "options": self._options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._read_only = True
        self._is_open = False
        self._rfs = state["rfs"]
        self._options = state["options"]
        self._start()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RfsStore)
            and self._options == other._options
            and (self._rfs is other._rfs or _same_rfs(self._rfs, other._rfs))
        )

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        where = self._rfs.base or "memory"
        return f"RfsStore({where!r}, refs={len(self._rfs.refs)}, gen={len(self._rfs.gen)})"


def _needs_read(value: InlineRef | SourceValue | None) -> bool:
    """Whether a reference's logical length is known only by reading it (a whole file of
    unknown size)."""
    return isinstance(value, SourceValue) and value.offset is None


def _known_length(
    key: str | None, value: InlineRef | SourceValue | None, store: RfsStore
) -> int | None:
    """`RfsStore._logical_length` without a coroutine per chunk (1,024 per shard index): a
    plain chunk is its reference's size, or its full size when uncompressed (padded)."""
    if value is None or key is None:
        return None
    if isinstance(value, InlineRef):
        layout = store._resolver.layout_of_key(key)
        return len(finish_inline(key, layout, value.data, None))
    layout = value.layout
    size = value.size
    if size is not None and (layout is None or layout.selection is None):
        if layout is None or layout.chunk_nbytes is None:
            return size
        if size <= layout.chunk_nbytes:
            return layout.chunk_nbytes
    return plan_read(value, None).want  # selections, and the error of an over-long reference


def _same_rfs(a: ReferenceFileSystem, b: ReferenceFileSystem) -> bool:
    """Whether two reference file systems describe the same keys (after a pickle round trip)."""
    if (a.version, a.base, a.refs, a.selections, a.sources) != (
        b.version,
        b.base,
        b.refs,
        b.selections,
        b.sources,
    ):
        return False
    if [g.to_json() for g in a.gen] != [g.to_json() for g in b.gen]:
        return False
    if a.indexes.keys() != b.indexes.keys():
        return False
    for path, index in a.indexes.items():
        other = b.indexes[path]
        if (index.url, index.path) != (other.url, other.path):
            return False
        if index.table is None or other.table is None:
            if index.table is not other.table:
                return False
        elif not np.array_equal(index.table, other.table):
            return False
    return True


def _decode_members(checks: ArrayChecks, encoded: list[Any], names: list[str], where: str) -> bytes:
    """Stored chunks decoded one after another (in a worker thread), joined."""
    return b"".join(
        checks.decoded_chunk(data, name, where) for data, name in zip(encoded, names, strict=True)
    )
