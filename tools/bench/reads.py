"""Reads of small-chunk files with zarr's DEFAULT settings (issue 25), side by side with peers.

Every reader opens afresh and reads one selection (cold) from the single-range server (20 ms per
request, as S3 answers ranges). Rows: 20,000 rows of 1 and of 32
columns of a table in 1 KiB chunks, 1 s of 1 and of 64 channels of an NWB-like recording in
4 KiB chunks, the whole recording read in one go (against plain concurrent range requests of
the file: the limit), 1,000 scattered chunks of the table, and a dask sum of the whole
recording on dask.distributed (an in-process LocalCluster, 2 threads). Ours through ``open_rfs``,
``zarr.open_group(RfsStore)`` and xarray, with references remote (served next to the file) and
at hand, and for the 20k rows also through one version-1 JSON file; peers: kerchunk + zarr,
h5py + fsspec (read-ahead and block cache), h5coro, and h5py + remfile and async-hdf5 where
their environments are built (see venvs.py). Requests, round trips (waves of requests, counted
by the server) and bytes come from the server's own counters.

    uv run python tools/bench/reads.py            # full sizes, 3 runs per row (5 sequential)
    uv run python tools/bench/reads.py --quick    # small files, one run (the smoke test)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import h5py
import numpy as np
from measure import Row, measure, not_run
from peers import h5py_blockcache_file, kerchunk_group, kerchunk_refs
from reading import plain_ranges
from server import BenchServer
from venvs import peer_pythons

SAMPLE_RATE = 30_000
TABLE = "table"
RECORDING = "acquisition/ElectricalSeries/data"
SEQUENTIAL = "sequential read of"
DASK_CASE = "dask sum on distributed"
SEQUENTIAL_RUNS = 5
"""Runs of each sequential-read row (a fifth of a second each, where the kernel's page work
makes single runs vary by half)."""
SEQUENTIAL_WARMUP = 1
"""Untimed runs before each sequential-read row's (`measure`'s ``warmup``): without them the
row that comes first pays more of the kernel's zeroing of fresh pages than the rows after it
(sequential_phases.py --cold, medians of 15: refs remote read first 197 ms, after the reads at
hand 164 ms; at hand 139-142 ms either way)."""
Read = Callable[[], np.ndarray]
STORE_OPTIONS: dict[str, Any] = {"grouped_view": "auto"}
"""`RfsStore` options of our readers (``--store-options`` updates them): the grouped view, which
the store leaves off unless asked."""


@dataclass(frozen=True, slots=True)
class Sizes:
    table_rows: int = 200_000
    table_columns: int = 32
    table_chunk: tuple[int, int] = (64, 4)  # float32: 1 KiB
    recording_seconds: int = 20
    recording_channels: int = 64
    recording_chunk: tuple[int, int] = (128, 16)  # int16: 4 KiB
    rows_read: int = 20_000
    scattered: int = 1_000

    @classmethod
    def quick(cls) -> Sizes:
        return cls(table_rows=40_000, recording_seconds=3)


def table_values(rows: int, columns: int) -> np.ndarray:
    return (np.arange(rows * columns, dtype=np.float64).reshape(rows, columns) * 0.5).astype("<f4")


def recording_values(start: int, stop: int, channels: int) -> np.ndarray:
    t = np.arange(start, stop, dtype=np.int64)[:, None]
    c = np.arange(channels, dtype=np.int64)[None, :]
    return ((t * 2654435761 + c * 40503) % 65536 - 32768).astype("<i2")


def write_files(www: Path, sizes: Sizes) -> None:
    with h5py.File(www / "table.h5", "w") as f:
        table = f.create_dataset(
            TABLE,
            data=table_values(sizes.table_rows, sizes.table_columns),
            chunks=sizes.table_chunk,
        )
        table.dims[0].label, table.dims[1].label = "row", "column"  # xarray needs names
    samples = sizes.recording_seconds * SAMPLE_RATE
    with h5py.File(www / "recording.h5", "w") as f:
        data = f.create_dataset(
            RECORDING, (samples, sizes.recording_channels), "<i2", chunks=sizes.recording_chunk
        )
        data.dims[0].label, data.dims[1].label = "time", "channel"
        step = 16 * sizes.recording_chunk[0] * 16
        for start in range(0, samples, step):
            stop = min(start + step, samples)
            data[start:stop] = recording_values(start, stop, sizes.recording_channels)


def write_references(www: Path, server: BenchServer) -> dict[str, Any]:
    """Our references of both files (a directory and a version-1 JSON file served beside
    them), and kerchunk's."""
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs

    out: dict[str, Any] = {}
    for name in ("table", "recording"):
        local = www / f"{name}.h5"
        rfs = generate_rfs(server.url(local.name), local_hdf5_path=local, progress=False)
        write_rfs(rfs, www / f"{name}.shadowzarr")
        write_rfs(rfs, www / f"{name}.json")
        out[name] = {
            "remote": server.url(f"{name}.shadowzarr"),
            "json": server.url(f"{name}.json"),
            "local": str(www / f"{name}.shadowzarr"),
            "kerchunk": kerchunk_refs(local, server.url(local.name)),
            "url": server.url(local.name),
            "size": local.stat().st_size,
        }
    return out


# -- readers: each returns read(selection) -> values, opening afresh -----------------------

type Selection = tuple[Any, ...]
type Opener = Callable[[str, dict[str, Any], Selection], np.ndarray]


@contextlib.contextmanager
def served_recording(
    sizes: Sizes, latency_ms: float, prefix: str
) -> Iterator[tuple[BenchServer, dict[str, Any], np.ndarray]]:
    """The benchmark's files in a scratch folder, served by the single-range server at
    ``latency_ms`` per request: (server, the recording's references, its values)."""
    samples = sizes.recording_seconds * SAMPLE_RATE
    expected = recording_values(0, samples, sizes.recording_channels)
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        www = Path(folder)
        write_files(www, sizes)
        with BenchServer(www, latency=latency_ms / 1000, bandwidth=None, kind="s3") as server:
            yield server, write_references(www, server)["recording"], expected


def _ours_open_rfs(where: str) -> Opener:
    def read(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
        from shadowzarr_store import open_rfs

        return _select(open_rfs(refs[where], **STORE_OPTIONS)[path], sel)

    return read


def _ours_dask_default(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
    from shadowzarr_store import open_rfs

    return _dask_sum(open_rfs(refs["remote"], **STORE_OPTIONS)[path], sel[1], chunks=None)


def _ours_open_group(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
    import zarr
    from shadowzarr_store import RfsStore

    group = zarr.open_group(RfsStore(refs["remote"], **STORE_OPTIONS), mode="r")
    return _select(group[path], sel)


def _ours_xarray(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
    import xarray as xr

    group, _, name = path.rpartition("/")
    dask = isinstance(sel[0], str)
    dataset = xr.open_dataset(
        refs["remote"],
        engine="shadowzarr",
        group=group or None,
        store_options=STORE_OPTIONS,
    )
    variable = dataset[name].variable
    if dask:
        chunked = variable[sel[1]].chunk({variable.dims[0]: DASK_ROWS})
        return np.asarray(chunked.data.sum(dtype="<i8").compute())
    if isinstance(sel[0], np.ndarray):  # pointwise: xarray's vectorised indexing
        return _vindex_xarray(variable, sel)
    return np.asarray(variable[sel].values)


def _vindex_xarray(variable: Any, sel: Selection) -> np.ndarray:
    import xarray as xr

    points = {
        dim: xr.Variable("points", index) for dim, index in zip(variable.dims, sel, strict=True)
    }
    return np.asarray(variable[points].values)


def _kerchunk(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
    array = kerchunk_group(refs["kerchunk"])[path]
    return _select(array, sel)


def _h5py_fsspec(blockcache: bool) -> Opener:
    def read(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
        import fsspec

        url = refs["url"]
        stream = h5py_blockcache_file(url) if blockcache else fsspec.open(url, "rb").open()
        dataset = h5py.File(stream, "r")[path]
        if isinstance(sel[0], str):
            raise _NotApplicable("an h5py dataset cannot be pickled into a distributed graph")
        if isinstance(sel[0], np.ndarray):  # h5py takes no pointwise selection: one at a time
            return np.array([dataset[int(r), int(c)] for r, c in zip(*sel, strict=True)])
        return np.asarray(dataset[sel])

    return read


def _h5coro(path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
    """h5coro over HTTP (its ``HTTPDriver``, a requests session): a hyperslab per read, rows
    and columns as ``[start, stop)`` ranges; it walks the chunk index itself."""
    from h5coro import h5coro, webdriver

    if isinstance(sel[0], np.ndarray | str):
        raise _NotApplicable("h5coro reads hyperslabs, not points or dask graphs")
    reader = h5coro.H5Coro(refs["url"], webdriver.HTTPDriver, errorChecking=True)
    try:
        dataset = "/" + path.lstrip("/")
        promise = reader.readDatasets(
            [{"dataset": dataset, "hyperslice": _hyperslice(sel)}], block=True
        )
        values = np.asarray(promise[dataset])
    finally:
        reader.close()
    if isinstance(sel[1], int):  # h5py drops an integer-indexed axis; a range keeps it
        values = values.reshape(values.shape[0], -1)[:, 0]
    return values


def _hyperslice(sel: Selection) -> list[list[int | None]]:
    """``[start, stop)`` per axis of a selection of a row range and a column, all or one."""
    rows, column = sel[0], sel[1]
    if not isinstance(rows, slice) or rows.step not in (None, 1):
        raise _NotApplicable("h5coro reads contiguous row ranges")
    ranges: list[list[int | None]] = [[rows.start, rows.stop]]
    if isinstance(column, int):
        ranges.append([column, column + 1])
    elif column is not Ellipsis and column != slice(None):
        raise _NotApplicable("h5coro reads one column or all of them")
    return ranges


DASK_SUM = "dask sum"
"""The first item of a selection asking for the sum of rows ``sel[1]`` on dask.distributed."""
DASK_SECONDS = 3
"""Seconds of the recording the dask case sums (3, so that the row of dask's default chunks,
a task per stored chunk, stays within a minute)."""
DASK_ROWS = SAMPLE_RATE
"""Rows per dask task (1 s), the same for every reader; the row "dask's default chunks" takes
``from_zarr``'s, which for a sharded array are zarr's inner (stored) chunks."""
DEFAULT_CHUNKS = "dask's default chunks"
JSON_READER = "shadowzarr open_rfs, JSON refs remote"
"""Ours through one version-1 JSON file of the references (``.json``) instead of the directory:
run on the cases of `JSON_CASES` only."""
JSON_CASES = "k rows x"
"""The cases read through the JSON form too: 20,000 rows of 1 and of every column (issue 43)."""


def _dask_sum(array: Any, rows: slice, chunks: Any = "1 s") -> np.ndarray:
    """Sum of ``array[rows]`` on the running client, a task per 1 s (or ``from_zarr``'s)."""
    import dask.array as da

    if chunks is None:
        lazy = da.from_zarr(array)
    else:
        lazy = da.from_array(array, chunks=(DASK_ROWS, array.shape[1]), lock=False, asarray=True)
    return np.asarray(lazy[rows].sum(dtype="<i8").compute())


def _select(array: Any, sel: Selection) -> np.ndarray:
    if isinstance(sel[0], str):  # DASK_SUM
        return _dask_sum(array, sel[1])
    if isinstance(sel[0], np.ndarray):
        return np.asarray(array.vindex[sel])
    return np.asarray(array[sel])


class _VenvReader:
    """h5py + remfile or async-hdf5 in their own environment (venv_worker.py)."""

    def __init__(self, python: Path, how: str, scratch: Path) -> None:
        from venvs import VenvPeer

        self.peer = VenvPeer(python)
        self.how, self.scratch = how, scratch

    def __call__(self, path: str, refs: dict[str, Any], sel: Selection) -> np.ndarray:
        if isinstance(sel[0], np.ndarray | str) or sel[1] is Ellipsis:
            raise _NotApplicable("the worker reads row ranges of one column or all columns")
        self.peer.call(op="open", how=self.how, url=refs["url"])
        out = self.scratch / "peer-values.npy"
        rows = sel[0]
        column = None if sel[1] == slice(None) else int(sel[1])
        self.peer.call(
            op="read", dataset=path, rows=[rows.start, rows.stop], column=column, out=str(out)
        )
        return np.load(out)

    def close(self) -> None:
        self.peer.close()


class _NotApplicable(Exception):
    pass


def readers(skip: tuple[str, ...], scratch: Path, build: bool) -> list[tuple[str, bool, Any]]:
    found: list[tuple[str, bool, Any]] = [
        ("shadowzarr open_rfs, refs remote", True, _ours_open_rfs("remote")),
        ("shadowzarr open_rfs, refs at hand", True, _ours_open_rfs("local")),
        (JSON_READER, True, _ours_open_rfs("json")),
        ("shadowzarr zarr.open_group(RfsStore), refs remote", True, _ours_open_group),
        ("shadowzarr xarray engine, refs remote", True, _ours_xarray),
        (f"shadowzarr open_rfs, refs remote, {DEFAULT_CHUNKS}", True, _ours_dask_default),
        ("kerchunk + zarr (fsspec ReferenceFileSystem)", False, _kerchunk),
        ("h5py + fsspec HTTPFile", False, _h5py_fsspec(False)),
        ("h5py + fsspec blockcache", False, _h5py_fsspec(True)),
        ("h5coro (HTTPDriver)", False, _h5coro),
    ]
    pythons = peer_pythons(build=build)
    for how, environment, name in (
        ("remfile", "lindi", "h5py + remfile (own venv)"),
        ("async-hdf5", "async-hdf5", "async-hdf5 zarr store (own venv)"),
    ):
        python = pythons[environment]
        found.append(
            (name, False, python if isinstance(python, str) else _VenvReader(python, how, scratch))
        )
    return [(n, o, "skipped by --skip" if any(w in n for w in skip) else r) for n, o, r in found]


# -- cases ---------------------------------------------------------------------------------


def cases(
    sizes: Sizes,
) -> list[tuple[str, str, str, Callable[[int], Selection], Callable[[Selection], np.ndarray]]]:
    """(case, file, dataset path, selection of run i, expected values of a selection)."""
    rng = np.random.default_rng(25)
    n = sizes.rows_read
    table = table_values(sizes.table_rows, sizes.table_columns)
    samples = sizes.recording_seconds * SAMPLE_RATE
    starts = rng.integers(0, sizes.table_rows - n, size=16)
    times = rng.integers(0, samples - SAMPLE_RATE, size=16)
    channel = int(rng.integers(0, sizes.recording_channels))
    grid = (sizes.table_rows // sizes.table_chunk[0], sizes.table_columns // sizes.table_chunk[1])
    count = min(sizes.scattered, grid[0] * grid[1] // 4)

    def scattered(i: int) -> Selection:
        local = np.random.default_rng(100 + i)
        chunks = local.choice(grid[0] * grid[1], size=count, replace=False)
        return (
            (chunks // grid[1]) * sizes.table_chunk[0],
            (chunks % grid[1]) * sizes.table_chunk[1],
        )

    def recording(sel: Selection) -> np.ndarray:
        rows, col = sel
        values = recording_values(rows.start, rows.stop, sizes.recording_channels)
        return values[:, col]

    def recording_sum(sel: Selection) -> np.ndarray:
        rows = sel[1]
        values = recording_values(rows.start, rows.stop, sizes.recording_channels)
        return np.asarray(values.sum(dtype="<i8"))

    return [
        (
            f"{n // 1000}k rows x 1 column, 1 KiB chunks",
            "table",
            TABLE,
            lambda i: (slice(int(starts[i]), int(starts[i]) + n), 3),
            lambda sel: table[sel],
        ),
        (
            f"{n // 1000}k rows x {sizes.table_columns} columns, 1 KiB chunks",
            "table",
            TABLE,
            lambda i: (slice(int(starts[i]), int(starts[i]) + n), slice(None)),
            lambda sel: table[sel],
        ),
        (
            "1 s x 1 channel, 4 KiB chunks",
            "recording",
            RECORDING,
            lambda i: (slice(int(times[i]), int(times[i]) + SAMPLE_RATE), channel),
            recording,
        ),
        (
            f"1 s x {sizes.recording_channels} channels, 4 KiB chunks",
            "recording",
            RECORDING,
            lambda i: (slice(int(times[i]), int(times[i]) + SAMPLE_RATE), slice(None)),
            recording,
        ),
        (
            f"{SEQUENTIAL} {sizes.recording_seconds} s x {sizes.recording_channels} channels, "
            "4 KiB chunks (whole data)",
            "recording",
            RECORDING,
            lambda i: (slice(0, samples), slice(None)),
            recording,
        ),
        (
            f"{count} scattered chunks (1 value each)",
            "table",
            TABLE,
            scattered,
            lambda sel: table[sel],
        ),
        (
            f"{DASK_CASE} of {DASK_SECONDS} s x {sizes.recording_channels} channels, "
            "4 KiB chunks, 1 s a task",
            "recording",
            RECORDING,
            lambda i: (DASK_SUM, slice(0, DASK_SECONDS * SAMPLE_RATE)),
            recording_sum,
        ),
    ]


def _measure(
    row: Row,
    server: BenchServer,
    runs: int,
    reader: Any,
    path: str,
    refs: dict[str, Any],
    selection: Callable[[int], Selection],
    expected: Callable[[Selection], np.ndarray],
    warmup: int = 0,
) -> None:
    """One reader on one case: a fresh open and read per run, each run its own selection."""
    picked = iter(range(10**6))
    state: dict[str, Any] = {}

    def setup() -> None:
        state["sel"] = selection(next(picked))

    measure(
        row,
        server,
        lambda: reader(path, refs, state["sel"]),
        lambda values: np.array_equal(values, expected(state["sel"])),
        runs=runs,
        setup=setup,
        warmup=warmup,
    )


def run(
    server: BenchServer,
    refs: dict[str, Any],
    sizes: Sizes,
    runs: int,
    skip: tuple[str, ...],
    scratch: Path,
    build: bool,
    only: str,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    chosen = readers(skip, scratch, build)
    client = None
    try:
        for case, file, path, selection, expected in cases(sizes):
            if only and not any(word in case for word in only.split(",")):
                continue
            if case.startswith(DASK_CASE) and client is None:
                client = _dask_client()
            first = len(rows)
            case_runs, warmup = runs, 0
            if case.startswith(SEQUENTIAL):
                case_runs = max(runs, SEQUENTIAL_RUNS) if runs > 1 else runs
                warmup = SEQUENTIAL_WARMUP if runs > 1 else 0
                rows.append(_limit(server, case, refs[file], case_runs, warmup).to_json())
            for name, ours, reader in chosen:
                if name.endswith(DEFAULT_CHUNKS) and not case.startswith(DASK_CASE):
                    continue
                if name == JSON_READER and JSON_CASES not in case:
                    continue
                row = Row("reads", case, name, ours=ours)
                if isinstance(reader, str):
                    rows.append(not_run(row, reader).to_json())
                    continue
                try:
                    _measure(
                        row,
                        server,
                        case_runs,
                        reader,
                        path,
                        refs[file],
                        selection,
                        expected,
                        warmup,
                    )
                except _NotApplicable as exc:
                    not_run(row, str(exc))
                except Exception as exc:  # a reader's own failure is a result
                    not_run(row, f"failed: {type(exc).__name__}: {str(exc)[:160]}")
                rows.append(row.to_json())
            if case.startswith(SEQUENTIAL):
                _throughputs(rows[first:], refs[file]["size"])
    finally:
        if client is not None:
            client.close()
            client.cluster.close()
        for _, _, reader in chosen:
            if isinstance(reader, _VenvReader):
                reader.close()
    return rows


def _dask_client() -> Any:
    """dask.distributed in this process (2 worker threads: the box's cores), so our readers'
    stores reach the tasks without pickling, as the threads of one worker share them."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"
    )
    client = Client(cluster)
    import dask.array as da

    da.ones(4, chunks=2).sum().compute()  # the first graph's start-up is no reader's
    return client


def _limit(server: BenchServer, case: str, refs: dict[str, Any], runs: int, warmup: int = 0) -> Row:
    """The whole file in plain concurrent range requests (8 MiB, 16 in flight): the bytes of
    the sequential read at what the link and the server give (bench.py's limit row), after
    ``warmup`` untimed runs as the readers' rows."""
    url, size = refs["url"], refs["size"]
    row = Row("reads", case, "limit: plain concurrent range requests")
    return measure(
        row,
        server,
        lambda: plain_ranges(url, size),
        lambda n: n == size,
        runs=runs,
        warmup=warmup,
    )


def _throughputs(rows: list[dict[str, Any]], size: int) -> None:
    """MB/s of the file's bytes and the share of the limit's, in each row's note."""
    limit = rows[0]["seconds"] if rows and rows[0]["reader"].startswith("limit") else None
    for row in rows:
        if not row["seconds"]:
            continue
        note = f"{size / row['seconds'] / 1e6:.1f} MB/s"
        if limit and not row["reader"].startswith("limit"):
            note += f", {limit / row['seconds'] * 100:.0f}% of the limit"
        row["note"] = "; ".join(n for n in (note, row["note"]) if n)


def print_table(rows: list[dict[str, Any]]) -> None:
    case = None
    width = max([52, *(len(row["reader"]) for row in rows)])
    for row in rows:
        if row["case"] != case:
            case = row["case"]
            print(f"\n{case}")
            print(
                f"  {'reader':<{width}} {'time':>8} {'requests':>8} {'rtt':>5} {'bytes':>11} equal"
            )
        if row["not_run"]:
            print(f"  {row['reader']:<{width}} not run: {row['not_run']}")
            continue
        print(
            f"  {row['reader']:<{width}} {row['seconds']:>7.3f}s {row['requests']:>8} "
            f"{row['round_trips'] if row['round_trips'] is not None else '-':>5} "
            f"{row['bytes']:>11,} {row['equal']} {row['note']}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small files, one run per row")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--latency", type=float, default=20.0, help="ms per request")
    parser.add_argument("--skip", default="", help="readers to leave out (comma substrings)")
    parser.add_argument("--cases", default="", help="only cases containing these (comma list)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument(
        "--store-options",
        default="{}",
        help='RfsStore options of our readers, as JSON, over {"grouped_view": "auto"} '
        "('{\"grouped_view\": 0}': as stored)",
    )
    parser.add_argument("--build-venvs", action="store_true", help="build remfile/async-hdf5")
    parser.add_argument(
        "--json-refs",
        default=None,
        help="version-1 JSON open/write against kerchunk at these numbers of refs (comma list; "
        "default 100000,1000000, with --quick 10000; 0: none)",
    )
    parser.add_argument(
        "--sparse-n",
        default="",
        help="sparse reads of 1,000 random 16 B chunks out of these numbers of chunks (comma "
        "list, e.g. 1e4,1e5,1e6,1e7; see sparse_reads.py), one run each",
    )
    parser.add_argument(
        "--sparse-files",
        type=Path,
        default=None,
        help="keep the sparse reads' files (and references) in this folder, reused when there",
    )
    args = parser.parse_args(argv)
    sizes = Sizes.quick() if args.quick else Sizes()
    STORE_OPTIONS.update(json.loads(args.store_options))
    runs = args.runs or (1 if args.quick else 3)
    skip = tuple(w.strip() for w in args.skip.split(",") if w.strip())
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shadowzarr-reads-") as folder:
        www, scratch = Path(folder) / "www", Path(folder) / "scratch"
        www.mkdir()
        scratch.mkdir()
        write_files(www, sizes)
        with BenchServer(www, latency=args.latency / 1000, bandwidth=None, kind="s3") as server:
            refs = write_references(www, server)
            started = time.perf_counter()
            rows = run(server, refs, sizes, runs, skip, scratch, args.build_venvs, args.cases)
            seconds = time.perf_counter() - started
    if args.sparse_n:
        import sparse_reads

        sparse = [int(float(n)) for n in args.sparse_n.split(",") if n.strip()]
        started = time.perf_counter()
        rows += sparse_reads.run(sparse, args.latency, skip=skip, keep=args.sparse_files)
        seconds += time.perf_counter() - started
    print_table(rows)
    json_sizes = [
        int(n)
        for n in (args.json_refs or ("10000" if args.quick else "100000,1000000")).split(",")
        if int(n) > 0
    ]
    json_rows = []
    if json_sizes:
        import json_refs

        json_rows = json_refs.run(json_sizes, runs=1 if args.quick else min(runs, 2))
        print("\nversion-1 JSON references (every chunk listed): open and write\n")
        print(json_refs.table(json_rows))
    if args.json is not None:
        document = {
            "command": " ".join(
                ["tools/bench/reads.py", *(argv if argv is not None else sys.argv[1:])]
            ),
            "server": f"single-range (s3), {args.latency:g} ms/request, no bandwidth cap",
            "zarr_config": "defaults (async.concurrency 10)",
            "store_options": STORE_OPTIONS,
            "quick": args.quick,
            "runs": runs,
            "sizes": {k: getattr(sizes, k) for k in sizes.__slots__},
            "load_average_start": load,
            "load_average_end": os.getloadavg(),
            "seconds": seconds,
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
            "rows": rows,
            "json_refs": [dataclasses.asdict(r) for r in json_rows],
        }
        args.json.write_text(json.dumps(document, indent=1))
        print(f"\nwritten to {args.json}")
    wrong = [r for r in rows if r["equal"] is False]
    for row in wrong:
        print(f"WRONG VALUES: {row['case']} / {row['reader']}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
