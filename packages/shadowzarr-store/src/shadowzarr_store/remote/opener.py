"""open_remote_array: one array of a remote container in one call, references cached on disk.

The container's format picks a generator (HDF5 and TIFF ones are given by the caller, so this
package needs neither h5py nor tifffile; Zarr stores and reference files are built in). The
references made for ``(format, container, dataset)`` are kept on disk under the source's
identity: with ``assume_immutable=True`` (the default) a second open reads them without sending
a single request, and every chunk read still carries the recorded ETag (``If-Match``), so a
replaced file raises `SourceChangedError` rather than mixing old and new bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from shadowzarr_spec import REFS_FILE, ReferenceFileSystem

from shadowzarr_store.options import StoreOptions
from shadowzarr_store.references import load_rfs
from shadowzarr_store.remote.address import Address, SourceFormat, parse_address
from shadowzarr_store.remote.errors import OfflineError
from shadowzarr_store.remote.identity import SourceIdentity, probe_identity
from shadowzarr_store.remote.policy import DEFAULT_CACHE_BYTES, CachePolicy, make_caches
from shadowzarr_store.remote.reference_cache import ReferenceCache
from shadowzarr_store.remote.remote_array import RemoteArray
from shadowzarr_store.remote.zarr_source import ZarrSourceStore, zarr_references
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.transport import Transport, is_local, local_path, run_blocking

__all__ = ["ACCESS_OPTIONS", "Generate", "open_remote_array"]

type Generate = Callable[[Address, Mapping[str, Any]], tuple[ReferenceFileSystem, str]]
"""Make references for ``address`` with the caller's access options (`ACCESS_OPTIONS`): the
references and the array's path inside them."""

ACCESS_OPTIONS = ("headers", "allowed_urls", "storage_options")
"""Store options that generators take too, so generation asks as the reads will."""

_UNSET: Any = object()


def _zarr(address: Address, access: Mapping[str, Any]) -> tuple[ReferenceFileSystem, str]:
    transport = _transport(address, access)

    async def read() -> ReferenceFileSystem:
        try:
            return await zarr_references(transport, address.container, address.dataset)
        finally:
            await transport.aclose()

    return run_blocking(read()), address.dataset


def _references(address: Address, access: Mapping[str, Any]) -> tuple[ReferenceFileSystem, str]:
    return load_rfs(address.container, **access), address.dataset


BUILT_IN: dict[str, Generate] = {"zarr": _zarr, "references": _references}


def _transport(address: Address, access: Mapping[str, Any]) -> Transport:
    """The transport for the container itself (a local container is the caller's own choice)."""
    options = StoreOptions.from_kwargs(dict(access))
    return Transport(options.transport(allow_local_files=True))


def open_remote_array(
    source: str | os.PathLike[str] | ReferenceFileSystem | dict[str, Any],
    *,
    dataset: str | None = None,
    source_format: SourceFormat | None = None,
    generators: Mapping[str, Generate] | None = None,
    generator_tag: str = "",
    cache: CachePolicy | str = CachePolicy.MEMORY,
    max_cache_bytes: int | None = _UNSET,
    cache_dir: str | os.PathLike[str] | None = None,
    reference_cache: bool = True,
    assume_immutable: bool = True,
    offline: bool = False,
    max_concurrency: int = 16,
    **store_options: Any,
) -> RemoteArray:
    """Open one array as a `RemoteArray` (a `zarr.Array` plus cache, prefetch, info, export).

    Parameters
    ----------
    source
        ``https://…/file.nwb::/acquisition/x/data``, the slash form ``…/file.h5/a/b``, a Zarr
        store URL or path (``…/store.zarr/array``), a reference file or directory (``.json``,
        ``refs.json`` folder), or references in memory (`ReferenceFileSystem` or dict).
    dataset
        The array inside the container (instead of ``::`` or the slash form).
    source_format
        ``"hdf5"``, ``"tiff"``, ``"zarr"`` or ``"references"`` when the name does not tell.
    generators
        Format → `Generate`; HDF5 and TIFF come from ``shadowzarr.open_array``.
    generator_tag
        Part of the reference-cache key (e.g. generator options): change it to regenerate.
    cache
        ``"none"``, ``"memory"`` (bounded LRU) or ``"disk"`` (SQLite `LocalCache`).
    max_cache_bytes
        Bound of the cache, enforced after every read (default 256 MiB; None: an unbounded disk
        cache). Pass ``memory_cache=``/``local_cache=`` to share one cache between arrays.
    cache_dir
        Folder of the disk cache (``chunks/``) and of cached references (``references/``);
        default ``$SHADOWZARR_CACHE_DIR`` or ``~/.shadowzarr/cache``.
    reference_cache
        Keep generated references on disk keyed by the source's identity (URL + ETag or size).
    assume_immutable
        True: trust the cached references and the recorded identity (zero requests to reopen).
        False: ask the source for its identity (one HEAD) before each operation; a change drops
        its cached bytes and regenerates the references.
    offline
        Never fetch: reads answered from the cache, others raise `OfflineError`.
    max_concurrency
        Chunk reads in flight during `RemoteArray.fetch`.
    **store_options
        `RfsStore` options (``merge_gap``, ``retries``, ``local_cache``, ``memory_cache``…).
    """
    if max_cache_bytes is _UNSET:
        max_cache_bytes = DEFAULT_CACHE_BYTES
    caches = make_caches(
        cache,
        max_cache_bytes,
        cache_dir,
        memory_cache=store_options.pop("memory_cache", None),
        local_cache=store_options.pop("local_cache", None),
    )
    common: dict[str, Any] = {
        "caches": caches,
        "offline": offline,
        "max_concurrency": max_concurrency,
        **store_options,
    }
    if isinstance(source, ReferenceFileSystem | dict):
        rfs = source if isinstance(source, ReferenceFileSystem) else load_rfs(source)
        return RemoteArray(rfs, _clean(dataset), source="references in memory", **common)

    address = parse_address(source, dataset=dataset, source_format=source_format)
    generate = {**BUILT_IN, **(generators or {})}.get(address.format)
    if generate is None:
        raise ValueError(
            f"no generator for {address.format} sources: install shadowzarr[{address.format}] "
            "and open with shadowzarr.open_array"
        )
    references = (
        ReferenceCache(None if cache_dir is None else os.path.join(cache_dir, "references"))
        if reference_cache
        else None
    )
    request = f"{address.format}\x00{address.container}\x00{address.dataset}\x00{generator_tag}"
    opened: dict[str, str] = {}
    access = {name: store_options[name] for name in ACCESS_OPTIONS if name in store_options}
    transport = _transport(address, access)

    def reopen(
        _known: SourceIdentity | None,
    ) -> tuple[SourceIdentity | None, ReferenceFileSystem]:
        identity = run_blocking(probe_identity(transport, _identity_url(address)))
        found = references.get(request, identity) if references is not None else None
        if found is None:
            rfs, path = generate(address, access)
            opened["how"] = "generated"
            if references is not None:
                references.put(request, identity, rfs, path)
                found = references.get(request, identity)
                rfs, path = found if found is not None else (rfs, path)
        else:
            rfs, path = found
            opened["how"] = "cached"
        opened["path"] = path
        return identity, rfs

    # A local container is asked who it is at every open (a stat and a few small reads), so
    # references cached from a file that was rewritten since are never served.
    local = is_local(address.container)
    latest = references.latest(request) if references is not None else None
    header_requests = 0
    identity: SourceIdentity | None
    if latest is not None and (offline or (assume_immutable and not local)):
        identity, rfs, path = latest
        how = "cached on disk (no header reads)"
    elif offline:
        raise OfflineError(f"offline: no cached references for {address}")
    else:
        try:
            identity, rfs = reopen(None)
        finally:
            run_blocking(transport.aclose())
        header_requests = 0 if local else 1
        path = opened["path"]
        how = "cached on disk" if opened["how"] == "cached" else "generated"
    return RemoteArray(
        rfs,
        path,
        source=str(address),
        identity=identity,
        reopen=reopen,
        assume_immutable=assume_immutable,
        references=how,
        header_requests=header_requests,
        store_class=ZarrSourceStore if address.format == "zarr" else RfsStore,
        **common,
    )


def _identity_url(address: Address) -> str:
    """What stands for the source: the file, or for a Zarr store (a folder) the array's
    ``zarr.json`` (Zarr chunks are assumed immutable under one metadata document)."""
    if address.format == "references" and is_local(address.container):
        folder = local_path(address.container)
        return os.path.join(folder, REFS_FILE) if os.path.isdir(folder) else address.container
    if address.format != "zarr":
        return address.container
    inner = f"/{address.dataset}" if address.dataset else ""
    return f"{address.container.rstrip('/')}{inner}/zarr.json"


def _clean(path: str | None) -> str:
    return "/".join(part for part in (path or "").split("/") if part)
