"""Side by side: one HDF5 dataset opened and read through blosc2's ``RemoteArray`` and through
``shadowzarr.open_array``, cold (empty caches) and warm (second run, disk caches kept).

The file (an NWB-like layout: the dataset plus many small datasets the open should not touch)
is served by nginx behind the latency proxy of ``shadowzarr_testing``. Each run is a fresh child
process, so nothing survives between runs except what the tools keep on disk; requests and
bytes are the proxy's own counters for that run.

blosc2 conflicts with nothing here but is not a workspace dependency: install it, with
kerchunk (its HDF5 path needs it), in a throwaway venv and pass its interpreter:

    uv venv /tmp/b2
    uv pip install --python /tmp/b2/bin/python blosc2 kerchunk h5py fsspec aiohttp requests
    uv run python tools/bench_remote_array.py --blosc2-python /tmp/b2/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import h5py
import numpy as np
from shadowzarr_testing import LatencyProxy, NginxServer

DATASET = "acquisition/ElectricalSeries/data"

_SHADOWZARR = """
import json, sys, time, hashlib
import numpy as np
import shadowzarr, shadowzarr_store.remote, shadowzarr_hdf5.generate, zarr  # not timed
start = time.perf_counter()
remote = shadowzarr.open_array(
    sys.argv[1], cache="disk", cache_dir=sys.argv[2], max_cache_bytes=None
)
opened = time.perf_counter()
print("OPENED", flush=True); sys.stdin.readline()
resumed = time.perf_counter()
values = np.ascontiguousarray(remote[:])
done = time.perf_counter()
print(json.dumps({"open_s": opened - start, "read_s": done - resumed,
                  "sha": hashlib.sha1(values.tobytes()).hexdigest()[:12],
                  "references": remote.info["references"]}))
"""

_BLOSC2 = """
import json, sys, time, hashlib
import numpy as np
import blosc2, kerchunk.hdf, fsspec, h5py  # not timed
start = time.perf_counter()
url, dataset = sys.argv[1].split("::")
remote = blosc2.open(
    url, lazy=True, dataset=dataset, source_format="hdf5", cache_dir=sys.argv[2],
    max_cache_bytes=None,
)
opened = time.perf_counter()
print("OPENED", flush=True); sys.stdin.readline()
resumed = time.perf_counter()
values = np.ascontiguousarray(remote[:])
done = time.perf_counter()
print(json.dumps({"open_s": opened - start, "read_s": done - resumed,
                  "sha": hashlib.sha1(values.tobytes()).hexdigest()[:12],
                  "references": type(remote).__name__}))
"""


def write_file(path: Path, rows: int, columns: int, chunk_rows: int, extra: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((rows, columns)) * 300).astype(np.int16)
    with h5py.File(path, "w") as file:
        file.attrs["session_description"] = "bench"
        file.create_dataset(DATASET, data=data, chunks=(chunk_rows, columns), compression="gzip")
        for index in range(extra):
            file.create_dataset(f"processing/ecephys/unit{index}/times", data=rng.random(200))
    return data


def run(python: str, script: str, source: str, cache: Path, proxy: LatencyProxy) -> dict:
    """One child process: open (then the proxy's counters are read), read everything."""
    proxy.reset()
    child = subprocess.Popen(
        [python, "-c", textwrap.dedent(script), source, str(cache)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.startswith("OPENED"):
        raise SystemExit(f"{python} failed:\n{line}{child.communicate()[1][-3000:]}")
    proxy.wait_idle()
    opened = (proxy.count(), proxy.bytes_sent())
    out, err = child.communicate("go\n", timeout=900)
    if child.returncode != 0:
        raise SystemExit(f"{python} failed:\n{err[-3000:]}")
    proxy.wait_idle()
    report = json.loads(out.strip().splitlines()[-1])
    report["open_requests"], report["open_MB"] = opened[0], opened[1] / 1e6
    report["read_requests"] = proxy.count() - opened[0]
    report["read_MB"] = (proxy.bytes_sent() - opened[1]) / 1e6
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--columns", type=int, default=32)
    parser.add_argument("--chunk-rows", type=int, default=10_000)
    parser.add_argument("--extra-datasets", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--blosc2-python", help="interpreter of a venv with blosc2 + kerchunk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "www"
        root.mkdir()
        data = write_file(
            root / "bench.nwb", args.rows, args.columns, args.chunk_rows, args.extra_datasets
        )
        size = (root / "bench.nwb").stat().st_size
        print(
            f"{DATASET}: {data.shape} int16, chunks ({args.chunk_rows}, {args.columns}) gzip, "
            f"{data.nbytes / 1e6:.1f} MB raw; file {size / 1e6:.1f} MB with "
            f"{args.extra_datasets} other datasets; latency {args.latency * 1000:.0f} ms/request"
        )
        tools = [("shadowzarr.open_array", sys.executable, _SHADOWZARR)]
        if args.blosc2_python:
            tools.append(("blosc2.open(lazy=True)", args.blosc2_python, _BLOSC2))
        with NginxServer(root) as nginx, LatencyProxy(nginx.url(""), latency=args.latency) as proxy:
            source = f"{proxy.url('bench.nwb')}::{DATASET}"
            print(
                f"{'tool':<24}{'run':<6}{'open s':>8}{'req':>5}{'MB':>7}"
                f"{'read s':>8}{'req':>5}{'MB':>7}  sha"
            )
            for name, python, script in tools:
                cache = Path(scratch) / f"cache-{name.split('.')[0]}"
                for label in ("cold", "warm"):
                    got = run(python, script, source, cache, proxy)
                    print(
                        f"{name:<24}{label:<6}{got['open_s']:>8.2f}{got['open_requests']:>5}"
                        f"{got['open_MB']:>7.2f}{got['read_s']:>8.2f}{got['read_requests']:>5}"
                        f"{got['read_MB']:>7.2f}  {got['sha']}"
                    )
        import hashlib

        print(f"expected sha {hashlib.sha1(data.tobytes()).hexdigest()[:12]}")


if __name__ == "__main__":
    main()
