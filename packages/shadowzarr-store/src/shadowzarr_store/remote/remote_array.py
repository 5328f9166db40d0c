"""RemoteArray: a zarr array over references, plus what blosc2's RemoteArray users expect.

It is a thin wrapper: indexing, ``shape``, ``dtype``, ``attrs``… are the `zarr.Array`'s own
(``remote.array`` is that array, for dask's ``from_zarr``). What it adds is the cache policy,
``fetch``/``afetch`` (prefetch), ``read_cached`` (no network), an offline switch, ``info``,
``traffic``, ``export`` (references with warm chunks) and identity refresh for sources that may
be replaced (``assume_immutable=False``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from shadowzarr_store.remote.errors import OfflineError
from shadowzarr_store.remote.offline import OfflineGuard, OfflineSwitch
from shadowzarr_store.remote.progress import ProgressCallback, progress_reporter
from shadowzarr_store.remote.selection import chunk_keys
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.transport.stats import StatsSnapshot

if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.remote.identity import SourceIdentity
    from shadowzarr_store.remote.policy import Caches

__all__ = ["RemoteArray", "RemoteInfo"]

type Reopen = Callable[[SourceIdentity | None], tuple[SourceIdentity | None, ReferenceFileSystem]]
"""Given the source's identity now (None: ask), the identity and the references that match it."""


@dataclass(frozen=True, slots=True)
class RemoteInfo:
    """What ``remote.info`` shows: one readable summary (``print(remote.info)``)."""

    items: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        width = max(len(name) for name, _ in self.items)
        return "\n".join(f"{name:<{width}} : {value}" for name, value in self.items)

    def __repr__(self) -> str:
        return str(self)

    def __getitem__(self, name: str) -> str:
        return dict(self.items)[name]


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
        shared = {
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
        self._array = zarr.open_array(self._store, path=self._path, mode="r", zarr_format=3)
        self._offline_array = zarr.open_array(
            self._offline_store, path=self._path, mode="r", zarr_format=3
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
        report = progress_reporter(progress)
        limit = asyncio.Semaphore(max_concurrency or self._max_concurrency)
        prototype = default_buffer_prototype()
        done = 0

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
        codecs = ", ".join(_codec_name(codec) for codec in getattr(metadata, "codecs", ()))
        size = self._identity.size if self._identity is not None else None
        etag = self._identity.etag if self._identity is not None else None
        traffic = self.traffic
        cap = self.max_cache_bytes
        return (
            ("type", "RemoteArray (zarr.Array over references)"),
            ("source", self._source),
            ("source size", "unknown" if size is None else _bytes(size)),
            ("source etag", etag or "none"),
            ("shape", str(array.shape)),
            ("dtype", str(array.dtype)),
            ("chunks", str(array.chunks) + (f" in shards {array.shards}" if array.shards else "")),
            ("codecs", codecs or "none"),
            ("nbytes", _bytes(array.nbytes)),
            ("references", self._references),
            ("cache", self.cache_policy),
            ("cache bytes", f"{_bytes(self.cache_bytes)} of {_cap(cap)}"),
            ("offline", str(self.offline)),
            ("assume immutable", str(self._assume_immutable)),
            (
                "traffic",
                f"{traffic.requests} requests, {_bytes(traffic.bytes)}, "
                f"{traffic.cache_hits} cache hits",
            ),
        )

    @property
    def info(self) -> RemoteInfo:
        return RemoteInfo(self.info_items)

    # -- export ---------------------------------------------------------------------------------

    def export(self, target: str | os.PathLike[str], *, include_cache: bool = True) -> Path:
        """Write the references to directory ``target``, with the cached chunks stored in it.

        See `export_references`: the result opens with `RfsStore`/`open_rfs` anywhere; the
        chunks it holds need no access to the source.
        """
        from shadowzarr_store.remote.export import export_references

        return sync(export_references(self._store, self._caches, target, include_cache))

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


def _codec_name(codec: Any) -> str:
    name = type(codec).__name__
    codec_id = getattr(codec, "codec_id", None) or getattr(codec, "codec_name", None)
    return str(codec_id) if codec_id else name


def _bytes(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def _cap(cap: int | None) -> str:
    if cap is None:
        return "unbounded"
    return "no cache" if cap == 0 else _bytes(cap)
