"""shadowzarr against the tools people use today, side by side on the same generated files,
behind a latency proxy (default 20 ms per request, 200 Mbit/s shared; also uncapped), on a
server that answers one range per request as S3 does and on nginx (multi-range answers).

    uv run python tools/bench/bench.py            # full sizes; both servers, 200 Mbit/s, uncapped
    uv run python tools/bench/bench.py --quick    # tiny sizes (the smoke test)
    uv run python tools/bench/bench.py --workloads 2,4 --bandwidths 200 --servers s3

Prints one table per network setting and writes every row to ``--json``. See README.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import generation
import opening
import reading
from context import Context
from files import Sizes
from measure import Row
from report import print_table, targets
from server import SERVER_KINDS, BenchServer
from venvs import peer_pythons

WORKLOADS = ("1", "2", "3", "4", "5")
SERVER_LABELS = {"s3": "single-range server (as S3)", "nginx": "nginx (multi-range)"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run each")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list of 1-5")
    parser.add_argument(
        "--latency",
        default="20",
        help="ms per request, comma list (each a network setting of its own, e.g. 20,50,100)",
    )
    parser.add_argument(
        "--connect-latency",
        default="0",
        help="ms more on the first request of each connection (TCP and TLS set-up), or "
        "'latency' for as much as a request's",
    )
    parser.add_argument(
        "--bandwidths", default="200,0", help="Mbit/s caps to run under, comma list (0: none)"
    )
    parser.add_argument(
        "--servers",
        default=",".join(SERVER_KINDS),
        help="how range requests are answered, comma list: s3 (one range per request, as S3 "
        "and DANDI's bucket), nginx (multi-range requests answered with their parts)",
    )
    parser.add_argument("--runs", type=int, default=None, help="runs per row (median)")
    parser.add_argument("--sequential-gb", type=float, default=None, help="workload 5 size")
    parser.add_argument("--grid-chunks", type=int, default=None, help="workload 2 chunks")
    parser.add_argument("--fragmented-chunks", type=int, default=None, help="workload 1 chunks")
    parser.add_argument("--json", type=Path, default=Path("bench-results.json"))
    parser.add_argument("--skip", default="", help="readers to leave out (comma substrings)")
    parser.add_argument(
        "--plots",
        action="store_true",
        help="also draw one PNG per workload beside the JSON (plots.py; needs matplotlib)",
    )
    parser.add_argument(
        "--build-venvs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="build the peer environment (lindi, remfile) when missing (default: not in --quick)",
    )
    args = parser.parse_args(argv)
    sizes = Sizes.quick() if args.quick else Sizes()
    overrides = {}
    if args.sequential_gb is not None:
        overrides["recording_bytes"] = int(args.sequential_gb * 1e9)
    if args.grid_chunks is not None:
        overrides["grid_chunks"] = args.grid_chunks
    if args.fragmented_chunks is not None:
        overrides["fragmented_chunks"] = args.fragmented_chunks
    if overrides:
        from dataclasses import replace

        sizes = replace(sizes, **overrides)
    runs = args.runs or (1 if args.quick else 3)
    build = (not args.quick) if args.build_venvs is None else args.build_venvs
    pythons = peer_pythons(build=build)
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    skip = tuple(word.strip() for word in args.skip.split(",") if word.strip())
    kinds = [kind.strip() for kind in args.servers.split(",") if kind.strip()]
    unknown = sorted(set(kinds) - set(SERVER_KINDS))
    if unknown or not kinds:
        parser.error(f"--servers takes {', '.join(SERVER_KINDS)}; got {args.servers!r}")
    latencies = [float(ms) for ms in args.latency.split(",") if ms.strip()]
    networks = [
        (kind, float(mbit), ms)
        for ms in latencies
        for kind in kinds
        for mbit in args.bandwidths.split(",")
        if mbit.strip()
    ]
    settings = []
    all_rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="shadowzarr-bench-") as folder:
        www, work = Path(folder) / "www", Path(folder) / "work"
        www.mkdir()
        work.mkdir()
        inputs = _prepare(chosen, www, work, sizes)
        for kind, mbit, latency in networks:
            bandwidth = mbit * 1e6 / 8 if mbit else None
            connect = latency if args.connect_latency == "latency" else float(args.connect_latency)
            label = (
                f"{SERVER_LABELS[kind]}, {latency:g} ms/request, "
                + (f"{connect:g} ms/connection, " if connect else "")
                + (f"{mbit:g} Mbit/s" if mbit else "no cap")
            )
            print(f"\n== {label}", flush=True)
            started = time.perf_counter()
            with BenchServer(
                www,
                latency=latency / 1000,
                bandwidth=bandwidth,
                kind=kind,
                connect_latency=connect / 1000,
            ) as server:
                ctx = Context(server, sizes, www, work, runs, pythons, skip)
                rows = _run(chosen, ctx, inputs)
            for row in rows:
                row.note = (row.note + " " if row.note else "") + f"[{label}]"
            print_table(label, rows, ctx)
            met = targets(rows, ctx)
            settings.append(
                {
                    "network": label,
                    "server": kind,
                    "latency_ms": latency,
                    "connect_latency_ms": connect,
                    "bandwidth_mbit": mbit or None,
                    "seconds": time.perf_counter() - started,
                    "targets": met,
                    "rows": [row.to_json() for row in rows],
                }
            )
            all_rows.extend(rows)
            _write_json(args, argv, runs, sizes, settings)
    print(f"\nresults written to {args.json}")
    if args.plots:
        from plots import plot_results

        for picture in plot_results(args.json):
            print(f"plot written to {picture}")
    wrong = [r for r in all_rows if r.equal is False]
    for row in wrong:
        print(f"WRONG VALUES: {row.workload} / {row.case} / {row.reader}", file=sys.stderr)
    return 1 if wrong else 0


def _write_json(
    args: argparse.Namespace,
    argv: list[str] | None,
    runs: int,
    sizes: Sizes,
    settings: list[dict[str, object]],
) -> None:
    """Written after each network setting, so a long run that is stopped keeps what it did."""
    document = {
        "command": " ".join(
            ["tools/bench/bench.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "quick": args.quick,
        "runs": runs,
        "sizes": {k: getattr(sizes, k) for k in sizes.__slots__},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "settings": settings,
    }
    args.json.write_text(json.dumps(document, indent=1))


def _prepare(chosen: list[str], www: Path, work: Path, sizes: Sizes) -> dict[str, object]:
    inputs: dict[str, object] = {}
    print("preparing files", flush=True)
    if "1" in chosen:
        inputs["1"] = generation.prepare_files(www, sizes)
    if "2" in chosen:
        inputs["2"] = opening.prepare_files(www, sizes)
    if {"3", "5"} & set(chosen):
        inputs["3"] = reading.prepare_recording(www, sizes)
    if "3" in chosen:
        inputs["3c"] = reading.prepare_contiguous(www, sizes)
    if "4" in chosen:
        inputs["4"] = reading.prepare_small(www, sizes)
    return inputs


def _run(chosen: list[str], ctx: Context, inputs: dict[str, object]) -> list[Row]:
    rows: list[Row] = []
    steps = {
        "1": lambda: generation.run(ctx, inputs["1"]),
        "2": lambda: opening.run(ctx, inputs["2"]),
        "3": lambda: [
            *reading.run_one_second(ctx, inputs["3"]),
            *reading.run_partial(ctx, inputs["3c"]),
        ],
        "4": lambda: reading.run_small(ctx, inputs["4"]),
        "5": lambda: reading.run_sequential(ctx, inputs["3"]),
    }
    for workload in chosen:
        started = time.perf_counter()
        print(f"workload {workload}", flush=True)
        new = steps[workload]()
        for row in new:
            status = (row.not_run and f"not run: {row.not_run}") or f"{row.seconds:.3f} s"
            print(f"  {row.case} | {row.reader}: {status}", flush=True)
        rows.extend(new)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
