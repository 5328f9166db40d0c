"""The sharded view: zarr reads one row of a large uncompressed chunk by fetching one block."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import load_rfs

from shadowzarr_store import RfsStore, open_rfs

from .handmade import array_meta

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network
ROWS, CHANNELS = 30_000, 16


def _document(url_plain: str, url_records: str, consolidated: bool) -> dict:
    arrays = {
        "plain": array_meta([ROWS + 4000, CHANNELS], [20_000, CHANNELS], "int16", fill=-9),
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
    refs["plain/c/1/0"] = [url_plain, chunk, chunk]  # runs past the end of the file: padded
    record = CHANNELS * 2 + 2
    refs["picked/c/0/0"] = [url_records, 0, 20_000 * record]
    refs["picked/c/1/0"] = [url_records, 20_000 * record, 20_000 * record]
    refs["small/c/0/0"] = [url_plain, 0, 100 * CHANNELS * 2]
    return {
        "version": 2,
        "refs": refs,
        "selections": {"picked": {"record_size": record, "keep": [[0, CHANNELS * 2]]}},
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
    nginx.reset()
    np.testing.assert_array_equal(plain[5000, :], data[5000])
    assert (nginx.count(), nginx.bytes_sent()) == (1, 250 * CHANNELS * 2)
    nginx.reset()
    np.testing.assert_array_equal(picked[25_001, 3:5], data[25_001, 3:5])
    assert (nginx.count(), nginx.bytes_sent()) == (1, 250 * (CHANNELS * 2 + 2))
    nginx.reset()
    np.testing.assert_array_equal(plain[1200:1300], data[1200:1300])
    assert nginx.bytes_sent() == 2 * 250 * CHANNELS * 2
    # Blocks of the short last shard past the end of the file read as the fill value.
    np.testing.assert_array_equal(plain[33_000], np.full(CHANNELS, -9, dtype="<i2"))
    np.testing.assert_array_equal(plain[29_990:30_010, 0], [*data[29_990:, 0], *[-9] * 10])


def test_whole_arrays_match_the_plain_view(nginx: NginxServer, data: np.ndarray) -> None:
    document = _document(nginx.url("plain.bin"), nginx.url("records.bin"), consolidated=True)
    expected = np.concatenate([data, np.full((4000, CHANNELS), -9, dtype="<i2")])
    for options in ({}, {"sharded_view": 8192}, {"sharded_view": 100_000}):
        root = open_rfs(document, **options)
        np.testing.assert_array_equal(root["plain"][:], expected)
        np.testing.assert_array_equal(root["picked"][:], data)
        np.testing.assert_array_equal(root["plain"][::997, 3], expected[::997, 3])


def test_missing_shard_reads_as_fill(nginx: NginxServer, data: np.ndarray) -> None:
    document = _document(nginx.url("plain.bin"), nginx.url("records.bin"), consolidated=False)
    del document["refs"]["plain/c/1/0"]
    store = RfsStore(load_rfs(document), sharded_view=8192)
    plain = zarr.open_array(store, path="plain", mode="r")
    np.testing.assert_array_equal(plain[25_000], np.full(CHANNELS, -9, dtype="<i2"))
    np.testing.assert_array_equal(plain[19_999], data[19_999])
