"""Benchmark: one ``chunk_iter`` over a fragmented 150,000-chunk HDF5 dataset on a slow server.

The dataset is appended in thousands of pieces interleaved with a second dataset, so its chunk
index nodes are scattered through the file. The file is served by nginx behind the latency
proxy of ``shadowzarr_testing`` (a fixed delay per request, optionally a shared bandwidth cap),
both in a child process so that the server does not compete with the client for the GIL.
Requests, bytes and sequential rounds are the client's own counters. Compared:

- h5py over ``RemoteFile`` with the level-at-a-time index prefetch;
- the same with multi-range requests (nginx answers ``Range: bytes=a-b,c-d,…``);
- h5py over ``RemoteFile`` without prefetch (adaptive 64 KiB metadata blocks);
- h5py over remfile-style reading (100 KiB blocks, runs ×1.7 while sequential, cap 100 MiB);
- h5py over plain fixed 100 KiB blocks, one block per miss;
- ``read_chunk_table`` straight from the bytes (no h5py) over the transport's ``RangeSource``.

    uv run python tools/bench_hdf5_index.py                    # 20 ms, 200 Mbit/s
    uv run python tools/bench_hdf5_index.py --kinds btree1 --bandwidth 0
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
from shadowzarr_hdf5.remote import RemoteFile, read_chunk_table
from shadowzarr_store.transport import RangeSource, StatsSnapshot, TransportOptions

LIBVER = {"btree1": "earliest", "ea": "latest", "btree2": "latest"}


_SERVER = """
import sys
from shadowzarr_testing.nginx import NginxServer
from shadowzarr_testing.proxy import LatencyProxy
root, latency, bandwidth = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) or None
with NginxServer(root) as nginx, LatencyProxy(nginx.url(""), latency=latency,
                                              bandwidth=bandwidth) as proxy:
    print(proxy.url(""), flush=True)
    sys.stdin.read()
"""


@dataclass(frozen=True, slots=True)
class Result:
    kind: str
    reader: str
    seconds: float
    requests: int
    bytes: int
    rounds: int
    chunks: int


Reader = Callable[[], tuple[int, StatsSnapshot]]


def write_fragmented(path: Path, kind: str, chunks: int, per_append: int, elements: int) -> None:
    """``chunks`` chunks of dataset "a" written ``per_append`` at a time, each append followed
    by one chunk of dataset "b", so the index nodes of "a" end up between chunks."""
    with h5py.File(path, "w", libver=LIBVER[kind]) as f:
        if kind == "btree2":
            a = f.create_dataset(
                "a", (0, elements), maxshape=(None, None), chunks=(1, elements), dtype="i4"
            )
        else:
            a = f.create_dataset("a", (0,), maxshape=(None,), chunks=(elements,), dtype="i4")
        b = f.create_dataset("b", (0,), maxshape=(None,), chunks=(elements,), dtype="i4")
        piece = np.arange(per_append * elements, dtype="i4")
        for start in range(0, chunks, per_append):
            count = min(per_append, chunks - start)
            if kind == "btree2":
                a.resize((start + count, elements))
                a[start:] = piece[: count * elements].reshape(count, elements)
            else:
                a.resize(((start + count) * elements,))
                a[start * elements :] = piece[: count * elements]
            n = b.shape[0]
            b.resize((n + elements,))
            b[n:] = piece[:elements]


def count_chunks(dset: h5py.Dataset) -> int:
    found = [0]

    def seen(_info: object) -> None:
        found[0] += 1

    dset.id.chunk_iter(seen)
    return found[0]


def through_h5py(url: str, **options: object) -> Reader:
    def run() -> tuple[int, StatsSnapshot]:
        with RemoteFile(url, **options) as remote, h5py.File(remote, "r") as f:  # type: ignore[arg-type]
            return count_chunks(f["a"]), remote.stats

    return run


def direct(url: str, address: int) -> Reader:
    def run() -> tuple[int, StatsSnapshot]:
        with RangeSource(url, TransportOptions(multi_range=False)) as fetcher:
            return len(read_chunk_table(fetcher, address)), fetcher.stats

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default="btree1,ea", help="btree1, ea, btree2 (comma list)")
    parser.add_argument("--chunks", type=int, default=150_000)
    parser.add_argument("--per-append", type=int, default=40)
    parser.add_argument("--elements", type=int, default=256, help="int32 elements per chunk")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--bandwidth", type=float, default=200.0, help="Mbit/s, 0 = no cap")
    parser.add_argument("--skip", nargs="*", default=[], help="readers to leave out (substring)")
    args = parser.parse_args()
    bandwidth = args.bandwidth * 1e6 / 8 if args.bandwidth else None
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-hdf5-") as folder:
        root = Path(folder)
        for kind in args.kinds.split(","):
            path = root / f"{kind}.h5"
            start = time.perf_counter()
            write_fragmented(path, kind, args.chunks, args.per_append, args.elements)
            with h5py.File(path, "r") as f:
                address = int(h5py.h5o.get_info(f["a"].id).addr)
            print(
                f"{kind}: {args.chunks} chunks of {args.elements * 4} B in appends of "
                f"{args.per_append}, {path.stat().st_size / 2**20:.0f} MiB, written in "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )
            server = subprocess.Popen(
                [sys.executable, "-c", _SERVER, str(root), str(args.latency), str(bandwidth or 0)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert server.stdout is not None
                url = server.stdout.readline().strip() + "/" + path.name
                readers: list[tuple[str, Reader]] = [
                    (
                        "h5py + RemoteFile, prefetch",
                        through_h5py(url, transport=TransportOptions(multi_range=False)),
                    ),
                    ("h5py + RemoteFile, prefetch, multi-range", through_h5py(url)),
                    ("read_chunk_table (no h5py)", direct(url, address)),
                    (
                        "h5py + RemoteFile, no prefetch",
                        through_h5py(
                            url, prefetch=False, transport=TransportOptions(multi_range=False)
                        ),
                    ),
                    (
                        "h5py + remfile-style blocks",
                        through_h5py(
                            url, prefetch=False, block_size=100 * 1024, max_run_blocks=1024
                        ),
                    ),
                    (
                        "h5py + fixed 100 KiB blocks",
                        through_h5py(url, prefetch=False, block_size=100 * 1024, max_run_blocks=1),
                    ),
                ]
                for name, run in readers:
                    if any(word in name for word in args.skip):
                        continue
                    start = time.perf_counter()
                    chunks, stats = run()
                    seconds = time.perf_counter() - start
                    results.append(
                        Result(
                            kind, name, seconds, stats.requests, stats.bytes, stats.rounds, chunks
                        )
                    )
                    print(f"  {name}: {seconds:.2f} s", flush=True)
            finally:
                assert server.stdin is not None
                server.stdin.close()
                server.wait(timeout=30)
    print()
    print(
        f"latency {args.latency * 1000:.0f} ms/request, bandwidth "
        f"{f'{args.bandwidth:.0f} Mbit/s' if args.bandwidth else 'uncapped'}"
    )
    print("| index | reader | time (s) | requests | MB read | rounds | chunks |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r.kind} | {r.reader} | {r.seconds:.2f} | {r.requests} | {r.bytes / 1e6:.2f} "
            f"| {r.rounds} | {r.chunks} |"
        )


if __name__ == "__main__":
    main()
