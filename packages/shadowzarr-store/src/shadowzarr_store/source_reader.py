"""Bytes of source files for one store: where they are, what they cost, whether they changed.

Routes a reference URL to a local read or an HTTP request (through the resolve hook or the DANDI
resolver), consults the caches, and parks small HTTP reads in the merge queue of the running
event loop. Sessions, merge queues and in-flight futures are kept per event loop, because aiohttp
sessions and futures cannot cross loops (zarr's own loop, users' loops, forked children).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import inspect
import os
import threading
import weakref
from typing import TYPE_CHECKING

from shadowzarr_spec import SourceAccessError, SourceInfo
from shadowzarr_spec.errors import redact_credentials

from shadowzarr_store.access import AccessPolicy
from shadowzarr_store.dandi import DandiResolver
from shadowzarr_store.fetch.http import RetryPolicy, fetch_range, new_session
from shadowzarr_store.fetch.local import is_local, read_local
from shadowzarr_store.merge import RangeMerger

if TYPE_CHECKING:
    import aiohttp
    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.options import StoreOptions
    from shadowzarr_store.stats import StoreStats

__all__ = ["SourceReader"]

_NO_SOURCE = SourceInfo()
_LOCAL_CACHE_WINDOW = 0.002


class _LoopState:
    """What one event loop owns: its HTTP session and its merge queue."""

    def __init__(self, reader: SourceReader) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.merger = RangeMerger(reader.fetch, reader.merge_options, reader.stats)

    def http(self, options: StoreOptions) -> aiohttp.ClientSession:
        if self.session is None or self.session.closed:
            self.session = new_session(options.max_connections, options.timeout)
        return self.session


class SourceReader:
    """Reads byte ranges of the sources of one reference file system."""

    def __init__(self, rfs: ReferenceFileSystem, options: StoreOptions, stats: StoreStats) -> None:
        self.rfs = rfs
        self.options = options
        self.stats = stats
        self.policy = RetryPolicy(
            attempts=options.retries + 1, backoff=options.backoff, max_backoff=options.max_backoff
        )
        self.dandi = DandiResolver(options.dandi_api_hosts, options.presigned_url_ttl)
        self.access = AccessPolicy.for_references(rfs, options)
        self.merge_options = options
        if options.local_cache is not None and options.merge_window < _LOCAL_CACHE_WINDOW:
            # Cache look-ups finish in worker threads at different times; wait for the stragglers.
            self.merge_options = dataclasses.replace(options, merge_window=_LOCAL_CACHE_WINDOW)
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        self._finalizer = weakref.finalize(self, _close_soon, self._loops)
        _READERS.add(self)

    # -- addresses ------------------------------------------------------------------------------

    def absolute(self, url: str) -> str:
        """A reference URL made absolute against the directory holding the references."""
        base = self.rfs.base
        if base is None or "://" in url or os.path.isabs(url):
            return url
        if "://" in base:
            return f"{base.rstrip('/')}/{url}"
        return os.path.join(base, url)

    def source_info(self, url: str) -> SourceInfo:
        if not self.options.validate_sources:
            return _NO_SOURCE
        return self.rfs.sources.get(url, _NO_SOURCE)

    def identity(self, url: str) -> str:
        """The cache identity of a source: a changed file gets new entries, never old bytes;
        credentials in its URL are not part of it (nor written to a cache)."""
        info = self.rfs.sources.get(url, _NO_SOURCE)
        return (
            f"{redact_credentials(self.absolute(url))}\x00{info.etag or ''}\x00{'' if info.size is None else info.size}"
        )

    # -- per-loop state -------------------------------------------------------------------------

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._loops.get(loop)
            if state is None:
                state = self._loops[loop] = _LoopState(self)
            return state

    # -- reading --------------------------------------------------------------------------------

    async def read(self, url: str, start: int, end: int) -> tuple[bytes | memoryview, bool]:
        """Bytes ``[start, end)`` of reference URL ``url`` (fewer if the file ends first), and
        whether they came from a cache. Nothing is cached here: the caller `remember`s the
        bytes once it has checked them, so no cache ever holds bytes that failed a check."""
        cached = await self._cache_get(url, start, end)
        if cached is not None:
            return cached, True
        # Local reads are merged too: one worker-thread hop per run instead of one per chunk.
        return await self._state().merger.read(url, start, end), False

    async def read_whole(self, url: str) -> tuple[bytes, bool]:
        """The whole of reference URL ``url``, and whether it came from a cache."""
        cached = await self._cache_get(url, 0, -1)
        if cached is not None:
            return cached, True
        return await self.fetch(url, 0, None), False

    async def remember(self, url: str, start: int, end: int, data: bytes | memoryview) -> None:
        """Keep checked bytes ``[start, end)`` of ``url`` (``0, -1``: the whole file) in the
        caches."""
        await self._cache_put(url, start, end, data)

    async def read_index(self, location: str) -> bytes:
        """One chunk of a stored index array (a path or URL next to the references)."""
        self.access.check_index(location, self.rfs.base)
        if is_local(location):
            data = await read_local(location, 0, None)
        else:
            state = self._state()
            data = await fetch_range(
                state.http(self.options),
                location,
                0,
                None,
                policy=self.policy,
                on_retry=self._count_retry,
                check_url=self.access.check,
                headers=self.options.header_rules,
            )
        self.stats.add(requests=1, bytes=len(data))
        return data

    async def fetch(self, url: str, start: int, end: int | None) -> bytes:
        """One physical read, no cache, no merging (the merge queue calls this)."""
        info = self.source_info(url)
        target = self.absolute(url)
        self.access.check(target)
        if is_local(target):
            data = await read_local(target, start, end, info.size)
        else:
            data = await self._fetch_http(url, target, start, end, info)
        self.stats.add(requests=1, bytes=len(data))
        return data

    async def _fetch_http(
        self, url: str, target: str, start: int, end: int | None, info: SourceInfo
    ) -> bytes:
        state = self._state()
        session = state.http(self.options)
        physical, renewable = await self._physical_url(session, target)
        self.access.check(physical)
        try:
            return await self._get(session, physical, start, end, info, url)
        except SourceAccessError:
            if not renewable:
                raise
        # An expired or refused presigned URL: ask DANDI for a fresh one and read again.
        self.dandi.forget(target, physical)
        physical, _ = await self._physical_url(session, target)
        self.access.check(physical)
        return await self._get(session, physical, start, end, info, url)

    async def _get(
        self,
        session: aiohttp.ClientSession,
        physical: str,
        start: int,
        end: int | None,
        info: SourceInfo,
        url: str,
    ) -> bytes:
        return await fetch_range(
            session,
            physical,
            start,
            end,
            etag=info.etag,
            expected_size=info.size,
            policy=self.policy,
            name=url,
            on_retry=self._count_retry,
            check_url=self.access.check,
            headers=self.options.header_rules,
        )

    async def _physical_url(self, session: aiohttp.ClientSession, url: str) -> tuple[str, bool]:
        """The URL to request for ``url`` and whether it can be renewed after a refusal."""
        hook = self.options.resolve_url
        if hook is not None:
            resolved = hook(url)
            if inspect.isawaitable(resolved):
                resolved = await resolved
            if resolved is not None:
                self.stats.add(url_resolutions=1)
                return resolved, False
        if self.dandi.handles(url):
            if self.dandi.cached(url) is None:
                self.stats.add(url_resolutions=1)
            return await self.dandi.resolve(session, url, self.policy), True
        return url, False

    def _count_retry(self) -> None:
        self.stats.add(retries=1)

    # -- caches ---------------------------------------------------------------------------------

    async def _cache_get(self, url: str, start: int, end: int) -> bytes | None:
        options = self.options
        if options.memory_cache is None and options.local_cache is None:
            return None
        identity = self.identity(url)
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
        options = self.options
        if options.memory_cache is None and options.local_cache is None:
            return
        identity = self.identity(url)
        blob = bytes(data)
        if options.memory_cache is not None:
            options.memory_cache.put(identity, start, end, blob)
        if options.local_cache is not None:
            await asyncio.to_thread(options.local_cache.put, identity, start, end, blob)

    # -- sessions -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the session of the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._loops.pop(loop, None)
        if state is not None and state.session is not None:
            await state.session.close()

    def close(self) -> None:
        """Close the sessions of every loop still running (from outside those loops)."""
        with self._lock:
            states = list(self._loops.items())
            self._loops.clear()
        current = _running_loop()
        for loop, state in states:
            session = state.session
            if session is None or session.closed:
                continue
            if loop is current:
                loop.create_task(session.close())
            elif loop.is_running() and not loop.is_closed():
                future = asyncio.run_coroutine_threadsafe(session.close(), loop)
                with contextlib.suppress(TimeoutError, RuntimeError):
                    future.result(timeout=5)

    def forget_loops(self) -> None:
        """After a fork: the parent's loops and sessions are not ours to use."""
        self._finalizer.detach()
        self._lock = threading.Lock()
        self._loops = weakref.WeakKeyDictionary()
        self._finalizer = weakref.finalize(self, _close_soon, self._loops)


def _close_soon(loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState]) -> None:
    """A store was garbage collected: close its sessions on loops that can still run them."""
    for loop, state in list(loops.items()):
        session = state.session
        if session is None or session.closed or loop.is_closed():
            continue
        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(session.close(), loop)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_READERS: weakref.WeakSet[SourceReader] = weakref.WeakSet()


def _close_all() -> None:
    for reader in list(_READERS):
        reader.close()


def _after_fork() -> None:
    for reader in list(_READERS):
        reader.forget_loops()


# zarr is imported above (through merge), so this hook runs before zarr stops its loop.
atexit.register(_close_all)
os.register_at_fork(after_in_child=_after_fork)
