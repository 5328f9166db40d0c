"""References to a sharded array: a shard is checked whole once before zarr's partial reads of
its inner chunks, and only a shard that passes reaches a cache."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import ChunkDecodeError

from shadowzarr_store import MemoryCache, RfsStore

if TYPE_CHECKING:
    from pathlib import Path

SHAPE, SHARD, INNER = 256, 128, 16


def _references(tmp_path: Path, whole: bool = False) -> tuple[dict, np.ndarray, list[Path]]:
    """A zarr-python sharded array (zstd inner chunks) and references to its shard files
    (``whole``: whole-file references, whose size is known only once read)."""
    values = np.random.default_rng(7).integers(0, 50, SHAPE, dtype="<u4")
    written = zarr.create_array(
        zarr.storage.LocalStore(tmp_path / "written.zarr"),
        shape=(SHAPE,),
        chunks=(INNER,),
        shards=(SHARD,),
        dtype="<u4",
        compressors=zarr.codecs.ZstdCodec(level=1),
    )
    written[:] = values
    root = tmp_path / "written.zarr"
    shards = [root / "c" / str(i) for i in range(SHAPE // SHARD)]
    refs: dict[str, object] = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "a/zarr.json": (root / "zarr.json").read_text(),
    }
    for i, shard in enumerate(shards):
        refs[f"a/c/{i}"] = [str(shard)] if whole else [str(shard), 0, shard.stat().st_size]
    return {"version": 1, "refs": refs}, values, shards


def _damage_inner_chunk(shard: Path, number: int) -> None:
    """Flip bytes in the middle of one inner chunk of a shard (its index stays valid)."""
    data = bytearray(shard.read_bytes())
    index = np.frombuffer(bytes(data[-(16 * (SHARD // INNER) + 4) : -4]), dtype="<u8")
    offset, nbytes = (int(v) for v in index.reshape(-1, 2)[number])
    for i in range(offset + nbytes // 2, offset + nbytes):
        data[i] ^= 0x5A
    shard.write_bytes(bytes(data))


def test_inner_chunks_read_back_and_the_shard_is_checked_once(tmp_path: Path) -> None:
    document, values, shards = _references(tmp_path)
    store = RfsStore(document, grouped_view=0)
    array = zarr.open_array(store, path="a", mode="r")
    np.testing.assert_array_equal(array[3:40], values[3:40])
    np.testing.assert_array_equal(array[:], values)  # whole shards, checked as they are read
    first = store.stats.snapshot()
    np.testing.assert_array_equal(array[200:230], values[200:230])
    # a shard that passed is not read whole again for the partial reads of its inner chunks
    assert 0 < store.stats.snapshot().bytes - first.bytes < shards[1].stat().st_size


@pytest.mark.parametrize("whole", [False, True], ids=["range", "whole-file"])
def test_a_damaged_inner_chunk_fails_every_partial_read_and_is_never_cached(
    tmp_path: Path, whole: bool
) -> None:
    document, values, shards = _references(tmp_path, whole)
    _damage_inner_chunk(shards[0], 5)
    cache = MemoryCache()
    store = RfsStore(document, grouped_view=0, memory_cache=cache)
    array = zarr.open_array(store, path="a", mode="r")
    for _ in range(2):  # a failed check is not remembered as passed
        with pytest.raises(ChunkDecodeError, match=r"'a/c/0 \(inner chunk 5\)'"):
            array[0:8]  # an inner chunk that is intact: its shard is not
    assert cache.size_bytes == 0
    np.testing.assert_array_equal(array[SHARD:], values[SHARD:])  # the other shard reads
    assert cache.size_bytes == shards[1].stat().st_size


def test_a_partial_read_of_a_whole_file_shard_reads_it_once(tmp_path: Path) -> None:
    """The shard's bytes are checked whole and the part asked for comes from those bytes."""
    document, values, shards = _references(tmp_path, whole=True)
    store = RfsStore(document, grouped_view=0)
    array = zarr.open_array(store, path="a", mode="r")
    before = store.stats.snapshot()
    np.testing.assert_array_equal(array[130:135], values[130:135])  # index, then one chunk
    after = store.stats.snapshot()
    assert after.bytes - before.bytes == 2 * shards[1].stat().st_size
