"""Every recorded benchmark run renders as one PNG per workload (tools/bench/plots.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "tools" / "bench"
RESULTS = sorted((BENCH / "results").glob("*.json"))


def test_runs_are_recorded() -> None:
    assert RESULTS, f"no benchmark results under {BENCH / 'results'}"


@pytest.mark.parametrize("results", RESULTS, ids=[p.stem for p in RESULTS])
def test_every_workload_of_a_recorded_run_is_drawn(results: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from plots import plot_results, settings_of
    finally:
        sys.path.remove(str(BENCH))
    document = json.loads(results.read_text())
    workloads = {row["workload"] for s in settings_of(document) for row in s["rows"]}
    written = plot_results(results, tmp_path, dpi=40)  # small: quick to draw
    assert workloads
    assert len(written) == len(workloads)
    for picture in written:
        data = picture.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 5_000
    # Where pictures are committed beside the JSON, they are the ones this run of plots.py draws.
    committed = results.with_suffix("")
    if committed.is_dir():
        assert sorted(p.name for p in committed.glob("*.png")) == sorted(p.name for p in written)
