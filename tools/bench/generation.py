"""Workload 1: generate references over HTTP for a fragmented many-chunk HDF5 file and for an
NWB-like file with many groups, attributes, strings and references.

Every tool lists every chunk (no tool may stop early); ours writes the directory form. Checks:
each tool found every chunk of the fragmented file; our references read back equal to h5py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from context import Context
from files import Sizes, write_fragmented, write_nwb_like
from measure import SLOW_RUN, Row, measure, not_run
from peers import h5py_blockcache_file
from venvs import VenvPeer

WORKLOAD = "1 generate"


def prepare_files(www: Path, sizes: Sizes) -> dict[str, Path]:
    fragmented = www / "fragmented.h5"
    nwb_like = www / "nwb_like.h5"
    start = time.perf_counter()
    write_fragmented(fragmented, sizes)
    write_nwb_like(nwb_like, sizes)
    print(f"  wrote generation inputs in {time.perf_counter() - start:.0f} s", flush=True)
    return {"fragmented": fragmented, "nwb-like": nwb_like}


def run(ctx: Context, inputs: dict[str, Path]) -> list[Row]:
    rows: list[Row] = []
    for case, path in inputs.items():
        url = ctx.server.url(path.name)
        label = f"{case} ({_describe(path)})"
        expected = _chunk_count(path)
        rows.append(_ours(ctx, WORKLOAD, label, path, url))
        rows.append(_kerchunk(ctx, label, url, expected))
        rows.append(_virtualizarr(ctx, label, url, expected))
        if case == "fragmented":
            rows.append(_h5py_blockcache(ctx, label, url, expected))
        else:
            rows.append(not_run(Row(WORKLOAD, label, H5PY_LISTER), _LISTS_ONLY))
        rows.append(_venv_generate(ctx, label, url, expected, "lindi"))
        rows.append(_venv_generate(ctx, label, url, expected, "async-hdf5"))
        rows.append(_hidefix(ctx, label, path, expected))
    return rows


def _describe(path: Path) -> str:
    with h5py.File(path, "r") as f:
        datasets: list[Any] = []
        f.visititems(lambda _n, o: datasets.append(o) if isinstance(o, h5py.Dataset) else None)
        chunks = sum(d.id.get_num_chunks() for d in datasets if d.chunks)
    return f"{len(datasets)} datasets, {chunks:,} chunks, {path.stat().st_size / 1e6:.0f} MB"


def _chunk_count(path: Path) -> int:
    with h5py.File(path, "r") as f:
        datasets: list[Any] = []
        f.visititems(lambda _n, o: datasets.append(o) if isinstance(o, h5py.Dataset) else None)
        return sum(d.id.get_num_chunks() for d in datasets if d.chunks)


def _ours(ctx: Context, workload: str, case: str, path: Path, url: str) -> Row:
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs

    row = Row(workload, case, "shadowzarr generate_rfs + write_rfs (dir)", ours=True)
    out = ctx.work / f"refs-{path.stem}"

    def generate() -> Path:
        rfs = generate_rfs(url, progress=False)
        return write_rfs(rfs, out)

    def forget_connections() -> None:
        """Every run opens its connections anew (the process keeps them between generations,
        so without this only the first run would pay ``--connect-latency``)."""
        from shadowzarr_store.transport import close_all_pools

        close_all_pools()

    return measure(
        row,
        ctx.server,
        generate,
        lambda target: _check_ours(target, path),
        runs=ctx.runs,
        setup=forget_connections,
    )


def _check_ours(target: Path, path: Path) -> bool:
    """Our references read back equal to h5py (for the fragmented file: 50 random chunks and
    the last one, read over HTTP through the proxy)."""
    from shadowzarr_store import open_rfs

    group = open_rfs(target)
    with h5py.File(path, "r") as f:
        if "a" in f:
            a = group["a"]
            n, size = f["a"].shape[0], f["a"].chunks[0]
            starts = np.random.default_rng(3).integers(0, n // size, 50) * size
            return all(
                np.array_equal(a[s : s + size], f["a"][s : s + size]) for s in [*starts, n - size]
            )
        value = group["processing/module_0/table_1/value"][:]
        return np.array_equal(value, f["processing/module_0/table_1/value"][:])


def _kerchunk(ctx: Context, case: str, url: str, expected: int) -> Row:
    row = Row(WORKLOAD, case, "kerchunk SingleHdf5ToZarr (fsspec http)")
    if ctx.skipped(row.reader):
        return not_run(row, "skipped by --skip")
    import fsspec
    from kerchunk.hdf import SingleHdf5ToZarr

    def generate() -> dict[str, Any]:
        with fsspec.open(url, "rb") as stream:
            return SingleHdf5ToZarr(stream, url=url, inline_threshold=0).translate()

    return measure(
        row, ctx.server, generate, lambda refs: _count(refs["refs"]) >= expected, runs=ctx.runs
    )


def _count(refs: dict[str, Any]) -> int:
    return sum(1 for value in refs.values() if isinstance(value, list) and len(value) == 3)


def _virtualizarr(ctx: Context, case: str, url: str, expected: int) -> Row:
    row = Row(WORKLOAD, case, "VirtualiZarr HDFParser (obstore http)")
    if ctx.skipped(row.reader):
        return not_run(row, "skipped by --skip")
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import HTTPStore
    from virtualizarr.parsers import HDFParser

    base = url.rsplit("/", 1)[0] + "/"

    def generate() -> Any:
        store = HTTPStore.from_url(base, client_options={"allow_http": True})
        registry = ObjectStoreRegistry({base: store})
        manifest_store = HDFParser()(url=url, registry=registry)
        return manifest_store

    def check(manifest_store: Any) -> bool:
        total = 0
        for _path, array in _manifest_arrays(manifest_store):
            total += int(np.count_nonzero(array.manifest._lengths))
        return total >= expected

    try:
        return measure(row, ctx.server, generate, check, runs=ctx.runs)
    except Exception as exc:  # a peer's own failure is a result, not a crash of the benchmark
        return not_run(row, f"failed: {type(exc).__name__}: {str(exc)[:120]}")


def _manifest_arrays(manifest_store: Any) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []

    def walk(group: Any, prefix: str) -> None:
        for name, array in group.arrays.items():
            found.append((prefix + name, array))
        for name, sub in group.groups.items():
            walk(sub, f"{prefix}{name}/")

    walk(manifest_store._group, "")
    return found


HIDEFIX = "h5coro-hidefix Index (local file, no network)"


def _hidefix(ctx: Context, case: str, path: Path, expected: int) -> Row:
    """h5coro-hidefix's compiled index of every chunk, built from the file on local disk (it
    reads no URL): what building the index costs without the network, for scale."""
    row = Row(WORKLOAD, case, HIDEFIX)
    if ctx.skipped(row.reader):
        return not_run(row, "skipped by --skip")
    from h5coro_hidefix import Index

    def generate() -> int:
        index = Index(str(path))
        return sum(len(index.chunks(name)[0]) for name in index.datasets())

    try:
        row = measure(row, None, generate, lambda n: n >= expected, runs=ctx.runs)
    except Exception as exc:  # a peer's own failure is a result, not a crash of the benchmark
        return not_run(row, f"failed: {type(exc).__name__}: {str(exc)[:120]}")
    row.requests, row.bytes, row.round_trips = 0, 0, 0
    row.note = "local file: reads no URL, so not a peer for the ratios"
    return row


H5PY_LISTER = "h5py chunk_iter + fsspec blockcache"
_LISTS_ONLY = (
    "lists chunks only: it writes no references, and this case is mostly attributes, strings "
    "and object references"
)


def _h5py_blockcache(ctx: Context, case: str, url: str, expected: int) -> Row:
    """Every chunk listed by HDF5 itself (``chunk_iter``) over fsspec's block cache: what a
    user of h5py gets without a reference generator."""
    row = Row(WORKLOAD, case, H5PY_LISTER)
    if ctx.skipped(row.reader):
        return not_run(row, "skipped by --skip")

    def generate() -> int:
        with h5py_blockcache_file(url) as stream, h5py.File(stream, "r") as f:
            chunked: list[h5py.Dataset] = []

            def visit(_name: str, obj: Any) -> None:
                if isinstance(obj, h5py.Dataset) and obj.chunks:
                    chunked.append(obj)

            f.visititems(visit)
            found = [0]

            def count(_info: Any) -> None:
                found[0] += 1

            for dataset in chunked:
                dataset.id.chunk_iter(count)
            return found[0]

    return measure(row, ctx.server, generate, lambda n: n >= expected, runs=ctx.runs)


_VENV_GENERATORS = {
    "lindi": ("lindi", "lindi LindiH5ZarrStore (own venv)"),
    "async-hdf5": ("async-hdf5", "async-hdf5 chunk_index (own venv, obstore)"),
}


def _venv_generate(ctx: Context, case: str, url: str, expected: int, how: str) -> Row:
    """A peer in its own environment lists every chunk (see ``venv_worker``'s ``generate``)."""
    environment, reader = _VENV_GENERATORS[how]
    row = Row(WORKLOAD, case, reader)
    if ctx.skipped(row.reader):
        return not_run(row, "skipped by --skip")
    python = ctx.peer_pythons[environment]
    if isinstance(python, str):
        return not_run(row, python)
    chunk_refs: list[int] = []
    with VenvPeer(python) as peer:
        for index in range(ctx.runs):
            if index == 1 and row.runs[0] > SLOW_RUN:
                row.note = f"1 run (> {SLOW_RUN:.0f} s)"
                break
            ctx.server.reset()
            try:
                answer = peer.call(op="generate", how=how, url=url)
            except RuntimeError as exc:  # the peer's own failure is a result
                return not_run(row, f"failed: {exc}")
            row.runs.append(answer["seconds"])
            chunk_refs.append(answer["chunk_refs"])
            if index == 0:
                counts = ctx.server.counts()
                row.requests, row.bytes, row.peak_mb = (
                    counts.requests,
                    counts.bytes,
                    answer["peak_mb"],
                )
                row.round_trips = counts.round_trips
    row.seconds = float(np.median(row.runs))
    row.equal = all(count >= expected for count in chunk_refs)
    return row
