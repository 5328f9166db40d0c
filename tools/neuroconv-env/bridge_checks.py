"""The NeuroConv bridge against NeuroConv's own conversion, run inside the NeuroConv environment.

For each source, one NeuroConv interface builds the NWB file twice from the same metadata: once
written by NeuroConv to NWB HDF5 (copying the data), once virtualized, written as references,
read through NWBZarrIO and exported to NWB HDF5. Every dataset of the two files is equal except
the file's creation time.

Run by ``tests-integration/test_neuroconv_bridge.py`` as ``<env>/bin/python -m pytest -c
tools/neuroconv-env/pytest.ini tools/neuroconv-env/bridge_checks.py``.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shadowzarr_nwb.neuroconv_bridge import NotVirtualizable, allow_zarr3, virtualize

allow_zarr3()

from hdmf_zarr import NWBZarrIO  # noqa: E402
from pynwb import NWBHDF5IO  # noqa: E402
from shadowzarr_nwb import write_virtual_nwb  # noqa: E402
from shadowzarr_spec import read_local_rfs  # noqa: E402
from shadowzarr_store import RfsStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NWB_TESTS = ROOT / "packages" / "shadowzarr-nwb" / "tests"
START = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def _load(name: str, path: Path, package: bool = False) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    locations = [str(path.parent)] if package else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=locations)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


compare = _load("_bridge_nwb_compare_files", NWB_TESTS / "nwb_compare_files.py")
recordings = _load(
    "_bridge_neo_recordings",
    ROOT / "packages" / "shadowzarr-neo" / "tests" / "neo_recordings" / "__init__.py",
    package=True,
)


def _writer(module: str, function: str) -> Any:
    return getattr(importlib.import_module(f"{recordings.__name__}.{module}"), function)


def _convert_both(interface: Any, tmp_path: Path) -> tuple[Path, Path, dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    metadata = interface.get_metadata()
    metadata["NWBFile"]["session_start_time"] = START
    metadata["NWBFile"].setdefault("session_description", "bridge test")
    ordinary = tmp_path / "neuroconv.nwb"
    interface.run_conversion(nwbfile_path=ordinary, metadata=metadata, overwrite=True)
    nwbfile = interface.create_nwbfile(metadata=metadata)
    nwbfile.fields["file_create_date"] = [START]
    replaced = virtualize(nwbfile)
    refs = write_virtual_nwb(nwbfile, tmp_path / "virtual.nwb.shadowzarr")
    exported = tmp_path / "virtual.nwb"
    with NWBZarrIO(RfsStore(read_local_rfs(refs)), mode="r") as io:
        read = io.read()
        with NWBHDF5IO(str(exported), mode="w") as out:
            out.export(src_io=io, nwbfile=read, write_args={"link_data": False})
    return ordinary, exported, replaced


def _inspection(nwbfile: Any) -> set[tuple[str, str, str]]:
    """nwbinspector's findings: (importance, check, object location)."""
    from nwbinspector import inspect_nwbfile_object

    return {
        (m.importance.name, m.check_function_name, str(m.location))
        for m in inspect_nwbfile_object(nwbfile)
        if m is not None
    }


def _check_inspection(ordinary: Path, refs: Path) -> None:
    """The virtual file gets no finding that NeuroConv's own file does not get.

    Aside: findings about the data's storage (chunking, compression; nwbinspector 0.7.2 fails
    evaluating its compression checks on any Zarr v3 array, reading ``compressor``) and about
    the file name (a reference file system is not named ``*.nwb``).
    """
    with NWBHDF5IO(str(ordinary), mode="r") as io:
        theirs = _inspection(io.read())
    with NWBZarrIO(RfsStore(read_local_rfs(refs)), mode="r") as io:
        ours = _inspection(io.read())
    aside = ("compression", "chunk", "file_extension")
    new = {f for f in ours - theirs if not any(word in f[1] for word in aside)}
    assert not new, new
    assert ours, "nwbinspector found nothing at all: did it run?"


def _check(interface: Any, tmp_path: Path, expected_virtual: int) -> dict:
    ordinary, exported, replaced = _convert_both(interface, tmp_path)
    assert len(replaced) == expected_virtual, replaced
    _check_inspection(ordinary, tmp_path / "virtual.nwb.shadowzarr")
    theirs = compare.hdf5_datasets(ordinary)
    ours = compare.hdf5_datasets(exported)
    compare.assert_same_datasets(ours, theirs)
    for name in replaced:
        series = name.split("/")[0]
        path = next(p for p in theirs if p.endswith(f"/{series}/data"))
        assert np.asarray(theirs[path]).size > 0
    return replaced


def _spikeglx(directory: Path) -> Path:
    write = _writer("spikeglx", "write_spikeglx")
    write(directory, n_channels=16, n_samples=3_000, segments=1)
    # NeuroConv takes the session start from the meta file.
    for meta in directory.glob("*.meta"):
        meta.write_text(meta.read_text() + "fileCreateTime=2026-01-02T03:04:05\n")
    return directory


@pytest.mark.parametrize("stream_id", ["imec0.ap", "imec0.lf"])
def test_spikeglx(stream_id: str, tmp_path: Path) -> None:
    from neuroconv.datainterfaces import SpikeGLXRecordingInterface

    folder = _spikeglx(tmp_path / "spikeglx")
    interface = SpikeGLXRecordingInterface(folder_path=folder, stream_id=stream_id)
    _check(interface, tmp_path, 1)


def test_spikeglx_nidq(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import SpikeGLXNIDQInterface

    folder = _spikeglx(tmp_path / "spikeglx")
    interface = SpikeGLXNIDQInterface(folder_path=folder)
    _check(interface, tmp_path, 1)


def test_openephys_binary(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import OpenEphysBinaryRecordingInterface

    write = _writer("openephys_binary", "write_openephys_binary")
    write(tmp_path / "oe", n_channels=6, segments=1, blocks=1)
    folder = next((tmp_path / "oe").rglob("structure.oebin")).parents[2]
    # NeuroConv recognises a record node by its settings file, which NEO does not need.
    (folder / "settings.xml").write_text(
        "<SETTINGS><INFO><VERSION>0.6.7</VERSION><DATE>2 Jan 2026 03:04:05</DATE></INFO></SETTINGS>"
    )
    names = OpenEphysBinaryRecordingInterface.get_stream_names(folder_path=folder)
    checked = 0
    for k, name in enumerate(names):
        interface = OpenEphysBinaryRecordingInterface(folder_path=folder, stream_name=name)
        if not len(interface.recording_extractor.get_channel_ids()):
            continue  # SpikeInterface shows the ADC stream without channels
        _check(interface, tmp_path / f"stream{k}", 1)
        checked += 1
    assert checked >= 2


def test_intan(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import IntanRecordingInterface

    path = recordings._common.ephys_data() / "intan" / "sampledata.rhd"
    interface = IntanRecordingInterface(file_path=path)
    _check(interface, tmp_path, 1)


def test_tiff_stack(tmp_path: Path) -> None:
    import tifffile
    from neuroconv.datainterfaces import TiffImagingInterface

    rng = np.random.default_rng(5)
    frames = rng.integers(0, 2**16, size=(9, 24, 17), dtype=np.uint16)
    path = tmp_path / "stack.tif"
    tifffile.imwrite(path, frames, photometric="minisblack")
    interface = TiffImagingInterface(file_path=path, sampling_frequency=30.0)
    replaced = _check(interface, tmp_path, 1)
    (array,) = replaced.values()
    assert array.shape == (9, 17, 24)


def test_compressed_tiff_is_refused_or_copied(tmp_path: Path) -> None:
    import tifffile
    from neuroconv.datainterfaces import TiffImagingInterface

    frames = np.arange(4 * 8 * 8, dtype=np.uint16).reshape(4, 8, 8)
    path = tmp_path / "deflate.tif"
    tifffile.imwrite(path, frames, photometric="minisblack", compression="zlib")
    interface = TiffImagingInterface(file_path=path, sampling_frequency=10.0)
    metadata = interface.get_metadata()
    metadata["NWBFile"]["session_start_time"] = START
    with pytest.raises(NotVirtualizable, match="compressed"):
        virtualize(interface.create_nwbfile(metadata=metadata))
    nwbfile = interface.create_nwbfile(metadata=metadata)
    assert virtualize(nwbfile, strict=False) == {}


@pytest.mark.parametrize("source", ["spikeglx", "intan-rhd", "tiff-stack", "hdf5"])
def test_write_virtual_nwb_inspection(source: str, tmp_path: Path) -> None:
    """Files write_virtual_nwb writes from VirtualArrays get nwbinspector's findings of an
    ordinary conversion of the same values, no more."""
    if str(NWB_TESTS) not in sys.path:  # the NWB tests' helpers, under their own names
        sys.path.insert(0, str(NWB_TESTS))
    sources = importlib.import_module("nwb_sources")
    nwb_files = importlib.import_module("nwb_files")
    series = sources.SOURCES[source](tmp_path / "sources")
    refs = write_virtual_nwb(nwb_files.build_nwbfile(series, virtual=True), tmp_path / "v")
    ordinary = tmp_path / "ordinary.nwb"
    with NWBHDF5IO(str(ordinary), mode="w") as io:
        io.write(nwb_files.build_nwbfile(series, virtual=False))
    _check_inspection(ordinary, refs)


def test_blackrock(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import BlackrockRecordingInterface

    path = recordings._common.ephys_data() / "blackrock" / "example_2.ns2"
    interface = BlackrockRecordingInterface(file_path=path)
    _check(interface, tmp_path, 1)


def test_whitematter(tmp_path: Path) -> None:
    """A binary recording SpikeInterface reads with an offset (8-byte header)."""
    from neuroconv.datainterfaces import WhiteMatterRecordingInterface

    rng = np.random.default_rng(2)
    samples = rng.integers(-(2**15), 2**15, size=(2_500, 8), dtype="<i2")
    path = tmp_path / "HSW_2026_01_02__03_04_05__01min_00sec__hsamp_64ch_25000sps.bin"
    path.write_bytes(b"\x00" * 8 + samples.tobytes())
    interface = WhiteMatterRecordingInterface(
        file_path=path, sampling_frequency=25_000.0, num_channels=8
    )
    _check(interface, tmp_path, 1)


def test_wav_audio(tmp_path: Path) -> None:
    """NeuroConv reads WAV files as memory maps: the map is referenced."""
    import scipy.io.wavfile
    from neuroconv.datainterfaces import AudioInterface

    rng = np.random.default_rng(9)
    samples = rng.integers(-(2**15), 2**15, size=(4_000, 2), dtype="<i2")
    path = tmp_path / "song.wav"
    scipy.io.wavfile.write(path, 16_000, samples)
    interface = AudioInterface(file_paths=[path])
    replaced = _check(interface, tmp_path, 1)
    (array,) = replaced.values()
    assert array.shape == samples.shape


def test_openephys_legacy(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import OpenEphysLegacyRecordingInterface

    write = _writer("openephys_legacy", "write_openephys_legacy")
    folder = write(tmp_path / "legacy", segments=1).reader_kwargs["dirname"]
    names = OpenEphysLegacyRecordingInterface.get_stream_names(folder_path=folder)
    for k, name in enumerate(names):
        interface = OpenEphysLegacyRecordingInterface(folder_path=folder, stream_name=name)
        _check(interface, tmp_path / f"stream{k}", 1)


def test_spikegadgets(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import SpikeGadgetsRecordingInterface

    recording = _writer("spikegadgets", "write_spikegadgets")(tmp_path / "sg")
    interface = SpikeGadgetsRecordingInterface(file_path=recording.reader_kwargs["filename"])
    _check(interface, tmp_path / "out", 1)


def test_mcs_raw(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import MCSRawRecordingInterface

    recording = _writer("rawmcs", "write_rawmcs")(tmp_path / "mcs")
    interface = MCSRawRecordingInterface(file_path=recording.reader_kwargs["filename"])
    _check(interface, tmp_path / "out", 1)


def test_hdf5_movie(tmp_path: Path) -> None:
    import h5py
    from neuroconv.datainterfaces import Hdf5ImagingInterface

    rng = np.random.default_rng(4)
    movie = rng.integers(0, 2**16, size=(1, 10, 12, 9), dtype=np.uint16)
    path = tmp_path / "movie.h5"
    with h5py.File(path, "w") as file:
        file.create_dataset("mov", data=movie)
    interface = Hdf5ImagingInterface(file_path=path, mov_field="mov", sampling_frequency=20.0)
    replaced = _check(interface, tmp_path, 1)
    (array,) = replaced.values()
    assert array.shape == (10, 9, 12)


@pytest.mark.parametrize("inverted", [True, False])
def test_neuralynx(inverted: bool, tmp_path: Path) -> None:
    """An inverted input has negative gains, and SpikeInterface negates the samples it reads: the
    file NeuroConv writes holds other values than the recording, so it is refused."""
    from neuroconv.datainterfaces import NeuralynxRecordingInterface

    write = _writer("neuralynx", "write_neuralynx")
    folder = tmp_path / "nlx"
    write(folder, segments=1, inverted=inverted, last_valid=512)
    interface = NeuralynxRecordingInterface(folder_path=folder)
    if not inverted:
        _check(interface, tmp_path / "out", 1)
        return
    metadata = interface.get_metadata()
    metadata["NWBFile"]["session_start_time"] = START
    with pytest.raises(NotVirtualizable, match="inverted"):
        virtualize(interface.create_nwbfile(metadata=metadata))
    assert virtualize(interface.create_nwbfile(metadata=metadata), strict=False) == {}


def test_edf(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import EDFRecordingInterface

    # One channel: NeuroConv refuses channels with different offsets in one ElectricalSeries.
    write = _writer("edf", "write_edf")
    recording = write(tmp_path / "edf", n_channels=1, fast=200, slow=200)
    interface = EDFRecordingInterface(file_path=recording.reader_kwargs["filename"])
    _check(interface, tmp_path / "out", 1)


@pytest.mark.parametrize("storage", ["contiguous", "chunked-gzip"])
def test_mearec(storage: str, tmp_path: Path) -> None:
    """MEArec's own writer; the chunked, compressed file is referenced with its codecs."""
    from neuroconv.datainterfaces import MEArecRecordingInterface

    options = {"chunks": (500, 3), "compression": "gzip"} if storage == "chunked-gzip" else {}
    recording = _writer("mearec", "write_mearec")(tmp_path / "mearec", **options)
    interface = MEArecRecordingInterface(file_path=recording.reader_kwargs["filename"])
    replaced = _check(interface, tmp_path / "out", 1)
    (array,) = replaced.values()
    codecs = [codec["name"] for codec in array.codecs]
    assert ("numcodecs.zlib" in codecs) == (storage == "chunked-gzip"), codecs


def test_mearec_filter_without_codec_is_refused_or_copied(tmp_path: Path) -> None:
    """SZ3 (hdf5plugin, lossy) has no Zarr codec: refused with strict, otherwise NeuroConv's
    iterator stays and write_virtual_nwb copies its values (as HDF5 decodes them)."""
    import h5py
    import hdf5plugin
    from neuroconv.datainterfaces import MEArecRecordingInterface

    recording = _writer("mearec", "write_mearec")(
        tmp_path / "mearec", chunks=(500, 7), filters=dict(hdf5plugin.SZ3(absolute=0.5))
    )
    interface = MEArecRecordingInterface(file_path=recording.reader_kwargs["filename"])
    metadata = interface.get_metadata()
    metadata["NWBFile"]["session_start_time"] = START
    with pytest.raises(NotVirtualizable, match="32024"):
        virtualize(interface.create_nwbfile(metadata=metadata))
    nwbfile = interface.create_nwbfile(metadata=metadata)
    assert virtualize(nwbfile, strict=False) == {}
    refs = write_virtual_nwb(nwbfile, tmp_path / "virtual.nwb.shadowzarr")
    with NWBZarrIO(RfsStore(read_local_rfs(refs)), mode="r") as io:
        data = io.read().acquisition["ElectricalSeries"].data[:]
    with h5py.File(recording.reader_kwargs["filename"]) as f:
        decoded = f["recordings"][: len(data)]
    np.testing.assert_array_equal(data, decoded)


@pytest.mark.parametrize("storage", ["contiguous", "chunked-gzip"])
def test_biocam(storage: str, tmp_path: Path) -> None:
    """BRW 3.x, flat; chunked with gzip, each chunk of ten frames becomes a block of frames."""
    from neuroconv.datainterfaces import BiocamRecordingInterface

    options = {"chunks": 160, "compression": "gzip"} if storage == "chunked-gzip" else {}
    recording = _writer("biocam", "write_biocam")(tmp_path / "biocam", n_channels=16, **options)
    interface = BiocamRecordingInterface(file_path=recording.reader_kwargs["filename"])
    replaced = _check(interface, tmp_path / "out", 1)
    (array,) = replaced.values()
    codecs = [codec["name"] for codec in array.codecs]
    assert ("numcodecs.zlib" in codecs) == (storage == "chunked-gzip"), codecs


def test_inverted_biocam_is_refused_or_copied(tmp_path: Path) -> None:
    """NEO turns an inverted BioCam recording's values back: the file does not hold them."""
    from neuroconv.datainterfaces import BiocamRecordingInterface

    recording = _writer("biocam", "write_biocam")(tmp_path / "biocam", inverted=True)
    interface = BiocamRecordingInterface(file_path=recording.reader_kwargs["filename"])
    metadata = interface.get_metadata()
    metadata["NWBFile"]["session_start_time"] = START
    with pytest.raises(NotVirtualizable, match="inverted"):
        virtualize(interface.create_nwbfile(metadata=metadata))
    nwbfile = interface.create_nwbfile(metadata=metadata)
    assert virtualize(nwbfile, strict=False) == {}
    series = nwbfile.acquisition["ElectricalSeries"]
    assert hasattr(series.data, "recording")  # still NeuroConv's iterator, copied on write


def test_neuroscope(tmp_path: Path) -> None:
    """NeuroConv keeps the channels the XML lists for spike detection (not the auxiliary one):
    a column selection of the interleaved file."""
    from neuroconv.datainterfaces import NeuroScopeRecordingInterface

    recording = _writer("neuroscope", "write_neuroscope")(tmp_path / "session", n_channels=11)
    (dat,) = recording.files
    interface = NeuroScopeRecordingInterface(file_path=dat)
    assert interface.recording_extractor.get_num_channels() == 10
    replaced = _check(interface, tmp_path / "out", 1)
    (array,) = replaced.values()
    assert array.shape[1] == 10


def _cellexplorer_session(folder: Path, n_channels: int, dtype: str) -> None:
    """``<session>.session.mat`` as CellExplorer writes it (MATLAB struct ``session``)."""
    import scipy.io

    groups = np.empty(2, dtype=object)
    half = n_channels // 2
    groups[0] = np.arange(1, half + 1, dtype=float)
    groups[1] = np.arange(half + 1, n_channels + 1, dtype=float)
    session = {
        "general": {"name": folder.name},
        "extracellular": {
            "nChannels": float(n_channels),
            "sr": 20_000.0,
            "srLfp": 1_250.0,
            "precision": dtype,
            "leastSignificantBit": 0.195,
            "chanCoords": {
                "x": np.zeros(n_channels),
                "y": 20.0 * np.arange(n_channels),
            },
            "electrodeGroups": {"channels": groups},
        },
    }
    scipy.io.savemat(folder / f"{folder.name}.session.mat", {"session": session})


def test_cellexplorer(tmp_path: Path) -> None:
    """CellExplorer's ``<session>.dat``: interleaved samples read as a binary recording, with
    the session metadata from ``<session>.session.mat``. (NeuroConv 0.10.2's own conversion of
    the ``.lfp`` file fails, passing ``starting_time`` to ``add_to_nwbfile``.)"""
    from neuroconv.datainterfaces import CellExplorerRecordingInterface

    folder = tmp_path / "session1"
    folder.mkdir()
    rng = np.random.default_rng(11)
    samples = rng.integers(-(2**15), 2**15, size=(3_001, 6), dtype="<i2")
    (folder / f"{folder.name}.dat").write_bytes(samples.tobytes())
    _cellexplorer_session(folder, 6, "int16")
    interface = CellExplorerRecordingInterface(folder_path=folder)
    replaced = _check(interface, tmp_path / "out", 1)
    (array,) = replaced.values()
    assert array.shape == samples.shape
