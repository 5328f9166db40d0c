"""The benchmark script runs end to end at tiny sizes (numbers are not judged here: only that
every workload ran, every value any reader returned equals the source, and every peer that did
not run says why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

BENCH = Path(__file__).resolve().parents[1] / "tools" / "bench" / "bench.py"
WORKLOADS = {"1 generate", "2 open 2M", "3 one second", "4 small chunks", "5 sequential"}


@pytest.mark.slow
@pytest.mark.network
def test_quick_run_covers_every_workload_with_exact_values(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    completed = run_script(
        BENCH,
        "--quick",
        "--no-build-venvs",
        "--bandwidths",
        "200",
        "--servers",
        "s3",
        "--latency",
        "5",
        "--json",
        str(out),
        timeout=600,
    )
    document = json.loads(out.read_text())
    assert document["quick"] is True
    (setting,) = document["settings"]
    assert setting["server"] == "s3"
    rows = setting["rows"]
    assert {row["workload"] for row in rows} == WORKLOADS
    ran = [row for row in rows if row["not_run"] is None]
    assert ran, "no reader ran"
    wrong = [(r["workload"], r["case"], r["reader"]) for r in ran if r["equal"] is not True]
    assert not wrong, wrong
    for row in ran:
        assert row["seconds"] is not None
        assert row["seconds"] >= 0
        assert row["requests"] is not None
        assert row["bytes"] is not None
    for workload in WORKLOADS:
        ours = [r for r in ran if r["workload"] == workload and r["ours"]]
        assert ours, f"shadowzarr did not run in {workload}"
    for row in rows:
        if row["not_run"] is not None:
            assert row["not_run"].strip(), row
            assert f"not run: {' '.join(row['not_run'].split())}" in completed.stdout
    assert "| workload | case | reader |" in completed.stdout
    assert setting["targets"], "no target was evaluated"


@pytest.mark.slow
@pytest.mark.network
def test_quick_generation_at_two_latencies_with_connection_set_up(tmp_path: Path) -> None:
    """Workload 1 at two latencies, each connection's set-up costing as much as a request: one
    setting per latency, round trips counted for our generator, and h5coro-hidefix's local
    index listing every chunk without a request."""
    out = tmp_path / "generation.json"
    run_script(
        BENCH,
        "--quick",
        "--no-build-venvs",
        "--workloads",
        "1",
        "--servers",
        "s3",
        "--bandwidths",
        "0",
        "--latency",
        "5,10",
        "--connect-latency",
        "latency",
        "--skip",
        "kerchunk,VirtualiZarr,blockcache,lindi,async-hdf5",
        "--json",
        str(out),
        timeout=300,
    )
    settings = json.loads(out.read_text())["settings"]
    assert [(s["latency_ms"], s["connect_latency_ms"]) for s in settings] == [(5, 5), (10, 10)]
    for setting in settings:
        rows = {(row["case"].split(" (")[0], row["reader"]): row for row in setting["rows"]}
        ours = rows["fragmented", "shadowzarr generate_rfs + write_rfs (dir)"]
        assert ours["equal"] is True, ours
        assert ours["round_trips"] >= 2, ours  # the head, then the index
        local = rows["fragmented", "h5coro-hidefix Index (local file, no network)"]
        assert local["not_run"] is None, local
        assert local["equal"] is True, local
        assert local["requests"] == 0, local
