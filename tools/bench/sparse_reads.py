"""Sparse reads (issue 43): 1,000 random chunks of 16 B out of N, at N = 10^4 ... 10^7.

One HDF5 file per N: an int32 array of N chunks of 4 values (16 B each; fixed-array chunk
index), served by the single-range server at 20 ms per request. Each reader opens afresh and
reads 1,000 chunks picked at random (all 4 values of each, one ``vindex`` selection for zarr
readers, a chunk at a time for h5py; h5coro, which answers one hyperslab per dataset per call,
is listed as not run), and the values are checked. The target: bytes fetched
from the data file at most 4 x the stored bytes touched (16,000) + 1 MiB, at every N, through
directory references and JSON references. Requests, round trips and bytes come from the
server's own counters (all of them, references included). Peers: kerchunk + zarr, h5py +
fsspec's block cache, and h5py + remfile and async-hdf5 in their own environments (`venvs`).

    uv run python tools/bench/reads.py --cases none --json-refs 0 --sparse-n 1e4,1e5,1e6
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from measure import Row, measure, not_run
from peers import h5py_blockcache_file, kerchunk_group, kerchunk_refs
from server import BenchServer
from venvs import VenvPeer, peer_pythons

__all__ = ["CASE", "run"]

CASE = "1,000 random chunks of 16 B out of"
CHUNK = 4  # int32 values: 16 B (exact up to 2^31, unlike float32 past 2^24)
PICKED = 1000
BOUND = 4 * PICKED * CHUNK * 4 + (1 << 20)
"""Bytes a sparse read may fetch: 4 x the stored bytes touched + 1 MiB."""
KERCHUNK_UP_TO = 100_000
"""kerchunk's scan of the file is per chunk in Python: left out above this many chunks."""
JSON_UP_TO = 1_000_000
"""A version-1 JSON of 10^7 refs is gigabytes to open: left out above this many chunks."""


def _write(folder: Path, n: int) -> Path:
    """The file of ``n`` chunks in ``folder`` (kept there: one written before is reused)."""
    path = folder / f"sparse-{n}.h5"
    if path.exists():
        return path
    with h5py.File(path.with_suffix(".partial"), "w", libver="latest") as f:
        data = f.create_dataset("data", shape=(CHUNK * n,), dtype="<i4", chunks=(CHUNK,))
        step = CHUNK * 1_000_000
        for start in range(0, CHUNK * n, step):
            stop = min(start + step, CHUNK * n)
            data[start:stop] = np.arange(start, stop, dtype="<i4")
    path.with_suffix(".partial").rename(path)
    return path


def _picks(n: int, run: int) -> np.ndarray:
    chunks = np.sort(np.random.default_rng(43 + run).choice(n, size=PICKED, replace=False))
    return (chunks[:, None] * CHUNK + np.arange(CHUNK)).ravel()


H5CORO = (
    "h5coro answers one hyperslab per dataset per call (its results are keyed by dataset "
    "name): 1,000 scattered chunks would be 1,000 calls one after another, not one selection"
)


def run(
    sizes: list[int],
    latency_ms: float,
    runs: int = 1,
    skip: tuple[str, ...] = (),
    keep: Path | None = None,
    pythons: dict[str, Path | str] | None = None,
) -> list[dict[str, Any]]:
    """Rows of every reader at every N (each N's file written, served and read in turn), but
    those whose names contain a word of ``skip``; files kept in ``keep`` (and reused from it)
    if given, else in a temporary folder. ``pythons``: the peer environments (`venvs`; by
    default those already built)."""
    if pythons is None:
        pythons = peer_pythons(build=False)
    rows: list[dict[str, Any]] = []
    for n in sizes:
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            rows += _one_size(keep, n, latency_ms, runs, skip, pythons)
            continue
        with tempfile.TemporaryDirectory(prefix="shadowzarr-sparse-") as folder:
            rows += _one_size(Path(folder), n, latency_ms, runs, skip, pythons)
    return rows


def _one_size(
    www: Path,
    n: int,
    latency_ms: float,
    runs: int,
    skip: tuple[str, ...],
    pythons: dict[str, Path | str],
) -> list[dict[str, Any]]:
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs
    from shadowzarr_store import open_rfs

    started = time.perf_counter()
    local = _write(www, n)
    print(f"  N = {n:,}: file written in {time.perf_counter() - started:.0f} s", flush=True)
    rows: list[dict[str, Any]] = []
    with BenchServer(www, latency=latency_ms / 1000, bandwidth=None, kind="s3") as server:
        url = server.url(local.name)
        rfs = generate_rfs(url, local_hdf5_path=local, progress=False)
        write_rfs(rfs, www / f"sparse-{n}.shadowzarr")
        if n <= JSON_UP_TO:
            write_rfs(rfs, www / f"sparse-{n}.json")
        del rfs
        kerchunk = kerchunk_refs(local, url) if n <= KERCHUNK_UP_TO else None
        case = f"{CASE} {n:,}"
        state: dict[str, Any] = {"run": 0}

        def setup() -> None:
            state["run"] += 1
            state["picks"] = _picks(n, state["run"])

        def check(values: Any) -> bool:
            return np.array_equal(np.asarray(values), state["picks"].astype("<i4"))

        def ours(name: str) -> Any:
            def read() -> Any:
                array = open_rfs(server.url(name))["data"]
                return array.vindex[state["picks"]]

            return read

        def h5py_blockcache() -> Any:
            dataset = h5py.File(h5py_blockcache_file(url), "r")["data"]
            picks = state["picks"].reshape(-1, CHUNK)[:, 0]
            return np.concatenate([dataset[p : p + CHUNK] for p in picks.tolist()])

        def kerchunk_read() -> Any:
            return kerchunk_group(kerchunk)["data"].vindex[state["picks"]]

        peers: list[VenvPeer] = []

        def in_venv(environment: str, how: str) -> Any:
            """A reader in a peer's own environment (`venv_worker`'s ``chunks``): its worker
            started here, untimed; each run opens the file afresh in it."""
            python = pythons[environment]
            if isinstance(python, str):
                return python
            peer = VenvPeer(python)
            peers.append(peer)

            def read() -> Any:
                out = www / f"sparse-{how}-values.npy"
                starts = state["picks"].reshape(-1, CHUNK)[:, 0].tolist()
                peer.call(op="open", how=how, url=url)
                peer.call(op="chunks", dataset="data", starts=starts, length=CHUNK, out=str(out))
                return np.load(out)

            return read

        readers: list[tuple[str, bool, Any]] = [
            ("shadowzarr open_rfs, directory refs remote", True, ours(f"sparse-{n}.shadowzarr")),
            (
                "shadowzarr open_rfs, JSON refs remote",
                True,
                ours(f"sparse-{n}.json") if n <= JSON_UP_TO else f"not above {JSON_UP_TO:,} chunks",
            ),
            (
                "kerchunk + zarr (fsspec ReferenceFileSystem)",
                False,
                kerchunk_read if kerchunk is not None else f"not above {KERCHUNK_UP_TO:,} chunks",
            ),
            ("h5py + fsspec blockcache, a chunk at a time", False, h5py_blockcache),
            ("h5coro (HTTPDriver)", False, H5CORO),
        ]
        for name, environment, how in (
            ("h5py + remfile (own venv), a chunk at a time", "lindi", "remfile"),
            ("async-hdf5 zarr store (own venv)", "async-hdf5", "async-hdf5"),
        ):
            chosen = not any(word in name for word in skip)
            readers.append((name, False, in_venv(environment, how) if chosen else ""))
        try:
            rows += _measure_all(readers, case, server, check, setup, local, runs, skip)
        finally:
            for peer in peers:
                peer.close()
    return rows


def _measure_all(
    readers: list[tuple[str, bool, Any]],
    case: str,
    server: BenchServer,
    check: Any,
    setup: Any,
    local: Path,
    runs: int,
    skip: tuple[str, ...],
) -> list[dict[str, Any]]:
    """Every reader's row of one N: measured, or why not (a string); with the data file's
    own requests, round trips and bytes (of the last run) against the bound."""
    rows: list[dict[str, Any]] = []
    for name, own, reader in readers:
        row = Row("reads", case, name, ours=own)
        if any(word in name for word in skip):
            reader = "skipped by --skip"
        if isinstance(reader, str):
            rows.append(not_run(row, reader).to_json())
            continue
        try:
            measure(row, server, reader, check, runs=runs, setup=setup)
        except Exception as exc:  # a reader's own failure is a result
            not_run(row, f"failed: {type(exc).__name__}: {str(exc)[:160]}")
        found = row.to_json()
        if row.bytes is not None:  # the last run's: the server is reset before each run
            data = server.file_counts(local.name)
            found["data_file"] = data
            within = data["bytes"] <= BOUND
            found["note"] = (
                f"data file: {data['requests']} requests, {data['round_trips']} "
                f"round trips, {data['bytes']:,} bytes "
                f"({'within' if within else 'OVER'} 4 x touched + 1 MiB)"
            )
        rows.append(found)
    return rows
