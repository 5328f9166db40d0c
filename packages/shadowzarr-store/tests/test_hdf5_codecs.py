"""The HDF5 filter codecs refuse streams that do not fit their chunk, before decoding them
(their equality with h5py is checked in shadowzarr-hdf5's test_plugin_filters)."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pytest
import zarr
from shadowzarr_spec import ChunkDecodeError, UnsupportedFeatureError
from zarr.core.buffer import cpu
from zarr.storage import MemoryStore

from shadowzarr_store.hdf5_codecs import Hdf5Bitshuffle, Hdf5Blosc2, Hdf5ScaleOffset, Hdf5Zfp

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

SCALEOFFSET_I4 = [2, 0, 64, 0, 4, 1, 0, 0, *([0] * 12)]  # integers, 64 per chunk, signed, LE
BITSHUFFLE_LZ4_F4 = [0, 4, 4, 0, 2]
ZFP_4X4_FLOAT_RATE8 = [269504785, 91252346, 4026532086, 133169152]  # an H5Z-ZFP header


def _read(
    codec: dict, chunk: bytes, shape: tuple[int, ...] = (64,), dtype: str = "<i4"
) -> np.ndarray:
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": np.dtype(dtype).name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shape)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, codec],
        "attributes": {},
    }
    key = "c/" + "/".join("0" for _ in shape)
    store = MemoryStore({
        "zarr.json": cpu.Buffer.from_bytes(json.dumps(document).encode()),
        key: cpu.Buffer.from_bytes(chunk),
    })  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[...])


def test_scaleoffset_refuses_a_wider_code_than_its_type() -> None:
    header = (40).to_bytes(4, "little") + bytes([8]) + bytes(16)  # 40-bit codes in 4 bytes
    with pytest.raises(ChunkDecodeError, match="40-bit codes"):
        _read(Hdf5ScaleOffset(cd_values=SCALEOFFSET_I4).to_dict(), header + bytes(400))


def test_scaleoffset_refuses_short_data() -> None:
    header = (12).to_bytes(4, "little") + bytes([8]) + bytes(16)
    with pytest.raises(ChunkDecodeError, match="fewer than 64 values"):
        _read(Hdf5ScaleOffset(cd_values=SCALEOFFSET_I4).to_dict(), header + bytes(10))


def test_scaleoffset_refuses_a_chunk_of_another_size() -> None:
    values = [2, 0, 1_000_000, 0, 4, 1, 0, 0, *([0] * 12)]
    with pytest.raises(ChunkDecodeError, match="1000000 elements"):
        _read(Hdf5ScaleOffset(cd_values=values).to_dict(), bytes(64))


def test_bitshuffle_refuses_a_header_claiming_more_than_the_chunk() -> None:
    bomb = (2**30).to_bytes(8, "big") + (8192).to_bytes(4, "big") + bytes(16)
    with pytest.raises(ChunkDecodeError, match="claims 1073741824 bytes"):
        _read(Hdf5Bitshuffle(cd_values=BITSHUFFLE_LZ4_F4).to_dict(), bomb, dtype="<f4")


def test_bitshuffle_refuses_blocks_past_the_end() -> None:
    stream = (256).to_bytes(8, "big") + (256).to_bytes(4, "big") + (10_000).to_bytes(4, "big")
    with pytest.raises(ChunkDecodeError, match="past the chunk's end"):
        _read(Hdf5Bitshuffle(cd_values=BITSHUFFLE_LZ4_F4).to_dict(), stream, dtype="<f4")


def test_blosc2_refuses_what_is_not_a_frame() -> None:
    with pytest.raises(ChunkDecodeError, match="not a Blosc2 frame"):
        _read(Hdf5Blosc2(cd_values=[1]).to_dict(), bytes(64), dtype="<f4")


def test_zfp_refuses_a_header_for_another_chunk_shape() -> None:
    with pytest.raises(ChunkDecodeError, match="its header holds 256 values"):
        _read(Hdf5Zfp(cd_values=ZFP_4X4_FLOAT_RATE8).to_dict(), bytes(64), dtype="<f4")


def test_missing_library_fails_that_array_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "imagecodecs", None)  # as if it were not installed
    with pytest.raises(UnsupportedFeatureError, match=r"shadowzarr-store\[codecs\]"):
        _read(Hdf5Zfp(cd_values=ZFP_4X4_FLOAT_RATE8).to_dict(), bytes(64), dtype="<f4")


def test_blosc2_reads_a_frame_padded_to_its_inner_chunks() -> None:
    # Writers pick B2ND's inner chunk shape from the CPU's caches (PyTables on one machine:
    # a (13107, 10) chunk in inner chunks of (16384, 10)), so the frame's uncompressed size
    # counts padding beyond the chunk; the decoded values are the chunk's.
    import imagecodecs

    values = np.arange(50 * 10, dtype="<f8").reshape(50, 10)
    frame = imagecodecs.b2nd_encode(values, chunkshape=(64, 16), blockshape=(16, 16))
    read = _read(Hdf5Blosc2(cd_values=[0, 0, 8, 4000, 5, 1, 1]).to_dict(), frame, (50, 10), "<f8")
    np.testing.assert_array_equal(read, values)


def test_blosc2_refuses_a_frame_claiming_far_more_than_the_chunk() -> None:
    import imagecodecs

    frame = imagecodecs.b2nd_encode(np.zeros((200_000,), "<f8"), chunkshape=(200_000,))
    with pytest.raises(ChunkDecodeError, match="the frame claims"):
        _read(Hdf5Blosc2(cd_values=[1]).to_dict(), frame, (64,), "<f8")
