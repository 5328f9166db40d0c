"""materialize: copy what a reference file system points at into an ordinary Zarr v3 store.

The result no longer depends on the source files. Groups, attributes and arrays stored in the
references are copied as they are; arrays of numbers whose chunks are references are rewritten,
by default in chunks of about 4 MiB along the first axis with zarr's default compressor. The work
streams region by region (bounded memory), records its progress in the destination so a rerun
after an interruption resumes, and can spread over a Dask cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import shutil
import time
import zipfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zarr
import zarr.api.asynchronous as zarr_async
from shadowzarr_spec import ReferenceFileSystem
from shadowzarr_spec.errors import ShadowzarrError
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.keys import array_of_chunk_key, chunk_grid_shape, join, metadata_key
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.buffer.cpu import Buffer
from zarr.core.sync import sync
from zarr.storage import LocalStore, MemoryStore

from shadowzarr_store.materialize.bounds import MAX_CHUNKS, chunks_to_write
from shadowzarr_store.materialize.engine import copy_regions, for_each, verify_regions
from shadowzarr_store.materialize.plan import (
    TARGET_CHUNK_BYTES,
    ArrayPlan,
    Layout,
    plan_nodes,
    regions,
)
from shadowzarr_store.materialize.progress import (
    MaterializeStep,
    Progress,
    ProgressReporter,
    StepDisplays,
    region_bytes,
)
from shadowzarr_store.materialize.progress_log import ProgressLog
from shadowzarr_store.references import load_rfs
from shadowzarr_store.transport.locations import kind_of
from shadowzarr_store.transport.object_store import zarr_store_for

__all__ = [
    "MAX_CHUNKS",
    "ArrayReport",
    "MaterializeError",
    "MaterializeLimitError",
    "MaterializeReport",
    "MaterializeStep",
    "materialize",
]


class MaterializeError(ShadowzarrError, RuntimeError):
    """Verification found a difference, or the destination cannot be used."""


class MaterializeLimitError(MaterializeError):
    """An array would take more chunks than ``max_chunks`` (raised before anything is written)."""


@dataclass(frozen=True, slots=True)
class ArrayReport:
    path: str
    action: str  # "rewritten" or "copied"
    nbytes: int
    stored_bytes: int
    chunks: tuple[int, ...]


@dataclass(slots=True)
class MaterializeReport:
    arrays: list[ArrayReport] = field(default_factory=list)
    groups: int = 0
    verified: bool = False
    resumed_regions: int = 0
    seconds: float = 0.0

    def __getitem__(self, path: str) -> ArrayReport:
        for report in self.arrays:
            if report.path == path:
                return report
        raise KeyError(path)


def materialize(
    refs: str | Path | dict[str, Any] | ReferenceFileSystem,
    destination: str | Path | Store,
    *,
    layout: Layout | None = None,
    verify: bool = False,
    client: Any = None,
    progress: Progress | bool | None = None,
    target_chunk_bytes: int = TARGET_CHUNK_BYTES,
    concurrency: int = 8,
    max_chunks: int = MAX_CHUNKS,
    **store_options: Any,
) -> MaterializeReport:
    """Write the data ``refs`` points at into ``destination`` (a folder, a ``.zip`` path, or any
    zarr-python store) and return what was written.

    ``layout(path, array)`` returns ``zarr.create_array`` arguments for an array (``{}`` for the
    defaults) or None to copy its chunks as stored. ``client`` is a ``distributed.Client`` to spread
    the copy over its workers (the destination must then be a folder they can reach).
    ``progress`` is called with a `MaterializeStep` after each region copied or verified (bytes
    of array data over every array, verification as a phase of its own); True shows a bar on a
    terminal or in a notebook and plain lines in a log; None (default) the bar when a person
    watches, nothing in a log; False nothing. ``max_chunks`` is the most chunks one array may
    take (a rewrite's destination chunks or source grid positions, a copy's stored chunks, grid
    positions when verified): an array above it raises
    `MaterializeLimitError` before anything is written, where references claiming 10**12
    chunks or 10**15 elements would otherwise run for ever.
    """
    if isinstance(destination, str | Path) and str(destination).endswith(".zip"):
        return _materialize_zip(
            refs,
            Path(destination),
            layout=layout,
            verify=verify,
            client=client,
            progress=progress,
            target_chunk_bytes=target_chunk_bytes,
            concurrency=concurrency,
            max_chunks=max_chunks,
            **store_options,
        )
    return sync(
        _materialize(
            refs,
            destination,
            layout=layout,
            verify=verify,
            client=client,
            progress=progress,
            target_chunk_bytes=target_chunk_bytes,
            concurrency=concurrency,
            max_chunks=max_chunks,
            store_options=store_options,
        )
    )


async def _materialize(
    refs: Any,
    destination: Any,
    *,
    layout: Layout | None,
    verify: bool,
    client: Any,
    progress: Progress | bool | None,
    target_chunk_bytes: int,
    concurrency: int,
    max_chunks: int,
    store_options: dict[str, Any],
) -> MaterializeReport:
    started = time.perf_counter()
    rfs = load_rfs(refs, **store_options)
    source_store = _source_store(rfs, store_options)
    report = MaterializeReport()
    source_root = await zarr_async.open_group(store=source_store, mode="r", zarr_format=3)

    async def source_array(path: str) -> Any:
        return await source_root.getitem(path) if path else source_root

    sources: dict[str, Any] = {}
    for key in rfs.refs:
        if key.endswith("zarr.json"):
            path = key[: -len("zarr.json")].rstrip("/")
            node = await source_array(path)
            if isinstance(node, zarr.AsyncArray):
                sources[path] = node
    groups, arrays = plan_nodes(rfs, sources.__getitem__, layout, target_chunk_bytes)
    _check_bounds(rfs, arrays, verify, max_chunks)
    dest_store = _destination_store(destination, store_options.get("storage_options"))
    log = ProgressLog(_progress_store(destination))

    for group in groups:
        await dest_store.set(
            metadata_key(group.path), Buffer.from_bytes(dumps_strict(group.document).encode())
        )
    report.groups = len(groups)
    data_bytes = sum(int(sources[plan.path].nbytes) for plan in arrays)
    displays = None if callable(progress) else StepDisplays(progress)
    bar = ProgressReporter(
        progress if callable(progress) else displays,
        {"copy": data_bytes, **({"verify": data_bytes} if verify else {})},
        len(arrays),
    )
    try:
        await _write_arrays(
            arrays, sources, source_store, dest_store, log, client, refs, destination,
            concurrency, bar, verify, report, store_options,
        )  # fmt: skip
    finally:
        if displays is not None:
            displays.close()
    await log.clear()
    if any(g.path == "" for g in groups):
        await zarr_async.consolidate_metadata(dest_store, zarr_format=3)
    if dest_store is not destination:
        dest_store.close()  # a zip writes its directory only when closed
    report.verified = verify
    report.seconds = time.perf_counter() - started
    return report


async def _write_arrays(
    arrays: list[ArrayPlan],
    sources: dict[str, Any],
    source_store: Any,
    dest_store: Store,
    log: ProgressLog,
    client: Any,
    refs: Any,
    destination: Any,
    concurrency: int,
    bar: ProgressReporter,
    verify: bool,
    report: MaterializeReport,
    store_options: dict[str, Any],
) -> None:
    """Copy (or rewrite) and verify each array in turn, adding it to ``report``."""
    for plan in arrays:
        source = sources[plan.path]
        if plan.rewrite:
            done_before = await _rewrite(
                plan,
                source,
                dest_store,
                log,
                client,
                refs,
                destination,
                concurrency,
                bar,
                _worker_options(store_options),
            )
            report.resumed_regions += done_before
            dest = await zarr_async.open_array(
                store=dest_store, path=plan.path, zarr_format=3, mode="r+"
            )
            bar.array_done("copy", plan.path)
            if verify:
                await _verify(
                    plan.path, source, dest, regions(plan.shape, plan.chunk_shape), concurrency, bar
                )
            stored = await dest.nbytes_stored()
            report.arrays.append(
                ArrayReport(plan.path, "rewritten", source.nbytes, stored, plan.chunk_shape)
            )
        else:
            stored = await _copy_as_stored(plan, source_store, dest_store, concurrency, source, bar)
            bar.array_done("copy", plan.path)
            if verify:
                dest = await zarr_async.open_array(
                    store=dest_store, path=plan.path, zarr_format=3, mode="r+"
                )
                await _verify(
                    plan.path, source, dest, regions(source.shape, source.chunks), concurrency, bar
                )
            chunks = tuple(plan.document["chunk_grid"]["configuration"]["chunk_shape"])
            report.arrays.append(ArrayReport(plan.path, "copied", source.nbytes, stored, chunks))


async def _rewrite(
    plan: ArrayPlan,
    source: Any,
    dest_store: Store,
    log: ProgressLog,
    client: Any,
    refs: Any,
    destination: Any,
    concurrency: int,
    bar: ProgressReporter,
    worker_options: dict[str, Any],
) -> int:
    all_regions = regions(plan.shape, plan.chunk_shape)
    itemsize = _itemsize(source)
    fingerprint = _fingerprint(plan)
    state = await log.load(plan.path, fingerprint)
    if state.complete:
        bar.advance("copy", plan.path, int(source.nbytes), resumed=True)
        return len(all_regions)
    attributes = plan.document.get("attributes", {})
    if not state.done:
        await zarr_async.create_array(
            store=dest_store,
            name=plan.path,
            shape=plan.shape,
            dtype=source.dtype,
            chunks=plan.chunk_shape,
            fill_value=source.metadata.fill_value,
            attributes=attributes,
            dimension_names=plan.document.get("dimension_names"),
            overwrite=True,
            zarr_format=3,
            **plan.create_arguments,
        )
        await log.save(plan.path, state)
    resumed = len(state.done)
    bar.advance(
        "copy",
        plan.path,
        sum(region_bytes(all_regions[i], itemsize) for i in state.done),
        resumed=True,
    )
    dest = await zarr_async.open_array(store=dest_store, path=plan.path, zarr_format=3, mode="r+")
    todo = (i for i in range(len(all_regions)) if i not in state.done)

    last_save = time.monotonic()

    async def record(index: int) -> None:
        # Each region is megabytes; saving the progress after each one costs little until the
        # list of done regions grows long, then at most twice a second.
        nonlocal last_save
        state.done.add(index)
        bar.advance("copy", plan.path, region_bytes(all_regions[index], itemsize))
        if len(all_regions) <= 10_000 or time.monotonic() - last_save > 0.5:
            await log.save(plan.path, state)
            last_save = time.monotonic()

    if client is not None:
        await _rewrite_on_cluster(
            client, refs, destination, plan, all_regions, list(todo), record, worker_options
        )
    else:
        await copy_regions(source, dest, all_regions, todo, concurrency=concurrency, on_done=record)
    state.complete = True
    await log.save(plan.path, state)
    return resumed


async def _rewrite_on_cluster(
    client: Any,
    refs: Any,
    destination: Any,
    plan: ArrayPlan,
    all_regions: Sequence[Any],
    todo: list[int],
    record: Any,
    worker_options: dict[str, Any],
) -> None:
    """Spread region copies over a Dask cluster; each task opens the source and destination."""
    if not isinstance(destination, str | Path):
        raise MaterializeError(
            "with a Dask client, the destination must be a folder the workers can reach"
        )
    if isinstance(refs, ReferenceFileSystem):
        refs_argument: Any = refs
    else:
        refs_argument = str(refs) if isinstance(refs, Path) else refs
    per_task = max(1, len(todo) // (4 * max(1, len(client.scheduler_info().get("workers", {})))))
    batches = [todo[i : i + per_task] for i in range(0, len(todo), per_task)]
    futures = client.map(
        _copy_batch_on_worker,
        batches,
        refs=refs_argument,
        destination=str(destination),
        path=plan.path,
        chunk_shape=plan.chunk_shape,
        store_options=worker_options,
        pure=False,
    )
    from distributed import as_completed

    # This coroutine runs on zarr's event loop; waiting for the cluster on it would block the
    # loop a worker thread of an in-process cluster (processes=False) needs to open its arrays.
    # distributed leaves as_completed unannotated
    finished = as_completed(futures, with_results=True)  # type: ignore[no-untyped-call]
    while (item := await asyncio.to_thread(next, finished, None)) is not None:
        for index in item[1]:
            await record(index)


def _source_store(rfs: ReferenceFileSystem, store_options: dict[str, Any]) -> Any:
    """The store materialize reads from, here or on a worker. Chunks copied as stored must be
    the stored bytes, never a sharded or grouped view's index + data."""
    from shadowzarr_store.rfs_store import RfsStore

    return RfsStore(rfs, **{**store_options, "sharded_view": 0, "grouped_view": 0})


def _worker_options(store_options: dict[str, Any]) -> dict[str, Any]:
    """The store options a Dask worker's own store takes: all but the caller's cache objects."""
    return {k: v for k, v in store_options.items() if k not in ("local_cache", "memory_cache")}


def _copy_batch_on_worker(
    indices: list[int],
    *,
    refs: Any,
    destination: str,
    path: str,
    chunk_shape: tuple[int, ...],
    store_options: dict[str, Any],
) -> list[int]:
    source = zarr.open_array(
        _source_store(load_rfs(refs, **store_options), store_options),
        path=path,
        mode="r",
        zarr_format=3,
    )
    dest = zarr.open_array(LocalStore(destination), path=path, mode="r+", zarr_format=3)
    all_regions = regions(source.shape, chunk_shape)
    for index in indices:
        dest[all_regions[index]] = source[all_regions[index]]
    return indices


def _itemsize(source: Any) -> int:
    """Bytes per value as zarr counts them in ``nbytes`` (also for strings and objects)."""
    return int(source.nbytes) // max(1, int(math.prod(source.shape)))


async def _copy_as_stored(
    plan: ArrayPlan,
    source_store: Store,
    dest_store: Store,
    concurrency: int,
    source: Any,
    bar: ProgressReporter,
) -> int:
    """Copy the metadata and every stored chunk byte for byte: the chunks the references list
    (lazily, inside the array's grid), not every position of a grid that may be huge."""
    await dest_store.set(
        metadata_key(plan.path), Buffer.from_bytes(dumps_strict(plan.document).encode())
    )
    configuration = plan.document["chunk_grid"]["configuration"]
    grid = chunk_grid_shape(plan.document["shape"], configuration["chunk_shape"])
    chunk_shape = tuple(configuration["chunk_shape"])
    shape = tuple(plan.document["shape"])
    itemsize = _itemsize(source)
    written = 0

    async def chunk_keys() -> AsyncIterator[tuple[str, tuple[int, ...]]]:
        async for key in source_store.list_prefix(join(plan.path, "c")):
            split = array_of_chunk_key(key)
            if split is None or split[0] != plan.path or len(split[1]) != len(grid):
                continue
            if all(c < g for c, g in zip(split[1], grid, strict=True)):
                yield key, split[1]

    async def one(item: tuple[str, tuple[int, ...]]) -> None:
        nonlocal written
        key, coords = item
        data = await source_store.get(key, prototype=default_buffer_prototype())
        if data is not None:
            await dest_store.set(key, data)
            written += len(data)
        region = tuple(
            slice(c * step, min((c + 1) * step, size))
            for c, step, size in zip(coords, chunk_shape, shape, strict=True)
        )
        bar.advance("copy", plan.path, region_bytes(region, itemsize))

    await for_each(chunk_keys(), one, concurrency=concurrency)
    return written


async def _verify(
    path: str,
    source: Any,
    dest: Any,
    all_regions: Sequence[Any],
    concurrency: int,
    bar: ProgressReporter,
) -> None:
    itemsize = _itemsize(source)

    def checked(region: tuple[slice, ...]) -> None:
        bar.advance("verify", path, region_bytes(region, itemsize))

    mismatches = await verify_regions(
        source, dest, all_regions, concurrency=concurrency, on_done=checked
    )
    bar.array_done("verify", path)
    if mismatches:
        raise MaterializeError(
            f"array {path!r}: {len(mismatches)} regions differ after writing, first {mismatches[0]}"
        )


def _check_bounds(
    rfs: ReferenceFileSystem, arrays: list[ArrayPlan], verify: bool, max_chunks: int
) -> None:
    for path, count in chunks_to_write(rfs, arrays, verify).items():
        if count > max_chunks:
            raise MaterializeLimitError(
                f"array {path!r} would take {count} chunks, more than max_chunks={max_chunks}: "
                "pass a larger max_chunks (or larger chunks through layout) to copy it anyway"
            )


def _materialize_zip(refs: Any, destination: Path, **options: Any) -> MaterializeReport:
    """A zip cannot overwrite its members: build a folder beside it (resumable), then pack it."""
    staging = destination.with_name(destination.name + ".partial")
    report = materialize(refs, staging, **options)
    packing = destination.with_name(destination.name + ".packing")
    with zipfile.ZipFile(packing, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for file in sorted(p for p in staging.rglob("*") if p.is_file()):
            archive.write(file, file.relative_to(staging).as_posix())
    packing.replace(destination)
    shutil.rmtree(staging)
    return report


def _destination_store(destination: Any, storage_options: Any = None) -> Store:
    if isinstance(destination, Store):
        return destination
    if isinstance(destination, str) and kind_of(destination) == "object_store":
        # s3://bucket/prefix (gs://, az://): configured like the transport reads object stores.
        return zarr_store_for(destination, storage_options, read_only=False)
    Path(destination).mkdir(parents=True, exist_ok=True)
    return LocalStore(str(destination))


def _progress_store(destination: Any) -> Store:
    """Where progress is kept: beside a local destination (so the destination holds only the
    Zarr hierarchy, and a zip needs no deletes); in memory for other stores (no resume)."""
    if isinstance(destination, Path) or (
        isinstance(destination, str) and kind_of(destination) == "local"
    ):
        target = Path(destination)
        return LocalStore(target.parent / f".{target.name}.materialize-progress")
    if isinstance(destination, LocalStore):
        target = Path(destination.root)
        return LocalStore(target.parent / f".{target.name}.materialize-progress")
    return MemoryStore()


def _fingerprint(plan: ArrayPlan) -> str:
    text = json.dumps(
        [plan.document, list(plan.chunk_shape), repr(sorted(plan.create_arguments.items()))],
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]
