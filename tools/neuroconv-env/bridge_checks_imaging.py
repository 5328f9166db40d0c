"""The NeuroConv bridge for imaging formats against NeuroConv's own conversion: ScanImage (one
and two channels, several files, planes, volumes), Thor, Bruker (planes and volumes) and
Micro-Manager, run inside the NeuroConv environment.

Each file is written here (``imaging_files.py``) with what roiextractors and NeuroConv read from
it. Each check converts it twice (``bridge_checks._check``): NeuroConv's own NWB HDF5 file, and
the virtual file read through NWBZarrIO and exported to HDF5; every dataset is equal except the
creation time. Compressed pages are refused under ``strict=True`` and left to NeuroConv
otherwise.

Run as ``<env>/bin/python -m pytest -c tools/neuroconv-env/pytest.ini
tools/neuroconv-env/bridge_checks_imaging.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# bridge_checks calls allow_zarr3() before anything imports NeuroConv.
checks = _load("_bridge_checks", HERE / "bridge_checks.py")
files = _load("_bridge_imaging_files", HERE / "imaging_files.py")

from shadowzarr_nwb.neuroconv_bridge import NotVirtualizable, virtualize  # noqa: E402

RNG = np.random.default_rng(7)


def _ifds(count: int, dtype: str = "int16") -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=(count, 11, 8), dtype=dtype, endpoint=True)


def _virtual(interface: Any, tmp_path: Path, expected: np.ndarray) -> Any:
    """Check ``interface`` against NeuroConv, then the virtual file's frames against the pages
    written (``expected``, in NWB's (frame, width, height[, plane]) order)."""
    import h5py

    replaced = checks._check(interface, tmp_path, 1)
    (array,) = replaced.values()
    with h5py.File(tmp_path / "virtual.nwb", "r") as file:
        (series,) = file["acquisition"].values()
        np.testing.assert_array_equal(series["data"][()], expected)
    return array


class _Stub:
    """An interface whose conversions are NeuroConv's stub conversions (the first frames)."""

    def __init__(self, interface: Any, samples: int) -> None:
        self._interface = interface
        self._options = {"stub_test": True, "stub_samples": samples}

    def get_metadata(self) -> Any:
        return self._interface.get_metadata()

    def run_conversion(self, **kwargs: Any) -> Any:
        return self._interface.run_conversion(**kwargs, **self._options)

    def create_nwbfile(self, **kwargs: Any) -> Any:
        return self._interface.create_nwbfile(**kwargs, **self._options)


def _nwb_order(frames: np.ndarray) -> np.ndarray:
    """(frame, row, column) pages as NeuroConv writes them: (frame, column, row)."""
    return frames.transpose(0, 2, 1)


def _volumes(pages: np.ndarray) -> np.ndarray:
    """(volume, plane, row, column) as NeuroConv writes them: (volume, column, row, plane)."""
    return pages.transpose(0, 3, 2, 1)


def _refused_or_left(interface: Any, reason: str = "compressed") -> None:
    metadata = interface.get_metadata()
    metadata["NWBFile"]["session_start_time"] = checks.START
    with pytest.raises(NotVirtualizable, match=reason):
        virtualize(interface.create_nwbfile(metadata=metadata))
    assert virtualize(interface.create_nwbfile(metadata=metadata), strict=False) == {}


def test_scanimage_one_channel(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(9)
    path = files.write_scanimage(tmp_path / "session_00001_00001.tif", ifds)
    interface = ScanImageImagingInterface(file_path=path)
    assert _virtual(interface, tmp_path / "out", _nwb_order(ifds)).shape == (9, 8, 11)


@pytest.mark.parametrize("channel", ["Channel 1", "Channel 2"])
def test_scanimage_two_channels(channel: str, tmp_path: Path) -> None:
    """Channels alternate page by page: every other page is one channel's frame."""
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(14)
    path = files.write_scanimage(tmp_path / "two_00001_00001.tif", ifds, channels=2)
    interface = ScanImageImagingInterface(file_path=path, channel_name=channel)
    frames = ifds[int(channel[-1]) - 1 :: 2]
    assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).shape == (7, 8, 11)


def test_scanimage_both_channels_in_one_file(tmp_path: Path) -> None:
    """Both channels converted together (NeuroConv's ConverterPipe): two series, both
    referenced."""
    import h5py
    from neuroconv import ConverterPipe
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(12)
    path = files.write_scanimage(tmp_path / "both_00001_00001.tif", ifds, channels=2)
    interfaces = [
        ScanImageImagingInterface(file_path=path, channel_name=name)
        for name in ("Channel 1", "Channel 2")
    ]
    replaced = checks._check(ConverterPipe(data_interfaces=interfaces), tmp_path / "out", 2)
    assert sorted(replaced) == ["TwoPhotonSeriesChannel1/data", "TwoPhotonSeriesChannel2/data"]
    with h5py.File(tmp_path / "out" / "virtual.nwb", "r") as file:
        for channel in (0, 1):
            data = file[f"acquisition/TwoPhotonSeriesChannel{channel + 1}/data"][()]
            np.testing.assert_array_equal(data, _nwb_order(ifds[channel::2]))


@pytest.mark.parametrize("planes", [1, 3])
def test_stub_conversion(planes: int, tmp_path: Path) -> None:
    """NeuroConv's stub conversion writes the first frames (a sample-sliced extractor)."""
    from neuroconv.datainterfaces import BrukerTiffImagingInterface

    frames = _ifds(4 * planes, "uint16")
    folder = files.write_bruker(tmp_path / "TSeries-005", frames, planes=planes)
    interface = _Stub(BrukerTiffImagingInterface(folder_path=folder), samples=3)
    volumes = frames.reshape(4, planes, 11, 8)[:3]
    expected = _nwb_order(volumes[:, 0]) if planes == 1 else _volumes(volumes)
    assert _virtual(interface, tmp_path / "out", expected).shape == expected.shape


def test_stub_conversion_of_hdf5_movie(tmp_path: Path) -> None:
    import h5py
    from neuroconv.datainterfaces import Hdf5ImagingInterface

    movie = RNG.integers(0, 2**16, size=(1, 10, 11, 8), dtype=np.uint16)
    with h5py.File(tmp_path / "movie.h5", "w") as file:
        file.create_dataset("mov", data=movie, chunks=(1, 4, 11, 8))
    interface = Hdf5ImagingInterface(
        file_path=tmp_path / "movie.h5", mov_field="mov", sampling_frequency=20.0
    )
    expected = _nwb_order(movie[0, :6])
    assert _virtual(_Stub(interface, samples=6), tmp_path / "out", expected).shape == (6, 8, 11)


def test_scanimage_several_files(tmp_path: Path) -> None:
    """An acquisition split into files of six frames (``logFramesPerFile``); NeuroConv reads
    the files it is given (``file_paths``)."""
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(10)
    paths = [
        files.write_scanimage(tmp_path / f"many_00001_0000{k + 1}.tif", part, frames_per_file=6)
        for k, part in enumerate((ifds[:6], ifds[6:]))
    ]
    interface = ScanImageImagingInterface(file_paths=paths)
    assert _virtual(interface, tmp_path / "out", _nwb_order(ifds)).shape == (10, 8, 11)


@pytest.mark.parametrize("slice_sample", [1, None])
def test_scanimage_frames_per_slice(slice_sample: int | None, tmp_path: Path) -> None:
    """Two frames per slice of a two-plane volume: one of them (``slice_sample``), or both as
    separate volumes (``interleave_slice_samples``)."""
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(15)  # three volumes of (2 planes × 2 frames + 1 flyback frame)
    path = files.write_scanimage(
        tmp_path / "fps_00001_00001.tif", ifds, planes=2, frames_per_slice=2, flyback=1
    )
    # (volume, plane, frame of the slice) pages
    pages = ifds.reshape(3, 5, 11, 8)[:, :4].reshape(3, 2, 2, 11, 8)
    if slice_sample is None:
        interface = ScanImageImagingInterface(file_path=path, interleave_slice_samples=True)
        expected = _volumes(pages.transpose(0, 2, 1, 3, 4).reshape(6, 2, 11, 8))
    else:
        interface = ScanImageImagingInterface(file_path=path, slice_sample=slice_sample)
        expected = _volumes(pages[:, :, slice_sample])
    assert _virtual(interface, tmp_path / "out", expected).shape == expected.shape


def test_scanimage_volume(tmp_path: Path) -> None:
    """Three planes and one flyback frame per volume: (volume, width, height, plane)."""
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(16)
    path = files.write_scanimage(tmp_path / "vol_00001_00001.tif", ifds, planes=3, flyback=1)
    interface = ScanImageImagingInterface(file_path=path)
    volumes = _volumes(ifds.reshape(4, 4, 11, 8)[:, :3])
    assert _virtual(interface, tmp_path / "out", volumes).shape == (4, 8, 11, 3)


@pytest.mark.parametrize("plane", [0, 2])
def test_scanimage_plane(plane: int, tmp_path: Path) -> None:
    from neuroconv.datainterfaces import ScanImageImagingInterface

    ifds = _ifds(24)
    path = files.write_scanimage(
        tmp_path / "vol_00001_00001.tif", ifds, channels=2, planes=3, flyback=1
    )
    interface = ScanImageImagingInterface(
        file_path=path, channel_name="Channel 2", plane_index=plane
    )
    # Each volume: (plane or flyback frame, channel) pages, channel fastest.
    frames = ifds.reshape(3, 4, 2, 11, 8)[:, plane, 1]
    assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).shape == (3, 8, 11)


def test_thor(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import ThorImagingInterface

    frames = _ifds(8, "uint16")
    path = files.write_thor(tmp_path / "thor", frames)
    interface = ThorImagingInterface(file_path=path)
    assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).shape == (8, 8, 11)


@pytest.mark.parametrize("planes", [1, 3])
def test_bruker(planes: int, tmp_path: Path) -> None:
    """One single-page OME-TIFF per frame; with planes, one Sequence per volume."""
    from neuroconv.datainterfaces import BrukerTiffImagingInterface

    frames = _ifds(12, "uint16")
    folder = files.write_bruker(tmp_path / "TSeries-001", frames, planes=planes)
    interface = BrukerTiffImagingInterface(folder_path=folder)
    if planes == 1:
        assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).shape == (12, 8, 11)
    else:
        volumes = _volumes(frames.reshape(4, 3, 11, 8))
        assert _virtual(interface, tmp_path / "out", volumes).shape == (4, 8, 11, 3)


@pytest.mark.parametrize("channel", ["ChanA", "ChanB"])
def test_thor_two_channels(channel: str, tmp_path: Path) -> None:
    from neuroconv.datainterfaces import ThorImagingInterface

    frames = _ifds(12, "uint16").reshape(6, 2, 11, 8)
    path = files.write_thor(tmp_path / "thor", frames)
    interface = ThorImagingInterface(file_path=path, channel_name=channel)
    expected = _nwb_order(frames[:, "AB".index(channel[-1])])
    assert _virtual(interface, tmp_path / "out", expected).shape == (6, 8, 11)


def test_thor_big_endian(tmp_path: Path) -> None:
    """Big-endian pages are referenced as they are; NeuroConv writes the same values."""
    from neuroconv.datainterfaces import ThorImagingInterface

    frames = _ifds(5, "uint16")
    path = files.write_thor(tmp_path / "thor", frames, byteorder=">")
    interface = ThorImagingInterface(file_path=path)
    assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).dtype == np.dtype(">u2")


def test_tiled_thor_is_refused_or_copied(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import ThorImagingInterface

    frames = RNG.integers(0, 2**16, size=(3, 32, 48), dtype=np.uint16)
    path = files.write_thor(tmp_path / "thor", frames, tile=(16, 16))
    _refused_or_left(ThorImagingInterface(file_path=path), reason="tiled")


def test_cropped_scanimage_is_refused(tmp_path: Path) -> None:
    """A field of view cut out of each page is not a page: refused."""
    from roiextractors import ScanImageImagingExtractor
    from shadowzarr_nwb.neuroconv_bridge.imaging import imaging_array

    path = files.write_scanimage(tmp_path / "crop_00001_00001.tif", _ifds(4))
    extractor = ScanImageImagingExtractor(file_path=path)
    assert imaging_array(extractor).shape == (4, 8, 11)
    with pytest.raises(NotVirtualizable, match="cropped"):
        imaging_array(extractor.slice_field_of_view(row_start=2, row_end=9))
    # roiextractors' generic crop of another extractor's frames
    thor = files.write_thor(tmp_path / "thor", _ifds(3, "uint16"))
    from roiextractors import ThorTiffImagingExtractor

    with pytest.raises(NotVirtualizable, match="cropped"):
        imaging_array(ThorTiffImagingExtractor(file_path=thor).slice_field_of_view(0, 5, 0, 5))


def _read(array: Any) -> np.ndarray:
    """A VirtualArray's values, read through RfsStore."""
    import zarr
    from shadowzarr_spec import RfsBuilder
    from shadowzarr_store import RfsStore

    builder = RfsBuilder()
    builder.add_group("")
    array.add_to(builder, "frames")
    return np.asarray(zarr.open_array(RfsStore(builder.build()), path="frames", mode="r")[...])


def test_memory_mapped_tiff_stack(tmp_path: Path) -> None:
    """roiextractors' TiffImagingExtractor (not NeuroConv's TIFF interface) reads a stack through
    tifffile's memory map: the map is referenced."""
    import tifffile
    from roiextractors import TiffImagingExtractor
    from shadowzarr_nwb.neuroconv_bridge.imaging import imaging_array

    frames = _ifds(6, "uint16")
    tifffile.imwrite(tmp_path / "stack.tif", frames, photometric="minisblack")
    extractor = TiffImagingExtractor(tmp_path / "stack.tif", sampling_frequency=10.0)
    read = _read(imaging_array(extractor))
    np.testing.assert_array_equal(read, _nwb_order(extractor.get_series()))
    np.testing.assert_array_equal(read, _nwb_order(frames))


def test_extractors_joined_in_time(tmp_path: Path) -> None:
    """roiextractors' MultiImagingExtractor of two recordings: the frames of one, then the
    other's."""
    from roiextractors import MultiImagingExtractor, ThorTiffImagingExtractor
    from shadowzarr_nwb.neuroconv_bridge.imaging import imaging_array

    first, second = _ifds(4, "uint16"), _ifds(3, "uint16")
    joined = MultiImagingExtractor(
        [
            ThorTiffImagingExtractor(files.write_thor(tmp_path / "a", first)),
            ThorTiffImagingExtractor(files.write_thor(tmp_path / "b", second)),
        ]
    )
    read = _read(imaging_array(joined))
    np.testing.assert_array_equal(read, _nwb_order(joined.get_series()))
    np.testing.assert_array_equal(read, _nwb_order(np.concatenate([first, second])))


def test_truncated_scanimage_is_refused(tmp_path: Path) -> None:
    """A last page cut short would read as padding through a reference: refused."""
    from roiextractors import ScanImageImagingExtractor
    from shadowzarr_nwb.neuroconv_bridge.imaging import imaging_array

    path = files.write_scanimage(tmp_path / "cut_00001_00001.tif", _ifds(4))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(NotVirtualizable, match="past the end of the file"):
        imaging_array(ScanImageImagingExtractor(file_path=path))


@pytest.mark.parametrize(("multipage", "channel"), [(False, "Ch2"), (True, "Ch1")])
def test_bruker_two_channels(multipage: bool, channel: str, tmp_path: Path) -> None:
    """Two channels, a file per frame and channel (channels interleaved) or a file per channel
    (its pages the frames)."""
    from neuroconv.datainterfaces import BrukerTiffImagingInterface

    frames = _ifds(10, "uint16").reshape(5, 2, 11, 8)
    folder = files.write_bruker(tmp_path / "TSeries-004", frames, multipage=multipage)
    interface = BrukerTiffImagingInterface(folder_path=folder, channel_name=channel)
    expected = _nwb_order(frames[:, int(channel[-1]) - 1])
    assert _virtual(interface, tmp_path / "out", expected).shape == (5, 8, 11)


@pytest.mark.parametrize("planes", [1, 3])
def test_bruker_deprecated_interfaces(planes: int, tmp_path: Path) -> None:
    """NeuroConv's older Bruker interfaces: one reader per file, joined in time (one plane) or
    one per plane, joined along the planes."""
    from neuroconv.datainterfaces import (
        BrukerTiffMultiPlaneImagingInterface,
        BrukerTiffSinglePlaneImagingInterface,
    )

    frames = _ifds(12, "uint16")
    folder = files.write_bruker(tmp_path / "TSeries-003", frames, planes=planes)
    if planes == 1:
        interface = BrukerTiffSinglePlaneImagingInterface(folder_path=folder)
        assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).shape == (12, 8, 11)
    else:
        interface = BrukerTiffMultiPlaneImagingInterface(folder_path=folder)
        volumes = _volumes(frames.reshape(4, 3, 11, 8))
        assert _virtual(interface, tmp_path / "out", volumes).shape == (4, 8, 11, 3)


@pytest.mark.parametrize("file_count", [1, 2])
def test_micromanager(file_count: int, tmp_path: Path) -> None:
    from neuroconv.datainterfaces import MicroManagerTiffImagingInterface

    frames = _ifds(7, "uint16")
    folder = files.write_micromanager(tmp_path / "mm", frames, files=file_count)
    interface = MicroManagerTiffImagingInterface(folder_path=folder)
    assert len(interface.imaging_extractor._imaging_extractors) == file_count
    assert _virtual(interface, tmp_path / "out", _nwb_order(frames)).shape == (7, 8, 11)


def test_compressed_bruker_is_refused_or_copied(tmp_path: Path) -> None:
    from neuroconv.datainterfaces import BrukerTiffImagingInterface

    folder = files.write_bruker(tmp_path / "TSeries-002", _ifds(4, "uint16"), compression="zlib")
    _refused_or_left(BrukerTiffImagingInterface(folder_path=folder))
