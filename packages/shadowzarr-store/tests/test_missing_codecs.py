"""A codec that is not installed fails only the array that names it, at its first read.

zarr-python parses every array's codecs from consolidated metadata when a group opens; the
store's stand-ins let the group, the array and its metadata open, and the store refuses that
array's chunks, with what to install, before reading a byte. Each test names codecs of its own:
stand-ins stay registered in the process.
"""

from __future__ import annotations

import json
import pickle
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import RfsBuilder, UnsupportedFeatureError, write_rfs
from zarr.codecs import BytesCodec

from shadowzarr_store import RfsStore, open_rfs
from shadowzarr_store.remote import open_remote_array

if TYPE_CHECKING:
    from pathlib import Path

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _references(tmp_path: Path, odd_codecs: list[dict]) -> tuple[Path, np.ndarray]:
    """A directory of references: ``good`` (plain bytes) and ``odd`` (``odd_codecs``), both over
    one raw file."""
    values = np.arange(1200, dtype="<i4").reshape(300, 4)
    source = tmp_path / "values.bin"
    source.write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    for name, codecs in (("good", [BYTES]), ("odd", odd_codecs)):
        builder.add_array(
            name, shape=values.shape, data_type="<i4", chunk_shape=(100, 4), codecs=codecs
        )
        for i in range(3):
            builder.add_chunk(name, (i, 0), str(source), i * 1600, 1600)
    return write_rfs(builder.build(), tmp_path / "refs.shadowzarr"), values


@pytest.mark.parametrize(
    ("odd_codecs", "missing"),
    [
        (
            [BYTES, {"name": "imagecodecs_test_lzf_a", "configuration": {"header": False}}],
            "imagecodecs_test_lzf_a",
        ),
        ([{"name": "imagecodecs_test_jpeg_a"}], "imagecodecs_test_jpeg_a"),  # the serializer
        ([{"name": "imagecodecs_test_pred_a"}, BYTES], "imagecodecs_test_pred_a"),  # array→array
    ],
    ids=["bytes-to-bytes", "array-to-bytes", "array-to-array"],
)
def test_only_the_array_that_needs_the_codec_fails(
    tmp_path: Path, odd_codecs: list[dict], missing: str
) -> None:
    path, values = _references(tmp_path, odd_codecs)
    root = open_rfs(path)  # the group opens, with consolidated metadata naming the codec
    np.testing.assert_array_equal(root["good"][...], values)
    odd = root["odd"]  # and so does the array itself
    assert odd.shape == values.shape
    assert odd.metadata.to_dict()["codecs"][len(odd_codecs) - 1]["name"] in (missing, "bytes")
    store = odd.store
    before = store.stats.snapshot()
    with pytest.raises(UnsupportedFeatureError) as refused:
        odd[:10]
    message = str(refused.value)
    assert "'odd'" in message
    assert missing in message
    assert "pip install imagecodecs-zarr" in message
    assert store.stats.snapshot().bytes == before.bytes  # refused before any read
    np.testing.assert_array_equal(root["good"][100:200], values[100:200])


def test_a_codec_no_package_is_known_for_names_none(tmp_path: Path) -> None:
    # the builder refuses a codec nobody is known to provide: the references are edited after
    path, values = _references(tmp_path, [BYTES, {"name": "imagecodecs_test_b"}])
    document = (path / "refs.json").read_text()
    (path / "refs.json").write_text(document.replace("imagecodecs_test_b", "no_such_codec_b"))
    root = zarr.open_group(RfsStore(path), mode="r")  # RfsStore alone, as NWBZarrIO uses it
    np.testing.assert_array_equal(root["good"][...], values)
    with pytest.raises(UnsupportedFeatureError, match="no_such_codec_b") as refused:
        root["odd"][...]
    assert "install a package that registers it with zarr-python" in str(refused.value)


def test_the_refusal_survives_pickling_and_listing(tmp_path: Path) -> None:
    """A Dask worker gets the store pickled; listing the group opens every array."""
    path, values = _references(tmp_path, [BYTES, {"name": "imagecodecs_test_lzf_c"}])
    store = pickle.loads(pickle.dumps(RfsStore(path)))
    root = zarr.open_group(store, mode="r")
    assert sorted(name for name, _ in root.arrays()) == ["good", "odd"]
    with pytest.raises(UnsupportedFeatureError, match="imagecodecs_test_lzf_c"):
        root["odd"][...]
    np.testing.assert_array_equal(root["good"][...], values)


def test_a_stand_in_decodes_nothing_for_another_store(tmp_path: Path) -> None:
    """The stand-in registered for a missing codec refuses to decode anywhere (a copy of the
    metadata into a plain zarr store, read without RfsStore)."""
    path, _ = _references(tmp_path, [BYTES, {"name": "imagecodecs_test_lzf_d"}])
    odd = open_rfs(path)["odd"]
    copy = zarr.create_array(
        tmp_path / "copy.zarr", shape=(4,), dtype="<i4", serializer=BytesCodec(), zarr_format=3
    )
    copy[...] = 1
    document = odd.metadata.to_dict()
    document.update(
        shape=[4], chunk_grid={"name": "regular", "configuration": {"chunk_shape": [4]}}
    )
    (tmp_path / "copy.zarr" / "zarr.json").write_text(json.dumps(document))
    with pytest.raises(UnsupportedFeatureError, match="imagecodecs_test_lzf_d"):
        zarr.open_array(tmp_path / "copy.zarr", mode="r")[...]


def test_remote_array_opens_and_refuses_at_read(tmp_path: Path) -> None:
    path, values = _references(tmp_path, [BYTES, {"name": "imagecodecs_test_lzf_e"}])
    good = open_remote_array(path, dataset="good", reference_cache=False)
    np.testing.assert_array_equal(good[...], values)
    odd = open_remote_array(path, dataset="odd", reference_cache=False)
    with pytest.raises(UnsupportedFeatureError, match="imagecodecs_test_lzf_e"):
        odd[:5]
