"""A fresh process's first read against a warm one's (issue 43): the sequential read of the
4 KiB-chunk recording (reads.py's) in new interpreters, against plain concurrent ranges.

Each run starts a new Python that imports the store (timed apart: the import), opens the
references and reads the whole recording (the first read: what a script or a notebook's first
cell pays), then opens again and reads again in the same process (the warm read). The limit
(plain concurrent range requests of the file, 8 MiB, 16 in flight) runs in fresh processes
too, after its own import of aiohttp, so both sides pay the same process start. Medians over
runs, the share of the limit per run, and every run's values checked against the source.

Each read also counts the minor page faults its own threads took (all but the page helper's,
`shadowzarr_store.transport.prefault`): fresh pages zeroed on the read's path, a count that a
loaded machine does not blur as it blurs times.

``--variant name=json`` runs the child with `RfsStore` options, and environment variables
under the key ``env`` (``'off={"env": {"SHADOWZARR_PREFAULT": "0"}}'``: the page helper off);
several variants alternate run by run, so a loaded machine loads them alike. ``--profile DIR``
writes one cProfile of the first read and one of the warm read per variant; ``--importtime
DIR`` one ``python -X importtime`` log per variant.

    uv run python tools/bench/fresh_read.py                 # 20 s x 64 channels, 7 runs
    uv run python tools/bench/fresh_read.py --quick         # 3 s, 2 runs (the smoke test)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import reads

CHILD = """
import json, resource, sys, threading, time
started = time.perf_counter()
from shadowzarr_store import open_rfs
imported = time.perf_counter() - started
remote, path, options, profile = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]

def helper_faults():
    # minor faults taken by the page helper thread (off the read's path), from /proc
    for thread in threading.enumerate():
        if thread.name == "shadowzarr-prefault" and thread.native_id is not None:
            stat = open(f"/proc/self/task/{thread.native_id}/stat").read()
            return int(stat[stat.rindex(")") + 2 :].split()[7])
    return 0

faults = []

def read():
    wall, cpu = time.perf_counter(), time.process_time()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - helper_faults()
    values = open_rfs(remote, **options)[path][:]
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - helper_faults() - before)
    return values, time.perf_counter() - wall, time.process_time() - cpu

def profiled(name):
    if not profile:
        return read()
    import cProfile
    with cProfile.Profile() as p:
        found = read()
    p.dump_stats(f"{profile}-{name}.prof")
    return found

first, first_s, first_cpu = profiled("first")
import numpy as np
t = np.arange(first.shape[0], dtype=np.int64)[:, None]
c = np.arange(first.shape[1], dtype=np.int64)[None, :]
expected = ((t * 2654435761 + c * 40503) % 65536 - 32768).astype("<i2")
equal = bool(np.array_equal(first, expected))
del first
warm, warm_s, warm_cpu = profiled("warm")
equal = equal and bool(np.array_equal(warm, expected))
print(json.dumps({"import": imported, "first": first_s, "first_cpu": first_cpu,
                  "warm": warm_s, "warm_cpu": warm_cpu, "first_faults": faults[0],
                  "warm_faults": faults[1], "equal": equal}))
"""
"""One fresh process: import, then open and read twice (``first`` and ``warm``), each with its
wall time, CPU (all threads) and minor page faults on every thread but the page helper's (the
faults the read's own threads took)."""

LIMIT = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
started = time.perf_counter()
import aiohttp
from reading import plain_ranges
imported = time.perf_counter() - started
url, size = sys.argv[1], int(sys.argv[2])
found = {"import": imported}
for name in ("first", "warm"):
    wall, cpu = time.perf_counter(), time.process_time()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    found[f"{name}_equal"] = plain_ranges(url, size) == size
    found[f"{name}_faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    found[name], found[f"{name}_cpu"] = time.perf_counter() - wall, time.process_time() - cpu
found["equal"] = found.pop("first_equal") and found.pop("warm_equal")
print(json.dumps(found))
"""

COLUMNS = ("import", "first", "first_cpu", "warm", "warm_cpu", "first_faults", "warm_faults")


def child(
    code: str, *args: str, importtime: Path | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", code, *args]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        raise RuntimeError(f"child failed: {done.stderr[-2000:]}")
    if importtime is not None:
        importtime.write_text(done.stderr)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def summary(runs: list[dict[str, Any]], limit: float | None, size: int) -> dict[str, Any]:
    out: dict[str, Any] = {c: statistics.median(r[c]) for c in COLUMNS for r in [_by(runs)]}
    out["first_over_warm"] = out["first"] / out["warm"]
    out["first_MBps"] = size / out["first"] / 1e6
    out["warm_MBps"] = size / out["warm"] / 1e6
    if limit:
        out["first_share_of_limit"] = statistics.median(limit / r["first"] for r in runs)
        out["warm_share_of_limit"] = statistics.median(limit / r["warm"] for r in runs)
    out["equal"] = all(r["equal"] for r in runs)
    return out


def _by(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    return {c: [r[c] for r in runs] for c in COLUMNS}


def _counted(server: Any, found: dict[str, Any]) -> dict[str, Any]:
    """A child's answer with the server's counts of its two reads (first and warm together):
    requests, round trips, bytes."""
    counts = server.counts()
    found["server"] = {
        "requests": counts.requests,
        "round_trips": counts.round_trips,
        "bytes": counts.bytes,
    }
    return found


def run(
    sizes: reads.Sizes,
    latency: float,
    runs: int,
    variants: dict[str, str],
    *,
    profile: Path | None = None,
    importtime: Path | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """``runs`` rounds, each the limit and then every variant (name: JSON of store options and
    ``env``) in fresh processes, on the recording of ``sizes`` served at ``latency`` ms per
    request: the document `print_table` shows (medians, shares of the limit, every run)."""
    for folder in (profile, importtime):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    measured: dict[str, list[dict[str, Any]]] = {"limit": [], **{name: [] for name in variants}}
    here = str(Path(__file__).parent)
    with reads.served_recording(sizes, latency, "shadowzarr-fresh-") as (server, refs, _):
        size = refs["size"]
        for i in range(runs):
            server.reset()
            measured["limit"].append(_counted(server, child(LIMIT, refs["url"], str(size), here)))
            for name, options in variants.items():
                server.reset()
                base = {"grouped_view": "auto", **json.loads(options)}
                env = base.pop("env", {})
                prof = str(profile / name) if profile and i == 0 else ""
                log = importtime / f"{name}.log" if importtime and i == 0 else None
                found = child(
                    CHILD,
                    refs["remote"],
                    reads.RECORDING,
                    json.dumps(base),
                    prof,
                    importtime=log,
                    env=env,
                )
                measured[name].append(_counted(server, found))
                print(
                    f"run {i} {name}: " + ", ".join(f"{c} {found[c]:.3f}" for c in COLUMNS),
                    flush=True,
                )
    limit = statistics.median(r["first"] for r in measured["limit"])
    return {
        "command": command or ["tools/bench/fresh_read.py"],
        "file_bytes": size,
        "latency_ms": latency,
        "runs": runs,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "limit": summary(measured["limit"], None, size),
        "variants": {name: summary(measured[name], limit, size) for name in variants},
        "measured": measured,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s of recording, 2 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--latency", type=float, default=20.0, help="ms per request")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="name=JSON of RfsStore options (repeatable; default: default={})",
    )
    parser.add_argument("--profile", type=Path, default=None, help="cProfile files here")
    parser.add_argument("--importtime", type=Path, default=None, help="-X importtime logs here")
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    args = parser.parse_args(argv)
    sizes = reads.Sizes.quick() if args.quick else reads.Sizes()
    runs = args.runs or (2 if args.quick else 7)
    variants = dict(v.split("=", 1) for v in args.variant) or {"default": "{}"}
    document = run(
        sizes,
        args.latency,
        runs,
        variants,
        profile=args.profile,
        importtime=args.importtime,
        command=["tools/bench/fresh_read.py", *(sys.argv[1:] if argv is None else argv)],
    )
    print_table(document)
    if args.json is not None:
        args.json.write_text(json.dumps(document, indent=1))
    return 0 if all(v["equal"] for v in document["variants"].values()) else 1


def print_table(document: dict[str, Any]) -> None:
    limit = document["limit"]
    print(
        f"limit (plain concurrent ranges, fresh processes): first {limit['first'] * 1000:.0f} ms"
        f" ({limit['first_MBps']:.0f} MB/s), warm {limit['warm'] * 1000:.0f} ms; medians of "
        f"{document['runs']} runs, load average {document['load_average'][0]:.1f}"
    )
    head = ("variant", "import", "first", "cpu", "faults", "warm", "cpu", "faults")
    print(
        f"{head[0]:<16}" + "".join(f"{h:>9}" for h in head[1:]) + "  first/warm  "
        "first MB/s  % limit  equal"
    )
    for name, v in document["variants"].items():
        cells = [
            v["import"],
            v["first"],
            v["first_cpu"],
            v["first_faults"],
            v["warm"],
            v["warm_cpu"],
            v["warm_faults"],
        ]
        shown = [
            f"{x * 1000:.0f}ms" if i not in (3, 6) else f"{x:.0f}" for i, x in enumerate(cells)
        ]
        print(
            f"{name:<16}"
            + "".join(f"{c:>9}" for c in shown)
            + f"{v['first_over_warm']:>12.2f}{v['first_MBps']:>12.0f}"
            + f"{v['first_share_of_limit'] * 100:>8.0f}%  {v['equal']}"
        )


if __name__ == "__main__":
    sys.exit(main())
