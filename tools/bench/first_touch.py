"""What a fresh array costs on this machine: the time to fill a newly allocated array, against
the same copy into an array already touched, after a pause since the last one was freed.

Every reader that returns a file's values as a new numpy array (zarr's result, h5py's) writes
into memory it has just been given. On a bare machine the kernel's zeroing of those pages adds
a few milliseconds per 100 MB. On a VM that hands freed memory back to its host (Linux free
page reporting, as on this Firecracker VM), the pages must come back from the host first, and
that cost grows with the time since they were freed. The plain-ranges limit of reads.py reuses
its buffers and never pays it, so this is the part of a sequential read's gap to the limit that
no store can remove. Also printed: how much memory the kernel reported to the host meanwhile
(``/sys/module/page_reporting``), when this kernel says.

    uv run python tools/bench/first_touch.py           # 77 MB (the recording), 8 fills per pause
    uv run python tools/bench/first_touch.py --quick   # 8 MB, short pauses (the smoke test)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPORTED = Path("/sys/module/page_reporting/parameters/reported_kib")
"""KiB of free memory the guest kernel has reported to its host since boot (absent elsewhere)."""


def reported_kib() -> int | None:
    try:
        return int(REPORTED.read_text())
    except (OSError, ValueError):
        return None


def fresh_fill(source: np.ndarray) -> float:
    """Milliseconds to copy ``source`` into a newly allocated array: what any reader returning
    the file's values as one new array pays at least, beyond the bytes."""
    started = time.perf_counter()
    out = np.empty_like(source)
    out[...] = source
    return (time.perf_counter() - started) * 1000


def measure(nbytes: int, pause: float, fills: int) -> dict[str, Any]:
    """Per fill, after sleeping ``pause`` s: a new array filled, then a kept one refilled."""
    source = np.ones(nbytes, dtype=np.uint8)
    kept = np.zeros(nbytes, dtype=np.uint8)
    fresh, touched = [], []
    before = reported_kib()
    for _ in range(fills):
        time.sleep(pause)
        fresh.append(fresh_fill(source))
        started = time.perf_counter()
        kept[...] = source
        touched.append((time.perf_counter() - started) * 1000)
    after = reported_kib()
    return {
        "pause_s": pause,
        "fresh_ms": fresh,
        "touched_ms": touched,
        "reported_mib": None if before is None or after is None else (after - before) / 1024,
    }


def print_table(rows: list[dict[str, Any]], nbytes: int) -> None:
    print(f"filling {nbytes / 1e6:.0f} MB: a fresh array against one already touched (medians)")
    print(f"{'pause':>8}{'fresh':>12}{'fresh max':>12}{'touched':>12}{'reported to host':>20}")
    for row in rows:
        reported = "-" if row["reported_mib"] is None else f"{row['reported_mib']:.0f} MiB"
        print(
            f"{row['pause_s']:>7.1f}s"
            f"{statistics.median(row['fresh_ms']):>10.1f}ms"
            f"{max(row['fresh_ms']):>10.1f}ms"
            f"{statistics.median(row['touched_ms']):>10.1f}ms"
            f"{reported:>20}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 MB, pauses of 0 and 0.1 s")
    parser.add_argument("--mb", type=float, default=None, help="array size in MB")
    parser.add_argument("--fills", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every fill here")
    args = parser.parse_args(argv)
    nbytes = int((args.mb or (8 if args.quick else 77.7)) * 1e6)
    fills = args.fills or (3 if args.quick else 8)
    pauses = (0.0, 0.1) if args.quick else (0.0, 0.5, 3.0)
    rows = [measure(nbytes, pause, fills) for pause in pauses]
    print_table(rows, nbytes)
    if args.json is not None:
        args.json.write_text(json.dumps({"bytes": nbytes, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
