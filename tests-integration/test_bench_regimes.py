"""tools/bench/regimes.py (issue 43's table) runs end to end in quick mode: the 20k-rows reads
through the directory and the JSON form, sparse reads with the data file's own counts, the
fresh-process read and generation, each target judged, one result file that draws as recorded
runs do (numbers are not judged; most peers are left out to keep it short)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

REGIMES = Path(__file__).resolve().parents[1] / "tools" / "bench" / "regimes.py"


@pytest.mark.slow
@pytest.mark.network
def test_quick_regimes_run_every_part_with_targets(tmp_path: Path) -> None:
    out = tmp_path / "regimes.json"
    completed = run_script(
        REGIMES,
        "--quick",
        "--sparse-n",
        "1e4",
        "--generation-latency",
        "20",
        "--fresh-runs",
        "1",
        "--skip",
        "kerchunk,fsspec,remfile,async-hdf5,VirtualiZarr,lindi,chunk_iter,hidefix,xarray,"
        "open_group,at hand",
        "--json",
        str(out),
        timeout=600,
    )
    document = json.loads(out.read_text())
    reads, generation = document["settings"]
    assert generation["latency_ms"] == generation["connect_latency_ms"] == 20
    rows = [row for row in reads["rows"] if row["not_run"] != "skipped by --skip"]
    ours = [row for row in rows if row["ours"]]
    assert all(row["not_run"] is None and row["equal"] is True for row in ours), ours
    json_form = [row for row in ours if row["reader"] == "shadowzarr open_rfs, JSON refs remote"]
    assert len(json_form) == 3  # the 20k rows of 1 and of 32 columns, the sparse read
    assert {row["case"].split(",")[0] for row in json_form if "rows" in row["case"]} == {
        "20k rows x 1 column",
        "20k rows x 32 columns",
    }
    sparse = sparse_rows(ours)
    assert len(sparse) == 2
    assert all(row["data_file"]["bytes"] > 0 for row in sparse)
    (h5coro,) = [row for row in rows if row in sparse_rows(rows) and "h5coro" in row["reader"]]
    assert "hyperslab" in h5coro["not_run"]  # a peer that cannot do a row says why
    fresh = [row for row in reads["rows"] if row["workload"] == "fresh process"]
    assert [row["reader"].split(":")[0] for row in fresh] == [
        "limit",
        "shadowzarr open_rfs, refs remote",
        "shadowzarr open_rfs, refs remote",
    ]
    assert all(row["requests"] > 0 and row["equal"] for row in fresh)
    (ours_generation,) = [row for row in generation["rows"] if row["ours"]]
    assert ours_generation["equal"] is True
    assert ours_generation["round_trips"] > 0
    targets = [target["target"] for target in document["targets"]]
    assert sum("≤ fastest peer" in target for target in targets) == 4  # 2 cases x 2 forms
    assert sum("4 x touched" in target for target in targets) == 2
    assert sum("fresh processes" in target for target in targets) == 1
    assert sum("generation" in target for target in targets) == 1
    assert "issue 43's targets" in completed.stdout
    sys.path.insert(0, str(REGIMES.parent))
    try:
        from plots import plot_results
    finally:
        sys.path.remove(str(REGIMES.parent))
    pictures = plot_results(out, tmp_path / "pictures", dpi=40)
    workloads = {row["workload"] for s in document["settings"] for row in s["rows"]}
    assert len(pictures) == len(workloads)


def sparse_rows(rows: list[dict]) -> list[dict]:
    return [row for row in rows if row["case"].startswith("1,000 random chunks")]
