"""Throughput of materialize against the server's raw limit and a naive zarr copy over fsspec.

    uv run python tools/bench_materialize.py [--mb 256] [--latency 0.02] [--bandwidth 0]

A raw int16 recording (time x 64 channels) is served by nginx behind our latency proxy (both in a
child process, so the proxy does not compete with the client for one interpreter). Three readers
move the whole file:

- limit: plain concurrent range requests (aiohttp, 16 in flight, 4 MiB each), the most the server
  can give;
- materialize: shadowzarr's materialize from version-1 references into a local Zarr folder;
- naive: zarr-python reading the same references through fsspec's ReferenceFileSystem and writing
  the same destination layout region by region.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

CHANNELS = 64


def serve(
    root: str,
    latency: float,
    bandwidth: float | None,
    queue: multiprocessing.Queue,
    stop: multiprocessing.Event,
) -> None:  # type: ignore[type-arg]
    from shadowzarr_testing import LatencyProxy, NginxServer

    with (
        NginxServer(Path(root)) as nginx,
        LatencyProxy(nginx.url(""), latency=latency, bandwidth=bandwidth) as proxy,
    ):
        queue.put((proxy.url(""), nginx.url("")))
        stop.wait()
        queue.put(proxy.requests)


async def limit(url: str, size: int) -> float:
    import aiohttp

    piece = 4 * 2**20
    semaphore = asyncio.Semaphore(16)
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:

        async def one(start: int) -> int:
            async with semaphore:
                end = min(size, start + piece) - 1
                async with session.get(url, headers={"Range": f"bytes={start}-{end}"}) as response:
                    return len(await response.read())

        total = sum(await asyncio.gather(*(one(s) for s in range(0, size, piece))))
    assert total == size
    return time.perf_counter() - started


def write_refs(folder: Path, url: str, rows: int) -> Path:
    from shadowzarr_spec import RfsBuilder, write_rfs

    builder = RfsBuilder()
    builder.add_group("")
    chunk_rows = 2**20 // (CHANNELS * 2)  # 1 MiB source chunks
    builder.add_array(
        "signal", shape=[rows, CHANNELS], data_type="<i2", chunk_shape=[chunk_rows, CHANNELS]
    )
    builder.add_contiguous_chunks(
        "signal",
        url=url,
        start=0,
        shape=[rows, CHANNELS],
        chunk_shape=[chunk_rows, CHANNELS],
        itemsize=2,
    )
    return write_rfs(builder.build(), folder / "refs.json")


def naive_copy(refs: Path, dest: Path, rows: int) -> None:
    import fsspec
    import zarr
    from zarr.storage import FsspecStore

    fs = fsspec.filesystem(
        "reference",
        fo=str(refs),
        remote_protocol="http",
        remote_options={"asynchronous": True},
        asynchronous=True,
    )
    source = zarr.open_array(
        FsspecStore(fs, read_only=True, path="signal"), mode="r", zarr_format=3
    )
    chunk_rows = 4 * 2**20 // (CHANNELS * 2)
    target = zarr.create_array(
        dest, shape=source.shape, dtype=source.dtype, chunks=(chunk_rows, CHANNELS)
    )
    for start in range(0, rows, chunk_rows):
        target[start : start + chunk_rows] = source[start : start + chunk_rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--bandwidth", type=float, default=0.0, help="bytes/s cap (0 = none)")
    args = parser.parse_args()
    from shadowzarr_store import materialize

    work = Path(tempfile.mkdtemp(prefix="bench-materialize-"))
    rows = args.mb * 2**20 // (CHANNELS * 2)
    data = np.random.default_rng(0).integers(-2000, 2000, size=(rows, CHANNELS), dtype=np.int16)
    (work / "www").mkdir()
    (work / "www" / "raw.bin").write_bytes(data.tobytes())
    size = data.nbytes
    queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    stop = multiprocessing.Event()
    server = multiprocessing.Process(
        target=serve, args=(str(work / "www"), args.latency, args.bandwidth or None, queue, stop)
    )
    server.start()
    try:
        base, _ = queue.get(timeout=60)
        url = base + "raw.bin"
        refs = write_refs(work, url, rows)
        results = {"limit": asyncio.run(limit(url, size))}
        started = time.perf_counter()
        materialize(refs, work / "ours.zarr", max_merge_size=0)
        results["materialize"] = time.perf_counter() - started
        started = time.perf_counter()
        naive_copy(refs, work / "naive.zarr", rows)
        results["naive zarr + fsspec"] = time.perf_counter() - started
        import zarr

        for name in ("ours.zarr", "naive.zarr"):
            path = work / name / "signal" if name == "ours.zarr" else work / name
            assert np.array_equal(zarr.open_array(path, mode="r")[:], data), name
    finally:
        stop.set()
        server.join(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    bandwidth = "none" if not args.bandwidth else f"{args.bandwidth / 1e6:.0f} MB/s"
    print(f"{args.mb} MiB, latency {args.latency * 1000:.0f} ms, bandwidth {bandwidth}")
    print(f"{'reader':<22} {'seconds':>8} {'MB/s':>8} {'of limit':>9}")
    for name, seconds in results.items():
        rate = size / seconds / 1e6
        print(f"{name:<22} {seconds:>8.2f} {rate:>8.1f} {results['limit'] / seconds:>8.0%}")


if __name__ == "__main__":
    main()
