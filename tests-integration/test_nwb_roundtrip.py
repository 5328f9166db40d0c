"""NWB files written with pynwb read through generate_rfs + RfsStore + NWBZarrIO equal NWBHDF5IO.

Each file is read twice: from the single ``.json`` (version 1, every chunk listed) and from the
directory form (chunk manifests for arrays with many chunks). Every dataset and attribute of every
container is compared with what pynwb reads from the HDF5 file itself.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hdmf.common import DynamicTable, DynamicTableRegion, VectorData, VectorIndex
from hdmf.container import Container, Data
from hdmf_zarr import NWBZarrIO
from pynwb import NWBHDF5IO, NWBFile, TimeSeries
from pynwb.base import Images
from pynwb.behavior import BehavioralEvents, Position, SpatialSeries
from pynwb.ecephys import LFP, ElectricalSeries
from pynwb.file import Subject
from pynwb.icephys import CurrentClampSeries, CurrentClampStimulusSeries
from pynwb.image import GrayscaleImage, RGBImage
from pynwb.ophys import (
    Fluorescence,
    ImageSegmentation,
    OpticalChannel,
    RoiResponseSeries,
    TwoPhotonSeries,
)
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import read_local_rfs, write_rfs
from shadowzarr_store import RfsStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

START = dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.UTC)
RNG = np.random.default_rng(11)


def _nwbfile() -> NWBFile:
    return NWBFile(
        session_description="shadowzarr round trip",
        identifier="shadowzarr-test",
        session_start_time=START,
        experimenter=["Ada", "Grace"],
        keywords=["test", "roundtrip"],
        subject=Subject(subject_id="mouse1", species="Mus musculus", age="P90D", sex="F"),
    )


def ecephys(nwb: NWBFile) -> None:
    device = nwb.create_device("probe", description="a silicon probe")
    groups = [
        nwb.create_electrode_group(
            name=f"shank{i}", description="shank", location="CA1", device=device
        )
        for i in range(2)
    ]
    nwb.add_electrode_column("quality", "how good")
    for i in range(6):
        nwb.add_electrode(group=groups[i % 2], location="CA1", x=float(i), quality=i / 6)
    region = nwb.create_electrode_table_region([0, 2, 4], "three electrodes")
    data = RNG.integers(-1000, 1000, (3000, 3), dtype="int16")
    nwb.add_acquisition(
        ElectricalSeries(
            name="ElectricalSeries",
            data=data,
            electrodes=region,
            rate=30000.0,
            conversion=0.195e-6,
            starting_time=0.5,
            resolution=np.nan,
        )
    )
    lfp = LFP(ElectricalSeries(
        name="lfp", data=RNG.standard_normal((200, 3)), electrodes=region,
        timestamps=np.arange(200) / 1000.0,
    ))  # fmt: skip
    nwb.create_processing_module("ecephys", "processed ephys").add(lfp)
    for unit in range(5):
        spikes = np.sort(RNG.uniform(0, 10, RNG.integers(0, 40)))
        nwb.add_unit(spike_times=spikes, electrodes=[unit % 6], obs_intervals=[[0.0, 10.0]])


def ophys(nwb: NWBFile) -> None:
    device = nwb.create_device("microscope")
    channel = OpticalChannel(name="green", description="GCaMP", emission_lambda=525.0)
    plane = nwb.create_imaging_plane(
        name="plane", optical_channel=channel, description="plane", device=device,
        excitation_lambda=920.0, imaging_rate=30.0, indicator="GCaMP6f", location="V1",
    )  # fmt: skip
    movie = TwoPhotonSeries(
        name="movie", data=RNG.integers(0, 4000, (20, 16, 12), dtype="uint16"),
        imaging_plane=plane, rate=30.0, unit="a.u.",
    )  # fmt: skip
    nwb.add_acquisition(movie)
    module = nwb.create_processing_module("ophys", "optical physiology")
    segmentation = ImageSegmentation()
    module.add(segmentation)
    planes = segmentation.create_plane_segmentation("cells", plane, "segmentation", movie)
    for i in range(4):
        mask = np.zeros((16, 12), dtype=bool)
        mask[i : i + 3, i : i + 2] = True
        planes.add_roi(image_mask=mask)
    rois = planes.create_roi_table_region("all cells", region=[0, 1, 2, 3])
    fluorescence = Fluorescence(RoiResponseSeries(
        name="dff", data=RNG.standard_normal((20, 4)), rois=rois, unit="1", rate=30.0,
    ))  # fmt: skip
    module.add(fluorescence)


def icephys(nwb: NWBFile) -> None:
    device = nwb.create_device("amplifier")
    electrode = nwb.create_icephys_electrode(
        name="elec0", description="a patch pipette", device=device
    )
    stimulus = CurrentClampStimulusSeries(
        name="stim", data=RNG.standard_normal(100), starting_time=0.0, rate=10000.0,
        electrode=electrode, gain=0.02, sweep_number=np.uint32(0),
    )  # fmt: skip
    response = CurrentClampSeries(
        name="resp", data=RNG.standard_normal(100), starting_time=0.0, rate=10000.0,
        electrode=electrode, gain=0.02, bias_current=0.0, bridge_balance=0.0,
        capacitance_compensation=0.0, sweep_number=np.uint32(0),
    )  # fmt: skip
    nwb.add_intracellular_recording(electrode=electrode, stimulus=stimulus, response=response)


def behaviour(nwb: NWBFile) -> None:
    module = nwb.create_processing_module("behavior", "behaviour")
    position = Position(SpatialSeries(
        name="xy", data=RNG.standard_normal((50, 2)), reference_frame="corner",
        timestamps=np.linspace(0, 5, 50),
    ))  # fmt: skip
    module.add(position)
    events = BehavioralEvents(TimeSeries(
        name="licks", data=np.ones(7), unit="n.a.", timestamps=np.sort(RNG.uniform(0, 5, 7)),
        resolution=np.nan,
    ))  # fmt: skip
    module.add(events)
    licks = events.time_series["licks"]
    nwb.add_trial(start_time=0.0, stop_time=1.0)
    nwb.add_trial(start_time=1.5, stop_time=2.5)
    # A compound column with an object reference field (TimeSeriesReferenceVectorData).
    nwb.add_epoch(start_time=0.0, stop_time=2.5, tags=["run", "fast"], timeseries=[licks])


def images(nwb: NWBFile) -> None:
    gray = GrayscaleImage("gray", RNG.integers(0, 255, (8, 6)).astype("uint8"), resolution=1.5)
    rgb = RGBImage("rgb", RNG.integers(0, 255, (8, 6, 3)).astype("uint8"))
    nwb.add_acquisition(Images("snapshots", images=[gray, rgb], description="pictures"))


def tables(nwb: NWBFile) -> None:
    words = VectorData(
        name="words", description="ragged strings", data=["a", "bb", "ccc", "d", "ee"]
    )
    words_index = VectorIndex(name="words_index", data=[2, 3, 5], target=words)
    table = DynamicTable(
        name="notes", description="a ragged table",
        columns=[VectorData(name="number", description="ints", data=[1, 2, 3]), words, words_index],
    )  # fmt: skip
    pointer = DynamicTable(name="pointers", description="rows of notes")
    pointer.add_column("row", "a row of notes", table=table)
    for i in [2, 0, 1, 1]:
        pointer.add_row(row=i)
    module = nwb.create_processing_module("tables", "custom tables")
    module.add(table)
    module.add(pointer)


BUILDERS = {
    "ecephys": [ecephys],
    "ophys": [ophys],
    "icephys": [icephys],
    "behaviour_images": [behaviour, images],
    "tables": [tables],
}


def write_nwb(path: Path, parts: list[Any]) -> None:
    nwb = _nwbfile()
    for part in parts:
        part(nwb)
    with NWBHDF5IO(path, "w") as io:
        io.write(nwb)


@pytest.mark.parametrize("form", ["json", "directory"])
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_nwb_reads_back_equal(tmp_path: Path, name: str, form: str) -> None:
    source = tmp_path / f"{name}.nwb"
    write_nwb(source, BUILDERS[name])
    # A small threshold so the directory form exercises chunk manifests.
    rfs = generate_rfs(source, manifest_threshold=2, inline_threshold=64)
    target = tmp_path / (f"{name}.json" if form == "json" else f"{name}.shadowzarr")
    write_rfs(rfs, target, manifest_threshold=2)
    with NWBHDF5IO(source, "r") as expected_io:
        expected = expected_io.read()
        with NWBZarrIO(RfsStore(read_local_rfs(target)), mode="r") as actual_io:
            actual = actual_io.read()
            compare_containers(actual, expected, "root")


def compare_containers(
    actual: Any, expected: Any, where: str, seen: set[int] | None = None
) -> None:
    """Every field of two pynwb object trees, recursively, with arrays compared by value."""
    seen = set() if seen is None else seen
    if id(expected) in seen:
        return
    seen.add(id(expected))
    assert type(actual) is type(expected), f"{where}: {type(actual)} != {type(expected)}"
    if isinstance(expected, Container | Data):
        fields = dict(expected.fields)
        actual_fields = dict(actual.fields)
        if isinstance(expected, Data):
            fields["data"] = expected.data
            actual_fields["data"] = actual.data
        assert set(actual_fields) == set(fields), (
            f"{where}: fields {set(actual_fields) ^ set(fields)}"
        )
        for key, value in fields.items():
            if key == "file_create_date" or key == "object_id":
                continue
            compare_values(actual_fields[key], value, f"{where}.{key}", seen)
        return
    compare_values(actual, expected, where, seen)


def compare_values(actual: Any, expected: Any, where: str, seen: set[int]) -> None:
    if isinstance(expected, Container | Data):
        if isinstance(expected, DynamicTableRegion | VectorIndex):
            # Compare what they resolve to, then their own raw data.
            assert np.array_equal(np.asarray(actual.data[:]), np.asarray(expected.data[:])), where
        compare_containers(actual, expected, where, seen)
        return
    if isinstance(expected, dict):
        assert set(actual) == set(expected), where
        for key in expected:
            compare_values(actual[key], expected[key], f"{where}[{key!r}]", seen)
        return
    if (
        isinstance(expected, list | tuple)
        and expected
        and isinstance(expected[0], Container | Data)
    ):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            compare_values(a, e, f"{where}[{i}]", seen)
        return
    if hasattr(expected, "shape") or isinstance(expected, list | tuple):
        _compare_arrays(actual, expected, where, seen)
        return
    if isinstance(expected, float) and np.isnan(expected):
        assert isinstance(actual, float), f"{where}: {actual!r}"
        assert np.isnan(actual), f"{where}: {actual!r}"
        return
    if isinstance(expected, dt.datetime):
        assert actual == expected, where
        return
    assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def _compare_arrays(actual: Any, expected: Any, where: str, seen: set[int]) -> None:
    want = _materialize(expected)
    got = _materialize(actual)
    if want.dtype.kind == "O" and want.size and isinstance(want.flat[0], Container | Data):
        assert got.shape == want.shape, where
        for i, (a, e) in enumerate(zip(got.ravel(), want.ravel(), strict=True)):
            compare_containers(a, e, f"{where}[{i}]", seen)
        return
    if want.dtype.names is not None:
        assert got.dtype.names == want.dtype.names, where
        for name in want.dtype.names:
            _compare_arrays(got[name], want[name], f"{where}[{name}]", seen)
        return
    if want.dtype.kind in "OSU" or got.dtype.kind in "OSUT":
        assert [_text(v) for v in got.ravel()] == [_text(v) for v in want.ravel()], where
        assert got.shape == want.shape, where
        return
    assert got.shape == want.shape, f"{where}: {got.shape} != {want.shape}"
    if want.ndim == 0 and got.dtype.kind in "iub" and want.dtype.kind in "iub":
        # A scalar attribute: JSON keeps its value, not its width (uint32 reads back as int64).
        assert int(got) == int(want), where
        return
    assert got.dtype == want.dtype, f"{where}: {got.dtype} != {want.dtype}"
    assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"), where


def _materialize(value: Any) -> np.ndarray:
    if hasattr(value, "shape") and not isinstance(value, np.ndarray):
        if value.shape == ():
            return np.asarray(value[()])
        data = value[:]
        if isinstance(data, list):  # reference columns resolve to lists of containers
            out = np.empty(len(data), dtype=object)
            out[:] = data
            return out
        return np.asarray(data)
    if isinstance(value, list | tuple) and value and isinstance(value[0], Container | Data):
        out = np.empty(len(value), dtype=object)
        out[:] = value
        return out
    return np.asarray(value)


def _text(value: Any) -> str:
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("utf-8")
    return str(value)


@pytest.mark.network
def test_nwb_generated_over_http_reads_back_equal(nginx: Any, nginx_root: Path) -> None:
    """Headers read over HTTP (nginx), chunks read back over HTTP by RfsStore."""
    source = nginx_root / "remote.nwb"
    write_nwb(source, [ecephys, tables])
    url = nginx.url("remote.nwb")
    rfs = generate_rfs(url, manifest_threshold=2, inline_threshold=64)
    assert rfs.sources[url].size == source.stat().st_size
    assert rfs.sources[url].etag
    target = nginx_root / "remote.shadowzarr"
    write_rfs(rfs, target, manifest_threshold=2)
    with NWBHDF5IO(source, "r") as expected_io:
        expected = expected_io.read()
        with NWBZarrIO(RfsStore(read_local_rfs(target)), mode="r") as actual_io:
            compare_containers(actual_io.read(), expected, "root")
