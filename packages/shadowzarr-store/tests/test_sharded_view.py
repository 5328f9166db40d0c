"""The sharded view: zarr reads one row of a large uncompressed chunk by fetching one block."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import read_local_rfs
from store_handmade import array_meta
from zarr.codecs import ShardingCodec

from shadowzarr_store import RfsStore, open_rfs
from shadowzarr_store.views.slab_shards import SlabShardingCodec

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network
ROWS, CHANNELS = 30_000, 16


def _document(url_plain: str, url_records: str, consolidated: bool) -> dict:
    arrays = {
        "plain": array_meta([ROWS, CHANNELS], [20_000, CHANNELS], "int16", fill=-9),
        "picked": array_meta([ROWS, CHANNELS], [20_000, CHANNELS], "int16"),
        "small": array_meta([100, CHANNELS], [100, CHANNELS], "int16"),
    }
    root: dict = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    if consolidated:
        root["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": {name: json.loads(text) for name, text in arrays.items()},
        }
    refs = {"zarr.json": json.dumps(root)}
    refs.update({f"{name}/zarr.json": text for name, text in arrays.items()})
    chunk = 20_000 * CHANNELS * 2
    refs["plain/c/0/0"] = [url_plain, 0, chunk]
    last = ROWS - 20_000  # the short last chunks hold the rows there are: padded past them
    refs["plain/c/1/0"] = [url_plain, chunk, last * CHANNELS * 2]
    record = CHANNELS * 2 + 2
    refs["picked/c/0/0"] = [url_records, 0, 20_000 * record]
    refs["picked/c/1/0"] = [url_records, 20_000 * record, last * record]
    refs["small/c/0/0"] = [url_plain, 0, 100 * CHANNELS * 2]
    return {
        "version": 2,
        "refs": refs,
        "selections": {"picked": {"record_size": record, "keep": [[0, CHANNELS * 2]]}},
        "sources": {
            url_plain: {"size": ROWS * CHANNELS * 2},
            url_records: {"size": ROWS * record},
        },
    }


@pytest.fixture
def data(nginx_root: Path) -> np.ndarray:
    values = np.random.default_rng(1).integers(-999, 999, (ROWS, CHANNELS + 1), dtype="<i2")
    (nginx_root / "plain.bin").write_bytes(np.ascontiguousarray(values[:, :CHANNELS]).tobytes())
    (nginx_root / "records.bin").write_bytes(values.tobytes())
    return values[:, :CHANNELS]


@pytest.mark.parametrize("consolidated", [False, True])
def test_one_row_reads_one_block(nginx: NginxServer, data: np.ndarray, consolidated: bool) -> None:
    document = _document(nginx.url("plain.bin"), nginx.url("records.bin"), consolidated)
    root = open_rfs(document, sharded_view=8192)
    plain, picked = root["plain"], root["picked"]
    assert plain.shards == (20_000, CHANNELS)
    assert plain.chunks == (250, CHANNELS)  # the largest divisor of 20,000 within 8 KiB of rows
    assert root["small"].shards is None  # small chunks stay plain
    assert type(plain.metadata.codecs[0]) is SlabShardingCodec  # blocks of rows, plain bytes
    nginx.reset()
    np.testing.assert_array_equal(plain[5000, :], data[5000])
    assert (nginx.count(), nginx.bytes_sent()) == (1, 250 * CHANNELS * 2)
    nginx.reset()
    np.testing.assert_array_equal(picked[25_001, 3:5], data[25_001, 3:5])
    assert (nginx.count(), nginx.bytes_sent()) == (1, 250 * (CHANNELS * 2 + 2))
    nginx.reset()
    np.testing.assert_array_equal(plain[1200:1300], data[1200:1300])
    assert nginx.bytes_sent() == 2 * 250 * CHANNELS * 2
    # The short last shard: its blocks past the array's end are padding zarr never shows.
    np.testing.assert_array_equal(plain[29_990:30_010, 0], data[29_990:, 0])


def test_whole_arrays_match_the_plain_view(nginx: NginxServer, data: np.ndarray) -> None:
    document = _document(nginx.url("plain.bin"), nginx.url("records.bin"), consolidated=True)
    expected = data
    for options in ({}, {"sharded_view": 8192}, {"sharded_view": 100_000}):
        root = open_rfs(document, **options)
        np.testing.assert_array_equal(root["plain"][:], expected)
        np.testing.assert_array_equal(root["picked"][:], data)
        np.testing.assert_array_equal(root["plain"][::997, 3], expected[::997, 3])


def test_missing_shard_reads_as_fill(nginx: NginxServer, data: np.ndarray) -> None:
    document = _document(nginx.url("plain.bin"), nginx.url("records.bin"), consolidated=False)
    del document["refs"]["plain/c/1/0"]
    store = RfsStore(read_local_rfs(document), sharded_view=8192)
    plain = zarr.open_array(store, path="plain", mode="r")
    np.testing.assert_array_equal(plain[25_000], np.full(CHANNELS, -9, dtype="<i2"))
    np.testing.assert_array_equal(plain[19_999], data[19_999])


def test_auto_shows_chunks_of_2_mib_and_more_in_1_mib_blocks(nginx: NginxServer) -> None:
    rows, channels = 20_000, 128  # one chunk of 5.12 MB; the small array's 1.28 MB stay plain
    values = np.random.default_rng(2).integers(-999, 999, (rows, channels), dtype="<i2")
    (nginx.root / "wide.bin").write_bytes(values.tobytes())
    url = nginx.url("wide.bin")
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "wide/zarr.json": array_meta([rows, channels], [rows, channels], "int16"),
        "narrow/zarr.json": array_meta([rows, 32], [rows, 32], "int16"),
        "wide/c/0/0": [url, 0, values.nbytes],
        "narrow/c/0/0": [url, 0, rows * 32 * 2],
    }
    root = open_rfs({"version": 1, "refs": refs}, sharded_view="auto")
    wide = root["wide"]
    assert wide.chunks == (4000, channels)  # the largest divisor of 20,000 within 1 MiB of rows
    assert root["narrow"].shards is None
    nginx.reset()
    np.testing.assert_array_equal(wide[12_345], values[12_345])
    assert (nginx.count(), nginx.bytes_sent()) == (1, 4000 * channels * 2)
    np.testing.assert_array_equal(wide[:], values)
    expected = values.reshape(-1)[: rows * 32].reshape(rows, 32)
    np.testing.assert_array_equal(root["narrow"][:], expected)


def test_transposed_chunks_are_split_along_the_stored_slowest_axis(nginx: NginxServer) -> None:
    """A channel-major file read as (time, channel): each block is one channel's samples."""
    rows, channels = 20_000, 16
    values = np.random.default_rng(3).integers(-999, 999, (rows, channels), dtype="<i2")
    (nginx.root / "channels.bin").write_bytes(np.ascontiguousarray(values.T).tobytes())
    codecs = [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "little"}},
    ]
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "t/zarr.json": array_meta([rows, channels], [rows, channels], "int16", 0, codecs),
        "t/c/0/0": [nginx.url("channels.bin"), 0, values.nbytes],
    }
    for options in ({}, {"sharded_view": 8192}):
        array = open_rfs({"version": 1, "refs": refs}, **options)["t"]
        nginx.reset()
        np.testing.assert_array_equal(array[:, 5], values[:, 5])
        if options:
            assert array.chunks == (rows, 1)
            assert type(array.metadata.codecs[0]) is ShardingCodec  # blocks of a column: zarr's
            assert (nginx.count(), nginx.bytes_sent()) == (1, rows * 2)
        np.testing.assert_array_equal(array[100:200, 3:9], values[100:200, 3:9])
        np.testing.assert_array_equal(array[:], values)


def test_sharded_view_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="sharded_view"):
        RfsStore({"version": 1, "refs": {}}, sharded_view="always")
    with pytest.raises(ValueError, match="sharded_view"):
        RfsStore({"version": 1, "refs": {}}, sharded_view=-1)
