"""tools/bench/sequential_ab.py runs end to end in quick mode: two variants, every read equal to
the values written, each with the round trips a sequential read needs, and the paired
difference of the baseline with itself zero (numbers are not judged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

AB = Path(__file__).resolve().parents[1] / "tools" / "bench" / "sequential_ab.py"


@pytest.mark.slow
@pytest.mark.network
def test_quick_ab_pairs_variants_with_exact_values(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    completed = run_script(
        AB,
        "--quick",
        "--variant",
        "default={}",
        "--variant",
        'shards-2MiB={"grouped_view": 2097152}',
        "--json",
        str(out),
        timeout=300,
    )
    document = json.loads(out.read_text())
    assert len(document["limit_ms"]) == 3
    assert document["variants"]["shards-2MiB"] == {"grouped_view": 2097152}
    rows = {(row["variant"], row["refs"]): row for row in document["rows"]}
    assert set(rows) == {(v, w) for v in ("default", "shards-2MiB") for w in ("remote", "local")}
    for (variant, where), row in rows.items():
        assert row["equal"] is True, row
        assert len(document["runs"][f"{variant} {where}"]) == 3
        # the data once (and refs.json when remote): the index comes with refs.json
        assert row["round_trips"] == (2 if where == "remote" else 1), row
        assert row["median_ms"] > 0
    assert rows[("default", "local")]["paired_ms"] == 0
    assert "vs default" in completed.stdout


def test_a_variant_needs_a_name_and_a_json_object() -> None:
    for bad in ("{}", "x=[1]", "x={"):
        completed = run_script(AB, "--quick", "--variant", bad, timeout=60, returncode=2)
        assert "--variant" in completed.stderr, bad
