"""The writer's directory format read by the store: RfsBuilder + write_rfs, served by nginx.

The spec package writes chunk manifests (several index chunks), gen slabs, selections and sources;
RfsStore reads them over HTTP with the costs the format promises.
"""

from __future__ import annotations

import urllib.request
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import RfsBuilder, columns_selection, index_chunk_shape, write_rfs
from shadowzarr_store import SourceChangedError, open_rfs

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = [pytest.mark.network, pytest.mark.slow]
GRID = (300, 250)  # 75,000 chunks of one row of 4 int16: two index chunks along axis 0


def _etag(url: str) -> str:
    with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as r:
        return r.headers["ETag"]


def _build(nginx: NginxServer, root: Path) -> tuple[dict[str, np.ndarray], Path]:
    rng = np.random.default_rng(2)
    grid_values = rng.integers(-(2**15), 2**15, size=(GRID[0], GRID[1] * 4), dtype="<i2")
    order = rng.permutation(GRID[0] * GRID[1])
    blob = bytearray()
    positions = {}
    for flat in order:
        i, j = divmod(int(flat), GRID[1])
        if (i, j) in ((5, 5), (280, 249)):
            continue  # never written: reads as the fill value
        positions[i, j] = len(blob)
        blob += grid_values[i, j * 4 : (j + 1) * 4].tobytes()
    (root / "many.bin").write_bytes(bytes(blob))
    expected_many = grid_values.copy()
    expected_many[5, 20:24] = 7
    expected_many[280, 996:1000] = 7

    recording = rng.integers(-500, 500, size=(10_000, 33), dtype="<i2")
    (root / "rec.bin").write_bytes(b"\0" * 64 + recording.tobytes())

    builder = RfsBuilder()
    builder.add_group("")
    many_url, rec_url = nginx.url("many.bin"), nginx.url("rec.bin")
    builder.add_array(
        "many", shape=(GRID[0], GRID[1] * 4), data_type="<i2", chunk_shape=(1, 4), fill_value=7
    )
    for (i, j), offset in positions.items():
        builder.add_chunk("many", (i, j), many_url, offset, 8)
    record_size, keep = columns_selection(n_columns=33, itemsize=2, columns=slice(0, 32))
    builder.add_array("rec", shape=(10_000, 32), data_type="<i2", chunk_shape=(3000, 32))
    builder.add_selection("rec", record_size, keep)
    builder.add_contiguous_chunks(
        "rec",
        url=rec_url,
        start=64,
        shape=(10_000, 32),
        chunk_shape=(3000, 32),
        itemsize=2,
        row_bytes=record_size,
    )
    for url, name in ((many_url, "many.bin"), (rec_url, "rec.bin")):
        builder.add_source(url, size=(root / name).stat().st_size, etag=_etag(url))
    directory = write_rfs(builder.build(), root / "refs.shadowzarr", manifest_threshold=1000)
    return {"many": expected_many, "rec": recording[:, :32]}, directory


def test_written_directory_reads_over_http(nginx: NginxServer, nginx_root: Path) -> None:
    expected, directory = _build(nginx, nginx_root)
    assert index_chunk_shape(GRID)[0] < GRID[0]  # really more than one index chunk
    assert (directory / "index" / "many" / "c" / "1" / "0" / "0").exists()
    root = open_rfs(nginx.url("refs.shadowzarr"))
    nginx.reset()
    np.testing.assert_array_equal(root["many"][290, 100:104], expected["many"][290, 100:104])
    uris = sorted(entry.uri for entry in nginx.entries())
    # The index's own zarr.json (read once: the index is read as it describes itself), one
    # index chunk, the data.
    assert uris == [
        "/many.bin",
        "/refs.shadowzarr/index/many/c/1/0/0",
        "/refs.shadowzarr/index/many/zarr.json",
    ]
    nginx.reset()
    np.testing.assert_array_equal(root["many"][299, 4:8], expected["many"][299, 4:8])
    assert [entry.uri for entry in nginx.entries()] == ["/many.bin"]
    rows = [0, 5, 150, 261, 262, 280, 299]  # both index chunks, both missing chunks
    with zarr.config.set({"async.concurrency": 100}):
        np.testing.assert_array_equal(root["many"].oindex[rows, :], expected["many"][rows])
    np.testing.assert_array_equal(root["rec"][:], expected["rec"])
    assert all(entry.if_match for entry in nginx.entries() if entry.uri.endswith(".bin"))


def test_replaced_source_of_a_written_directory(nginx: NginxServer, nginx_root: Path) -> None:
    expected, _ = _build(nginx, nginx_root)
    root = open_rfs(nginx.url("refs.shadowzarr"))
    np.testing.assert_array_equal(root["rec"][:10], expected["rec"][:10])
    data = bytearray((nginx_root / "rec.bin").read_bytes())
    data[100] ^= 1
    nginx.write_file("rec.bin", bytes(data))
    with pytest.raises(SourceChangedError, match=r"rec\.bin"):
        root["rec"][5000:5010]
