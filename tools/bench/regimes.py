"""Issue 43's table in one run: every regime beside every peer, with its target.

Drives the pieces that measure each regime (nothing is measured here that they do not):

1. ``reads.py``'s 20,000 rows x 1 and x 32 columns of the 1 KiB-chunk table, ours through the
   directory and through one version-1 JSON file, beside h5coro, h5py + remfile, h5py + fsspec
   (read-ahead and block cache), kerchunk + zarr and async-hdf5; target: each of our rows at
   most the fastest peer's time;
2. ``sparse_reads.py``'s 1,000 random 16 B chunks out of N (default 10^4 ... 10^7); target: the
   bytes fetched from the data file at most 4 x the touched stored bytes + 1 MiB at every N;
3. ``fresh_read.py``'s sequential read of the recording in fresh processes against plain
   concurrent ranges (also in fresh processes); target: the median first read at least 50% of
   the limit;

all on the single-range server (as S3) at ``--latency`` ms per request, zarr's defaults, no
bandwidth cap; and

4. ``bench.py``'s generation of the fragmented file (153,750 chunks) at each of
   ``--generation-latency`` (default 20, 50, 100 ms per request, as much again to open each
   connection: TCP and TLS set-up) on the single-range server at ``--generation-bandwidth``
   Mbit/s; target: ours at most 0.10 x the best peer's time at each latency.

A peer that cannot do a row is listed with the reason; a peer's wrong values are a result
(printed, marked in its row), ours fail the run. Requests, round trips and bytes come from
the server's own counters. One JSON in ``bench.py``'s format (a setting per network: the reads
at ``--latency`` and one per generation latency; ``targets`` and the fresh processes' runs
beside them) and the tables on stdout.

    uv run python tools/bench/regimes.py --json tools/bench/results/DATE-regimes.json
    uv run python tools/bench/regimes.py --quick    # small sizes, one run (the smoke test)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import files
import fresh_read
import generation
import reads
import sparse_reads
from context import Context
from measure import Row
from report import best_peer
from server import BenchServer
from venvs import peer_pythons

FRESH = "fresh process"
"""The workload of the fresh-process rows."""
JUDGED = ("shadowzarr open_rfs, refs remote", reads.JSON_READER)
"""Our rows of the 20k-rows cases that the target judges: the directory and the JSON form, both
remote (the others are shown beside them)."""
GENERATION_RATIO = 0.10
FRESH_SHARE = 0.5


def _reads_rows(
    sizes: reads.Sizes, latency: float, runs: int, skip: tuple[str, ...], build: bool
) -> list[dict[str, Any]]:
    """The 20k-rows cases of reads.py, every reader (ours through the JSON form too)."""
    with tempfile.TemporaryDirectory(prefix="shadowzarr-regimes-") as folder:
        www, scratch = Path(folder) / "www", Path(folder) / "scratch"
        www.mkdir()
        scratch.mkdir()
        reads.write_files(www, sizes)
        with BenchServer(www, latency=latency / 1000, bandwidth=None, kind="s3") as server:
            refs = reads.write_references(www, server)
            return reads.run(server, refs, sizes, runs, skip, scratch, build, reads.JSON_CASES)


def _fresh_rows(sizes: reads.Sizes, latency: float, runs: int) -> tuple[list[dict], dict]:
    """fresh_read.py's medians as rows: the limit, then our first (fresh) and warm reads."""
    document = fresh_read.run(sizes, latency, runs, {"default": "{}"})
    case = (
        f"sequential read of {sizes.recording_seconds} s x {sizes.recording_channels} channels, "
        f"4 KiB chunks, in fresh processes (median of {runs})"
    )
    limit, ours = document["limit"], document["variants"]["default"]
    rows = []
    for reader, side, key, own in (
        ("limit: plain concurrent range requests, fresh process", "limit", "first", False),
        ("shadowzarr open_rfs, refs remote: first read, fresh process", "default", "first", True),
        ("shadowzarr open_rfs, refs remote: warm read, same process", "default", "warm", True),
    ):
        summary = limit if side == "limit" else ours
        measured = document["measured"][side]
        counts = measured[0]["server"]  # both reads of the first run: halve for one
        row = Row(FRESH, case, reader, ours=own)
        row.seconds = summary[key]
        row.runs = [r[key] for r in measured]
        row.requests = counts["requests"] // 2
        row.round_trips = counts["round_trips"] // 2
        row.bytes = counts["bytes"] // 2
        row.equal = summary["equal"]
        row.note = f"{document['file_bytes'] / summary[key] / 1e6:.0f} MB/s"
        found = row.to_json()
        if own:
            found["share_of_limit"] = share = summary[f"{key}_share_of_limit"]
            found["note"] += f", {share * 100:.0f}% of the limit (median of the runs' shares)"
        rows.append(found)
    return rows, document


def _generation_settings(
    latencies: list[float],
    bandwidth_mbit: float,
    runs: int,
    skip: tuple[str, ...],
    pythons: dict[str, Path | str],
    quick: bool,
) -> list[dict[str, Any]]:
    """bench.py's workload 1 on the fragmented file at each latency (connection set-up as much
    as a request), one setting each."""
    sizes = files.Sizes.quick() if quick else files.Sizes()
    settings = []
    with tempfile.TemporaryDirectory(prefix="shadowzarr-regimes-gen-") as folder:
        www, work = Path(folder) / "www", Path(folder) / "work"
        www.mkdir()
        work.mkdir()
        fragmented = www / "fragmented.h5"
        files.write_fragmented(fragmented, sizes)
        for latency in latencies:
            label = (
                f"single-range server (as S3), {latency:g} ms/request, {latency:g} ms/connection, "
                + (f"{bandwidth_mbit:g} Mbit/s" if bandwidth_mbit else "no cap")
            )
            print(f"\n== generation: {label}", flush=True)
            started = time.perf_counter()
            with BenchServer(
                www,
                latency=latency / 1000,
                bandwidth=bandwidth_mbit * 1e6 / 8 if bandwidth_mbit else None,
                kind="s3",
                connect_latency=latency / 1000,
            ) as server:
                ctx = Context(server, sizes, www, work, runs, pythons, skip)
                rows = generation.run(ctx, {"fragmented": fragmented})
            settings.append(
                {
                    "network": label,
                    "server": "s3",
                    "latency_ms": latency,
                    "connect_latency_ms": latency,
                    "bandwidth_mbit": bandwidth_mbit or None,
                    "seconds": time.perf_counter() - started,
                    "rows": [row.to_json() for row in rows],
                }
            )
    return settings


def _as_row(found: dict[str, Any]) -> Row:
    fields = {k: v for k, v in found.items() if k in Row.__slots__}
    return Row(**fields)


def targets(settings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 43's targets, each met (True), not (False) or not judged (None), with the numbers."""
    found: list[dict[str, Any]] = []

    def add(target: str, met: bool | None, detail: str) -> None:
        found.append({"target": target, "met": met, "detail": detail})

    for setting in settings:
        rows = [_as_row(r) for r in setting["rows"]]
        raw = setting["rows"]
        for row, data in zip(rows, raw, strict=True):
            if not row.ours or row.not_run is not None:
                continue
            if reads.JSON_CASES in row.case:
                if row.reader not in JUDGED:
                    continue
                best = best_peer(rows, row)
                if best is None:
                    add(f"{row.case}, {row.reader} ≤ fastest peer", None, "no peer ran")
                else:
                    add(
                        f"{row.case}, {row.reader} ≤ fastest peer",
                        row.seconds <= best.seconds,
                        f"{row.seconds:.3f} s vs {best.reader} {best.seconds:.3f} s",
                    )
            elif row.case.startswith(sparse_reads.CASE) and "data_file" in data:
                used = data["data_file"]["bytes"]
                add(
                    f"{row.case}, {row.reader}: data bytes ≤ 4 x touched + 1 MiB",
                    used <= sparse_reads.BOUND,
                    f"{used:,} bytes vs {sparse_reads.BOUND:,}",
                )
            elif row.workload == FRESH and "first read" in row.reader:
                limit = [r for r in rows if r.case == row.case and r.reader.startswith("limit")]
                share = data["share_of_limit"]
                add(
                    "sequential read in fresh processes: median ≥ 50% of plain concurrent ranges",
                    share >= FRESH_SHARE,
                    f"{share * 100:.0f}% (median of the runs' shares; median times "
                    f"{row.seconds:.3f} s, the limit's {limit[0].seconds:.3f} s)",
                )
            elif row.workload == generation.WORKLOAD:
                best = best_peer(rows, row)
                name = (
                    f"generation of the fragmented file ≤ {GENERATION_RATIO:.2f} x the best "
                    f"peer ({setting['network']})"
                )
                if best is None or not best.seconds:
                    add(name, None, "no peer ran")
                    continue
                ratio = row.seconds / best.seconds
                add(
                    name,
                    ratio <= GENERATION_RATIO,
                    f"{ratio:.2f}x ({row.seconds:.2f} s, {row.requests} requests, "
                    f"{row.round_trips} round trips vs {best.reader} {best.seconds:.2f} s)",
                )
    return found


def print_targets(found: list[dict[str, Any]]) -> None:
    print("\nissue 43's targets\n")
    for target in found:
        verdict = {True: "MET", False: "NOT MET", None: "n/a"}[target["met"]]
        print(f"- {verdict}: {target['target']} — {target['detail']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run per row")
    parser.add_argument("--runs", type=int, default=None, help="runs per row (default 3)")
    parser.add_argument("--latency", type=float, default=20.0, help="ms per request (reads)")
    parser.add_argument(
        "--sparse-n",
        default=None,
        help="numbers of chunks of the sparse reads (default 1e4,1e5,1e6,1e7; --quick 1e4,1e5)",
    )
    parser.add_argument(
        "--sparse-files",
        type=Path,
        default=None,
        help="keep the sparse reads' files in this folder, reused when there",
    )
    parser.add_argument(
        "--generation-latency", default="20,50,100", help="ms per request, comma list"
    )
    parser.add_argument(
        "--generation-bandwidth", type=float, default=200.0, help="Mbit/s (0: no cap)"
    )
    parser.add_argument(
        "--generation-connections",
        type=int,
        default=None,
        help="requests in flight while our generator reads an index level (default: "
        "generate_rfs's, shadowzarr_hdf5.generate.GENERATION_CONNECTIONS)",
    )
    parser.add_argument(
        "--fresh-runs", type=int, default=None, help="fresh-process runs (default 7; --quick 2)"
    )
    parser.add_argument(
        "--parts",
        default="rows,sparse,fresh,generation",
        help="which regimes to run (comma list of rows, sparse, fresh, generation)",
    )
    parser.add_argument("--skip", default="", help="readers to leave out (comma substrings)")
    parser.add_argument("--build-venvs", action="store_true", help="build the peers' venvs")
    parser.add_argument("--json", type=Path, default=Path("regimes-results.json"))
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    skip = tuple(w.strip() for w in args.skip.split(",") if w.strip())
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    unknown = parts - {"rows", "sparse", "fresh", "generation"}
    if unknown:
        parser.error(f"unknown --parts {sorted(unknown)}")
    sizes = reads.Sizes.quick() if args.quick else reads.Sizes()
    sparse = [
        int(float(n))
        for n in (args.sparse_n or ("1e4,1e5" if args.quick else "1e4,1e5,1e6,1e7")).split(",")
        if n.strip()
    ]
    pythons = peer_pythons(build=args.build_venvs)
    load = os.getloadavg()
    started = time.perf_counter()
    reads_label = f"single-range (s3), {args.latency:g} ms/request, no bandwidth cap"
    rows: list[dict[str, Any]] = []
    fresh_document = None
    if "rows" in parts:
        print("== 20k rows, directory and JSON forms", flush=True)
        rows += _reads_rows(sizes, args.latency, runs, skip, args.build_venvs)
    if "sparse" in parts:
        print("== sparse reads", flush=True)
        rows += sparse_reads.run(
            sparse, args.latency, runs=runs, skip=skip, keep=args.sparse_files, pythons=pythons
        )
    if "fresh" in parts:
        print("== sequential read in fresh processes", flush=True)
        fresh_rows, fresh_document = _fresh_rows(
            sizes, args.latency, args.fresh_runs or (2 if args.quick else 7)
        )
        rows += fresh_rows
    settings: list[dict[str, Any]] = []
    if rows:
        settings.append(
            {
                "network": reads_label,
                "server": "s3",
                "latency_ms": args.latency,
                "connect_latency_ms": 0,
                "bandwidth_mbit": None,
                "rows": rows,
            }
        )
    if args.generation_connections is not None:
        import shadowzarr_hdf5.generate

        shadowzarr_hdf5.generate.GENERATION_CONNECTIONS = args.generation_connections
    if "generation" in parts:
        latencies = [float(ms) for ms in args.generation_latency.split(",") if ms.strip()]
        settings += _generation_settings(
            latencies, args.generation_bandwidth, runs, skip, pythons, args.quick
        )
    found = targets(settings)
    for setting in settings:
        print(f"\n### {setting['network']}")
        reads.print_table(setting["rows"])
    print_targets(found)
    document = {
        "command": " ".join(
            ["tools/bench/regimes.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "zarr_config": "defaults (async.concurrency 10)",
        "store_options": reads.STORE_OPTIONS,
        "quick": args.quick,
        "runs": runs,
        "sizes": {k: getattr(sizes, k) for k in sizes.__slots__},
        "load_average_start": load,
        "load_average_end": os.getloadavg(),
        "seconds": time.perf_counter() - started,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "settings": settings,
        "targets": found,
        "fresh_read": fresh_document,
        "generation_connections": args.generation_connections,
    }
    args.json.write_text(json.dumps(document, indent=1))
    print(f"\nwritten to {args.json}")
    wrong = [r for s in settings for r in s["rows"] if r["equal"] is False]
    for row in wrong:
        whose = "ours" if row["ours"] else "a peer's"
        print(f"WRONG VALUES ({whose}): {row['case']} / {row['reader']}", file=sys.stderr)
    return 1 if any(row["ours"] for row in wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
