"""Rewriting an array region by region into new chunks: here, or spread over a Dask cluster,
resumable from the progress log."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import zarr
import zarr.api.asynchronous as zarr_async
from shadowzarr_spec import ReferenceFileSystem
from zarr.abc.store import Store
from zarr.storage import LocalStore

from shadowzarr_store.materialize.copies import item_bytes
from shadowzarr_store.materialize.engine import copy_regions
from shadowzarr_store.materialize.plan import ArrayPlan, regions
from shadowzarr_store.materialize.progress import ProgressReporter, region_bytes
from shadowzarr_store.materialize.progress_log import ProgressLog
from shadowzarr_store.materialize.report import MaterializeError
from shadowzarr_store.materialize.stores import open_source_store
from shadowzarr_store.references import load_rfs

__all__ = ["rewrite_array"]


async def rewrite_array(
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
    itemsize = item_bytes(source)
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
        open_source_store(load_rfs(refs, **store_options), store_options),
        path=path,
        mode="r",
        zarr_format=3,
    )
    dest = zarr.open_array(LocalStore(destination), path=path, mode="r+", zarr_format=3)
    all_regions = regions(source.shape, chunk_shape)
    for index in indices:
        dest[all_regions[index]] = source[all_regions[index]]
    return indices


def _fingerprint(plan: ArrayPlan) -> str:
    text = json.dumps(
        [plan.document, list(plan.chunk_shape), repr(sorted(plan.create_arguments.items()))],
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]
