"""NWBZarrIO reads an NWB file through RfsStore: references into the chunk files of a Zarr NWB.

hdmf-zarr writes the NWB file as an ordinary Zarr directory; the test then writes a reference
file by hand that keeps every ``zarr.json`` inline and points every chunk at its file on nginx,
and reads it back with ``NWBZarrIO(RfsStore(...))``, comparing with what pynwb wrote.
"""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hdmf_zarr import NWBZarrIO
from pynwb import NWBFile, TimeSeries
from shadowzarr_spec import read_local_rfs
from shadowzarr_store import RfsStore

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer


def _write_nwb(path: Path) -> tuple[np.ndarray, list[float]]:
    start = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.UTC)
    nwbfile = NWBFile(session_description="by hand", identifier="rfs-1", session_start_time=start)
    data = np.random.default_rng(5).standard_normal((5000, 4)).astype("f4")
    nwbfile.add_acquisition(TimeSeries(name="ts", data=data, unit="V", rate=1000.0))
    nwbfile.add_trial_column("label", "what happened")
    starts = [0.0, 1.5, 3.0]
    for begin in starts:
        nwbfile.add_trial(start_time=begin, stop_time=begin + 1.0, label=f"t{begin}")
    with NWBZarrIO(str(path), mode="w") as io:
        io.write(nwbfile)
    return data, starts


def _references(root: Path, base_url: str) -> dict:
    refs: dict[str, object] = {}
    sources: dict[str, dict[str, int]] = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        key = file.relative_to(root).as_posix()
        if file.name == "zarr.json":
            refs[key] = file.read_text()
        else:
            url = f"{base_url}/{key}"
            size = file.stat().st_size
            refs[key] = [url, 0, size] if size % 2 else [url]
            sources[url] = {"size": size}
    return {"version": 1, "refs": refs, "sources": sources}


@pytest.mark.network
def test_nwbzarrio_reads_through_rfs_store(nginx: NginxServer, nginx_root: Path) -> None:
    data, starts = _write_nwb(nginx_root / "session.nwb.zarr")
    document = _references(nginx_root / "session.nwb.zarr", nginx.url("session.nwb.zarr"))
    assert any(len(ref) == 1 for ref in document["refs"].values() if isinstance(ref, list))
    store = RfsStore(read_local_rfs(json.loads(json.dumps(document))))
    nginx.reset()
    with NWBZarrIO(store, mode="r") as io:
        nwbfile = io.read()
        assert nwbfile.session_description == "by hand"
        assert nwbfile.identifier == "rfs-1"
        ts = nwbfile.acquisition["ts"]
        np.testing.assert_array_equal(ts.data[100:200], data[100:200])
        np.testing.assert_array_equal(ts.data[:], data)
        trials = nwbfile.trials.to_dataframe()
        assert list(trials["start_time"]) == starts
        assert list(trials["label"]) == [f"t{s}" for s in starts]
    assert store.stats.requests == nginx.count()
    assert all(entry.uri.startswith("/session.nwb.zarr/") for entry in nginx.entries())
