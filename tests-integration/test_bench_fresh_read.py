"""tools/bench/fresh_read.py runs end to end in quick mode: fresh processes read the recording
twice, the page helper on and off, every value checked, the limit beside them (numbers are not
judged: they are the machine's)."""

from __future__ import annotations

import json
from pathlib import Path

from shadowzarr_testing.scripts import run_script

FRESH_READ = Path(__file__).resolve().parents[1] / "tools" / "bench" / "fresh_read.py"


def test_quick_fresh_read_compares_a_first_read_with_a_warm_one(tmp_path: Path) -> None:
    out = tmp_path / "fresh.json"
    completed = run_script(
        FRESH_READ,
        "--quick",
        "--variant",
        'off={"env": {"SHADOWZARR_PREFAULT": "0"}}',
        "--variant",
        "on={}",
        "--json",
        str(out),
        timeout=300,
    )
    document = json.loads(out.read_text())
    assert set(document["variants"]) == {"off", "on"}
    for name, variant in document["variants"].items():
        assert variant["equal"], name
        runs = document["measured"][name]
        assert len(runs) == 2
        assert all(run["first"] > 0 and run["warm"] > 0 for run in runs)
    assert document["limit"]["equal"]
    assert "first/warm" in completed.stdout
