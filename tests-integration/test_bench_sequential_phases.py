"""tools/bench/sequential_phases.py runs end to end in quick mode: every read equals h5py's
values, its phases come in the order a read goes through them, and the server saw the
requests of a read (numbers are not judged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

PHASES = Path(__file__).resolve().parents[1] / "tools" / "bench" / "sequential_phases.py"


@pytest.mark.slow
@pytest.mark.network
def test_quick_phases_run_with_exact_values_in_order(tmp_path: Path) -> None:
    out = tmp_path / "phases.json"
    completed = run_script(PHASES, "--quick", "--json", str(out), timeout=300)
    document = json.loads(out.read_text())
    assert document["limit_ms"] > 0
    assert document["limit_cpu_ms"] > 0
    assert len(document["fresh_array_ms"]) == 3
    assert min(document["fresh_array_ms"]) > 0
    assert [row["refs"] for row in document["rows"]] == ["remote", "local"]
    for row in document["rows"]:
        assert len(row["runs"]) == 3
        for run in row["runs"]:
            assert run["equal"] is True
            times = [run[c] for c in ("first request", "last data", "last shard decoded", "done")]
            assert None not in times, run
            assert times == sorted(times), run
            # the data once (and refs.json when remote): the index comes with refs.json
            assert run["round_trips"] == (2 if row["refs"] == "remote" else 1), run
            # zarr copied each decoded shard into the result, inside the read
            assert 0 < run["result copies"] < run["done"], run
    assert "last shard decoded" in completed.stdout
