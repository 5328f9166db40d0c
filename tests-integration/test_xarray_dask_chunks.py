"""Dask over references of small chunks: ``xr.open_dataset(refs, engine="shadowzarr",
chunks={})`` and ``to_dask(array)`` make one task per shard of the store's view, and nginx's own
log shows at most one request per shard (the metadata and chunk manifest counted apart)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import dask
import distributed
import numpy as np
import pytest
import xarray as xr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import open_rfs, to_dask

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

ROWS, CHANNELS, CHUNK = 200_000, 32, (16, 32)  # int16: 1 KiB chunks, 12,500 of them


@pytest.fixture
def served(nginx: NginxServer, nginx_root: Path) -> tuple[np.ndarray, str]:
    values = (np.arange(ROWS * CHANNELS, dtype=np.int64).reshape(ROWS, CHANNELS) % 30011).astype(
        "<i2"
    )
    xr.Dataset({"data": (("time", "channel"), values)}).to_netcdf(
        nginx_root / "rec.nc", engine="h5netcdf", encoding={"data": {"chunksizes": CHUNK}}
    )
    rfs = generate_rfs(nginx.url("rec.nc"), local_hdf5_path=nginx_root / "rec.nc", progress=False)
    write_rfs(rfs, nginx_root / "rec.shadowzarr")
    nginx.reset()
    return values, nginx.url("rec.shadowzarr")


@pytest.mark.parametrize("scheduler", ["threads", "distributed"])
def test_chunks_empty_gives_a_task_and_at_most_a_request_per_shard(
    nginx: NginxServer, served: tuple[np.ndarray, str], scheduler: str
) -> None:
    """The store's defaults (no store option): what a user of xarray gets."""
    values, refs = served
    dataset = xr.open_dataset(refs, engine="shadowzarr", chunks={})
    variable = dataset["data"]
    shards = variable.encoding["shards"]
    assert variable.encoding["chunks"] != shards  # zarr's chunks are smaller than a shard
    assert variable.encoding["preferred_chunks"] == dict(zip(variable.dims, shards, strict=True))
    shard_count = math.prod(math.ceil(n / s) for n, s in zip(values.shape, shards, strict=True))
    assert shard_count >= 3
    assert variable.data.npartitions == shard_count  # one dask task per shard
    assert variable.data.chunksize == shards
    opening = nginx.entries()
    assert {entry.uri for entry in opening} <= {"/rec.shadowzarr/refs.json"}
    nginx.reset()
    if scheduler == "threads":
        with dask.config.set(scheduler="threads"):
            read = variable.compute()
    else:  # dask.distributed, as the issue's 391 tasks and requests were counted
        with (
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            with distributed.get_task_stream(client) as stream:
                read = client.compute(variable).result()
            # one task per shard ran on the cluster: the chunk tasks (name, i, j) of the dask
            # array (beside them one task holds the array it reads from), as the task stream
            # recorded them (the scheduler forgets them once the result is computed)
            name = variable.data.name
            done = {task["key"] for task in stream.data if _is_chunk_task(task["key"], name)}
            assert len(done) == shard_count, done
    np.testing.assert_array_equal(read.values, values)
    entries = nginx.entries()
    data = [entry for entry in entries if entry.uri == "/rec.nc"]
    other = [entry for entry in entries if entry.uri != "/rec.nc"]
    assert 1 <= len(data) <= shard_count, [entry.range for entry in data]
    assert all(entry.status == 206 for entry in data)
    # the chunk manifest came with refs.json: computing reads nothing but the data
    assert other == []


def test_to_dask_reads_by_shard_too(nginx: NginxServer, served: tuple[np.ndarray, str]) -> None:
    values, refs = served
    array = open_rfs(refs, grouped_view="auto")["data"]
    assert array.shards is not None
    lazy = to_dask(array)
    shard_count = math.ceil(ROWS / array.shards[0])
    assert lazy.npartitions == shard_count
    nginx.reset()
    with dask.config.set(scheduler="threads"):
        read = lazy[1_000:150_000].compute()
    np.testing.assert_array_equal(read, values[1_000:150_000])
    data = [entry for entry in nginx.entries() if entry.uri == "/rec.nc"]
    assert 1 <= len(data) <= math.ceil(150_000 / array.shards[0])


def _is_chunk_task(key: object, name: str) -> bool:
    """Whether a task stream's ``key`` is one of array ``name``'s chunk tasks ``(name, i, j)``
    (a key may arrive as the tuple or as its text)."""
    if isinstance(key, tuple):
        return bool(key) and key[0] == name
    return isinstance(key, str) and key.startswith(f"('{name}',")
