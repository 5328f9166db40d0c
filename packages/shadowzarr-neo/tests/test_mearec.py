"""MEArec through the HDF5 generator: the stream keeps the file's chunks and codecs, points at
the URL it is given, and a dataset NEO would read in another layout is refused."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from neo_recordings.mearec import write_mearec
from shadowzarr_spec import RfsBuilder
from shadowzarr_spec.errors import NotVirtualizable
from shadowzarr_store import open_rfs

from shadowzarr_neo import virtual_arrays_neo


@pytest.mark.network
def test_compressed_mearec_over_http(nginx, nginx_root: Path) -> None:
    recording = write_mearec(
        nginx_root / "mearec", chunks=(256, 4), compression="gzip", n_samples=2_000
    )
    reader = recording.open()
    (array,) = virtual_arrays_neo(
        reader, url_for=lambda p: nginx.url(str(Path(p).relative_to(nginx_root)))
    ).values()
    assert [c["name"] for c in array.codecs] == ["bytes", "numcodecs.zlib"]
    assert array.chunk_shape == (256, 4)
    builder = RfsBuilder()
    builder.add_group("")
    array.add_to(builder, "mearec", dimension_names=["time", "channel"])
    rfs = builder.build()
    urls = {ref.url for ref in rfs.refs.values() if hasattr(ref, "url")}
    assert urls == {nginx.url("mearec/recording.h5")}
    nginx.reset()
    stored = open_rfs(rfs)["mearec"]
    np.testing.assert_array_equal(stored[:], reader.get_analogsignal_chunk(0, 0, None, None, 0))
    assert nginx.count("GET", "mearec/recording.h5") >= 1
    assert dict(stored.attrs)["channel_ids"] == [str(c) for c in range(1, 8)]


def test_channels_by_samples_is_refused(tmp_path: Path) -> None:
    """Files older than MEArec 1.5 stored channels by samples; NEO would read them as rows."""
    recording = write_mearec(tmp_path, n_samples=500)
    (path,) = recording.files
    with h5py.File(path, "a") as f:
        data = f["recordings"][:]
        del f["recordings"]
        f.create_dataset("recordings", data=np.ascontiguousarray(data.T))
    reader = recording.open()
    with pytest.raises(NotVirtualizable, match="columns"):
        virtual_arrays_neo(reader)


def test_filter_without_a_codec_is_refused(tmp_path: Path) -> None:
    """SZ3 (hdf5plugin, lossy) has no Zarr codec: NotVirtualizable, naming the dataset."""
    import hdf5plugin

    filters = dict(hdf5plugin.SZ3(absolute=0.5))
    recording = write_mearec(tmp_path, chunks=(100, 7), filters=filters, n_samples=500)
    with pytest.raises(NotVirtualizable, match=r"recordings.*32024"):
        virtual_arrays_neo(recording.open())


def test_scale_offset_recording_is_referenced(tmp_path: Path) -> None:
    """HDF5's scale-offset filter reads through shadowzarr-store's codec, equal to NEO."""
    recording = write_mearec(tmp_path, chunks=(100, 7), scaleoffset=0, n_samples=500)
    reader = recording.open()
    (array,) = virtual_arrays_neo(reader).values()
    assert "shadowzarr.hdf5_scaleoffset" in [codec["name"] for codec in array.codecs]
    builder = RfsBuilder()
    builder.add_group("")
    array.add_to(builder, "mearec")
    stored = open_rfs(builder.build())["mearec"]
    np.testing.assert_array_equal(stored[:], reader.get_analogsignal_chunk(0, 0, None, None, 0))
