"""RfsStore: a read-only zarr v3 store over a reference file system."""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import os
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import InlineRef, ReferenceFileSystem
from shadowzarr_spec.keys import array_of_chunk_key, join
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest

from shadowzarr_store.chunk_indexes import ChunkIndexReader
from shadowzarr_store.codecs import verify_fletcher32
from shadowzarr_store.decode_limits import DecodeLimits
from shadowzarr_store.missing_codecs import MissingCodecs
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.references import load_rfs
from shadowzarr_store.resolve import (
    ReadPlan,
    Resolver,
    SourceValue,
    byte_window,
    fill_pattern,
    finish_inline,
    finish_whole,
    plan_read,
)
from shadowzarr_store.sharded_view import ShardedView, ShardLayout
from shadowzarr_store.source_reader import SourceReader
from shadowzarr_store.transport.errors import RangeNotSatisfiable
from shadowzarr_store.transport.stats import StoreStats

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

__all__ = ["RfsStore"]

_BYTE_REQUESTS = (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)


class RfsStore(Store):
    """A read-only zarr v3 store whose keys are the references of a reference file system.

    Parameters
    ----------
    rfs
        A `ReferenceFileSystem`, or anything `shadowzarr_store.load_rfs` accepts (a ``.json``
        file, a directory, an http(s)/s3/gs/az URL to either, a dict).
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
        HTTP: connections per event loop, socket timeout in seconds, the most seconds one
        request may take with its retries (``SourceTimeoutError`` after it; 300), retries of
        transient failures (resets, 5xx, short bodies, wrong Content-Range) with exponential
        backoff from ``backoff`` up to ``max_backoff`` seconds.
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

    Local sources are checked for their recorded size on every read and, once per source per
    store, for their identity (modification time, else the sampled hash of ``sources``).

    Compressed chunks are checked before zarr decodes them: one that would decompress beyond
    what a chunk of its array holds raises `ChunkDecodeError` (see `decode_limits`).
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
            self._rfs, self._reader.read_index, self._stats, self._options.index_cache_chunks
        )
        self._resolver = Resolver(self._rfs, self._indexes)
        self._limits = DecodeLimits(self._rfs)
        self._missing_codecs = MissingCodecs()
        self._view = (
            ShardedView(self._rfs, self._options.sharded_view)
            if self._options.sharded_view
            else None
        )
        self._sorted_keys: list[str] = []
        self._sorted_count = -1

    # -- properties -----------------------------------------------------------------------------

    @property
    def rfs(self) -> ReferenceFileSystem:
        return self._rfs

    @property
    def options(self) -> StoreOptions:
        return self._options

    @property
    def stats(self) -> StoreStats:
        """Requests, bytes, merged requests, cache hits and index chunk reads so far."""
        return self._stats

    # -- reading --------------------------------------------------------------------------------

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        if byte_range is not None and not isinstance(byte_range, _BYTE_REQUESTS):
            raise TypeError(f"Unexpected byte_range, got {byte_range!r}")
        self._missing_codecs.check_chunk(key)
        value = await self._resolver.resolve(key)
        if isinstance(value, InlineRef) and (key == "zarr.json" or key.endswith("/zarr.json")):
            self._missing_codecs.note_metadata(key, value.data)
        if value is not None and self._view is not None:
            shown = await self._get_in_view(key, value, byte_range)
            if shown is not None:
                return prototype.buffer.from_array_like(np.frombuffer(shown, dtype=np.uint8))
        data: bytes | memoryview
        match value:
            case None:
                return None
            case InlineRef(data=inline):
                data = finish_inline(key, self._resolver.layout_of_key(key), inline, byte_range)
            case SourceValue(offset=None):
                whole = await self._reader.read_whole(value.url)
                data = finish_whole(value, whole, byte_range)
            case SourceValue():
                data = await self._read_plan(plan_read(value, byte_range))
                if byte_range is None and self._resolver.checksummed(key):
                    verify_fletcher32(data, key, value.url)
        if byte_range is None:
            where = value.url if isinstance(value, SourceValue) else "inline reference"
            await self._limits.check(key, data, where)
        return prototype.buffer.from_array_like(np.frombuffer(data, dtype=np.uint8))

    async def _get_in_view(
        self, key: str, value: InlineRef | SourceValue, byte_range: ByteRequest | None
    ) -> bytes | memoryview | None:
        """The value of ``key`` in the sharded view; None when the view leaves it unchanged."""
        assert self._view is not None
        if key == "zarr.json" or key.endswith("/zarr.json"):
            if not isinstance(value, InlineRef):
                return None
            document = self._view.rewrite(key, value.data)
            start, end = byte_window(byte_range, len(document))
            return document[start:end]
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
        if isinstance(value, InlineRef):
            inline = value.data + fill_pattern(
                self._resolver.fill_of_key(key),
                len(value.data),
                layout.chunk_nbytes - len(value.data),
            )
            body: bytes | memoryview = inline[data_range.start : data_range.end]
        elif value.offset is None:
            whole = await self._reader.read_whole(value.url)
            body = finish_whole(value, whole, data_range)
        else:
            body = await self._read_plan(plan_read(value, data_range))
        return bytes(head) + bytes(body) if head else body

    async def _read_plan(self, plan: ReadPlan) -> bytes | memoryview:
        if plan.reads_nothing:
            return plan.assemble(b"")
        try:
            raw: bytes | memoryview = await self._reader.read(plan.url, plan.start, plan.end)
        except RangeNotSatisfiable:
            if not plan.paddable:
                raise
            raw = b""  # all of it lies past the end of a short last slab: padding
        return plan.assemble(raw)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get(key, prototype, rng) for key, rng in key_ranges))
        )

    async def exists(self, key: str) -> bool:
        return await self._resolver.resolve(key) is not None

    async def getsize(self, key: str) -> int:
        value = await self._resolver.resolve(key)
        match value:
            case None:
                raise FileNotFoundError(key)
            case InlineRef(data=inline) if self._view is not None and key.endswith("zarr.json"):
                return len(self._view.rewrite(key, inline))
            case _ if (layout := self._view_layout(key)) is not None:
                return layout.total
            case InlineRef(data=inline):
                return len(inline)
            case SourceValue(offset=None):
                info = self._rfs.sources.get(value.url)
                if value.layout is None and info is not None and info.size is not None:
                    return info.size
                whole = await self._reader.read_whole(value.url)
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

    async def list(self) -> AsyncIterator[str]:
        async for key in self.list_prefix(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        keys = self._keys()
        for position in range(bisect.bisect_left(keys, prefix), len(keys)):
            if not keys[position].startswith(prefix):
                break
            yield keys[position]
        refs = self._rfs.refs
        for entry in self._rfs.gen:
            if entry.prefix.startswith(prefix) or prefix.startswith(entry.prefix):
                for key, _ in entry.items():
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
                for key, _ in entry.items():
                    if key.startswith(start):
                        names.add(key[len(start) :].split("/", 1)[0])
        for path in self._rfs.indexes:
            chunk_root = join(path, "c")
            if chunk_root.startswith(start) and chunk_root != start.rstrip("/"):
                names.add(chunk_root[len(start) :].split("/", 1)[0])
            elif f"{chunk_root}/".startswith(start) or start.startswith(f"{chunk_root}/"):
                for coords in await self._indexes.written_chunks(path):
                    key = join(chunk_root, *map(str, coords))
                    if key.startswith(start):
                        names.add(key[len(start) :].split("/", 1)[0])
        for name in sorted(names):
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
