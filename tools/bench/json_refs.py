"""Version-1 JSON references (every chunk listed): open and write, shadowzarr against kerchunk.

For each size, one array of that many chunks, each ``[url, offset, size]`` into one file, with
Zarr v3 keys (``data/c/<i>``). Columns:

- shadowzarr open: `shadowzarr_store.open_rfs` of the JSON file, then the array (parse,
  validate, build the store, zarr opens the group and the array);
- kerchunk open: `json.load` of the same file, fsspec's ``ReferenceFileSystem`` over the dict,
  then zarr opens the group and the array through `FsspecStore` (what a kerchunk user runs);
- shadowzarr write: `shadowzarr_spec.write_rfs` of the built references to ``.json``;
- kerchunk write: `json.dump` of the refs dict a kerchunk generator holds (a dict of lists).

Every open runs in a fresh child process, so its memory is its own: peak (the kernel's
high-water mark of the resident set, reset when the open starts, minus the size at that moment)
and held (the resident set once open, after a garbage collection, minus that size).
``--baseline DIR`` also opens our file with the packages of another checkout (``git worktree
add DIR <commit>``: its ``packages/*/src`` go first on the child's path), in the same run, so a
change is measured against what it changes on the same loaded machine; ``--json FILE`` writes
the rows. Run with ``uv run python tools/bench/json_refs.py [--refs 100000,1000000] [--runs 3]``;
the lead's read benchmark calls `run` and prints `table`.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JsonRow", "main", "run", "table"]

SOURCE = "https://example.org/data/recording.bin"
CHUNK_BYTES = 4096


@dataclass(slots=True)
class JsonRow:
    """Median seconds (and the first run's peak MB) of each way at one number of refs."""

    refs: int
    ours_open_s: float
    ours_open_mb: float
    ours_kept_mb: float
    kerchunk_open_s: float
    kerchunk_open_mb: float
    kerchunk_kept_mb: float
    ours_write_s: float
    kerchunk_write_s: float
    file_mb: float
    baseline_open_s: float | None = None
    baseline_open_mb: float | None = None
    baseline_kept_mb: float | None = None


def _builder_rfs(n: int) -> Any:
    import numpy as np
    from shadowzarr_spec import RfsBuilder

    builder = RfsBuilder()
    builder.add_array("data", shape=(n * 1024,), data_type="<f4", chunk_shape=(1024,))
    # Shuffled offsets, so no gen entry can describe them and every chunk is listed.
    order = np.random.default_rng(0).permutation(n).astype(np.uint64)
    builder.add_chunks(
        "data",
        np.arange(n).reshape(-1, 1),
        SOURCE,
        order * CHUNK_BYTES,
        np.full(n, CHUNK_BYTES, dtype=np.uint64),
    )
    return builder.build()


def _kerchunk_refs(rfs: Any) -> dict[str, Any]:
    """The refs dict a kerchunk generator would hold for the same references."""
    from shadowzarr_spec import rfs_to_json

    document = rfs_to_json(rfs, expand=True)
    templates = document.get("templates", {})
    refs = {}
    for key, value in document["refs"].items():
        if isinstance(value, list):
            url = value[0]
            for name, full in templates.items():
                url = url.replace("{{" + name + "}}", full)
            value = [url, *value[1:]]
        refs[key] = value
    return {"version": 1, "refs": refs}


def _write_times(n: int, folder: Path, runs: int) -> tuple[Path, float, float]:
    from shadowzarr_spec import write_rfs

    rfs = _builder_rfs(n)
    ours_path = folder / f"ours-{n}.json"
    ours = []
    for _ in range(runs):
        start = time.perf_counter()
        write_rfs(rfs, ours_path)
        ours.append(time.perf_counter() - start)
    kerchunk = _kerchunk_refs(rfs)
    del rfs
    theirs = []
    for _ in range(runs):
        start = time.perf_counter()
        with open(folder / f"kerchunk-{n}.json", "w") as stream:
            json.dump(kerchunk, stream)
        theirs.append(time.perf_counter() - start)
    return ours_path, statistics.median(ours), statistics.median(theirs)


def _open_in_child(
    how: str, path: Path, n: int, packages: Path | None = None
) -> tuple[float, float, float]:
    """(seconds, peak MB, MB still held once open) of one open in a fresh process;
    ``packages``: a checkout's ``packages`` folder whose sources the child imports instead."""
    env = None
    if packages is not None:
        sources = [str(src) for src in sorted(packages.glob("*/src"))]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sources)}
    output = subprocess.run(
        [sys.executable, __file__, "--child", how, str(path), str(n)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    seconds, peak, kept = output.split()[-3:]
    return float(seconds), float(peak), float(kept)


def _child(how: str, path: str, n: int) -> None:
    """Open ``path`` one way and print seconds and peak MB (run in a fresh process)."""
    import zarr

    if how == "ours":
        from shadowzarr_store import open_rfs

        def opener() -> Any:
            return open_rfs(path, grouped_view="auto")["data"]
    else:
        import fsspec
        from zarr.storage import FsspecStore

        def opener() -> Any:
            with open(path) as stream:
                refs = json.load(stream)
            fs = fsspec.filesystem(
                "reference",
                fo=refs,
                remote_protocol="https",
                remote_options={"asynchronous": True},
                asynchronous=True,
            )
            store = FsspecStore(fs, read_only=True, path="")
            return zarr.open_group(store, mode="r", zarr_format=3)["data"]

    start_rss = _rss()
    _reset_high_water_mark()
    start = time.perf_counter()
    array = opener()
    seconds = time.perf_counter() - start
    peak = max(_high_water_mark(), _rss())
    assert array.shape == (n * 1024,), array.shape
    gc.collect()
    kept = _rss()
    print(f"{seconds:.4f} {(peak - start_rss) / 1e6:.1f} {(kept - start_rss) / 1e6:.1f}")


def _rss() -> int:
    with open("/proc/self/statm") as stream:
        return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_high_water_mark() -> None:
    with open("/proc/self/clear_refs", "w") as stream:
        stream.write("5")


def _high_water_mark() -> int:
    with open("/proc/self/status") as stream:
        for line in stream:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run(
    sizes: list[int], runs: int = 1, folder: Path | None = None, baseline: Path | None = None
) -> list[JsonRow]:
    """Measure every size; files go to ``folder`` (a temporary folder when None);
    ``baseline``: a checkout whose packages open our file too (the baseline columns)."""
    with tempfile.TemporaryDirectory(prefix="json-refs-") as scratch:
        where = Path(scratch) if folder is None else folder
        rows = []
        for n in sizes:
            path, ours_write, kerchunk_write = _write_times(n, where, runs)
            kerchunk_path = where / f"kerchunk-{n}.json"
            opens: dict[str, list[tuple[float, float, float]]] = {
                "ours": [],
                "kerchunk": [],
                "baseline": [],
            }
            for _ in range(runs):
                opens["ours"].append(_open_in_child("ours", path, n))
                opens["kerchunk"].append(_open_in_child("kerchunk", kerchunk_path, n))
                if baseline is not None:
                    packages = baseline / "packages"
                    opens["baseline"].append(_open_in_child("ours", path, n, packages))
            before = opens["baseline"]
            rows.append(
                JsonRow(
                    refs=n,
                    ours_open_s=statistics.median(s for s, _, _ in opens["ours"]),
                    ours_open_mb=opens["ours"][0][1],
                    ours_kept_mb=opens["ours"][0][2],
                    kerchunk_open_s=statistics.median(s for s, _, _ in opens["kerchunk"]),
                    kerchunk_open_mb=opens["kerchunk"][0][1],
                    kerchunk_kept_mb=opens["kerchunk"][0][2],
                    ours_write_s=ours_write,
                    kerchunk_write_s=kerchunk_write,
                    file_mb=path.stat().st_size / 1e6,
                    baseline_open_s=statistics.median(s for s, _, _ in before) if before else None,
                    baseline_open_mb=before[0][1] if before else None,
                    baseline_kept_mb=before[0][2] if before else None,
                )
            )
            print(f"  {n:,} refs measured", file=sys.stderr, flush=True)
        return rows


def table(rows: list[JsonRow]) -> str:
    """The side-by-side table (Markdown)."""
    lines = [
        "| refs | JSON MB | shadowzarr open s | peak / held MB | kerchunk open s "
        "| peak / held MB | shadowzarr write s | kerchunk write (json.dump) s |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.refs:,} | {r.file_mb:.0f} | {r.ours_open_s:.2f} "
            f"| {r.ours_open_mb:.0f} / {r.ours_kept_mb:.0f} | {r.kerchunk_open_s:.2f} "
            f"| {r.kerchunk_open_mb:.0f} / {r.kerchunk_kept_mb:.0f} | {r.ours_write_s:.2f} "
            f"| {r.kerchunk_write_s:.2f} |"
        )
    measured = [r for r in rows if r.baseline_open_s is not None]
    if measured:
        lines += [
            "",
            "| refs | baseline open s | peak / held MB | shadowzarr open s | peak / held MB |",
            "| ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in measured:
            lines.append(
                f"| {r.refs:,} | {r.baseline_open_s:.2f} "
                f"| {r.baseline_open_mb:.0f} / {r.baseline_kept_mb:.0f} | {r.ours_open_s:.2f} "
                f"| {r.ours_open_mb:.0f} / {r.ours_kept_mb:.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--refs", default="100000,1000000", help="comma list of sizes")
    parser.add_argument("--runs", type=int, default=1, help="runs per measurement (median)")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="a checkout to open our file with too"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    sizes = [int(s) for s in args.refs.split(",")]
    start_load = os.getloadavg()
    rows = run(sizes, args.runs, baseline=args.baseline)
    load = os.getloadavg()
    print(table(rows))
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json is not None:
        document = {
            "command": " ".join(["tools/bench/json_refs.py", *(argv or sys.argv[1:])]),
            "runs": args.runs,
            "load_average": {"start": start_load, "end": load},
            "rows": [dataclasses.asdict(r) for r in rows],
        }
        args.json.write_text(json.dumps(document, indent=1))
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
