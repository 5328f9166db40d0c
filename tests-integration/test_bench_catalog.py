"""tools/bench/catalog.py runs end to end in quick mode: every method generates references for
the whole archive (or says why it did not run), requests and connections are counted at the
proxy, the targets and the projection are printed (numbers are not judged: they are the
machine's, and quick sizes are too small to show the pool's gain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

CATALOG = Path(__file__).resolve().parents[1] / "tools" / "bench" / "catalog.py"


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(300)
def test_quick_catalog_benchmark(tmp_path: Path) -> None:
    out = tmp_path / "catalog.json"
    completed = run_script(CATALOG, "--quick", "--json", str(out), timeout=280)
    document = json.loads(out.read_text())
    rows = {row["method"]: row for row in document["results"]}
    (pool,) = [m for m in rows if m.startswith("generate_catalog, default pool (")]
    measured = [
        pool,
        "generate_catalog, LocalCluster (2x8)",
        "loop over generate_rfs + write_rfs",
        "loop over kerchunk SingleHdf5ToZarr",
    ]
    for method in measured:
        row = rows[method]
        assert row["assets"] == document["assets"] == 6, method
        assert row["assets_per_minute"] > 0, method
        assert row["requests_per_asset"] >= 1, method
        assert row["connections_per_asset"] > 0, method
    lindi = rows["loop over lindi (own environment)"]
    assert lindi["seconds"] is not None or lindi["note"].startswith("not run: ")
    # each asset costs the catalog the requests generate_rfs needs, by its own count and the
    # server's (a URL list's sizes and ETags come from the generations, not from probes)
    assert document["catalog_requests_per_asset"] == document["loop_requests_per_asset"]
    assert rows[pool]["requests_per_asset"] == document["loop_requests_per_asset"]
    hours = document["projection"]["hours"]
    assert hours["1"] > hours["8"] > hours["64"] > 0
    assert "target: default pool >= 5x the plain loop" in completed.stdout
    assert "projected for 100,000 assets" in completed.stdout
