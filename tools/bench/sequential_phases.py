"""Where the time of the sequential read goes (issue 25): the phases of each read, median of runs.

reads.py says how long the sequential read of the 4 KiB-chunk recording takes; this says when,
inside one read, the first and last range requests leave, the first and last data arrive, the
last pack is rearranged, the last shard is decoded by zarr and the read returns, how long zarr's
copies into the result took, and how much CPU the process spent (all threads), beside the CPU a
plain-ranges read of the file costs it and the time to fill a fresh array of the file's size. It
wraps a few of the store's and zarr's internal functions to take the times, so it is a
diagnostic, not a benchmark: the wrappers cost microseconds per call.
Same server and file as reads.py (the single-range server, 20 ms per request, zarr's defaults).

    uv run python tools/bench/sequential_phases.py            # 20 s x 64 channels, 15 runs
    uv run python tools/bench/sequential_phases.py --quick    # 3 s, 3 runs (the smoke test)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
import reads
from first_touch import fresh_fill
from reading import plain_ranges
from server import BenchServer

PHASES = (
    ("first request", "ranges", min),
    ("last request", "ranges", max),
    ("first data", "answered", min),
    ("last data", "answered", max),
    ("last pack", "packed", max),
    ("last shard decoded", "decoded", max),
    ("done", "done", max),
)
"""(column, event, which of its times). ``ranges`` is logged when the store starts reading a
pack's stored chunks, ``answered`` when they are in; the others when their function returns."""

COPIES = "result copies"
"""Milliseconds spent in zarr's copies of decoded shards into the read's result, summed: a copy
and the first touch of the result's fresh memory, which on a VM that hands freed memory back to
its host (free page reporting) can cost many times the copy itself."""


class Timeline:
    """Milliseconds since the read started, per event, and in zarr's copies into the result."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.events: list[tuple[str, float]] = []
        self.copies = 0.0

    def reset(self) -> None:
        self.start, self.events, self.copies = time.perf_counter(), [], 0.0

    def note(self, event: str) -> None:
        self.events.append((event, (time.perf_counter() - self.start) * 1000))

    def phases(self) -> dict[str, float | None]:
        found: dict[str, float | None] = {}
        for column, event, pick in PHASES:
            times = [t for name, t in self.events if name == event]
            found[column] = pick(times) if times else None
        found[COPIES] = self.copies
        return found


def instrument(timeline: Timeline) -> None:
    """Log the events of `PHASES` (patches module attributes of this process only)."""
    import shadowzarr_store.views.shard_reader as shard_reader
    from shadowzarr_store.views.grouped import GroupLayout
    from shadowzarr_store.views.slab_shards import SlabShardingCodec
    from zarr.codecs.sharding import ShardingCodec
    from zarr.core.buffer.cpu import NDBuffer

    runs = shard_reader.read_runs

    async def read_runs(*args: Any, **kwargs: Any) -> Any:
        timeline.note("ranges")
        found = await runs(*args, **kwargs)
        timeline.note("answered")
        return found

    shard_reader.read_runs = read_runs  # type: ignore[assignment]
    GroupLayout.pack_rows = _after(GroupLayout.pack_rows, timeline, "packed")  # type: ignore[method-assign]
    for codec in (ShardingCodec, SlabShardingCodec):  # the views' shards of slabs: ours
        codec._decode_partial_single = _decoded(codec._decode_partial_single, timeline)  # type: ignore[method-assign]
    NDBuffer.__setitem__ = _timed_copy(NDBuffer.__setitem__, timeline)  # type: ignore[method-assign]


def _timed_copy(setitem: Callable[..., None], timeline: Timeline) -> Callable[..., None]:
    def copy(self: Any, key: Any, value: Any) -> None:
        started = time.perf_counter()
        setitem(self, key, value)
        timeline.copies += (time.perf_counter() - started) * 1000

    return copy


def _decoded(decode: Callable[..., Any], timeline: Timeline) -> Callable[..., Any]:
    async def decoded(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = await decode(self, *args, **kwargs)
        timeline.note("decoded")
        return found

    return decoded


def _after(function: Callable[..., Any], timeline: Timeline, event: str) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        found = function(*args, **kwargs)
        timeline.note(event)
        return found

    return wrapped


def run(
    server: BenchServer,
    refs: dict[str, Any],
    expected: np.ndarray,
    runs: int,
    order: tuple[str, ...] = ("remote", "local"),
    warm: bool = True,
) -> list[dict[str, Any]]:
    from shadowzarr_store import open_rfs

    timeline = Timeline()
    instrument(timeline)
    rows = []
    for where in order if warm else ():  # untimed: memory the reads reuse, as in reads.py
        open_rfs(refs[where], grouped_view="auto")[reads.RECORDING][:]
    for where in order:
        measured: list[dict[str, Any]] = []
        for _ in range(runs):
            server.reset()
            timeline.reset()
            cpu = time.process_time()
            values = open_rfs(refs[where], grouped_view="auto")[reads.RECORDING][:]
            timeline.note("done")
            phases = timeline.phases()
            counts = server.counts()
            measured.append(
                {
                    **phases,
                    "cpu": (time.process_time() - cpu) * 1000,
                    "requests": counts.requests,
                    "round_trips": counts.round_trips,
                    "equal": bool(np.array_equal(values, expected)),
                }
            )
        rows.append({"refs": where, "runs": measured, "median": _medians(measured)})
    return rows


def limit(refs: dict[str, Any], runs: int, warmup: int) -> tuple[float, float, list[float]]:
    """Median wall time and CPU (this process, all threads), in ms, of a plain-ranges read of
    the file, after ``warmup`` untimed ones: what the link gives, and what the limit itself
    costs the client beside our reads' ``cpu`` column (the gap between them is the store's and
    zarr's work on the bytes, not the network). Also, after each, the time to fill a fresh
    array of the file's size (`first_touch.fresh_fill`)."""
    for _ in range(warmup):
        plain_ranges(refs["url"], refs["size"])
    source = np.ones(refs["size"], dtype=np.uint8)
    wall, spent, fresh = [], [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        plain_ranges(refs["url"], refs["size"])
        wall.append((time.perf_counter() - started) * 1000)
        spent.append((time.process_time() - cpu) * 1000)
        fresh.append(fresh_fill(source))
    return statistics.median(wall), statistics.median(spent), fresh


def _medians(measured: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in [*(c for c, _, _ in PHASES), COPIES, "cpu"]:
        times = [m[column] for m in measured if m[column] is not None]
        out[column] = statistics.median(times) if times else None
    out["equal"] = all(m["equal"] for m in measured)
    return out


def print_table(rows: list[dict[str, Any]], limit: float, cpu: float, fresh: list[float]) -> None:
    columns = [*(c for c, _, _ in PHASES), COPIES, "cpu"]
    print(f"limit (plain concurrent ranges of the file): {limit:.1f} ms, cpu {cpu:.1f} ms, median")
    print(
        f"a fresh array of the file's size, filled: {statistics.median(fresh):.1f} ms median, "
        f"{min(fresh):.1f}-{max(fresh):.1f} ms"
    )
    print(f"{'refs':<8}" + "".join(f"{c:>20}" for c in columns) + "   equal")
    for row in rows:
        median = row["median"]
        cells = "".join(
            f"{'-' if median[c] is None else f'{median[c]:.1f} ms':>20}" for c in columns
        )
        print(f"{row['refs']:<8}{cells}   {median['equal']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s of recording, 3 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--latency", type=float, default=20.0, help="ms per request")
    parser.add_argument(
        "--order", default="remote,local", help="which references are read first (reads.py's)"
    )
    parser.add_argument(
        "--cold", action="store_true", help="no untimed read first (the first row pays)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write every run here")
    args = parser.parse_args(argv)
    sizes = reads.Sizes.quick() if args.quick else reads.Sizes()
    runs = args.runs or (3 if args.quick else 15)
    served = reads.served_recording(sizes, args.latency, "shadowzarr-phases-")
    with served as (server, refs, expected):
        warm = not args.cold
        warmup = reads.SEQUENTIAL_WARMUP if warm else 0
        limit_ms, cpu, fresh = limit(refs, runs, warmup)
        rows = run(server, refs, expected, runs, tuple(args.order.split(",")), warm)
    print_table(rows, limit_ms, cpu, fresh)
    if args.json is not None:
        document = {
            "limit_ms": limit_ms,
            "limit_cpu_ms": cpu,
            "fresh_array_ms": fresh,
            "runs": runs,
            "latency_ms": args.latency,
        }
        args.json.write_text(json.dumps({**document, "rows": rows}, indent=1))
    return 0 if all(row["median"]["equal"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
