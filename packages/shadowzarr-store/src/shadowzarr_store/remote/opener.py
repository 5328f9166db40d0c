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
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from shadowzarr_spec import REFS_FILE, ReferenceFileSystem, SourceError, parse_json
from shadowzarr_spec.io import refs_url_of

from shadowzarr_store.local_cache import LocalCache
from shadowzarr_store.options import StoreOptions
from shadowzarr_store.references import load_rfs
from shadowzarr_store.remote.address import Address, SourceFormat, parse_address
from shadowzarr_store.remote.carrier import carried_array
from shadowzarr_store.remote.errors import OfflineError
from shadowzarr_store.remote.identity import SourceIdentity, probe_identity
from shadowzarr_store.remote.option_names import check_option_names, policy_of
from shadowzarr_store.remote.policy import DEFAULT_CACHE_BYTES, CachePolicy, make_caches
from shadowzarr_store.remote.reference_cache import ReferenceCache
from shadowzarr_store.remote.remote_array import RemoteArray
from shadowzarr_store.remote.sniff import is_folder_url, read_head, sniff_format
from shadowzarr_store.remote.zarr_source import ZarrSourceStore, zarr_references
from shadowzarr_store.rfs_store import RfsStore
from shadowzarr_store.transport import (
    Transport,
    TransportOptions,
    is_local,
    local_path,
    run_blocking,
    transport_for,
)

__all__ = ["ACCESS_OPTIONS", "Generate", "Reopener", "open_remote_array", "sniff_container"]

type Generate = Callable[[Address, Mapping[str, Any]], tuple[ReferenceFileSystem, str]]
"""Make references for ``address`` with the caller's access options (`ACCESS_OPTIONS`): the
references and the array's path inside them."""

ACCESS_OPTIONS = ("headers", "allowed_urls", "storage_options", "proxy")
"""Store options that generators take too, so generation asks as the reads will."""

_UNSET: Any = object()


def _zarr(address: Address, access: Mapping[str, Any]) -> tuple[ReferenceFileSystem, str]:
    transport = _transport(access)

    async def read() -> ReferenceFileSystem:
        try:
            return await zarr_references(transport, address.container, address.dataset)
        finally:
            await transport.aclose()

    return run_blocking(read()), address.dataset


def _references(address: Address, access: Mapping[str, Any]) -> tuple[ReferenceFileSystem, str]:
    rfs = load_rfs(address.container, **access)
    return rfs, address.dataset or carried_array(rfs, address.container)


BUILT_IN: dict[str, Generate] = {"zarr": _zarr, "references": _references}


def sniff_container(container: str, options: TransportOptions) -> SourceFormat | None:
    """The format of a container whose name has no known suffix, from its first bytes (read
    with the caller's transport options); a URL whose head cannot be read as a file but whose
    server redirects it to ``…/`` is a reference folder (``…/refs.json``)."""
    try:
        return sniff_format(read_head(container, options=options))
    except SourceError:
        if is_folder_url(container, options=options):
            return "references"
        raise


def _transport_options(options: Mapping[str, Any]) -> TransportOptions:
    """The transport settings for the container itself, from the caller's store options (a
    local container is the caller's own choice)."""
    return StoreOptions.from_kwargs(dict(options)).transport(allow_local_files=True)


def _transport(access: Mapping[str, Any]) -> Transport:
    return transport_for(_transport_options(access))


@dataclass(frozen=True, slots=True)
class _Opened:
    identity: SourceIdentity | None
    rfs: ReferenceFileSystem
    path: str
    how: str


@dataclass(frozen=True, slots=True)
class Reopener:
    """Identity and references of one address now: from the reference cache when the source is
    unchanged, else generated. A plain value (module-level generator, access options, no
    closures or open sessions), so a `RemoteArray` pickles with it; each open makes its own
    transport and closes it."""

    address: Address
    generate: Generate
    references: ReferenceCache | None
    request: str
    access: Mapping[str, Any] = field(default_factory=dict)
    transport: TransportOptions = field(default_factory=TransportOptions)
    """The settings of the identity probe: every transport option the caller gave."""

    def open(self) -> _Opened:
        identity = self._identity()
        found = self.references.get(self.request, identity) if self.references else None
        if found is not None:
            return _Opened(identity, *found, "cached")
        rfs, path = self.generate(self.address, self.access)
        if self.references is not None:
            self.references.put(self.request, identity, rfs, path)
            found = self.references.get(self.request, identity)
            rfs, path = found if found is not None else (rfs, path)
        return _Opened(identity, rfs, path, "generated")

    def _identity(self) -> SourceIdentity:
        transport = transport_for(self.transport)

        async def probe() -> SourceIdentity:
            try:
                return await probe_identity(transport, _identity_url(self.address))
            finally:
                await transport.aclose()

        return run_blocking(probe())

    def __call__(
        self, _known: SourceIdentity | None
    ) -> tuple[SourceIdentity | None, ReferenceFileSystem]:
        opened = self.open()
        return opened.identity, opened.rfs


def open_remote_array(
    source: str | os.PathLike[str] | ReferenceFileSystem | dict[str, Any] | bytes,
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
    cache_policy: CachePolicy | str | Any = None,
    cache_path: str | os.PathLike[str] | None = None,
    refs: ReferenceFileSystem | dict[str, Any] | str | os.PathLike[str] | None = None,
    _called_as: str = "open_remote_array",
    **store_options: Any,
) -> RemoteArray:
    """Open one array as a `RemoteArray` (a `zarr.Array` plus cache, prefetch, info, export).

    Parameters
    ----------
    source
        ``https://…/file.nwb::/acquisition/x/data``, the slash form ``…/file.h5/a/b``, a DANDI
        ``…/assets/<id>/download/`` URL (with ``::/a/b``, ``/a/b`` or ``dataset=``), a Zarr
        store URL or path (``…/store.zarr/array``), a reference file or directory (``.json``,
        ``refs.json`` folder), references in memory (`ReferenceFileSystem` or dict) or the bytes
        of `RemoteArray.to_cframe`. A name without a known suffix is told by its first bytes.
        Exports of a `RemoteArray` reopen without naming the dataset, as do references holding
        one array.
    dataset
        The array inside the container (instead of ``::`` or the slash form).
    source_format
        ``"hdf5"``, ``"tiff"``, ``"zarr"`` or ``"references"`` when neither the name nor the
        first bytes tell (a Zarr store without a ``.zarr`` suffix).
    generators
        Format → `Generate`; HDF5 and TIFF come from ``shadowzarr.open_array``. Module-level
        functions (or `functools.partial` of them) keep the array picklable.
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
    cache_policy, cache_path, refs
        blosc2's names: ``cache_policy`` is ``cache`` (blosc2's ``CachePolicy`` too);
        ``cache_path`` is the folder of the disk cache (implies ``cache="disk"``); ``refs``
        are references made beforehand for ``source``, opened instead of generating them
        (``open_remote_array(refs, dataset=…)`` with the dataset ``source`` names).
    **store_options
        `RfsStore` options (``merge_gap``, ``retries``, ``local_cache``, ``memory_cache``…);
        an unknown name is a `TypeError` saying what to use instead.

    Raises
    ------
    AddressError
        The address names no array (no format, two datasets, several arrays and none named).
    DatasetNotFoundError
        The container has no array at the dataset named (the message names both).
    """
    check_option_names(store_options, _called_as)
    if max_cache_bytes is _UNSET:
        max_cache_bytes = DEFAULT_CACHE_BYTES
    if cache_policy is not None:
        if cache != CachePolicy.MEMORY and policy_of(cache_policy) != policy_of(cache):
            raise ValueError(f"cache={cache!r} and cache_policy={cache_policy!r} disagree")
        cache = policy_of(cache_policy)
    if cache_path is not None:
        if cache_policy is not None and policy_of(cache) != CachePolicy.DISK:
            raise ValueError(f"cache_path= is the disk cache's folder, not one of cache={cache}")
        if "local_cache" in store_options:
            raise ValueError("give cache_path= or local_cache=, not both")
        cache = CachePolicy.DISK
        store_options["local_cache"] = LocalCache(cache_path, max_cache_bytes)
    if refs is not None:
        if not isinstance(source, str | os.PathLike):
            raise TypeError(f"refs= goes with a source URL or path, not {type(source).__name__}")
        named = parse_address(source, dataset=dataset, sniff=lambda _container: "hdf5")
        return open_remote_array(
            load_rfs(refs) if isinstance(refs, dict) else refs,
            dataset=named.dataset or None,
            cache=cache,
            max_cache_bytes=max_cache_bytes,
            cache_dir=cache_dir,
            reference_cache=reference_cache,
            assume_immutable=assume_immutable,
            offline=offline,
            max_concurrency=max_concurrency,
            _called_as=_called_as,
            **store_options,
        )
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
    if isinstance(source, bytes | bytearray | memoryview):
        source = load_rfs(parse_json(bytes(source)))
    if isinstance(source, ReferenceFileSystem | dict):
        rfs = source if isinstance(source, ReferenceFileSystem) else load_rfs(source)
        where = "references in memory"
        path = _clean(dataset) if dataset is not None else carried_array(rfs, where)
        return RemoteArray(rfs, path, source=where, **common)

    access = {name: store_options[name] for name in ACCESS_OPTIONS if name in store_options}
    transport = _transport_options(store_options)
    address = parse_address(
        source,
        dataset=dataset,
        source_format=source_format,
        sniff=partial(sniff_container, options=transport),
    )
    generate = {**BUILT_IN, **(generators or {})}.get(address.format)
    if generate is None:
        raise ValueError(
            f"no generator for {address.format} sources: install shadowzarr[{address.format}] "
            "and open with shadowzarr.open_array"
        )
    # A local reference file is its own cache: loading it is the cheap path, and a cached copy
    # would outlive a rewrite of it (an export saved again to the same folder).
    local = is_local(address.container)
    local_references = address.format == "references" and local
    references = (
        ReferenceCache(None if cache_dir is None else os.path.join(cache_dir, "references"))
        if reference_cache and not local_references
        else None
    )
    request = f"{address.format}\x00{address.container}\x00{address.dataset}\x00{generator_tag}"
    reopen = Reopener(address, generate, references, request, access, transport)

    # A local container is asked who it is at every open (a stat and a few small reads), so
    # references cached from a file that was rewritten since are never served.
    latest = references.latest(request) if references is not None else None
    header_requests = 0
    identity: SourceIdentity | None
    if latest is not None and (offline or (assume_immutable and not local)):
        identity, rfs, path = latest
        how = "cached on disk (no header reads)"
    elif offline and not local_references:  # (a local reference file is read, not fetched)
        raise OfflineError(f"offline: no cached references for {address}")
    else:
        opened = reopen.open()
        identity, rfs, path = opened.identity, opened.rfs, opened.path
        header_requests = 0 if local else 1
        how = "cached on disk" if opened.how == "cached" else "generated"
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
    if address.format == "references":
        # A remote reference folder (``….shadowzarr``) is a directory, not a file: who it is,
        # is its refs.json (asking the folder itself follows a redirect to a listing).
        return refs_url_of(address.container)[0]
    if address.format != "zarr":
        return address.container
    inner = f"/{address.dataset}" if address.dataset else ""
    return f"{address.container.rstrip('/')}{inner}/zarr.json"


def _clean(path: str | None) -> str:
    return "/".join(part for part in (path or "").split("/") if part)
