"""`SlabShardingCodec`: shards whose inner chunks are slabs of the first axis, decoded from the
shard's bytes without zarr's shard-sized copy, and equal to zarr's own decoding everywhere else
(partial reads, gathers, edge shards, missing inner chunks, either byte order)."""

from __future__ import annotations

import asyncio
import json
import pickle

import numpy as np
import pytest
import zarr
from zarr.abc.store import RangeByteRequest
from zarr.codecs import BytesCodec, ShardingCodec
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.registry import get_codec_class
from zarr.storage import MemoryStore

from shadowzarr_store.views.sharded import sharding_codec
from shadowzarr_store.views.slab_shards import (
    _ZARRS,
    SLAB_SHARDING,
    SlabShardingCodec,
    slab_inner_shape,
)

SHAPE, SHARD, INNER = (1000, 6), (256, 6), (32, 6)  # the last shard is cut by the array's end


def _pair(values: np.ndarray, endian: str = "little", missing: slice | None = None, fill=-3):
    """(zarr's standard array, the same bytes read through `SlabShardingCodec`)."""
    store = MemoryStore()
    codec = ShardingCodec(
        chunk_shape=INNER,
        codecs=[BytesCodec(endian=endian)],  # type: ignore[arg-type]
        index_codecs=[BytesCodec()],
        index_location="start",
    )
    written = zarr.create(
        shape=values.shape,
        chunks=SHARD,
        dtype=values.dtype,
        codecs=[codec],
        fill_value=fill,
        store=store,
        zarr_format=3,
    )
    written[...] = values
    if missing is not None:  # inner chunks of the fill alone are not stored: not dense
        written[missing] = fill
    document = json.loads(store._store_dict["zarr.json"].to_bytes())
    assert document["codecs"][0]["name"] == "sharding_indexed"
    document["codecs"][0]["name"] = SLAB_SHARDING
    ours = MemoryStore(dict(store._store_dict))
    prototype = default_buffer_prototype()
    ours._store_dict["zarr.json"] = prototype.buffer.from_bytes(json.dumps(document).encode())
    return zarr.open_array(store, mode="r"), zarr.open_array(ours, mode="r")


VALUES = (np.arange(SHAPE[0] * SHAPE[1]).reshape(SHAPE) * 7 % 1000 - 500).astype("<i4")
SELECTIONS = [
    np.s_[...],
    np.s_[:256],
    np.s_[256:512],
    np.s_[768:],
    np.s_[3:900],
    np.s_[100],
    np.s_[10:300, 2],
    np.s_[::7],
    np.s_[5:6, 1:3],
]


def test_the_codec_is_ours_and_reads_like_zarrs() -> None:
    standard, ours = _pair(VALUES)
    assert type(ours.metadata.codecs[0]) is SlabShardingCodec
    assert type(standard.metadata.codecs[0]) is ShardingCodec
    for selection in SELECTIONS:
        np.testing.assert_array_equal(ours[selection], VALUES[selection])
        np.testing.assert_array_equal(ours[selection], standard[selection])
    rows = np.array([999, 0, 300, 300, 17])
    np.testing.assert_array_equal(ours.oindex[rows, :], VALUES[rows])
    np.testing.assert_array_equal(
        ours.vindex[rows, np.array([0, 5, 2, 2, 1])], VALUES[rows, [0, 5, 2, 2, 1]]
    )


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("dtype", ["<i2", ">f8", "u1", "bool"])
def test_either_byte_order_and_any_fixed_type(endian: str, dtype: str) -> None:
    values = (VALUES % 2 == 0) if dtype == "bool" else VALUES.astype(dtype)
    standard, ours = _pair(values, endian, fill=values.flat[7])
    np.testing.assert_array_equal(ours[...], values)
    np.testing.assert_array_equal(ours[:256], standard[:256])
    assert ours[...].dtype == standard[...].dtype


@pytest.mark.parametrize("missing", [np.s_[288:320], np.s_[256:512]])
def test_a_missing_inner_chunk_or_shard_reads_the_fill_there(missing: slice) -> None:
    """An inner chunk of the fill alone is not stored (the shard is not dense), nor a shard
    of the fill alone (no key at all)."""
    standard, ours = _pair(VALUES, missing=missing)
    expected = VALUES.copy()
    expected[missing] = -3
    np.testing.assert_array_equal(ours[...], expected)
    for selection in (np.s_[256:512], np.s_[280:330], np.s_[320:400], np.s_[290:300]):
        np.testing.assert_array_equal(ours[selection], standard[selection])
        np.testing.assert_array_equal(ours[selection], expected[selection])


class _Getter:
    def __init__(self, blob) -> None:
        self.blob, self.asked = blob, []

    async def get(self, prototype, byte_range=None):
        self.asked.append(byte_range)
        if byte_range is None:
            return self.blob
        return self.blob[byte_range.start : byte_range.end]


def test_a_dense_whole_shard_is_a_view_of_its_bytes() -> None:
    """The point of the codec: no shard-sized array is allocated and filled."""
    _, ours = _pair(VALUES)
    codec = ours.metadata.codecs[0]
    key = "c/0/0"
    blob = ours.store._store_dict[key]
    getter = _Getter(blob)
    shard_spec = ArraySpec(
        shape=SHARD,
        dtype=ours.metadata.data_type,
        fill_value=-3,
        config=ArrayConfig.from_dict({}),
        prototype=default_buffer_prototype(),
    )
    whole = tuple(slice(0, n, 1) for n in SHARD)
    decoded = asyncio.run(codec._decode_partial_single(getter, whole, shard_spec))
    index = 16 * (SHARD[0] // INNER[0])
    assert getter.asked == [RangeByteRequest(0, index), RangeByteRequest(index, len(blob))]
    array = decoded.as_numpy_array()
    np.testing.assert_array_equal(array, VALUES[:256])
    assert np.shares_memory(array, blob.as_numpy_array())
    getter.asked.clear()
    rows = (slice(40, 70, 1), slice(0, SHARD[1], 1))  # inner chunks 1 and 2 alone
    decoded = asyncio.run(codec._decode_partial_single(getter, rows, shard_spec))
    nbytes = 4 * INNER[0] * INNER[1]
    assert getter.asked[1] == RangeByteRequest(index + nbytes, index + 3 * nbytes)
    np.testing.assert_array_equal(decoded.as_numpy_array(), VALUES[40:70])
    assert np.shares_memory(decoded.as_numpy_array(), blob.as_numpy_array())


def test_the_codec_survives_its_document_and_pickling() -> None:
    _, ours = _pair(VALUES)
    codec = ours.metadata.codecs[0]
    document = codec.to_dict()
    assert document["name"] == SLAB_SHARDING
    assert type(get_codec_class(SLAB_SHARDING).from_dict(document)) is SlabShardingCodec
    again = pickle.loads(pickle.dumps(codec))
    assert type(again) is SlabShardingCodec
    assert again == codec


def test_copying_an_array_of_ours_writes_standard_sharding() -> None:
    """zarr.from_array builds its own codecs: our name never reaches a user's new array."""
    _, ours = _pair(VALUES)
    copied = zarr.from_array(MemoryStore(), data=ours)
    assert copied.metadata.to_dict()["codecs"][0]["name"] == "sharding_indexed"
    np.testing.assert_array_equal(copied[...], VALUES)


def test_only_shards_of_plain_slabs_are_named_for_it() -> None:
    plain = [{"name": "bytes", "configuration": {"endian": "little"}}]
    zipped = [*plain, {"name": "gzip", "configuration": {"level": 1}}]
    assert slab_inner_shape([32, 6], [256, 6], plain)
    assert not slab_inner_shape([32, 3], [256, 6], plain)  # not whole along the second axis
    assert not slab_inner_shape([32, 6], [256, 6], zipped)
    assert not slab_inner_shape([30, 6], [256, 6], plain)
    assert sharding_codec([32, 6], plain, [256, 6])["name"] == SLAB_SHARDING
    assert sharding_codec([32, 3], plain, [256, 6])["name"] == "sharding_indexed"


def test_zarrs_reads_of_runs_of_rows_take_the_view(monkeypatch) -> None:
    """arr[...] and arr[a:b, c:d] reach the codec as runs of rows of each shard (the last one
    cut by the end of the array); an integer, a gather or a stride along rows goes to zarr's
    decode."""
    _, ours = _pair(VALUES)
    found: list[bool] = []
    rows = SlabShardingCodec._rows

    async def spy(self, *args):
        value = await rows(self, *args)
        found.append(value is not None and value is not _ZARRS)
        return value

    monkeypatch.setattr(SlabShardingCodec, "_rows", spy)
    np.testing.assert_array_equal(ours[...], VALUES)  # 4 shards
    np.testing.assert_array_equal(ours[300:700], VALUES[300:700])  # 2 shards
    np.testing.assert_array_equal(ours[:, 2:5], VALUES[:, 2:5])  # 4 shards, some columns
    np.testing.assert_array_equal(ours[10:20, ::2], VALUES[10:20, ::2])  # 1 shard, strided
    assert found == [True] * 11
    np.testing.assert_array_equal(ours[:, 2], VALUES[:, 2])  # a column: an integer
    np.testing.assert_array_equal(ours.oindex[[5, 3], :], VALUES[[5, 3]])
    np.testing.assert_array_equal(ours[::3], VALUES[::3])
    assert len(found) == 11


def test_random_runs_of_rows_equal_zarrs() -> None:
    """Bounded fuzz: runs of rows starting and ending anywhere (inside one inner chunk, across
    inner chunks and shards, at the array's cut end), with a hole in one shard."""
    standard, ours = _pair(VALUES, missing=np.s_[544:576])
    rng = np.random.default_rng(25)
    for start, length in zip(rng.integers(0, 1000, 200), rng.integers(1, 400, 200), strict=True):
        first, last = sorted(int(c) for c in rng.integers(0, 7, 2))
        for selection in (
            np.s_[int(start) : int(start) + int(length)],
            np.s_[int(start) : int(start) + int(length), first:last],
            np.s_[int(start) : int(start) + int(length), first : last + 1 : 2],
        ):
            np.testing.assert_array_equal(ours[selection], standard[selection])
