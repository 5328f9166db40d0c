"""materialize: copy what a reference file system points at into an ordinary Zarr v3 store.

The result no longer depends on the source files. Groups, attributes and arrays stored in the
references are copied as they are; arrays of numbers whose chunks are references are rewritten,
by default in chunks of about 4 MiB along the first axis with zarr's default compressor. The work
streams region by region (bounded memory), records its progress in the destination so a rerun
after an interruption resumes, and can spread over a Dask cluster.
"""

from __future__ import annotations

import shutil
import time
import zipfile
from pathlib import Path
from typing import Any

import zarr
import zarr.api.asynchronous as zarr_async
from shadowzarr_spec import ReferenceFileSystem
from shadowzarr_spec.json_text import dumps_strict
from shadowzarr_spec.keys import metadata_key
from zarr.abc.store import Store
from zarr.core.buffer.cpu import Buffer
from zarr.core.sync import sync

from shadowzarr_store.materialize.bounds import MAX_CHUNKS
from shadowzarr_store.materialize.copies import check_bounds, copy_as_stored, verify_array
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
)
from shadowzarr_store.materialize.progress_log import ProgressLog
from shadowzarr_store.materialize.report import (
    ArrayReport,
    MaterializeError,
    MaterializeLimitError,
    MaterializeReport,
)
from shadowzarr_store.materialize.rewrite import rewrite_array
from shadowzarr_store.materialize.stores import (
    open_destination_store,
    open_progress_store,
    open_source_store,
    worker_options,
)
from shadowzarr_store.references import load_rfs

__all__ = [
    "MAX_CHUNKS",
    "ArrayReport",
    "MaterializeError",
    "MaterializeLimitError",
    "MaterializeReport",
    "MaterializeStep",
    "materialize",
]


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
    source_store = open_source_store(rfs, store_options)
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
    check_bounds(rfs, arrays, verify, max_chunks)
    dest_store = open_destination_store(destination, store_options.get("storage_options"))
    log = ProgressLog(open_progress_store(destination))

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
            done_before = await rewrite_array(
                plan,
                source,
                dest_store,
                log,
                client,
                refs,
                destination,
                concurrency,
                bar,
                worker_options(store_options),
            )
            report.resumed_regions += done_before
            dest = await zarr_async.open_array(
                store=dest_store, path=plan.path, zarr_format=3, mode="r+"
            )
            bar.array_done("copy", plan.path)
            if verify:
                await verify_array(
                    plan.path, source, dest, regions(plan.shape, plan.chunk_shape), concurrency, bar
                )
            stored = await dest.nbytes_stored()
            report.arrays.append(
                ArrayReport(plan.path, "rewritten", source.nbytes, stored, plan.chunk_shape)
            )
        else:
            stored = await copy_as_stored(plan, source_store, dest_store, concurrency, source, bar)
            bar.array_done("copy", plan.path)
            if verify:
                dest = await zarr_async.open_array(
                    store=dest_store, path=plan.path, zarr_format=3, mode="r+"
                )
                await verify_array(
                    plan.path, source, dest, regions(source.shape, source.chunks), concurrency, bar
                )
            chunks = tuple(plan.document["chunk_grid"]["configuration"]["chunk_shape"])
            report.arrays.append(ArrayReport(plan.path, "copied", source.nbytes, stored, chunks))


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
