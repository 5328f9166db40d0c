"""RemoteArray: a zarr array over references, plus what blosc2's RemoteArray users expect.

It is a thin wrapper: indexing, ``shape``, ``dtype``, ``attrs``… are the `zarr.Array`'s own
(``remote.array`` is that array, for dask's ``from_zarr``). What it adds is the cache policy,
``fetch``/``afetch`` (prefetch), ``read_cached`` (no network), ``cache_contains``,
``trim_cache``, ``get_chunk``, an offline switch, ``info``, ``traffic``, reductions read block by
block (``sum``, ``mean``, ``min``, ``max``, ``var``, ``std``), ``save``/``to_cframe`` (references
with warm chunks, reopened without naming the array), ``materialize`` and identity refresh for
sources that may be replaced (``assume_immutable=False``). It pickles with plain `pickle`: the
references, options and cache settings travel, the cached bytes of a memory cache do not.
"""

from __future__ import annotations

import asyncio
from dataclasses import fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr
from shadowzarr_spec import DatasetNotFoundError, array_info, array_paths
from shadowzarr_spec.units import format_bytes
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from shadowzarr_store.remote import reductions
from shadowzarr_store.remote.cached_chunks import chunk_is_cached
from shadowzarr_store.remote.errors import OfflineError
from shadowzarr_store.remote.export import scrub_url
from shadowzarr_store.remote.info import (
    RemoteInfo,
    codec_name,
    data_files,
    format_cap,
    is_local_folder,
)
from shadowzarr_store.remote.offline import OfflineGuard, OfflineSwitch
from shadowzarr_store.remote.progress import ProgressCallback, progress_reporter
from shadowzarr_store.remote.selection import chunk_key_of, chunk_keys, chunk_selection
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.transport.stats import StatsSnapshot

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.remote.identity import SourceIdentity
    from shadowzarr_store.remote.policy import Caches

__all__ = ["RemoteArray", "RemoteInfo"]

type Reopen = Callable[[SourceIdentity | None], tuple[SourceIdentity | None, ReferenceFileSystem]]
"""Given the source's identity now (None: ask), the identity and the references that match it."""


class RemoteArray:
    """One array of a reference file system, read through an `RfsStore` with a cache policy.

    Built by `open_remote_array` (or ``shadowzarr.open_array``); every attribute it does not
    define is the underlying `zarr.Array`'s.
    """

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        path: str,
        *,
        caches: Caches,
        source: str,
        identity: SourceIdentity | None = None,
        reopen: Reopen | None = None,
        assume_immutable: bool = True,
        offline: bool = False,
        max_concurrency: int = 16,
        references: str = "given",
        header_requests: int = 0,
        store_class: type[RfsStore] = RfsStore,
        **store_options: Any,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._path = path
        self._caches = caches
        self._source = source
        self._identity = identity
        self._reopen = reopen
        self._assume_immutable = assume_immutable
        self._switch = OfflineSwitch(offline)
        self._max_concurrency = max_concurrency
        self._references = references
        self._header_requests = header_requests
        self._store_class = store_class
        self._user_resolve = store_options.pop("resolve_url", None)
        self._store_options = store_options
        self._earlier = StatsSnapshot()
        self._build(rfs)

    def _build(self, rfs: ReferenceFileSystem) -> None:
        # Chunk by chunk as stored (get_chunk, cache_contains, export speak of stored chunks);
        # a caller may still pass grouped_view="auto".
        shared = {
            "grouped_view": 0,
            **self._store_options,
            "memory_cache": self._caches.memory,
            "local_cache": self._caches.disk,
        }
        self._rfs = rfs
        self._store = self._store_class(
            rfs, **shared, resolve_url=OfflineGuard(self._switch, self._user_resolve)
        )
        # read_cached reads through a twin that is always offline, sharing the same caches.
        self._offline_store = self._store_class(
            rfs, **shared, resolve_url=OfflineGuard(OfflineSwitch(offline=True))
        )
        self._check_path(rfs)
        self._array = zarr.open_array(self._store, path=self._path, mode="r", zarr_format=3)
        self._offline_array = zarr.open_array(
            self._offline_store, path=self._path, mode="r", zarr_format=3
        )

    def _check_path(self, rfs: ReferenceFileSystem) -> None:
        """Refuse a path that is not an array of ``rfs``, naming it and the source (zarr's own
        error would name a cache folder, or say only that a group is not an array)."""
        try:
            if array_info(rfs, self._path) is not None:
                return
        except (ValueError, KeyError):
            pass
        node = f"{self._path}/zarr.json" if self._path else "zarr.json"
        what = "a group" if node in rfs.refs else "not there"
        arrays = sorted(array_paths(rfs))
        shown = ", ".join(repr(path) for path in arrays[:6]) + (", …" if len(arrays) > 6 else "")
        raise DatasetNotFoundError(
            f"{self._path or '/'!r} is not an array of {self._source} ({what})"
            + (f"; its arrays: {shown}" if arrays else "")
        )

    # -- the zarr array -------------------------------------------------------------------------

    @property
    def array(self) -> zarr.Array[Any]:
        """The `zarr.Array` (after an identity refresh when the source may change)."""
        self._refresh()
        return self._array

    @property
    def store(self) -> RfsStore:
        return self._store

    @property
    def rfs(self) -> ReferenceFileSystem:
        return self._rfs

    def __getitem__(self, selection: Any) -> Any:
        self._refresh()
        return self._array[selection]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._array, name)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values: np.ndarray = np.asarray(self[...])
        return values if dtype is None else values.astype(dtype)

    def __len__(self) -> int:
        if not self._array.shape:
            raise TypeError("len() of a 0-d array")
        return int(self._array.shape[0])

    def __repr__(self) -> str:
        return f"<RemoteArray {self._source} shape={self._array.shape} dtype={self._array.dtype}>"

    def _repr_html_(self) -> str:
        """The notebook summary: fields, a map of the cached chunks, traffic (no request)."""
        from shadowzarr_store.remote.summary_html import remote_array_html

        return remote_array_html(self)

    # -- pickling -------------------------------------------------------------------------------

    _DERIVED = ("_store", "_offline_store", "_array", "_offline_array", "_switch")

    def __getstate__(self) -> dict[str, Any]:
        state = {name: value for name, value in vars(self).items() if name not in self._DERIVED}
        state["_offline"] = self._switch.offline
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        offline = state.pop("_offline")
        vars(self).update(state)
        self._switch = OfflineSwitch(offline)
        self._build(self._rfs)

    # -- where it comes from --------------------------------------------------------------------

    @property
    def urlpath(self) -> str:
        """The source address (``container::/dataset``), without credentials."""
        container, separator, inner = self._source.partition("::")
        return scrub_url(container) + separator + inner

    @property
    def dataset(self) -> str:
        """The array's path inside its container ("" for a root array)."""
        return self._path

    @property
    def vlmeta(self) -> Mapping[str, Any]:
        """The array's attributes, read-only (blosc2's variable-length metadata)."""
        return MappingProxyType(dict(self._array.attrs))

    # -- cache, offline -------------------------------------------------------------------------

    @property
    def cache_policy(self) -> str:
        return self._caches.policy.value

    @property
    def cache_bytes(self) -> int:
        """Bytes the cache holds now (a shared disk cache counts every array it serves)."""
        return self._caches.size_bytes

    @property
    def max_cache_bytes(self) -> int | None:
        return self._caches.max_size_bytes

    @property
    def offline(self) -> bool:
        """True: reads are answered from the cache or raise `OfflineError`, never fetched."""
        return self._switch.offline

    @offline.setter
    def offline(self, value: bool) -> None:
        self._switch.offline = bool(value)

    @property
    def assume_immutable(self) -> bool:
        return self._assume_immutable

    @property
    def identity(self) -> SourceIdentity | None:
        return self._identity

    # -- prefetch and cached reads --------------------------------------------------------------

    def fetch(
        self,
        selection: Any = (),
        *,
        max_concurrency: int | None = None,
        progress: ProgressCallback | bool | None = None,
    ) -> RemoteArray:
        """Read the chunks under ``selection`` into the cache (not decoded); return self."""
        return sync(self.afetch(selection, max_concurrency=max_concurrency, progress=progress))

    async def afetch(
        self,
        selection: Any = (),
        *,
        max_concurrency: int | None = None,
        progress: ProgressCallback | bool | None = None,
    ) -> RemoteArray:
        """`fetch` for async code: at most ``max_concurrency`` chunk reads in flight."""
        if self._caches.disk is None and self._caches.memory is None:
            raise ValueError("fetch needs a cache: open with cache='memory' or cache='disk'")
        await asyncio.to_thread(self._refresh)
        keys = list(chunk_keys(self._array, selection))
        limit = asyncio.Semaphore(max_concurrency or self._max_concurrency)
        prototype = default_buffer_prototype()
        done = 0
        with progress_reporter(progress, len(keys)) as report:

            async def one(key: str) -> None:
                nonlocal done
                async with limit:
                    await self._store.get(key, prototype)
                done += 1
                report(done, len(keys))

            await asyncio.gather(*(one(key) for key in keys))
            if not keys:
                report(0, 0)
        return self

    def read_cached(self, selection: Any = ()) -> tuple[bool, Any]:
        """``(True, values)`` when the cache holds every chunk of ``selection``, else
        ``(False, None)``; never sends a request (chunks that are not cached are not fetched)."""
        before = self._offline_store.stats.snapshot()
        try:
            values = self._offline_array[selection]
        except OfflineError:
            return False, None
        # Local source files are not network reads, but a read of one is not a cache hit either.
        read = self._offline_store.stats.snapshot() - before
        return (read.requests == 0), (values if read.requests == 0 else None)

    def cache_contains(self, selection: Any = (), *, nchunk: int | None = None) -> bool:
        """Whether reading ``selection`` (or stored chunk number ``nchunk``) needs no request:
        every chunk under it is cached, inline or never written. Sends nothing."""
        keys = (
            [chunk_key_of(self._array, nchunk)]
            if nchunk is not None
            else list(chunk_keys(self._array, selection))
        )

        async def every() -> bool:
            for key in keys:
                if not await chunk_is_cached(self._store, self._caches, key):
                    return False
            return True

        return sync(every())

    def trim_cache(self, target_bytes: int, *, max_chunks: int | None = None) -> int:
        """Evict least recently used chunks until the cache holds at most ``target_bytes`` (or
        ``max_chunks`` went); returns how many were evicted. A shared disk cache is trimmed as a
        whole."""
        return self._caches.trim(target_bytes, max_chunks)

    def get_chunk(self, nchunk: int) -> bytes | None:
        """The stored (encoded) bytes of chunk number ``nchunk`` in C order over the chunk grid
        (shards, when sharded); None for a chunk never written (it reads as the fill value)."""
        self._refresh()
        key = chunk_key_of(self._array, nchunk)
        value = sync(self._store.get(key, default_buffer_prototype()))
        return None if value is None else value.to_bytes()

    def chunk_region(self, nchunk: int) -> tuple[slice, ...]:
        """The part of the array that chunk number ``nchunk`` covers."""
        return chunk_selection(self._array, nchunk)

    def materialize(self, selection: Any = ()) -> np.ndarray:
        """An independent in-memory copy of ``selection`` (not bounded by the cache size)."""
        return np.array(self[selection if selection != () else ...], copy=True)

    # -- reductions, one block of whole chunks at a time ----------------------------------------

    def _read_block(self, block: tuple[slice, ...]) -> np.ndarray:
        return np.asarray(self._array[block])

    def _geometry(self) -> tuple[tuple[int, ...], tuple[int, ...], np.dtype[Any]]:
        self._refresh()
        array = self._array
        return array.shape, array.shards or array.chunks, np.dtype(array.dtype)

    def sum(
        self, axis: reductions.Axes = None, *, dtype: Any = None, keepdims: bool = False
    ) -> Any:
        """The sum along ``axis``; exact for integers, compensated for floats (see
        `reductions`); what numpy gives on the whole array, read block by block."""
        shape, chunks, kind = self._geometry()
        return reductions.reduce_sum(self._read_block, shape, chunks, kind, axis, keepdims, dtype)

    def mean(
        self, axis: reductions.Axes = None, *, dtype: Any = None, keepdims: bool = False
    ) -> Any:
        """The arithmetic mean along ``axis`` (float64 for integers, as numpy)."""
        shape, chunks, kind = self._geometry()
        return reductions.reduce_mean(self._read_block, shape, chunks, kind, axis, keepdims, dtype)

    def min(self, axis: reductions.Axes = None, *, keepdims: bool = False) -> Any:
        """The minimum along ``axis`` (NaN propagates, as in numpy)."""
        shape, chunks, _ = self._geometry()
        return reductions.reduce_extreme(self._read_block, shape, chunks, "min", axis, keepdims)

    def max(self, axis: reductions.Axes = None, *, keepdims: bool = False) -> Any:
        """The maximum along ``axis`` (NaN propagates, as in numpy)."""
        shape, chunks, _ = self._geometry()
        return reductions.reduce_extreme(self._read_block, shape, chunks, "max", axis, keepdims)

    def var(
        self,
        axis: reductions.Axes = None,
        *,
        dtype: Any = None,
        ddof: int = 0,
        keepdims: bool = False,
    ) -> Any:
        """The variance along ``axis`` from per-block statistics combined pairwise."""
        shape, chunks, kind = self._geometry()
        return reductions.reduce_var(
            self._read_block, shape, chunks, kind, axis, keepdims, ddof, dtype
        )

    def std(
        self,
        axis: reductions.Axes = None,
        *,
        dtype: Any = None,
        ddof: int = 0,
        keepdims: bool = False,
    ) -> Any:
        """The standard deviation along ``axis`` (the square root of `var`)."""
        return np.sqrt(self.var(axis, dtype=dtype, ddof=ddof, keepdims=keepdims))

    # -- summaries ------------------------------------------------------------------------------

    @property
    def traffic(self) -> StatsSnapshot:
        """Requests, bytes and cache hits of this array so far (reads and cached reads)."""
        reads = _plus(self._store.stats.snapshot(), self._offline_store.stats.snapshot())
        return _plus(_plus(self._earlier, reads), StatsSnapshot(requests=self._header_requests))

    @property
    def info_items(self) -> tuple[tuple[str, str], ...]:
        array = self._array
        metadata = array.metadata
        codecs = ", ".join(codec_name(codec) for codec in getattr(metadata, "codecs", ()))
        size = self._identity.size if self._identity is not None else None
        etag = self._identity.etag if self._identity is not None else None
        if self._identity is not None and is_local_folder(self._identity.url):
            size = None  # a reference directory: its own size says nothing
        traffic = self.traffic
        cap = self.max_cache_bytes
        return (
            ("type", "RemoteArray (zarr.Array over references)"),
            ("source", self._source),
            ("source size", "unknown" if size is None else format_bytes(size)),
            ("source etag", etag or "none"),
            ("shape", str(array.shape)),
            ("dtype", str(array.dtype)),
            ("chunks", str(array.chunks) + (f" in shards {array.shards}" if array.shards else "")),
            ("codecs", codecs or "none"),
            ("nbytes", format_bytes(array.nbytes)),
            ("data files", data_files(self._rfs)),
            ("references", self._references),
            ("cache", self.cache_policy),
            ("cache bytes", f"{format_bytes(self.cache_bytes)} of {format_cap(cap)}"),
            ("offline", str(self.offline)),
            ("assume immutable", str(self._assume_immutable)),
            (
                "traffic",
                f"{traffic.requests} requests, {format_bytes(traffic.bytes)}, "
                f"{traffic.cache_hits} cache hits",
            ),
        )

    @property
    def info(self) -> RemoteInfo:
        return RemoteInfo(self.info_items)

    # -- export ---------------------------------------------------------------------------------

    def export(self, target: str | os.PathLike[str], *, include_cache: bool = True) -> Path:
        """Write the references to ``target`` (a directory, or a ``.json`` file), with the
        cached chunks stored in it; ``include_cache=False`` writes a cold carrier.

        See `export_references`: the result opens with `RfsStore`/`open_rfs` anywhere, and
        with ``shadowzarr.open_array(target)`` without naming the array; the chunks it holds
        need no access to the source.
        """
        from shadowzarr_store.remote.export import export_references

        return sync(
            export_references(self._store, self._caches, target, include_cache, carried=self._path)
        )

    def save(self, urlpath: str | os.PathLike[str], *, include_cache: bool = True) -> str:
        """`export` under blosc2's name; returns the path written."""
        return str(self.export(urlpath, include_cache=include_cache))

    def to_cframe(self, *, include_cache: bool = True) -> bytes:
        """The carrier as bytes: one JSON reference document (warm chunks inline unless
        ``include_cache=False``) that ``shadowzarr.open_array(data)`` opens again."""
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="shadowzarr-cframe-") as folder:
            written = self.export(Path(folder) / "carrier.json", include_cache=include_cache)
            return written.read_bytes()

    # -- identity -------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Ask the source who it is now; if it changed, drop its cached bytes and regenerate
        the references. Returns whether it changed."""
        if self._reopen is None or self._switch.offline:
            return False
        identity, rfs = self._reopen(None)
        self._header_requests += 1
        if identity == self._identity:
            return False
        old = self._identity
        self._earlier = self.traffic - StatsSnapshot(requests=self._header_requests)
        self._forget(old)
        self._identity = identity
        self._build(rfs)
        return True

    def _refresh(self) -> None:
        if not self._assume_immutable:
            self.refresh()

    def _forget(self, identity: SourceIdentity | None) -> None:
        """Drop cached bytes of the old source (the memory cache is this array's own)."""
        if identity is None:
            return
        if self._caches.memory is not None:
            self._caches.memory.clear()
        if self._caches.disk is not None:
            self._caches.disk.forget_source(identity.url)

    def close(self) -> None:
        self._store.close()
        self._offline_store.close()

    async def aclose(self) -> None:
        """Close the HTTP session of the running event loop (after `afetch` from your loop)."""
        await self._store.aclose()
        await self._offline_store.aclose()


def _plus(a: StatsSnapshot, b: StatsSnapshot) -> StatsSnapshot:
    return StatsSnapshot(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(a)})
