"""Workload 2: open a reference set of an array of 2 million chunks, and read one chunk.

Forms: our single JSON (every chunk listed), our directory (refs.json + a chunk manifest),
kerchunk's single JSON and Parquet references (through fsspec's ReferenceFileSystem, lazily),
and an Icechunk repository of virtual chunks (VirtualiZarr's persistent form; the repository is
on local disk, only the chunk is read over HTTP). All reference sets but Icechunk's are served
by the proxy. The chunks are shuffled in the file, so no gen entry can describe them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from context import Context
from files import Sizes, write_grid
from measure import Row, measure, not_run
from peers import icechunk_group, kerchunk_group
from venvs import VenvPeer

WORKLOAD = "2 open 2M"
CHUNK = 7_654_321


def prepare_files(www: Path, sizes: Sizes) -> np.ndarray:
    return write_grid(www / "grid.bin", sizes)


def run(ctx: Context, offsets: np.ndarray) -> list[Row]:
    from shadowzarr_spec import RfsBuilder, write_rfs

    url = ctx.server.url("grid.bin")
    n = len(offsets)
    target = CHUNK % n
    tag = ctx.server.base_url.rsplit(":", 1)[1].strip("/")
    start = time.perf_counter()
    builder = RfsBuilder()
    builder.add_array("data", shape=(n,), data_type="<i8", chunk_shape=(1,))
    table = np.empty((n, 2), dtype=np.uint64)
    table[:, 0], table[:, 1] = offsets, 8
    builder.add_index("data", url, table)
    rfs = builder.build()
    json_path = write_rfs(rfs, ctx.www / f"grid-{tag}.json")
    dir_path = write_rfs(rfs, ctx.www / f"grid-{tag}")
    kerchunk_json, parquet = _kerchunk_files(ctx, url, offsets, tag)
    parquet_peer = _parquet_peer(ctx, kerchunk_json, parquet)
    icechunk_path = _icechunk(ctx, rfs, tag)
    print(
        f"  reference sets written in {time.perf_counter() - start:.0f} s (JSON "
        f"{json_path.stat().st_size / 1e6:.0f} MB)",
        flush=True,
    )
    case_size = f"{n:,} chunks"
    forms: list[tuple[str, bool, Any]] = [
        ("shadowzarr single JSON", True, lambda: _ours(ctx.server.url(json_path.name))),
        ("shadowzarr directory + chunk index", True, lambda: _ours(ctx.server.url(dir_path.name))),
        ("kerchunk JSON (fsspec)", False, lambda: _kerchunk(ctx.server.url(kerchunk_json.name))),
    ]
    if isinstance(parquet_peer, str):
        forms.append(("kerchunk Parquet (fsspec, lazy; own venv)", False, parquet_peer))
    else:
        forms.append(
            (
                "kerchunk Parquet (fsspec, lazy; own venv)",
                False,
                lambda: _ParquetArray(parquet_peer, ctx.server.url(parquet.name), n, ctx.work),
            )
        )
    if isinstance(icechunk_path, Path):
        forms.append(
            (
                "VirtualiZarr/Icechunk (repo on disk)",
                False,
                lambda: icechunk_group(icechunk_path, [ctx.server.base_url])["data"],
            )
        )
    rows: list[Row] = []
    for reader, ours, opener in forms:
        reason = opener if isinstance(opener, str) else None
        if not ours and ctx.skipped(reader):
            reason = "skipped by --skip"
        if reason is not None:
            rows.append(not_run(Row(WORKLOAD, f"open ({case_size})", reader), reason))
            continue
        rows.append(
            measure(
                Row(WORKLOAD, f"open ({case_size})", reader, ours=ours),
                ctx.server,
                opener,
                lambda array: array.shape == (n,),
                runs=ctx.runs,
            )
        )
        rows.append(
            measure(
                Row(WORKLOAD, f"open + read 1 chunk ({case_size})", reader, ours=ours),
                ctx.server,
                lambda opener=opener: opener()[target : target + 1],
                lambda values: np.array_equal(values, [target]),
                runs=ctx.runs,
            )
        )
    if not isinstance(parquet_peer, str):
        parquet_peer.close()
    if isinstance(icechunk_path, str):
        rows.append(
            not_run(Row(WORKLOAD, f"open ({case_size})", "VirtualiZarr/Icechunk"), icechunk_path)
        )
    for row in rows:
        row.note = {
            "shadowzarr single JSON": f"{json_path.stat().st_size / 1e6:.0f} MB",
            "kerchunk JSON (fsspec)": f"{kerchunk_json.stat().st_size / 1e6:.0f} MB",
        }.get(row.reader, "")
    return rows


def _ours(url: str) -> zarr.Array:
    from shadowzarr_store import open_rfs_array

    return open_rfs_array(url, "data", grouped_view="auto")


def _kerchunk(url: str) -> zarr.Array:
    return kerchunk_group(url)["data"]


def _kerchunk_files(ctx: Context, url: str, offsets: np.ndarray, tag: str) -> tuple[Path, Path]:
    """kerchunk (zarr format 2) references of the same chunks: one JSON, and Parquet."""
    n = len(offsets)
    zarray = {
        "zarr_format": 2,
        "shape": [n],
        "chunks": [1],
        "dtype": "<i8",
        "compressor": None,
        "fill_value": None,
        "filters": None,
        "order": "C",
    }
    refs: dict[str, Any] = {
        ".zgroup": json.dumps({"zarr_format": 2}),
        "data/.zarray": json.dumps(zarray),
        "data/.zattrs": "{}",
    }
    for i, offset in enumerate(offsets.tolist()):
        refs[f"data/{i}"] = [url, offset, 8]
    document = {"version": 1, "refs": refs}
    json_path = ctx.www / f"kerchunk-grid-{tag}.json"
    json_path.write_text(json.dumps(document))
    return json_path, ctx.www / f"kerchunk-grid-{tag}.parq"


def _parquet_peer(ctx: Context, kerchunk_json: Path, parquet: Path) -> VenvPeer | str:
    """kerchunk's Parquet writer and lazy reader need fastparquet: they run in their own
    environment, which also writes the Parquet references from the JSON ones."""
    python = ctx.peer_pythons["parquet"]
    if isinstance(python, str):
        return python
    peer = VenvPeer(python)
    peer.call(op="write_parquet", json=str(kerchunk_json), out=str(parquet))
    return peer


class _ParquetArray:
    """The Parquet peer's array, opened in its environment; slicing reads there."""

    def __init__(self, peer: VenvPeer, url: str, n: int, work: Path) -> None:
        self.peer, self.shape = peer, (n,)
        self.peak_mb = peer.call(op="open", how="parquet", url=url, dataset="data")["peak_mb"]
        self._out = work / "parquet-read.npy"  # in the run's work folder, removed with it

    def __getitem__(self, rows: slice) -> np.ndarray:
        self.peer.call(op="read", dataset="data", rows=[rows.start, rows.stop], out=str(self._out))
        return np.load(self._out)


def _icechunk(ctx: Context, rfs: Any, tag: str) -> Path | str:
    from peers import icechunk_repository

    path = ctx.work / f"icechunk-grid-{tag}"
    try:
        icechunk_repository(rfs, path)
    except Exception as exc:  # a peer's own failure is a result, not a crash of the benchmark
        return f"failed: {type(exc).__name__}: {str(exc)[:120]}"
    return path
