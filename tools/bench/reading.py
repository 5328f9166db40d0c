"""Workloads 3-5: reading through each tool's references (or h5py streaming the file).

3. One second (30,000 samples) of one channel and of all channels at a random time of a long
   chunked recording, cold (just opened) and warm (a second read through the same handle).
4. Every chunk of two small-chunk arrays (300 Open Ephys records of 2 kB; 82 zlib chunks of
   about 100 kB of LFP) with zarr's async.concurrency at 100, our merging on and off.
5. The whole recording sequentially, against the proxy's raw throughput with plain concurrent
   range requests (the limit).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from context import Context
from files import (
    RECORD_DATA_OFFSET,
    RECORD_HEADER,
    RECORD_SAMPLES,
    RECORD_SIZE,
    SAMPLE_RATE,
    Sizes,
    recording_values,
    write_contiguous,
    write_lfp,
    write_recording,
    write_records,
)
from measure import Row, measure, not_run
from peers import (
    h5py_blockcache_file,
    icechunk_group,
    icechunk_repository,
    kerchunk_group,
    kerchunk_refs,
)
from venvs import VenvPeer

DATA = "acquisition/ElectricalSeries/data"
_REPOSITORIES = itertools.count()
Opener = Callable[[], Callable[[slice, int | None], np.ndarray]]
"""Opens a fresh handle and returns ``read(rows, column)`` (column None: all channels)."""


def prepare_recording(www: Path, sizes: Sizes) -> Path:
    path = www / "recording.h5"
    start = time.perf_counter()
    write_recording(path, sizes)
    print(f"  recording {path.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - start:.0f} s")
    return path


def prepare_contiguous(www: Path, sizes: Sizes) -> Path:
    path = www / "contiguous.h5"
    write_contiguous(path, sizes)
    return path


def prepare_small(www: Path, sizes: Sizes) -> dict[str, Any]:
    return {
        "records": write_records(www / "records.continuous", sizes),
        "lfp": write_lfp(www / "lfp.h5", sizes),
    }


# -- readers -------------------------------------------------------------------------------


def _ours_rfs(ctx: Context, local: Path) -> Any:
    from shadowzarr_hdf5 import generate_rfs

    return generate_rfs(ctx.server.url(local.name), local_hdf5_path=local, progress=False)


def _zarr_reader(open_zarr_array: Callable[[], Any]) -> Opener:
    def opener() -> Callable[[slice, int | None], np.ndarray]:
        array = open_zarr_array()
        return lambda rows, column: array[rows] if column is None else array[rows, column]

    return opener


def _h5py_fsspec(url: str, path: str, *, blockcache: bool = False) -> Opener:
    """h5py over an fsspec HTTP file: its default read-ahead cache, or its block cache."""

    def opener() -> Callable[[slice, int | None], np.ndarray]:
        import fsspec
        import h5py

        stream = h5py_blockcache_file(url) if blockcache else fsspec.open(url, "rb").open()
        dataset = h5py.File(stream, "r")[path]
        return lambda rows, column: dataset[rows] if column is None else dataset[rows, column]

    return opener


VENV_READERS = {
    "remfile": ("lindi", "h5py + remfile (own venv)"),
    "lindi": ("lindi", "lindi LindiH5pyFile (own venv)"),
    "async-hdf5": ("async-hdf5", "async-hdf5 zarr store (own venv, obstore)"),
}
"""Readers run by ``venv_worker`` (``open`` with ``how``): their environment and row name."""


class _VenvReader:
    """A peer in its own environment; its peak memory is its own process's."""

    def __init__(self, peer: VenvPeer, how: str, url: str, path: str, scratch: Path) -> None:
        self.peer, self.how, self.url, self.path, self.scratch = peer, how, url, path, scratch
        self.peaks: list[float] = []

    def __call__(self) -> Callable[[slice, int | None], np.ndarray]:
        self.peer.call(op="open", how=self.how, url=self.url)

        def read(rows: slice, column: int | None) -> np.ndarray:
            out = self.scratch / "peer-values.npy"
            answer = self.peer.call(
                op="read",
                dataset=self.path,
                rows=[rows.start, rows.stop],
                column=column,
                out=str(out),
            )
            self.peaks.append(answer["peak_mb"])
            return np.load(out)

        return read


def _readers(
    ctx: Context, local: Path, path: str, stack: list[VenvPeer], *, hdf5: bool = True
) -> list[tuple[str, bool, Opener | str]]:
    """(reader, ours, opener or the reason it does not run) for an HDF5 dataset."""
    from shadowzarr_store import open_rfs_array

    url = ctx.server.url(local.name)
    tag = ctx.server.base_url.rsplit(":", 1)[1].strip("/")
    rfs = _ours_rfs(ctx, local)
    refs = kerchunk_refs(local, url)
    readers: list[tuple[str, bool, Opener | str]] = [
        (
            "shadowzarr RfsStore",
            True,
            _zarr_reader(lambda: open_rfs_array(rfs, path, grouped_view="auto")),
        ),
        (
            "shadowzarr RfsStore, merging off",
            True,
            _zarr_reader(lambda: open_rfs_array(rfs, path, grouped_view="auto", max_merge_size=0)),
        ),
        (
            "kerchunk + fsspec ReferenceFileSystem",
            False,
            _zarr_reader(lambda: kerchunk_group(refs)[path]),
        ),
    ]
    repo = ctx.work / f"icechunk-{local.stem}-{tag}-{next(_REPOSITORIES)}"
    try:
        icechunk_repository(rfs, repo)
        readers.append(
            (
                "VirtualiZarr/Icechunk virtual chunks",
                False,
                _zarr_reader(lambda: icechunk_group(repo, [ctx.server.base_url])[path]),
            )
        )
    except Exception as exc:  # a peer's own failure is a result, not a crash of the benchmark
        readers.append(("VirtualiZarr/Icechunk virtual chunks", False, f"failed: {exc}"[:140]))
    readers.append(("h5py + fsspec HTTPFile", False, _h5py_fsspec(url, path)))
    readers.append(("h5py + fsspec blockcache", False, _h5py_fsspec(url, path, blockcache=True)))
    for how, (environment, name) in VENV_READERS.items():
        python = ctx.peer_pythons[environment]
        if isinstance(python, str):
            readers.append((name, False, python))
            continue
        peer = VenvPeer(python)
        stack.append(peer)
        readers.append((name, False, _VenvReader(peer, how, url, path, ctx.work)))
    return [
        (name, ours, "skipped by --skip" if not ours and ctx.skipped(name) else opener)
        for name, ours, opener in readers
    ]


def _measure_reader(
    row: Row,
    ctx: Context,
    opener: Opener | str,
    selections: list[tuple[slice, int | None]],
    expected: Callable[[slice, int | None], np.ndarray],
    *,
    warm: bool,
    runs: int | None = None,
) -> Row:
    """A cold run opens a fresh handle and reads (both timed: h5py must read the file's
    metadata, reference readers only parse references already at hand); a warm run opens and
    reads another selection first (untimed), then the timed read through the same handle."""
    if isinstance(opener, str):
        return not_run(row, opener)
    state: dict[str, Any] = {}
    order = iter(range(10**6))

    def setup() -> None:
        index = next(order)
        state["selection"] = selections[(2 * index + (1 if warm else 0)) % len(selections)]
        if warm:
            state["read"] = opener()
            state["read"](*selections[(2 * index) % len(selections)])

    def run() -> np.ndarray:
        read = state["read"] if warm else opener()
        return read(*state["selection"])

    def check(values: np.ndarray) -> bool:
        return np.array_equal(np.asarray(values), expected(*state["selection"]))

    try:
        measure(row, ctx.server, run, check, runs=runs or ctx.runs, setup=setup)
    except Exception as exc:  # a peer's own failure is a result, not a crash of the benchmark
        return not_run(row, f"failed: {type(exc).__name__}: {str(exc)[:120]}")
    if isinstance(opener, _VenvReader) and opener.peaks:
        row.peak_mb = opener.peaks[-len(row.runs)] if len(opener.peaks) >= len(row.runs) else None
    return row


# -- workload 3 ------------------------------------------------------------------------------


def run_one_second(ctx: Context, local: Path) -> list[Row]:
    sizes = ctx.sizes
    samples, channels = sizes.recording_samples, sizes.recording_channels
    rng = np.random.default_rng(23)
    starts = rng.integers(0, samples - SAMPLE_RATE, size=2 * max(ctx.runs, 1) + 2)
    column = int(rng.integers(0, channels))

    def expected(rows: slice, col: int | None) -> np.ndarray:
        values = recording_values(rows.start, rows.stop, channels)
        return values if col is None else values[:, col]

    stack: list[VenvPeer] = []
    rows: list[Row] = []
    try:
        readers = _readers(ctx, local, DATA, stack)
        for what, col in (("1 channel", column), (f"all {channels} channels", None)):
            selections = [(slice(int(s), int(s) + SAMPLE_RATE), col) for s in starts]
            for warm in (False, True):
                case = f"1 s, {what}, {'warm' if warm else 'cold'}"
                for name, ours, opener in readers:
                    if name.endswith("merging off"):
                        continue
                    row = Row("3 one second", case, name, ours=ours)
                    rows.append(_measure_reader(row, ctx, opener, selections, expected, warm=warm))
    finally:
        for peer in stack:
            peer.close()
    return rows


def run_partial(ctx: Context, local: Path) -> list[Row]:
    """100 ms of every channel of a contiguous recording (slabs of about 4 MiB), cold: plain
    chunks move whole slabs, ``sharded_view="auto"`` only the blocks of about 1 MiB it needs."""
    from shadowzarr_store import open_rfs_array

    channels = ctx.sizes.recording_channels
    samples = ctx.sizes.contiguous_bytes // (2 * channels)
    length = SAMPLE_RATE // 10
    rng = np.random.default_rng(29)
    starts = rng.integers(0, samples - length, size=2 * max(ctx.runs, 1) + 2)
    selections = [(slice(int(s), int(s) + length), None) for s in starts]
    rfs = _ours_rfs(ctx, local)
    refs = kerchunk_refs(local, ctx.server.url(local.name))
    readers: list[tuple[str, bool, Opener | str]] = [
        (
            "shadowzarr RfsStore",
            True,
            _zarr_reader(lambda: open_rfs_array(rfs, "data", grouped_view="auto")),
        ),
        (
            'shadowzarr RfsStore, sharded_view="auto"',
            True,
            _zarr_reader(
                lambda: open_rfs_array(rfs, "data", grouped_view="auto", sharded_view="auto")
            ),
        ),
        (
            "kerchunk + fsspec ReferenceFileSystem",
            False,
            _zarr_reader(lambda: kerchunk_group(refs)["data"]),
        ),
        ("h5py + fsspec HTTPFile", False, _h5py_fsspec(ctx.server.url(local.name), "data")),
        (
            "h5py + fsspec blockcache",
            False,
            _h5py_fsspec(ctx.server.url(local.name), "data", blockcache=True),
        ),
    ]

    def expected(rows: slice, col: int | None) -> np.ndarray:
        return recording_values(rows.start, rows.stop, channels)

    results: list[Row] = []
    for name, ours, opener in readers:
        if not ours and ctx.skipped(name):
            opener = "skipped by --skip"
        row = Row("3 one second", "100 ms, all channels, contiguous, cold", name, ours=ours)
        results.append(_measure_reader(row, ctx, opener, selections, expected, warm=False))
    return results


# -- workload 4 ------------------------------------------------------------------------------


def run_small(ctx: Context, values: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    stack: list[VenvPeer] = []
    with zarr.config.set({"async.concurrency": 100}):
        try:
            records = values["records"]
            case = f"{ctx.sizes.records} records of 2 kB"
            everything = [(slice(0, len(records)), None)]
            for name, ours, opener in _record_readers(ctx):
                row = Row("4 small chunks", case, name, ours=ours)
                rows.append(
                    _measure_reader(
                        row, ctx, opener, everything, lambda r, c: records[r], warm=False
                    )
                )
            lfp = values["lfp"]
            local = ctx.www / "lfp.h5"
            chunk_kb = _mean_chunk_kb(local)
            case = f"{ctx.sizes.lfp_chunks} zlib chunks of {chunk_kb:.0f} kB"
            everything = [(slice(0, len(lfp)), None)]
            for name, ours, opener in _readers(ctx, local, "lfp", stack):
                row = Row("4 small chunks", case, name, ours=ours)
                rows.append(
                    _measure_reader(row, ctx, opener, everything, lambda r, c: lfp[r], warm=False)
                )
        finally:
            for peer in stack:
                peer.close()
    return rows


def _mean_chunk_kb(local: Path) -> float:
    import h5py

    with h5py.File(local, "r") as f:
        dataset = f["lfp"]
        sizes = [dataset.id.get_chunk_info(i).size for i in range(dataset.id.get_num_chunks())]
    return float(np.mean(sizes)) / 1000


def _record_readers(ctx: Context) -> list[tuple[str, bool, Opener | str]]:
    """Open Ephys records: one reference per record's 2048 data bytes."""
    from shadowzarr_spec import RfsBuilder
    from shadowzarr_store import open_rfs_array

    url = ctx.server.url("records.continuous")
    n = ctx.sizes.records
    builder = RfsBuilder()
    builder.add_array(
        "records", shape=(n * RECORD_SAMPLES,), data_type=">i2", chunk_shape=(RECORD_SAMPLES,)
    )
    refs: dict[str, Any] = {
        ".zgroup": json.dumps({"zarr_format": 2}),
        "records/.zarray": json.dumps(
            {
                "zarr_format": 2,
                "shape": [n * RECORD_SAMPLES],
                "chunks": [RECORD_SAMPLES],
                "dtype": ">i2",
                "compressor": None,
                "fill_value": 0,
                "filters": None,
                "order": "C",
            }
        ),
    }
    for i in range(n):
        offset = RECORD_HEADER + i * RECORD_SIZE + RECORD_DATA_OFFSET
        builder.add_chunk("records", (i,), url, offset, 2 * RECORD_SAMPLES)
        refs[f"records/{i}"] = [url, offset, 2 * RECORD_SAMPLES]
    rfs = builder.build()
    tag = ctx.server.base_url.rsplit(":", 1)[1].strip("/")
    readers: list[tuple[str, bool, Opener | str]] = [
        (
            "shadowzarr RfsStore",
            True,
            _zarr_reader(lambda: open_rfs_array(rfs, "records", grouped_view="auto")),
        ),
        (
            "shadowzarr RfsStore, merging off",
            True,
            _zarr_reader(
                lambda: open_rfs_array(rfs, "records", grouped_view="auto", max_merge_size=0)
            ),
        ),
        (
            "kerchunk + fsspec ReferenceFileSystem",
            False,
            _zarr_reader(lambda: kerchunk_group({"version": 1, "refs": refs})["records"]),
        ),
    ]
    repo = ctx.work / f"icechunk-records-{tag}"
    try:
        icechunk_repository(rfs, repo)
        readers.append(
            (
                "VirtualiZarr/Icechunk virtual chunks",
                False,
                _zarr_reader(lambda: icechunk_group(repo, [ctx.server.base_url])["records"]),
            )
        )
    except Exception as exc:  # a peer's own failure is a result, not a crash of the benchmark
        readers.append(("VirtualiZarr/Icechunk virtual chunks", False, f"failed: {exc}"[:140]))
    for name in (
        "h5py + fsspec HTTPFile",
        "h5py + fsspec blockcache",
        *(name for _environment, name in VENV_READERS.values()),
    ):
        readers.append((name, False, "not HDF5 (raw Open Ephys file)"))
    return readers


# -- workload 5 ------------------------------------------------------------------------------


def run_sequential(ctx: Context, local: Path) -> list[Row]:
    sizes = ctx.sizes
    total = local.stat().st_size
    case = f"sequential {sizes.recording_bytes / 1e9:.2f} GB"
    runs = 1 if sizes.recording_bytes >= 2e8 else ctx.runs
    rows = [_limit(ctx, local, case, runs)]
    everything = [(slice(0, sizes.recording_samples), None)]

    def expected(r: slice, c: int | None) -> np.ndarray:
        return recording_values(r.start, r.stop, sizes.recording_channels)

    stack: list[VenvPeer] = []
    try:
        with zarr.config.set({"async.concurrency": 64}):
            for name, ours, opener in _readers(ctx, local, DATA, stack):
                if name.endswith("merging off") or "lindi" in name:
                    continue
                row = Row("5 sequential", case, name, ours=ours)
                rows.append(
                    _measure_reader(row, ctx, opener, everything, expected, warm=False, runs=runs)
                )
    finally:
        for peer in stack:
            peer.close()
    for row in rows:
        if row.seconds:
            row.note = f"{sizes.recording_bytes / row.seconds / 1e6:.1f} MB/s"
    del total
    return rows


def plain_ranges(url: str, size: int, *, step: int = 8 * 2**20, in_flight: int = 16) -> int:
    """Fetch bytes [0, size) of ``url`` in plain concurrent range requests (the limit rows:
    what the link and the server give); return the bytes received."""
    import aiohttp

    async def fetch_all() -> int:
        limit = asyncio.Semaphore(in_flight)
        async with aiohttp.ClientSession() as session:

            async def one(start: int) -> int:
                async with limit:
                    end = min(start + step, size) - 1
                    async with session.get(url, headers={"Range": f"bytes={start}-{end}"}) as r:
                        return len(await r.read())

            return sum(await asyncio.gather(*(one(s) for s in range(0, size, step))))

    return asyncio.run(fetch_all())


def _limit(ctx: Context, local: Path, case: str, runs: int) -> Row:
    """Plain concurrent range requests of 8 MiB, 16 in flight, over the dataset's bytes."""
    url = ctx.server.url(local.name)
    size = local.stat().st_size
    row = Row("5 sequential", case, "limit: plain concurrent range requests")
    return measure(row, ctx.server, lambda: plain_ranges(url, size), lambda n: n == size, runs=runs)
