"""One connection pool per origin per process: generation (on the transport's own loop
thread), zarr's synchronous API (zarr's loop thread), dask's threads and zarr's async API on a
user's own loop all use the same connections, counted from nginx's own access log
(``$connection``); a forked child opens its own; a cancelled read leaves the pool healthy."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from typing import TYPE_CHECKING

import dask.array as da
import h5py
import numpy as np
import pytest
import zarr
import zarr.api.asynchronous
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_store import open_rfs, open_rfs_store
from shadowzarr_store.transport.pools import pool_stats

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network

CHUNK = 256  # int16 items per chunk
COUNT = 8


def _refs(url: str, count: int = COUNT) -> dict[str, object]:
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [count * CHUNK],
        "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [CHUNK]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    refs: dict[str, object] = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "x/zarr.json": json.dumps(meta),
    }
    for i in range(count):
        refs[f"x/c/{i}"] = [url, i * CHUNK * 2, CHUNK * 2]
    return {"version": 1, "refs": refs}


def _data(root: Path, name: str) -> np.ndarray:
    values = np.random.default_rng(11).integers(-999, 999, COUNT * CHUNK, dtype="<i2")
    (root / name).write_bytes(values.tobytes())
    return values


def _connections(nginx: NginxServer, uri: str) -> set[int]:
    return {e.connection for e in nginx.entries() if e.uri == uri}


def test_reads_after_a_generation_open_no_new_connection(
    nginx: NginxServer, nginx_root: Path
) -> None:
    values = np.arange(40_000, dtype="<f8")
    with h5py.File(nginx_root / "made.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(5_000,))
        for g in range(20):
            f.create_group(f"meta/g{g}").attrs["label"] = f"group {g}"
    nginx.reset()
    rfs = generate_rfs(nginx.url("made.h5"), progress=False)  # on the transport's loop thread
    generated = _connections(nginx, "/made.h5")
    assert generated
    nginx.reset()
    array = open_rfs(rfs)["x"]  # zarr's loop thread
    for start in range(0, values.size, 5_000):  # one chunk at a time: one connection needed
        np.testing.assert_array_equal(array[start : start + 5_000], values[start:][:5_000])
    reads = _connections(nginx, "/made.h5")
    assert len([e for e in nginx.entries() if e.uri == "/made.h5"]) >= 8
    assert reads <= generated, f"new connections {reads - generated} after the generation"


def test_zarr_dask_and_a_users_loop_share_one_pool(nginx: NginxServer, nginx_root: Path) -> None:
    values = _data(nginx_root, "shared.bin")
    refs = _refs(nginx.url("shared.bin"))
    nginx.reset()
    # one connection allowed per origin: a second pool anywhere would be a second connection
    array = open_rfs(refs, max_connections=1)["x"]
    np.testing.assert_array_equal(array[:], values)  # zarr's synchronous API
    lazy = da.from_zarr(array, chunks=CHUNK)
    np.testing.assert_array_equal(lazy.compute(scheduler="threads", num_workers=4), values)

    async def on_my_loop() -> np.ndarray:
        store = open_rfs_store(refs, max_connections=1)
        opened = await zarr.api.asynchronous.open_array(store=store, path="x", mode="r")
        return np.asarray(await opened.getitem(slice(None)))

    np.testing.assert_array_equal(asyncio.run(on_my_loop()), values)  # a loop of the user's
    entries = [e for e in nginx.entries() if e.uri == "/shared.bin"]
    assert len(entries) >= 3  # each of the three read (neighbouring chunks share a request)
    assert nginx.connections() == 1, f"{nginx.connections()} connections for {len(entries)}"
    assert max(e.connection_requests for e in entries) == len(entries)


def _read_in_child(refs: dict[str, object], queue: multiprocessing.Queue[object]) -> None:
    array = open_rfs(refs, max_connections=1)["x"]
    queue.put(np.asarray(array[:]).tobytes())


def test_a_forked_child_opens_its_own_pool(nginx: NginxServer, nginx_root: Path) -> None:
    values = _data(nginx_root, "parent.bin")
    (nginx_root / "child.bin").write_bytes(values.tobytes())
    nginx.reset()
    np.testing.assert_array_equal(
        open_rfs(_refs(nginx.url("parent.bin")), max_connections=1)["x"][:], values
    )
    parents = _connections(nginx, "/parent.bin")
    assert len(parents) == 1
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_read_in_child, args=(_refs(nginx.url("child.bin")), queue))
    child.start()
    got = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    assert got == values.tobytes()
    childs = _connections(nginx, "/child.bin")
    assert len(childs) == 1
    assert not childs & parents  # the child never wrote on the parent's socket
    # the parent's pool still works, on the parent's connection
    np.testing.assert_array_equal(
        open_rfs(_refs(nginx.url("parent.bin")), max_connections=1)["x"][:], values
    )
    assert _connections(nginx, "/parent.bin") == parents


def test_a_cancelled_read_leaves_the_pool_healthy(
    make_proxy: Callable[..., LatencyProxy], nginx: NginxServer, nginx_root: Path
) -> None:
    values = _data(nginx_root, "slow.bin")
    proxy = make_proxy(nginx.url(""), latency=0.5)
    refs = _refs(proxy.url("slow.bin"))
    origin = proxy.url("").rstrip("/")

    async def cancel_then_read() -> np.ndarray:
        store = open_rfs_store(refs, max_connections=2)
        opened = await zarr.api.asynchronous.open_array(store=store, path="x", mode="r")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(opened.getitem(slice(None)), 0.2)  # mid-request
        await asyncio.sleep(0.7)  # the cancelled requests' answers arrive, unread
        return np.asarray(await opened.getitem(slice(None)))

    np.testing.assert_array_equal(asyncio.run(cancel_then_read()), values)
    stats = pool_stats()[origin]
    assert stats.open <= 2
    assert stats.idle == stats.open
    # and zarr's synchronous API reads on from the same pool
    np.testing.assert_array_equal(open_rfs(refs, max_connections=2)["x"][:], values)
    assert pool_stats()[origin].open <= 2
