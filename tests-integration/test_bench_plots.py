"""The recorded benchmark run renders as one PNG per workload (tools/bench/plots.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "tools" / "bench"


def test_every_workload_of_the_recorded_run_is_drawn(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from plots import plot_results
    finally:
        sys.path.remove(str(BENCH))
    results = sorted((BENCH / "results").glob("*.json"))[-1]
    workloads = {
        row["workload"] for s in json.loads(results.read_text())["settings"] for row in s["rows"]
    }
    written = plot_results(results, tmp_path, dpi=40)  # small: quick to draw
    assert len(written) == len(workloads) == 5
    for picture in written:
        data = picture.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 5_000
    # The committed pictures beside the JSON are the ones this run of plots.py draws.
    committed = results.with_suffix("")
    assert sorted(p.name for p in committed.glob("*.png")) == sorted(p.name for p in written)
