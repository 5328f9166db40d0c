"""Recordings in several source formats, each as VirtualArrays with the values they must read.

Written recordings come from shadowzarr-neo's test writers (imported by path: they are test code of
another package), real ones from ``shadowzarr-neo/tests/data/ephys``; TIFF stacks and HDF5 datasets
are written here with tifffile and h5py. Every source gives, per series, the VirtualArray and the
values its native reader returns.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np
import tifffile
from neo.rawio import BlackrockRawIO, BrainVisionRawIO, IntanRawIO
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_neo import virtual_arrays_neo
from shadowzarr_spec import VirtualArray
from shadowzarr_tiff import generate_rfs_tiff

if TYPE_CHECKING:
    from collections.abc import Callable

    from neo.rawio.baserawio import BaseRawIO

NEO_TESTS = Path(__file__).resolve().parents[2] / "shadowzarr-neo" / "tests"


@dataclass(frozen=True, slots=True)
class Series:
    """One series of an NWB file: kind ("ephys", "timeseries", "twophoton"), its array, the
    values it must read and, for ephys, each channel's gain."""

    name: str
    kind: str
    array: VirtualArray
    expected: np.ndarray
    rate: float = 1000.0
    gain: np.ndarray | None = None
    timestamps: VirtualArray | None = None
    expected_timestamps: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def neo_recordings() -> Any:
    """shadowzarr-neo's ``tests/neo_recordings`` package, loaded by path under a private name."""
    name = "_shadowzarr_nwb_neo_recordings"
    if name in sys.modules:
        return sys.modules[name]
    folder = NEO_TESTS / "neo_recordings"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _writer(module: str, function: str) -> Callable[..., Any]:
    package = neo_recordings()
    loaded = importlib.import_module(f"{package.__name__}.{module}")
    return getattr(loaded, function)


def ephys_data() -> Path:
    return neo_recordings()._common.ephys_data()


def _neo_series(reader: BaseRawIO, prefix: str, written: dict | None = None) -> list[Series]:
    """Every stream of a NEO reader as an ElectricalSeries, checked against NEO's read (and the
    written values when the test wrote the recording)."""
    series = []
    arrays = virtual_arrays_neo(reader)
    stream_ids = list(reader.header["signal_streams"]["id"])
    for stream_id, array in arrays.items():
        stream_index = stream_ids.index(stream_id)
        expected = reader.get_analogsignal_chunk(0, 0, stream_index=stream_index)
        if written is not None and (0, 0, stream_id) in written:
            np.testing.assert_array_equal(written[0, 0, stream_id], expected)
        series.append(
            Series(
                name=f"{prefix}_{_safe(stream_id)}",
                kind="ephys",
                array=array,
                expected=np.asarray(expected),
                rate=float(array.attributes["sampling_rate"]),
                gain=np.asarray(array.attributes["gain"], dtype=np.float64),
            )
        )
    return series


def _safe(stream_id: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in str(stream_id))


def spikeglx(directory: Path) -> list[Series]:
    write = _writer("spikeglx", "write_spikeglx")
    recording = write(directory / "spikeglx", n_channels=24, n_samples=2_000, segments=1)
    return _neo_series(recording.open(), "spikeglx", recording.signals)


def openephys_binary(directory: Path) -> list[Series]:
    write = _writer("openephys_binary", "write_openephys_binary")
    recording = write(directory / "openephys", n_channels=6, segments=1, blocks=1)
    return _neo_series(recording.open(), "openephys", recording.signals)


def intan(_directory: Path) -> list[Series]:
    reader = IntanRawIO(filename=str(ephys_data() / "intan" / "sampledata.rhd"))
    reader.parse_header()
    return _neo_series(reader, "intan")


def blackrock(_directory: Path) -> list[Series]:
    base = ephys_data() / "blackrock" / "example_2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no NEV file beside the NSx
        reader = BlackrockRawIO(filename=str(base), nsx_to_load=2)
        reader.parse_header()
    return _neo_series(reader, "blackrock")


def brainvision(_directory: Path) -> list[Series]:
    reader = BrainVisionRawIO(filename=str(ephys_data() / "brainvision" / "test.vhdr"))
    reader.parse_header()
    return _neo_series(reader, "brainvision")


def tiff_stack(directory: Path, *, n_frames: int = 12) -> list[Series]:
    """A (page, row, column) uint16 stack as a TwoPhotonSeries (frame, x, y): transposed."""
    rng = np.random.default_rng(7)
    pages = rng.integers(0, 2**16, size=(n_frames, 20, 14), dtype=np.uint16)
    path = directory / "stack.tif"
    path.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(path, pages, photometric="minisblack")
    rfs = generate_rfs_tiff(path)
    stored = VirtualArray.from_rfs(rfs, "0")
    assert stored.shape == pages.shape
    return [
        Series(
            name="TwoPhotonSeries",
            kind="twophoton",
            array=stored.transpose(0, 2, 1),
            expected=pages.transpose(0, 2, 1),
            rate=30.0,
        )
    ]


def hdf5_datasets(directory: Path) -> list[Series]:
    """A compressed chunked float32 dataset as a TimeSeries whose timestamps are a contiguous
    float64 dataset of the same file."""
    rng = np.random.default_rng(11)
    values = rng.normal(size=(1_500, 3)).astype(np.float32)
    times = np.cumsum(rng.uniform(0.001, 0.002, size=1_500))
    path = directory / "signals.h5"
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as file:
        file.create_dataset(
            "values", data=values, chunks=(256, 3), compression="gzip", shuffle=True
        )
        file.create_dataset("times", data=times)
    rfs = generate_rfs(path)
    return [
        Series(
            name="hdf5_series",
            kind="timeseries",
            array=VirtualArray.from_rfs(rfs, "values"),
            expected=values,
            timestamps=VirtualArray.from_rfs(rfs, "times"),
            expected_timestamps=times,
        )
    ]


SOURCES: dict[str, Callable[[Path], list[Series]]] = {
    "spikeglx": spikeglx,
    "openephys-binary": openephys_binary,
    "intan-rhd": intan,
    "blackrock": blackrock,
    "brainvision": brainvision,
    "tiff-stack": tiff_stack,
    "hdf5": hdf5_datasets,
}
