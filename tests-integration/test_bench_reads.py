"""tools/bench/reads.py runs end to end in quick mode (numbers are not judged, only that our
readers ran with zarr's defaults, every value equals h5py's, and the server counted round trips;
peers are left out to keep it short: the full script runs them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

READS = Path(__file__).resolve().parents[1] / "tools" / "bench" / "reads.py"


@pytest.mark.slow
@pytest.mark.network
def test_quick_reads_run_with_exact_values_and_counted_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "reads.json"
    run_script(
        READS,
        "--quick",
        "--cases",
        "1 column,64 channels",  # also the sequential read and the dask sum
        "--skip",
        "kerchunk,fsspec,h5coro,remfile,async-hdf5,default chunks",
        "--json",
        str(out),
        timeout=300,
    )
    document = json.loads(out.read_text())
    assert document["quick"] is True
    rows = [row for row in document["rows"] if row["not_run"] != "skipped by --skip"]
    ours = [row for row in rows if row["ours"]]
    assert {row["case"].split(",")[0] for row in ours} == {
        "20k rows x 1 column",
        "1 s x 64 channels",
        "sequential read of 3 s x 64 channels",
        "dask sum on distributed of 3 s x 64 channels",
    }
    for row in ours:
        assert row["not_run"] is None, row
        assert row["equal"] is True, row
        assert row["round_trips"] is not None
        assert row["round_trips"] <= 6, row  # refs, index metadata, index chunk, data
    (limit,) = [row for row in document["rows"] if row["reader"].startswith("limit")]
    assert limit["equal"] is True
    assert limit["case"].startswith("sequential")
    sequential = [row for row in ours if row["case"].startswith("sequential")]
    assert all("% of the limit" in row["note"] for row in sequential)
    skipped = [row for row in document["rows"] if not row["ours"] and row not in rows]
    assert all(row["not_run"] for row in skipped)
    assert [row for row in rows if not row["ours"]] == [limit]
    (json_row,) = document["json_refs"]  # the JSON open/write figures, in the same script
    assert json_row["refs"] == 10_000
    assert json_row["ours_open_s"] > 0
    assert json_row["kerchunk_open_s"] > 0
    assert json_row["ours_write_s"] > 0
    assert json_row["kerchunk_write_s"] > 0
    # The run draws as recorded runs do (tools/bench/plots.py), one picture per workload.
    sys.path.insert(0, str(READS.parent))
    try:
        from plots import plot_results
    finally:
        sys.path.remove(str(READS.parent))
    pictures = plot_results(out, tmp_path / "pictures", dpi=40)
    assert len(pictures) == len({row["workload"] for row in document["rows"]})
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pictures)


@pytest.mark.slow
@pytest.mark.network
def test_quick_reads_h5coro_peer_reads_values_equal_to_h5py(tmp_path: Path) -> None:
    """The h5coro peer reads rows of one and of every column of the table and a second of one
    channel over HTTP, each equal to the source; the server counted its requests."""
    out = tmp_path / "reads.json"
    run_script(
        READS,
        "--quick",
        "--cases",
        "1 column,columns,1 channel",
        "--skip",
        "shadowzarr,kerchunk,fsspec,remfile,async-hdf5",
        "--json",
        str(out),
        timeout=300,
    )
    document = json.loads(out.read_text())
    rows = [row for row in document["rows"] if row["reader"].startswith("h5coro")]
    assert {row["case"].split(",")[0] for row in rows} == {
        "20k rows x 1 column",
        "20k rows x 32 columns",
        "1 s x 1 channel",
    }
    for row in rows:
        assert row["not_run"] is None, row
        assert row["equal"] is True, row
        assert row["requests"] > 0, row
