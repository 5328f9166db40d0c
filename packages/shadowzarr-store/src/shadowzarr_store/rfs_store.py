"""RfsStore: a read-only zarr v3 store over a reference file system.

The store serves the references' keys, bytes and metadata as they are (`StoredReads`), lists
them (`StoreListing`), and composes the views of `shadowzarr_store.views` only when asked
(``grouped_view``, ``sharded_view``). Its collaborators are named: `resolver` (key to
reference), `reader` (source bytes), `manifests` (the chunk manifests, kept)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import ReferenceFileSystem
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest

from shadowzarr_store.checked_reads import CheckedReads
from shadowzarr_store.listing import MAX_LISTED_GEN_KEYS, SortedRefs, StoreListing
from shadowzarr_store.loop_shutdown import note_loop
from shadowzarr_store.manifests import ManifestReader
from shadowzarr_store.merge import gathered_reads
from shadowzarr_store.metadata_gate import MetadataGate
from shadowzarr_store.missing_codecs import MissingCodecs
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.references import load_rfs
from shadowzarr_store.resolve import Resolver
from shadowzarr_store.source_reader import SourceReader
from shadowzarr_store.store_tree import MAX_NODES, StoreTree, Traffic, store_tree
from shadowzarr_store.stored_reads import KeyReads, StoredReads
from shadowzarr_store.transport import run_blocking
from shadowzarr_store.transport.stats import StoreStats
from shadowzarr_store.views.grouped import GroupedView, GroupLayout
from shadowzarr_store.views.grouped_reads import GroupedReads, pack_kind
from shadowzarr_store.views.shard_indexes import ShardIndexes
from shadowzarr_store.views.sharded import ShardedView
from shadowzarr_store.views.sharded_reads import ShardedReads

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Sequence

    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["MAX_LISTED_GEN_KEYS", "RfsStore"]

_BYTE_REQUESTS = (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)


def _check_byte_range(byte_range: object) -> None:
    if byte_range is not None and not isinstance(byte_range, _BYTE_REQUESTS):
        raise TypeError(f"Unexpected byte_range, got {byte_range!r}")


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
        Manifest chunks kept in memory.
    sharded_view
        0 (default): chunks as stored. ``"auto"``: uncompressed chunks (``bytes``, optionally
        with ``transpose``) of 2 MiB or more are shown as shards of blocks of about 1 MiB, so
        zarr reads only the blocks a selection touches; an integer: blocks of about that many
        bytes, for chunks at least twice as large. Metadata and chunk values then differ from
        the stored ones (the attribute ``shadowzarr_view`` says so), so code copying chunk
        bytes must leave it off.
    grouped_view
        ``"auto"`` or True (default): an array of many small chunks (under 256 KiB decoded) is shown
        as shards of up to 1,024 of its stored chunks (about 4 MiB decoded), with an index
        computed from the references, so that zarr asks for every chunk of a shard that a
        selection touches at once and a read costs about one round trip whatever
        ``async.concurrency`` is (see `shadowzarr_store.views.grouped`). An integer: shards of
        about that many decoded bytes. 0 or False: chunks as stored, as the references (and
        the JS store) show them. Values are the same either way; keys and metadata differ
        (a sharding codec whose inner chunks are the stored ones, or packs of them), so
        code copying chunk bytes uses `stored_view`.
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
        self._indexes = ManifestReader(
            self._rfs,
            self._reader.read_index,
            self._stats,
            self._options.index_cache_chunks,
            check=self._reader.check_index,
        )
        self._resolver = Resolver(self._rfs, self._indexes)
        self._missing_codecs = MissingCodecs()
        self._gate = MetadataGate(self._rfs, self._options.max_chunk_bytes, self._missing_codecs)
        self._chunks = CheckedReads(self._reader)
        self._refs = SortedRefs(self._rfs)
        self._compose()

    def _compose(self) -> None:
        """The read path and listing, with the views ``options`` asks for composed in."""
        rfs, options, gate, missing = self._rfs, self._options, self._gate, self._missing_codecs
        refs = self._refs
        sharded = ShardedView(rfs, options.sharded_view) if options.sharded_view else None
        grouped = (
            GroupedView(
                rfs,
                options.grouped_view,
                skip=None if sharded is None else lambda path: sharded.layout(path) is not None,
                packable=lambda path: pack_kind(path, refs.manifest_only(path), gate, missing),
            )
            if options.grouped_view
            else None
        )
        self._stored: StoredReads = StoredReads(
            rfs,
            self._resolver,
            self._reader,
            gate,
            self._chunks,
            sharded=None
            if sharded is None
            else ShardedReads(sharded, self._resolver, self._reader),
            views=[view for view in (sharded, grouped) if view is not None],
        )
        self._grouped: GroupedReads | None = (
            GroupedReads(
                grouped,
                ShardIndexes(rfs, self._resolver, self._indexes, self._stored, refs, self),
                self._stored,
                self._reader,
                gate,
                rfs,
                self,
            )
            if grouped is not None
            else None
        )
        self._reads: KeyReads = self._stored if self._grouped is None else self._grouped
        self._listing: StoreListing = StoreListing(rfs, refs, gate, self._indexes, self._grouped)

    # -- properties and collaborators -----------------------------------------------------------

    @property
    def rfs(self) -> ReferenceFileSystem:
        return self._rfs

    @property
    def options(self) -> StoreOptions:
        return self._options

    @property
    def resolver(self) -> Resolver:
        """Turns a key into its reference (inline bytes, a source range, or None)."""
        return self._resolver

    @property
    def reader(self) -> SourceReader:
        """Reads, caches and merges the byte ranges of the sources."""
        return self._reader

    @property
    def manifests(self) -> ManifestReader:
        """The chunk manifests of the references, their chunks kept in memory."""
        return self._indexes

    def grouped_layout(self, path: str) -> GroupLayout | None:
        """How the grouped view shows array ``path``; None when it is shown as stored."""
        return None if self._grouped is None else self._grouped.view.layout(path)

    def index_table(self, path: str) -> np.ndarray:
        """The whole chunk manifest of array ``path`` as a (grid..., 2) uint64 table of (offset,
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
        return store_tree(self._rfs, self._stored.shown_metadata, max_nodes, prefix)

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
        sessions, caches, chunk manifests and counters."""
        if not self._options.sharded_view and not self._options.grouped_view:
            return self
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin._options = dataclasses.replace(self._options, sharded_view=0, grouped_view=0)
        twin._compose()
        return twin

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        _check_byte_range(byte_range)
        note_loop(asyncio.get_running_loop())
        return await self._reads.get_key(key, prototype, byte_range)

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
        size limits), instead of zarr's coalescer sending ``max_concurrency`` at a time (a
        shard of the grouped view: its index once, then every range)."""
        for byte_range in byte_ranges:
            _check_byte_range(byte_range)
        note_loop(asyncio.get_running_loop())
        with gathered_reads():
            buffers = await self._reads.get_key_ranges(key, byte_ranges, prototype)
        if any(buffer is None for buffer in buffers):
            raise BaseExceptionGroup(
                f"get_ranges of {key!r}", [FileNotFoundError(f"{self!r}: no key {key!r}")]
            )
        yield list(enumerate(buffers))

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get(key, prototype, rng) for key, rng in key_ranges))
        )

    async def exists(self, key: str) -> bool:
        return await self._reads.key_exists(key)

    async def getsize(self, key: str) -> int:
        return await self._reads.key_size(key)

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

    async def list(self) -> AsyncIterator[str]:
        async for key in self._listing.list_prefix(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        async for key in self._listing.list_prefix(prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        async for name in self._listing.list_dir(prefix):
            yield name

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
