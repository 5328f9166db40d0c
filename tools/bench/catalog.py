"""Catalog throughput: references for a whole archive of DANDI-like NWB files on the
single-range server (S3's answers) at 20 ms per request.

Assets per minute for `generate_catalog`'s default pool, for a Dask `LocalCluster`, for a plain
loop over `generate_rfs` (+ `write_rfs`), and for the same loop with kerchunk
(`SingleHdf5ToZarr` over fsspec) and with lindi (in its own environment: it needs zarr 2);
requests and connections per asset (counted at the proxy); CPU seconds per asset in this
process; and, from the measured per-asset cost, the projected time for 10^5 assets on 1, 8 and
64 workers. Targets: the default pool at least 5x the plain loop; the catalog's requests per
asset no more than `generate_rfs` alone needs.

The archive: a few NWB-like templates (an ElectricalSeries of int16 above the 8 MiB whole-file
threshold, so headers and chunk indexes are read by range as for real DANDI assets, and a few
dozen metadata groups, attributes and small datasets), each hard-linked under many asset names.

    uv run python tools/bench/catalog.py                      # full: 120 assets, loops over 40
    uv run python tools/bench/catalog.py --build-venvs        # also builds lindi's environment
    uv run python tools/bench/catalog.py --quick --json out.json   # the smoke test's sizes
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from server import BenchServer
from shadowzarr_store.transport import close_all_pools
from venvs import VenvPeer, peer_python

PROJECTED_ASSETS = 100_000
PROJECTED_WORKERS = (1, 8, 64)
THREADS_PER_WORKER = 8
"""Jobs one worker keeps in flight (the catalog's default pool): a worker is a process on one
core, as a Dask worker or the local pool on a one-core machine."""


@dataclass(slots=True)
class Result:
    """One way of generating references for the archive."""

    method: str
    assets: int = 0
    seconds: float | None = None
    assets_per_minute: float | None = None
    requests_per_asset: float | None = None
    connections_per_asset: float | None = None
    cpu_seconds_per_asset: float | None = None
    note: str = ""


def write_template(path: Path, seed: int, megabytes: float, groups: int) -> None:
    """An NWB-like file: an int16 ElectricalSeries of ``megabytes`` (random, so it does not
    compress away), its timestamps, and ``groups`` metadata groups with attributes and small
    datasets."""
    rng = np.random.default_rng(seed)
    channels = 32
    rows = max(1024, int(megabytes * 2**20 / (2 * channels)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as f:
        f.attrs["nwb_version"] = "2.8.0"
        series = f.create_group("acquisition/ElectricalSeries")
        series.attrs["neurodata_type"] = "ElectricalSeries"
        series.create_dataset(
            "data",
            data=rng.integers(-2000, 2000, size=(rows, channels), dtype="<i2"),
            chunks=(min(rows, 16384), channels),
        )
        series.create_dataset(
            "timestamps", data=np.arange(rows, dtype="<f8") / 30000.0, chunks=(min(rows, 65536),)
        )
        for g in range(groups):
            group = f.create_group(f"general/devices/device_{g:03d}")
            group.attrs["description"] = f"probe {g} of session {seed}"
            group.attrs["neurodata_type"] = "Device"
            group.create_dataset("channel_ids", data=np.arange(8 + g % 5, dtype="<i4"))
            group.create_dataset("location", data=f"region {g % 7}")
        units = f.create_group("units")
        units.create_dataset("spike_times", data=np.sort(rng.random(2000 + 100 * seed)) * 60)
        units.create_dataset("id", data=np.arange(40, dtype="<i8"))


def build_archive(root: Path, assets: int, templates: int, megabytes: float) -> list[str]:
    """``assets`` names under ``root`` (hard links to ``templates`` files); their paths."""
    sources = []
    for t in range(templates):
        template = root / ".templates" / f"template-{t}.nwb"
        write_template(template, t, megabytes, groups=30 + 10 * t)
        sources.append(template)
    names = []
    for i in range(assets):
        name = f"sub-{i // 4:03d}/sub-{i // 4:03d}_ses-{i % 4}_ecephys.nwb"
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.link(sources[i % templates], target)
        names.append(name)
    return names


def measured(
    server: BenchServer, method: str, count: int, run: Callable[[], Any], note: str = ""
) -> tuple[Result, Any]:
    # every method starts cold: the process's shared pools would hand the next method the
    # connections the last one opened (a real run opens its own)
    close_all_pools()
    server.reset()
    cpu = _cpu_seconds()
    start = time.perf_counter()
    value = run()
    seconds = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    counts = server.counts()
    result = Result(
        method,
        count,
        seconds,
        count / seconds * 60,
        counts.requests / count,
        counts.connections / count,
        cpu / count,
        note,
    )
    print(
        f"  {method:<44} {result.assets_per_minute:8.1f} assets/min  "
        f"{result.requests_per_asset:6.1f} req/asset  "
        f"{result.connections_per_asset:5.2f} conn/asset  "
        f"{result.cpu_seconds_per_asset:6.3f} CPU s/asset  ({count} assets, {seconds:.1f} s)",
        flush=True,
    )
    return result, value


def _cpu_seconds() -> float:
    """CPU of this process and of its children that have ended (the catalog's worker
    processes, stopped when it returns; not the server's, which runs on)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run_pool(server: BenchServer, urls: list[str], work: Path) -> tuple[Result, float]:
    """The catalog with its default pool; returns the row and the catalog's own count of
    generation requests per asset (the listing's probes aside)."""
    from shadowzarr_catalog import generate_catalog
    from shadowzarr_catalog.processes import default_processes
    from shadowzarr_catalog.run import DEFAULT_WORKERS

    listing = work / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    processes = min(default_processes(), DEFAULT_WORKERS)
    shape = (
        f"{processes} processes x {-(-DEFAULT_WORKERS // processes)} threads"
        if processes
        else f"{DEFAULT_WORKERS} threads"
    )
    result, summary = measured(
        server,
        f"generate_catalog, default pool ({shape})",
        len(urls),
        lambda: generate_catalog(listing, work / "catalog-pool"),
        "a URL list: each asset's size/ETag from its generation; CPU s includes the workers'",
    )
    assert summary.statuses == {"ok": len(urls)}, summary
    import pandas as pd  # after the run: the catalog itself imports no pandas

    table = pd.read_parquet(work / "catalog-pool" / "catalog.parquet")
    return result, float(table.requests.mean())


def run_cluster(server: BenchServer, urls: list[str], work: Path, workers: int) -> Result:
    import distributed as untyped
    from shadowzarr_catalog import generate_catalog

    distributed: Any = untyped  # no type hints of its own
    listing = work / "urls.txt"
    start = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=THREADS_PER_WORKER,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        started = time.perf_counter() - start
        result, summary = measured(
            server,
            f"generate_catalog, LocalCluster ({workers}x{THREADS_PER_WORKER})",
            len(urls),
            lambda: generate_catalog(listing, work / "catalog-cluster", client=client),
            f"cluster start-up ({started:.1f} s) not counted; CPU s is the driver's only",
        )
    assert summary.statuses == {"ok": len(urls)}, summary
    return result


def run_loop(server: BenchServer, urls: list[str], work: Path) -> Result:
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs

    def loop() -> None:
        for i, url in enumerate(urls):
            write_rfs(generate_rfs(url, progress=False), work / "loop" / f"{i}.shadowzarr")

    return measured(server, "loop over generate_rfs + write_rfs", len(urls), loop)[0]


def run_kerchunk(server: BenchServer, urls: list[str], work: Path) -> Result:
    import fsspec
    from kerchunk.hdf import SingleHdf5ToZarr

    def loop() -> None:
        (work / "kerchunk").mkdir(exist_ok=True)
        for i, url in enumerate(urls):
            with fsspec.open(url, "rb") as stream, warnings.catch_warnings():
                # it warns, with a traceback, on each scalar string dataset it inlines
                warnings.simplefilter("ignore")
                refs = SingleHdf5ToZarr(stream, url=url).translate()
            (work / "kerchunk" / f"{i}.json").write_text(json.dumps(refs))

    return measured(server, "loop over kerchunk SingleHdf5ToZarr", len(urls), loop)[0]


def run_lindi(server: BenchServer, urls: list[str], build: bool) -> Result:
    python = peer_python("lindi", build=build)
    if isinstance(python, str):
        return Result("loop over lindi (own environment)", note=f"not run: {python}")
    with VenvPeer(python) as peer:

        def loop() -> None:
            for url in urls:
                answer = peer.call(op="generate", how="lindi", url=url)
                assert answer["chunk_refs"] > 0, answer

        return measured(
            server,
            "loop over lindi (own environment)",
            len(urls),
            loop,
            "CPU s is this process's only: lindi computes in its own",
        )[0]


def projection(loop: Result, pool: Result) -> dict[str, Any]:
    """Hours for `PROJECTED_ASSETS` on 1, 8 and 64 workers. One worker (a process on one core)
    keeps `THREADS_PER_WORKER` jobs in flight, so it finishes min(threads / t, 1 / c) assets a
    second, t being an asset's wall time alone (the plain loop's) and c its CPU time (the
    pool's per asset, its worker processes' included); workers scale it linearly while
    the servers keep their latency (DANDI's S3 does; the API's listing adds one page of 200
    assets per request)."""
    assert loop.seconds is not None
    assert pool.cpu_seconds_per_asset is not None
    wall = loop.seconds / loop.assets
    cpu = max(pool.cpu_seconds_per_asset, 1e-6)
    per_worker = min(THREADS_PER_WORKER / wall, 1 / cpu)
    hours = {str(w): PROJECTED_ASSETS / (w * per_worker) / 3600 for w in PROJECTED_WORKERS}
    return {
        "assets": PROJECTED_ASSETS,
        "wall_seconds_per_asset": wall,
        "cpu_seconds_per_asset": cpu,
        "assets_per_second_per_worker": per_worker,
        "hours": hours,
    }


def _duration(hours: float) -> str:
    return f"{hours:.1f} h" if hours >= 1 else f"{hours * 60:.1f} min"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=int, default=120, help="assets in the archive")
    parser.add_argument("--loop-assets", type=int, default=40, help="assets the loops time")
    parser.add_argument("--templates", type=int, default=4)
    parser.add_argument("--file-mb", type=float, default=12.0, help="size of each template")
    parser.add_argument("--latency", type=float, default=0.020, help="seconds per request")
    parser.add_argument("--cluster-workers", type=int, default=2)
    parser.add_argument("--skip", default="", help="comma list: cluster,kerchunk,lindi")
    parser.add_argument("--build-venvs", action="store_true", help="build lindi's environment")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the smoke test)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    if args.quick:
        args.assets, args.loop_assets, args.templates, args.file_mb = 6, 6, 2, 0.5
        args.latency = 0.005
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    work = Path(tempfile.mkdtemp(prefix="shadowzarr-bench-catalog-"))
    try:
        names = build_archive(work / "www", args.assets, args.templates, args.file_mb)
        print(
            f"catalog benchmark: {len(names)} assets ({args.templates} templates of "
            f"{args.file_mb:g} MB), single-range server at {args.latency * 1000:.0f} ms",
            flush=True,
        )
        with BenchServer(work / "www", latency=args.latency, bandwidth=None, kind="s3") as server:
            urls = [server.url(name) for name in names]
            looped = urls[: args.loop_assets]
            pool, catalog_requests = run_pool(server, urls, work)
            results = [pool]
            if "cluster" not in skip:
                results.append(run_cluster(server, urls, work, args.cluster_workers))
            loop = run_loop(server, looped, work)
            results.append(loop)
            if "kerchunk" not in skip:
                results.append(run_kerchunk(server, looped, work))
            if "lindi" not in skip:
                results.append(run_lindi(server, looped, args.build_venvs))
        for result in results:
            if result.seconds is None:
                print(f"  {result.method:<44} {result.note}")
        speedup = (pool.assets_per_minute or 0) / (loop.assets_per_minute or 1)
        assert loop.requests_per_asset is not None
        assert pool.requests_per_asset is not None
        projected = projection(loop, pool)
        print(
            f"\ntarget: default pool >= 5x the plain loop: {speedup:.1f}x "
            f"({'met' if speedup >= 5 else 'NOT met'})\n"
            f"target: catalog requests per asset <= generate_rfs's: "
            f"{pool.requests_per_asset:.2f} (at the server; the catalog's own count "
            f"{catalog_requests:.2f}) vs {loop.requests_per_asset:.2f} "
            f"({'met' if pool.requests_per_asset <= loop.requests_per_asset + 1e-9 else 'NOT met'})"
        )
        print(
            f"projected for {PROJECTED_ASSETS:,} assets "
            f"({projected['wall_seconds_per_asset']:.2f} s wall, "
            f"{projected['cpu_seconds_per_asset']:.3f} s CPU per asset; "
            f"{THREADS_PER_WORKER} jobs per worker): "
            + ", ".join(f"{w} workers {_duration(h)}" for w, h in projected["hours"].items())
        )
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "assets": len(names),
                        "latency_s": args.latency,
                        "file_mb": args.file_mb,
                        "results": [asdict(r) for r in results],
                        "speedup_pool_over_loop": speedup,
                        "catalog_requests_per_asset": catalog_requests,
                        "loop_requests_per_asset": loop.requests_per_asset,
                        "projection": projected,
                    },
                    indent=1,
                )
                + "\n"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
