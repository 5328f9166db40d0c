"""Connections as a process reuses them: one pool per origin per process, shared by every
store, generator and reference read, counted from nginx's own access log (``$connection``);
and a remote reference file reopened in the same process costs one conditional request."""

from __future__ import annotations

import asyncio
import json
import os
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_store.transport.pools import pool_stats

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network

CHUNK = 256  # int16 items per chunk


def _array_meta(count: int) -> str:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [count * CHUNK],
            "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [CHUNK]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        }
    )


def _refs(url: str, count: int) -> dict[str, object]:
    refs: dict[str, object] = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "x/zarr.json": _array_meta(count),
    }
    for i in range(count):
        refs[f"x/c/{i}"] = [url, i * CHUNK * 2, CHUNK * 2]
    return {"version": 1, "refs": refs}


def test_two_hundred_opens_share_a_few_connections(nginx: NginxServer, nginx_root: Path) -> None:
    count = 200
    values = np.random.default_rng(3).integers(-999, 999, count * CHUNK, dtype="<i2")
    (nginx_root / "data.bin").write_bytes(values.tobytes())
    (nginx_root / "refs.json").write_text(json.dumps(_refs(nginx.url("data.bin"), count)))
    nginx.reset()
    for i in range(count):
        array = open_rfs(nginx.url("refs.json"))["x"]
        np.testing.assert_array_equal(
            array[i * CHUNK : (i + 1) * CHUNK], values[i * CHUNK :][:CHUNK]
        )
    entries = nginx.entries()
    chunk_reads = [e for e in entries if e.uri == "/data.bin"]
    assert len(chunk_reads) == count
    # the references read whole once, then by If-None-Match (304)
    reference_reads = [e for e in entries if e.uri == "/refs.json"]
    assert [e.status for e in reference_reads] == [200] + [304] * (count - 1)
    connections = nginx.connections()
    assert connections <= 8, f"{connections} connections for {len(entries)} requests"
    assert max(e.connection_requests for e in entries) > count // 4  # reused, not reopened
    stats = pool_stats()[f"http://127.0.0.1:{nginx.port}"]
    assert stats.opened >= 1
    assert stats.requests >= len(entries)


def _nwb_like(path: Path, groups: int) -> dict[str, np.ndarray]:
    """Groups with attributes, strings, references and small chunked arrays: the shape of an
    NWB file's metadata, whose generation asks for many small ranges in rounds."""
    rng = np.random.default_rng(7)
    strings = h5py.string_dtype("utf-8")
    values = {}
    with h5py.File(path, "w") as f:
        f.attrs["nwb_version"] = "2.8.0"
        recording = rng.integers(-500, 500, size=(90_000, 64), dtype="<i2")  # past 8 MiB:
        f.create_dataset("acquisition/series/data", data=recording, chunks=(2_000, 64))
        values["acquisition/series/data"] = recording  # so the file is read by ranges
        targets = []
        for g in range(groups):
            group = f.create_group(f"processing/module_{g // 10}/table_{g}")
            group.attrs["neurodata_type"] = "DynamicTable"
            group.attrs["colnames"] = np.array(["id", "label", "value"], dtype=object)
            rows = 10 + g % 7
            group.create_dataset("id", data=np.arange(rows))
            group.create_dataset(
                "label",
                data=np.array([f"row {i}" for i in range(rows)], dtype=object),
                dtype=strings,
            )
            data = rng.normal(size=(rows * 100,))
            group.create_dataset("value", data=data, chunks=(100,), compression="gzip")
            values[f"processing/module_{g // 10}/table_{g}/value"] = data
            targets.append(group["value"])
            if g > 0:
                group.create_dataset(
                    "refs", data=[t.ref for t in targets[-3:]], dtype=h5py.ref_dtype
                )
    return values


def test_one_nwb_like_generation_opens_few_connections(
    make_proxy: Callable[..., LatencyProxy], nginx: NginxServer, nginx_root: Path
) -> None:
    values = _nwb_like(nginx_root / "session.nwb", groups=400)
    nginx.reset()
    rfs = generate_rfs(nginx.url("session.nwb"), progress=False)
    entries = nginx.entries()
    assert len(entries) > 16
    connections = nginx.connections()
    assert connections <= 16, f"{connections} connections for {len(entries)} requests"
    # a server answering one range per request (S3), as its own log counts them
    s3_like = make_proxy(nginx.url(""), ranges="s3")
    assert generate_rfs(s3_like.url("session.nwb"), progress=False).refs.keys() == rfs.refs.keys()
    assert len(s3_like.log) > 16
    assert s3_like.connections <= 16, f"{s3_like.connections} for {len(s3_like.log)} requests"
    write_rfs(rfs, nginx_root / "session.shadowzarr")
    group = open_rfs(nginx.url("session.shadowzarr"))
    for name in ("processing/module_0/table_3/value", "acquisition/series/data"):
        np.testing.assert_array_equal(group[name][:], values[name])


def test_a_remote_reference_file_reopened_costs_one_conditional_request(
    nginx: NginxServer, nginx_root: Path
) -> None:
    values = np.arange(4 * CHUNK, dtype="<i2")
    (nginx_root / "data.bin").write_bytes(values.tobytes())
    (nginx_root / "again.json").write_text(json.dumps(_refs(nginx.url("data.bin"), 4)))
    np.testing.assert_array_equal(open_rfs(nginx.url("again.json"))["x"][:], values)
    nginx.reset()
    np.testing.assert_array_equal(open_rfs(nginx.url("again.json"))["x"][:], values)
    reads = [e for e in nginx.entries() if e.uri == "/again.json"]
    assert [e.status for e in reads] == [304]
    # a changed file is read again, never served from what was kept
    changed = _refs(nginx.url("data.bin"), 2)
    (nginx_root / "again.json").write_text(json.dumps(changed))
    nginx.reset()
    assert open_rfs(nginx.url("again.json"))["x"].shape == (2 * CHUNK,)
    assert [e.status for e in nginx.entries() if e.uri == "/again.json"] == [200]


def test_idle_connections_expire(
    monkeypatch: pytest.MonkeyPatch, nginx: NginxServer, nginx_root: Path
) -> None:
    from shadowzarr_store.transport import Transport, http1

    (nginx_root / "idle.bin").write_bytes(b"x" * 1000)
    monkeypatch.setattr(http1, "IDLE_SECONDS", 0.3)
    origin = f"http://127.0.0.1:{nginx.port}"

    async def read_then_wait() -> tuple[int, int]:
        transport = Transport()
        await transport.read(nginx.url("idle.bin"), 0, 10)
        kept = pool_stats()[origin].idle
        await asyncio.sleep(0.8)
        return kept, pool_stats()[origin].open

    kept, left = asyncio.run(read_then_wait())
    assert kept == 1
    assert left == 0


def test_a_forked_child_opens_its_own_connections(nginx: NginxServer, nginx_root: Path) -> None:
    """The child must not write on the parent's sockets (their answers would interleave)."""
    values = np.arange(4 * CHUNK, dtype="<i2")
    (nginx_root / "fork.bin").write_bytes(values.tobytes())
    (nginx_root / "fork.json").write_text(json.dumps(_refs(nginx.url("fork.bin"), 4)))
    np.testing.assert_array_equal(open_rfs(nginx.url("fork.json"))["x"][:], values)
    before = nginx.connections()
    pid = os.fork()
    if pid == 0:  # the child: read again, on connections of its own
        code = 1
        try:
            same = np.array_equal(open_rfs(nginx.url("fork.json"))["x"][:], values)
            code = 0 if same and pool_stats()[f"http://127.0.0.1:{nginx.port}"].opened >= 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert nginx.connections() > before  # the child connected anew
    np.testing.assert_array_equal(
        open_rfs(nginx.url("fork.json"))["x"][:], values
    )  # parent's still work
