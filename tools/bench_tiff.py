"""Benchmark: references for a remote TIFF stack of many pages, behind a latency proxy.

Compares shadowzarr's ``generate_rfs_tiff`` (IFDs read ahead along the chain, in parallel)
with kerchunk's ``tiff_to_zarr`` (tifffile's ``write_fsspec`` over an fsspec HTTP file) and,
when a Python with virtual-tiff is given, virtual-tiff's ``VirtualTIFF`` parser (async-tiff
over obstore). Each tool reads the same file from nginx through the latency proxy of
``shadowzarr_testing``; the proxy counts requests and bytes.

    uv run python tools/bench_tiff.py --pages 10000 --latency 0.02
    uv run python tools/bench_tiff.py --virtual-tiff-python /tmp/vtenv/bin/python

virtual-tiff is not in the workspace lock; install it into a separate virtual environment
(``uv venv /tmp/vtenv && uv pip install --python /tmp/vtenv/bin/python virtual-tiff``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tifffile
from shadowzarr_store import open_rfs
from shadowzarr_testing.nginx import NginxServer
from shadowzarr_testing.proxy import LatencyProxy
from shadowzarr_tiff import generate_rfs_tiff


@dataclass(frozen=True, slots=True)
class Result:
    tool: str
    seconds: float
    requests: int
    bytes: int
    chunks: str


def write_stack(
    path: Path, pages: int, height: int, width: int, layout: str, compression: str | None
) -> None:
    """``generic``: pages written one by one (each its own IFD, tifffile walks them all);
    ``shaped``: one imwrite call (tifffile's shaped series, contiguous data). Compressed
    pages get some noise, so their sizes (and the IFD spacing) vary as in real stacks."""
    frame = np.arange(height * width, dtype=np.uint16).reshape(height, width)
    if layout == "shaped":
        data = np.broadcast_to(frame, (pages, height, width))
        tifffile.imwrite(path, data, photometric="minisblack", compression=compression)
        return
    noise = np.random.default_rng(0).integers(0, 16, (64, height, width), dtype=np.uint16)
    with tifffile.TiffWriter(path) as tif:
        for index in range(pages):
            page = frame + index
            if compression is not None:
                page = frame + noise[index % 64]
            tif.write(
                page,
                contiguous=False,
                metadata=None,
                photometric="minisblack",
                compression=compression,
            )


def run_shadowzarr(url: str, local: Path) -> str:
    rfs = generate_rfs_tiff(url)
    group = open_rfs(rfs)
    with tifffile.TiffFile(local) as tif:
        count = len(tif.series[0])
        for page in (0, count // 2, count - 1):
            if not np.array_equal(group["0"][page], tif.series[0][page].asarray()):
                raise AssertionError(f"shadowzarr: page {page} differs from tifffile")
    listed = sum(1 for key in rfs.refs if key.startswith("0/c/"))
    generated = sum(entry.count for entry in rfs.gen)
    if "0" in rfs.indexes:
        return f"{len(rfs.indexes['0'].table.reshape(-1, 2))} in a chunk manifest"
    if generated:
        return f"{generated} in {len(rfs.gen)} gen entry"
    return f"{listed} refs"


def run_kerchunk(url: str) -> str:
    from kerchunk.tiff import tiff_to_zarr

    refs = tiff_to_zarr(url)
    chunks = [key for key in refs if not key.startswith(".") and "/." not in key]
    return f"{len(chunks)} refs"


def run_write_fsspec(url: str) -> str:
    """What kerchunk's tiff_to_zarr does before its attribute step (which fails on tifffile's
    shaped files with kerchunk 0.2.10): tifffile's write_fsspec over an fsspec HTTP file."""
    import io
    import json

    import fsspec

    with (
        fsspec.open(url) as handle,
        tifffile.TiffFile(handle, name="stack.tif") as tif,
        tif.series[0].aszarr() as store,
    ):
        text = io.StringIO()
        store.write_fsspec(text, url=url.rsplit("/", 1)[0])
    refs = json.loads(text.getvalue())
    return f"{sum(1 for key in refs if not key.startswith('.') and '/.' not in key)} refs"


_VIRTUAL_TIFF = """
import sys, time
from obstore.store import HTTPStore
from obspec_utils.registry import ObjectStoreRegistry
from virtual_tiff import VirtualTIFF
base, url = sys.argv[1], sys.argv[2]
store = HTTPStore.from_url(base, client_options={"allow_http": True})
registry = ObjectStoreRegistry({base: store})
start = time.perf_counter()
manifest_store = VirtualTIFF()(url, registry)
elapsed = time.perf_counter() - start
arrays = list(manifest_store._group.arrays)
print(elapsed, len(arrays))
"""


def run_virtual_tiff(python: str, base: str, url: str) -> tuple[float, str]:
    completed = subprocess.run(
        [python, "-c", _VIRTUAL_TIFF, base, url], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip().splitlines()[-1])
    seconds, arrays = completed.stdout.split()
    return float(seconds), f"{arrays} arrays (one per IFD)"


def measure(proxy: LatencyProxy, tool: str, call) -> Result:  # type: ignore[no-untyped-def]
    proxy.reset()
    start = time.perf_counter()
    outcome = call()
    seconds = time.perf_counter() - start
    if isinstance(outcome, tuple):  # a subprocess times itself (no interpreter start-up)
        seconds, outcome = outcome
    return Result(tool, seconds, proxy.requests, proxy.bytes_sent(), outcome)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--height", type=int, default=128)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--layout", choices=["generic", "shaped"], default="generic")
    parser.add_argument("--compression", help="e.g. zlib (default: uncompressed)")
    parser.add_argument("--virtual-tiff-python", help="a Python that has virtual-tiff installed")
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        help="tools to leave out: shadowzarr, kerchunk, write_fsspec, virtual-tiff",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-tiff-") as folder:
        root = Path(folder)
        local = root / "stack.tif"
        start = time.perf_counter()
        write_stack(local, args.pages, args.height, args.width, args.layout, args.compression)
        size = local.stat().st_size
        print(
            f"{args.layout} stack: {args.pages} pages of {args.height}x{args.width} uint16 "
            f"({args.compression or 'uncompressed'}), "
            f"{size / 2**20:.1f} MiB, written in {time.perf_counter() - start:.1f} s; "
            f"latency {args.latency * 1000:.0f} ms per request",
            flush=True,
        )
        results: list[Result] = []
        with NginxServer(root) as nginx, LatencyProxy(nginx.url(""), latency=args.latency) as proxy:
            url = proxy.url("stack.tif")
            tools = [
                ("shadowzarr", "shadowzarr generate_rfs_tiff", lambda: run_shadowzarr(url, local)),
                ("kerchunk", "kerchunk tiff_to_zarr", lambda: run_kerchunk(url)),
                (
                    "write_fsspec",
                    "tifffile write_fsspec (kerchunk's core)",
                    lambda: run_write_fsspec(url),
                ),
            ]
            if args.virtual_tiff_python:
                base = proxy.url("")
                tools.append(
                    (
                        "virtual-tiff",
                        "virtual-tiff VirtualTIFF",
                        lambda: run_virtual_tiff(args.virtual_tiff_python, base, url),
                    )
                )
            for tool, name, call in tools:
                if tool in args.skip:
                    continue
                try:
                    results.append(measure(proxy, name, call))
                except Exception as exc:  # a peer tool failing is a result to report
                    print(f"{name}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                print(f"  done: {name}", flush=True)
        print()
        print("| tool | time (s) | requests | bytes read | chunks |")
        print("| --- | ---: | ---: | ---: | --- |")
        for result in results:
            print(
                f"| {result.tool} | {result.seconds:.2f} | {result.requests} | "
                f"{result.bytes / 2**20:.1f} MiB | {result.chunks} |"
            )


if __name__ == "__main__":
    main()
