"""References claiming 10**12 chunks or 10**15 elements in a few bytes: listing streams (a
consumer stops when it likes), whatever must hold every key is bounded, and materialize refuses
before writing anything, with the bound in the message and an option to raise it."""

from __future__ import annotations

import json
import time
import tracemalloc
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import zarr
from shadowzarr_spec import UnsupportedFeatureError
from zarr.core.sync import sync

from shadowzarr_store import MaterializeLimitError, listing, materialize, open_rfs

if TYPE_CHECKING:
    from pathlib import Path

GROUP = '{"zarr_format":3,"node_type":"group"}'
VALUES = np.arange(64, dtype="<i4")
TRILLION = 10**12


def _meta(shape: list[int], chunks: list[int], data_type: str = "int32") -> str:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        }
    )


@pytest.fixture
def trillion_chunks(tmp_path: Path) -> Path:
    """A gen entry of 10**12 chunk keys, every one inside its array's grid of 10**12 chunks."""
    data = tmp_path / "data.bin"
    data.write_bytes(VALUES.tobytes())
    document = {
        "version": 1,
        "refs": {"zarr.json": GROUP, "g/zarr.json": _meta([8 * TRILLION], [8])},
        "gen": [
            {
                "key": "g/c/{{i}}",
                "url": str(data),
                "offset": "{{(i % 8) * 32}}",
                "length": "32",
                "dimensions": {"i": {"stop": TRILLION}},
            }
        ],
    }
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(document))
    return path


def _first(store: Any, count: int, prefix: str = "") -> list[str]:
    async def collect() -> list[str]:
        keys: list[str] = []
        async for key in store.list_prefix(prefix):
            keys.append(key)
            if len(keys) == count:
                break
        return keys

    return sync(collect())


def test_listing_10_12_chunks_streams_and_stops_when_the_consumer_does(
    trillion_chunks: Path,
) -> None:
    root = open_rfs(trillion_chunks, grouped_view="auto")
    started = time.perf_counter()
    tracemalloc.start()
    try:
        keys = _first(root.store.stored_view(), 20_000, "g/c/")
        peak = tracemalloc.get_traced_memory()[1]
        # As zarr sees the array: its chunks grouped into shards, the first one listed at once.
        grouped = _first(root.store, 1, "g/c/")
    finally:
        tracemalloc.stop()
    assert keys == [f"g/c/{i}" for i in range(20_000)]
    assert grouped == ["g/c/0"]
    assert peak < 16 * 2**20  # the keys taken, not a list of 10**12
    assert time.perf_counter() - started < 10


def test_a_directory_listing_of_10_12_chunks_is_refused_at_the_bound(
    trillion_chunks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``list_dir`` must hold every name before its first answer: it walks at most
    `MAX_LISTED_GEN_KEYS` keys (lowered here so the test walks 5,000, not 2**20)."""
    monkeypatch.setattr(listing, "MAX_LISTED_GEN_KEYS", 5_000)
    grouped = open_rfs(trillion_chunks, grouped_view="auto").store
    for store in (grouped, grouped.stored_view()):

        async def names(store: Any = store) -> list[str]:
            return [name async for name in store.list_dir("g/c")]

        with pytest.raises(UnsupportedFeatureError, match=r"more than 5000 keys.*stream"):
            sync(names())


def test_materialize_of_10_12_chunks_is_refused_before_writing(
    trillion_chunks: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "copy"
    started = time.perf_counter()
    with pytest.raises(MaterializeLimitError, match=r"'g'.*max_chunks=10000000"):
        materialize(trillion_chunks, destination, progress=False)
    with pytest.raises(MaterializeLimitError, match=r"'g'.*1000000000000 chunks"):
        materialize(trillion_chunks, destination, progress=False, layout=lambda *_: None)
    assert time.perf_counter() - started < 10
    assert not destination.exists()


def test_materialize_of_10_15_elements_is_refused_before_writing(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(bytes(256))
    document = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "a/zarr.json": _meta([10**15], [2**30], "uint8"),
            "a/c/0": [str(data), 0, 256],
        },
    }
    destination = tmp_path / "copy.zip"
    with pytest.raises(MaterializeLimitError, match=r"array 'a' would take \d+ chunks"):
        materialize(document, destination, progress=False)
    assert list(tmp_path.iterdir()) == [data]


def test_max_chunks_is_the_bound_exactly(tmp_path: Path) -> None:
    """20 chunks stored, 20 allowed: copied; 19 allowed: refused. A sparse grid of 10**12
    positions with 2 chunks copies as stored, and is refused only when every position would
    be verified."""
    data = tmp_path / "data.bin"
    data.write_bytes(np.arange(20 * 8, dtype="<i4").tobytes())
    refs = {f"a/c/{i}": [str(data), i * 32, 32] for i in range(20)}
    document = {
        "version": 1,
        "refs": {"zarr.json": GROUP, "a/zarr.json": _meta([160], [8]), **refs},
    }
    as_stored = {"layout": lambda *_: None, "progress": False}
    with pytest.raises(MaterializeLimitError, match="20 chunks"):
        materialize(document, tmp_path / "refused", max_chunks=19, **as_stored)
    materialize(document, tmp_path / "copy", max_chunks=20, verify=True, **as_stored)
    np.testing.assert_array_equal(
        zarr.open_array(tmp_path / "copy", path="a")[:], np.arange(160, dtype="<i4")
    )
    sparse = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "s/zarr.json": _meta([8 * TRILLION], [8]),
            "s/c/0": [str(data), 0, 32],
            f"s/c/{TRILLION - 1}": [str(data), 32, 32],
        },
    }
    materialize(sparse, tmp_path / "sparse", **as_stored)
    copied = zarr.open_array(tmp_path / "sparse", path="s")
    np.testing.assert_array_equal(copied[:8], np.arange(8))
    np.testing.assert_array_equal(copied[-8:], np.arange(8, 16))
    with pytest.raises(MaterializeLimitError, match="1000000000000 chunks"):
        materialize(sparse, tmp_path / "verified", verify=True, **as_stored)
