"""Bytes of source files for one store: where they are, what they cost, whether they changed.

Turns a reference URL into an absolute location, consults the caches, and parks reads in the
merge queue of the running event loop; the requests themselves are the transport's. Merge queues
are kept per event loop, because futures cannot cross loops (zarr's own loop, users' loops,
forked children).
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import os
import threading
import weakref
from typing import TYPE_CHECKING

from shadowzarr_spec import SourceInfo

from shadowzarr_store.local_cache import cache_location
from shadowzarr_store.merge import RangeMerger
from shadowzarr_store.transport.client import close_all, transport_for
from shadowzarr_store.transport.locations import join_location, kind_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.options import StoreOptions
    from shadowzarr_store.transport.local import Stamp
    from shadowzarr_store.transport.stats import StoreStats

__all__ = ["SourceReader"]

_NO_SOURCE = SourceInfo()
_LOCAL_CACHE_WINDOW = 0.002


def allows_local_files(rfs: ReferenceFileSystem, options: StoreOptions) -> bool:
    """Local files are allowed unless the references came from a URL or the options say no."""
    if options.allow_local_files is not None:
        return options.allow_local_files
    return rfs.base is None or "://" not in rfs.base


class SourceReader:
    """Reads byte ranges of the sources of one reference file system."""

    def __init__(self, rfs: ReferenceFileSystem, options: StoreOptions, stats: StoreStats) -> None:
        self.rfs = rfs
        self.options = options
        self.stats = stats
        self.transport = transport_for(
            options.transport(allow_local_files=allows_local_files(rfs, options)), stats
        )
        self.access = self.transport.access
        self.merge_options = options
        if options.local_cache is not None and options.merge_window < _LOCAL_CACHE_WINDOW:
            # Cache look-ups finish in worker threads at different times; wait for the stragglers.
            self.merge_options = dataclasses.replace(options, merge_window=_LOCAL_CACHE_WINDOW)
        self._lock = threading.Lock()
        self._identities: dict[str, str] = {}
        """The identity each source's bytes were read under (`identity`): constant per store,
        as a local file's stamp is pinned at its first read."""
        self._mergers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, RangeMerger] = (
            weakref.WeakKeyDictionary()
        )
        _READERS.add(self)

    # -- addresses ------------------------------------------------------------------------------

    def absolute(self, url: str) -> str:
        """A reference URL made absolute against the directory holding the references."""
        base = self.rfs.base
        return url if base is None else join_location(base, url)

    def source_info(self, url: str) -> SourceInfo:
        if not self.options.validate_sources:
            return _NO_SOURCE
        return self.rfs.sources.get(url, _NO_SOURCE)

    async def identity(self, url: str) -> str:
        """The cache identity of a source: a changed file gets new entries, never old bytes;
        credentials in its URL are not part of it (nor written to a cache). It is the identity
        the reads are held to (none with ``validate_sources=False``, so unchecked bytes never
        land under a recorded one); a local file's adds the stamp (inode, times) the store
        reads it under, checked against the file now (`SourceChangedError` if replaced)."""
        location = self.absolute(url)
        stamp = None
        if kind_of(location) == "local":
            stamp = await self.transport.local_stamp(location, self.source_info(url))
        identity = self._identity(url, stamp)
        with self._lock:
            self._identities[url] = identity
        return identity

    def _identity(self, url: str, stamp: Stamp | None) -> str:
        info = self.source_info(url)
        text = (
            f"{cache_location(self.absolute(url))}\x00{info.etag or ''}"
            f"\x00{'' if info.size is None else info.size}"
            f"\x00{info.mtime_ns or ''}\x00{info.sample_hash or ''}"
        )
        return text if stamp is None else f"{text}\x00{stamp.token()}"

    def _merger(self) -> RangeMerger:
        loop = asyncio.get_running_loop()
        with self._lock:
            merger = self._mergers.get(loop)
            if merger is None:
                merger = self._mergers[loop] = RangeMerger(
                    self.fetch, self.merge_options, self.stats
                )
            return merger

    # -- reading --------------------------------------------------------------------------------

    async def read(self, url: str, start: int, end: int) -> tuple[bytes | memoryview, bool]:
        """Bytes ``[start, end)`` of reference URL ``url`` (fewer if the file ends first), and
        whether they came from a cache. Nothing is cached here: the caller `remember`s the
        bytes once it has checked them, so no cache ever holds bytes that failed a check."""
        cached = await self._cache_get(url, start, end)
        if cached is not None:
            return cached, True
        # Local reads are merged too: one worker-thread hop per run instead of one per chunk.
        return await self._merger().read(url, start, end), False

    async def read_many(
        self, url: str, spans: Sequence[tuple[int, int]]
    ) -> list[tuple[bytes | memoryview, bool]]:
        """`read` of each of ``spans`` of ``url``; without a cache, parked in the merge queue
        together (no task per range)."""
        if self.caches:
            return list(await asyncio.gather(*(self.read(url, a, b) for a, b in spans)))
        return [(data, False) for data in await self._merger().read_many(url, spans)]

    @property
    def caches(self) -> bool:
        """Whether checked bytes are kept anywhere (`remember` does something)."""
        return self.options.memory_cache is not None or self.options.local_cache is not None

    async def read_whole(self, url: str) -> tuple[bytes, bool]:
        """The whole of reference URL ``url``, and whether it came from a cache."""
        cached = await self._cache_get(url, 0, -1)
        if cached is not None:
            return cached, True
        return bytes(await self.fetch(url, 0, None)), False  # a whole file is bytes already

    async def remember(self, url: str, start: int, end: int, data: bytes | memoryview) -> None:
        """Keep checked bytes ``[start, end)`` of ``url`` (``0, -1``: the whole file) in the
        caches."""
        await self._cache_put(url, start, end, data)

    async def read_index(self, location: str) -> bytes:
        """One chunk of a stored index array (a path or URL next to the references)."""
        self.check_index(location)
        return await self.transport.read_whole(location)

    def check_index(self, location: str) -> None:
        """Refuse a file of a stored index array that may not be read (see `read_index`)."""
        self.access.check_index(location, self.rfs.base)

    async def fetch(self, url: str, start: int, end: int | None) -> bytes | memoryview:
        """One physical read, no cache, no merging (the merge queue calls this)."""
        answer = await self.transport.read(
            self.absolute(url), start, end, expect=self.source_info(url), name=url, view=True
        )
        return answer.data

    # -- caches ---------------------------------------------------------------------------------

    async def _cache_get(self, url: str, start: int, end: int) -> bytes | None:
        if not self.caches:
            return None
        options = self.options
        identity = await self.identity(url)
        if options.memory_cache is not None:
            data = options.memory_cache.get(identity, start, end)
            if data is not None:
                self.stats.add(cache_hits=1)
                return data
        if options.local_cache is not None:
            data = await asyncio.to_thread(options.local_cache.get, identity, start, end)
            if data is not None:
                self.stats.add(cache_hits=1)
                if options.memory_cache is not None:
                    options.memory_cache.put(identity, start, end, data)
                return data
        return None

    async def _cache_put(self, url: str, start: int, end: int, data: bytes | memoryview) -> None:
        if not self.caches:
            return
        options = self.options
        # The identity the bytes were read under (every read through the caches looks it up
        # first), not the file's now: it may have changed since.
        with self._lock:
            identity = self._identities.get(url)
        if identity is None:
            return
        blob = bytes(data)
        if options.memory_cache is not None:
            options.memory_cache.put(identity, start, end, blob)
        if options.local_cache is not None:
            await asyncio.to_thread(options.local_cache.put, identity, start, end, blob)

    # -- sessions -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the session of the running loop."""
        with self._lock:
            self._mergers.pop(asyncio.get_running_loop(), None)
        await self.transport.aclose()

    def close(self) -> None:
        """Close the sessions of every loop still running (from outside those loops)."""
        with self._lock:
            self._mergers.clear()
        self.transport.close()

    def forget_loops(self) -> None:
        """After a fork: the parent's loops, queues and sessions are not ours to use."""
        self._lock = threading.Lock()
        self._mergers = weakref.WeakKeyDictionary()
        self.transport.forget_loops()


def _after_fork() -> None:
    for reader in list(_READERS):
        reader.forget_loops()


_READERS: weakref.WeakSet[SourceReader] = weakref.WeakSet()

# zarr is imported above (through merge), so this hook runs before zarr stops its loop.
atexit.register(close_all)
os.register_at_fork(after_in_child=_after_fork)
