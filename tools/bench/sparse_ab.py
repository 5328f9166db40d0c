"""Small reads of the sparse files (issue 43), two source trees or settings side by side.

Each read runs in a fresh process (open, then read; all cold), variants alternating per round
on one single-range server at 20 ms: 1,000 random chunks of 16 B (``vindex``, as
`sparse_reads`), one value (``a[i]``) and three (``a[i:i+3]``) out of N chunks of 16 B.
Requests, round trips and bytes of the data file come from the server's counters, so they are
exact whatever the load; times are medians of ``--runs``, comparable only within one run.

    uv run python tools/bench/sparse_ab.py --sizes 1e4,1e5,1e6 --runs 3 \\
        --variant before='{"PYTHONPATH": "/path/to/old/packages/shadowzarr-store/src"}' \\
        --variant after='{}' \\
        --variant 'concurrency 100'='{"ZARR_ASYNC__CONCURRENCY": "100"}'
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from server import BenchServer
from sparse_reads import CHUNK, _picks, _write

CASES = ("1,000 random chunks", "a[i]", "a[i:i+3]")


def _child(url: str, n: int, case: str, run: int) -> None:
    """One cold read in this process: its time, CPU and whether the values are right."""
    from shadowzarr_store import open_rfs

    started, cpu = time.perf_counter(), time.process_time()
    array = open_rfs(url)["data"]
    i = (run * 7919 * CHUNK + 1) % (CHUNK * n - 3)
    if case == CASES[0]:
        picks = _picks(n, run)
        ok = np.array_equal(array.vindex[picks], picks)
    elif case == CASES[1]:
        ok = int(array[i]) == i
    else:
        ok = np.array_equal(array[i : i + 3], np.arange(i, i + 3))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "ok": bool(ok)}))


def _run(sizes: list[int], runs: int, variants: dict[str, dict[str, str]], keep: Path) -> list:
    rows: list[dict[str, Any]] = []
    for n in sizes:
        local = _write(keep, n)
        with BenchServer(keep, latency=0.02, bandwidth=None, kind="s3") as server:
            from shadowzarr_hdf5 import generate_rfs
            from shadowzarr_spec import write_rfs

            refs = keep / f"sparse-{n}-ab.shadowzarr"
            shutil.rmtree(refs, ignore_errors=True)
            write_rfs(generate_rfs(server.url(local.name), local_hdf5_path=local), refs)
            for case in CASES:
                found: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
                for run in range(1, runs + 1):
                    order = list(variants) if run % 2 else list(reversed(variants))
                    for name in order:
                        server.reset()
                        done = subprocess.run(
                            [
                                sys.executable,
                                __file__,
                                "--child",
                                server.url(refs.name),
                                str(n),
                                case,
                                str(run),
                            ],
                            env={**os.environ, **variants[name]},
                            capture_output=True,
                            text=True,
                            check=True,
                        )
                        one = json.loads(done.stdout.strip().splitlines()[-1])
                        one["data_file"] = server.file_counts(local.name)
                        found[name].append(one)
                for name, reads in found.items():
                    row = {
                        "case": f"{case} out of {n:,}",
                        "variant": name,
                        "seconds": statistics.median(r["seconds"] for r in reads),
                        "cpu": statistics.median(r["cpu"] for r in reads),
                        "correct": all(r["ok"] for r in reads),
                        "data_file": [r["data_file"] for r in reads],
                    }
                    rows.append(row)
                    counts = ", ".join(
                        f"{d['requests']}/{d['round_trips']}/{d['bytes']:,}"
                        for d in row["data_file"]
                    )
                    print(
                        f"{row['case']:38} {name:32} {row['seconds']:.3f} s  "
                        f"(requests/round trips/bytes: {counts})",
                        flush=True,
                    )
    return rows


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e4,1e5,1e6")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--variant", action="append", default=[], help="name=JSON object of environment variables"
    )
    parser.add_argument("--files", type=Path, help="folder to keep the files in")
    parser.add_argument("--json", type=Path, default=Path("sparse-ab.json"))
    args = parser.parse_args()
    variants = {v.split("=", 1)[0]: json.loads(v.split("=", 1)[1]) for v in args.variant}
    variants = variants or {"default": {}}
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="shadowzarr-sparse-ab-") as folder:
        rows = _run(sizes, args.runs, variants, args.files or Path(folder))
    args.json.write_text(
        json.dumps(
            {
                "command": "tools/bench/sparse_ab.py " + " ".join(sys.argv[1:]),
                "server": "single-range (s3), 20 ms/request, no bandwidth cap",
                "variants": variants,
                "runs": args.runs,
                "load_average_start": load_start,
                "load_average_end": os.getloadavg(),
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
