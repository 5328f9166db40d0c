"""NWBZarrIO reading an NWB recording of small chunks through RfsStore with zarr's DEFAULT
settings: one second of 64 channels in 4 KiB chunks costs at most 2 data round trips (plus the
chunk manifest), counted at the latency proxy (single-range, as S3 answers), and equals pynwb's
own read of the HDF5 file (issue 25)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest
import zarr
from hdmf.backends.hdf5 import H5DataIO
from hdmf_zarr import NWBZarrIO
from pynwb import NWBHDF5IO, NWBFile
from pynwb.ecephys import ElectricalSeries
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import RfsStore
from shadowzarr_testing.proxy import LatencyProxy

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

RATE, SECONDS, CHANNELS, CHUNK = 30_000, 3, 64, (128, 16)  # int16: 4 KiB chunks
LATENCY = 0.02


def _samples() -> np.ndarray:
    t = np.arange(RATE * SECONDS, dtype=np.int64)[:, None]
    return ((t * 2654435761 + np.arange(CHANNELS) * 40503) % 65536 - 32768).astype("<i2")


def _write_nwb(path: Path) -> None:
    nwb = NWBFile(
        session_description="grouped reads",
        identifier="grouped-1",
        session_start_time=dt.datetime(2024, 5, 1, 9, tzinfo=dt.UTC),
    )
    device = nwb.create_device("probe", description="a silicon probe")
    group = nwb.create_electrode_group("shank0", description="s", location="CA1", device=device)
    for _ in range(CHANNELS):
        nwb.add_electrode(group=group, location="CA1")
    region = nwb.create_electrode_table_region(list(range(CHANNELS)), "all electrodes")
    nwb.add_acquisition(
        ElectricalSeries(
            name="ElectricalSeries",
            data=H5DataIO(_samples(), chunks=CHUNK),
            electrodes=region,
            rate=float(RATE),
        )
    )
    with NWBHDF5IO(path, "w") as io:
        io.write(nwb)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nwb-grouped")
    _write_nwb(root / "recording.nwb")
    return root


@pytest.fixture
def served(recording: Path, make_proxy) -> tuple[LatencyProxy, str]:
    proxy = make_proxy(latency=LATENCY, ranges="s3", root=recording)
    rfs = generate_rfs(
        proxy.url("recording.nwb"), local_hdf5_path=recording / "recording.nwb", progress=False
    )
    target = recording / f"recording-{proxy.port}.shadowzarr"
    write_rfs(rfs, target)
    return proxy, proxy.url(target.name)


@pytest.mark.parametrize(
    "selection",
    [(slice(12_345, 42_345), slice(None)), (slice(40_000, 70_000), 5)],
    ids=["1 s x 64 channels", "1 s x 1 channel"],
)
def test_nwbzarrio_reads_a_second_in_two_data_round_trips(
    recording: Path, served: tuple[LatencyProxy, str], selection
) -> None:
    proxy, refs = served
    assert zarr.config.get("async.concurrency") == 10  # zarr's default, nothing tuned
    with NWBHDF5IO(recording / "recording.nwb", "r") as io:
        expected = np.asarray(io.read().acquisition["ElectricalSeries"].data[selection])
    with NWBZarrIO(RfsStore(refs, grouped_view="auto"), mode="r") as io:
        series = io.read().acquisition["ElectricalSeries"]
        assert series.data.shape == (RATE * SECONDS, CHANNELS)
        proxy.wait_idle()
        proxy.reset()  # what the read of the file's tree cost is not this test's business
        values = np.asarray(series.data[selection])
    np.testing.assert_array_equal(values, expected)
    proxy.wait_idle()
    data_trips = proxy.round_trips("recording.nwb")
    assert 1 <= data_trips <= 2
    assert proxy.count(path_prefix="recording.nwb") <= 4
    index = refs.rsplit("/", 1)[1] + "/index/"
    # the index came with refs.json (its files carried there): nothing but the data
    assert proxy.round_trips() == data_trips
    assert proxy.count(path_prefix=index) == 0
