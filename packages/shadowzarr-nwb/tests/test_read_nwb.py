"""read_nwb / open_nwb: an NWBFile through references in one call, compared with pynwb reading
the NWB HDF5 file itself; the IO lives exactly as long as the NWBFile."""

from __future__ import annotations

import datetime
import gc
import time
import weakref
from typing import TYPE_CHECKING

import numpy as np
import pytest
import shadowzarr
from pynwb import NWBHDF5IO, NWBFile, TimeSeries
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import SourceAccessError, write_rfs
from shadowzarr_store import RfsStore
from shadowzarr_store.transport.pools import pool_stats

from shadowzarr_nwb import NotAnNWBSource, ReferencesNWBZarrIO, open_nwb, read_nwb

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network


def _write_nwb(path: Path) -> np.ndarray:
    start = datetime.datetime(2026, 3, 1, 9, tzinfo=datetime.UTC)
    nwbfile = NWBFile(session_description="read_nwb", identifier="rn-1", session_start_time=start)
    data = np.random.default_rng(2).integers(-500, 500, (3000, 4)).astype("int16")
    nwbfile.add_acquisition(TimeSeries(name="ts", data=data, unit="uV", rate=1000.0))
    nwbfile.add_trial_column("label", "what happened")
    for begin in (0.0, 1.0):
        nwbfile.add_trial(start_time=begin, stop_time=begin + 0.5, label=f"t{begin}")
    with NWBHDF5IO(path, "w") as io:
        io.write(nwbfile)
    return data


def _assert_same_file(ours: NWBFile, path: Path) -> None:
    with NWBHDF5IO(path, "r") as io:
        theirs = io.read()
        assert ours.identifier == theirs.identifier
        assert ours.session_start_time == theirs.session_start_time
        np.testing.assert_array_equal(
            ours.acquisition["ts"].data[:], theirs.acquisition["ts"].data[:]
        )
        assert list(ours.trials["label"][:]) == list(theirs.trials["label"][:])


def test_read_nwb_from_references_and_from_the_file(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    source = nginx_root / "session.nwb"
    data = _write_nwb(source)
    (nginx_root / "download").write_bytes(source.read_bytes())  # a name with no suffix
    refs = write_rfs(generate_rfs(nginx.url("session.nwb")), nginx_root / "session.shadowzarr")
    for address in (refs, str(refs), nginx.url("session.shadowzarr"), nginx.url("download")):
        nwbfile = read_nwb(address)
        assert isinstance(nwbfile.read_io, ReferencesNWBZarrIO)
        _assert_same_file(nwbfile, source)
        nwbfile.read_io.close()
    assert shadowzarr.read_nwb is read_nwb
    nwbfile = shadowzarr.read_nwb(refs, max_merge_size=0)  # store options reach the store
    nginx.reset()
    np.testing.assert_array_equal(nwbfile.acquisition["ts"].data[:], data)
    assert nwbfile.read_io._shadowzarr_store.options.max_merge_size == 0
    assert nginx.count(path_prefix="session.nwb") > 0
    nwbfile.read_io.close()


def test_an_nwb_file_is_sniffed_and_generated_with_the_access_options(
    nginx: NginxServer, nginx_root: Path
) -> None:
    """The first bytes and the generation of a suffix-less NWB HDF5 file are asked for as the
    store's reads are: a URL outside ``allowed_urls`` is refused before nginx sees a request."""
    source = nginx_root / "session.nwb"
    _write_nwb(source)
    (nginx_root / "download").write_bytes(source.read_bytes())
    nginx.reset()
    with pytest.raises(SourceAccessError):
        read_nwb(nginx.url("download"), allowed_urls=[nginx.url("elsewhere/")])
    assert nginx.count() == 0
    with open_nwb(nginx.url("download"), allowed_urls=[nginx.url("")]) as nwbfile:
        _assert_same_file(nwbfile, source)


def test_the_io_lives_as_long_as_the_nwbfile(nginx: NginxServer, nginx_root: Path) -> None:
    source = nginx_root / "session.nwb"
    data = _write_nwb(source)
    refs = write_rfs(generate_rfs(nginx.url("session.nwb")), nginx_root / "session.shadowzarr")
    nwbfile = read_nwb(refs)
    io = weakref.ref(nwbfile.read_io)
    gc.collect()
    assert io() is not None  # nothing but the NWBFile holds it, and it is still open
    np.testing.assert_array_equal(nwbfile.acquisition["ts"].data[100:200], data[100:200])
    series = nwbfile.acquisition["ts"]
    del nwbfile
    gc.collect()
    np.testing.assert_array_equal(series.data[:50], data[:50])  # a child keeps the file too
    del series
    gc.collect()
    assert io() is None  # released with the NWBFile


def test_open_nwb_closes_at_the_end_of_the_block(nginx: NginxServer, nginx_root: Path) -> None:
    source = nginx_root / "session.nwb"
    _write_nwb(source)
    refs = write_rfs(generate_rfs(nginx.url("session.nwb")), nginx_root / "session.shadowzarr")
    with open_nwb(refs) as nwbfile:
        store = nwbfile.read_io._shadowzarr_store
        _assert_same_file(nwbfile, source)
        assert isinstance(store, RfsStore)
        origin = f"http://127.0.0.1:{nginx.port}"
        assert pool_stats()[origin].open >= 1  # the kept-alive connections the reads used
    assert nwbfile.read_io._shadowzarr_store is None
    # The connections are the process's, kept for the next store (one pool per origin): after
    # the block none is busy, every one waits idle until it is reused or expires.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        stats = pool_stats()[origin]
        if stats.open == stats.idle:
            break
        time.sleep(0.01)
    assert stats.open == stats.idle


def test_not_an_nwb_source(tmp_path: Path) -> None:
    text = tmp_path / "notes"
    text.write_text("just some notes\n")
    with pytest.raises(NotAnNWBSource, match="notes"):
        read_nwb(text)


def test_a_dataset_shows_its_references_and_what_reading_cost(tmp_path: Path) -> None:
    """In a notebook (hdmf's HTML display) a dataset read through references shows the store's
    row for it, the file its bytes are in, and the traffic; ``read_io.traffic`` counts it."""
    source = tmp_path / "session.nwb"
    data = _write_nwb(source)
    refs = write_rfs(generate_rfs(str(source), progress=False), tmp_path / "s.shadowzarr")
    with open_nwb(refs) as nwbfile:
        series = nwbfile.acquisition["ts"]
        traffic = nwbfile.read_io.traffic
        assert traffic is not None
        assert traffic.stats.requests == 0
        np.testing.assert_array_equal(series.data[:], data)
        traffic = nwbfile.read_io.traffic
        assert traffic is not None
        assert traffic.stats.requests == 1
        assert traffic.stats.bytes == data.nbytes
        shown = series._repr_html_()
    assert "RfsStore" in shown
    assert "acquisition/ts/data" in shown
    assert "(3,000, 4)" in shown
    assert "int16" in shown
    assert "23.4 KiB" in shown  # the bytes the references point at
    assert "session.nwb" in shown  # the file they are in
    assert "<h4>traffic</h4>" in shown
    # a dataset that is not read through references keeps hdmf-zarr's own table
    plain = ReferencesNWBZarrIO.generate_dataset_html
    assert "RfsStore" not in plain(nwbfile.read_io, np.arange(3))
