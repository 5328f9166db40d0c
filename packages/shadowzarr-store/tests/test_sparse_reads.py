"""Sparse selections through the grouped view cost in proportion to what they touch (issue 43):
1,000 random chunks of 16 B fetch at most 4 x the stored bytes they touch + 1 MiB, whatever
the number of chunks, through directory and JSON references; dense runs of rows keep their
few large requests. Counted at the server (the latency proxy answering one range per request,
as S3 does); every value equals h5py's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_testing.proxy import LatencyProxy
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store import RfsStore, open_rfs

LATENCY = 0.02
CHUNK = 4  # float32 values: 16 B chunks
PICKED = 1000
BOUND = 4 * PICKED * CHUNK * 4 + (1 << 20)
"""4 x the stored bytes 1,000 chunks of 16 B touch, + 1 MiB."""
SIZES = (10_000, 100_000)
ROWS, COLUMNS, TABLE_CHUNK = 40_000, 32, (64, 4)  # float32: 1 KiB chunks


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sparse")
    for n in SIZES:
        with h5py.File(root / f"chunks-{n}.h5", "w", libver="latest") as f:
            f.create_dataset("data", data=np.arange(CHUNK * n, dtype="<f4"), chunks=(CHUNK,))
    table = (np.arange(ROWS * COLUMNS, dtype=np.float64).reshape(ROWS, COLUMNS) / 4).astype("<f4")
    with h5py.File(root / "table.h5", "w") as f:
        f.create_dataset("table", data=table, chunks=TABLE_CHUNK)
    with h5py.File(root / "zipped.h5", "w", libver="latest") as f:  # packs the store decodes
        values = np.random.default_rng(1).integers(0, 50, size=64 * 20_000).astype("<i4")
        f.create_dataset("data", data=values, chunks=(64,), compression="gzip")
    return root


@pytest.fixture
def served(files: Path, make_proxy) -> tuple[LatencyProxy, dict[str, str]]:
    """Directory and JSON references of every file, behind a single-range server at 20 ms."""
    proxy = make_proxy(latency=LATENCY, ranges="s3", root=files)
    refs = {}
    for name in [f"chunks-{n}" for n in SIZES] + ["table", "zipped"]:
        rfs = generate_rfs(proxy.url(f"{name}.h5"), local_hdf5_path=files / f"{name}.h5")
        for form, suffix in (("directory", ".shadowzarr"), ("json", ".json")):
            target = files / f"{name}-{proxy.port}{suffix}"
            write_rfs(rfs, target)
            refs[f"{name} {form}"] = proxy.url(target.name)
    proxy.reset()
    return proxy, refs


def _h5(files: Path, name: str, path: str, selection) -> np.ndarray:
    with h5py.File(files / f"{name}.h5", "r") as f:
        return f[path][selection]


def _picks(n: int) -> np.ndarray:
    chunks = np.sort(np.random.default_rng(n).choice(n, size=PICKED, replace=False))
    return (chunks[:, None] * CHUNK + np.arange(CHUNK)).ravel()


def _data_costs(proxy: LatencyProxy, name: str) -> tuple[int, int]:
    """(requests, bytes) of the data file since the last reset."""
    proxy.wait_idle()
    return proxy.count(path_prefix=name), proxy.bytes_sent(name)


@pytest.mark.parametrize("form", ["directory", "json"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("how", ["vindex", "oindex"])
def test_1000_random_chunks_fetch_in_proportion_to_what_they_touch(
    files, served, form, n, how
) -> None:
    proxy, refs = served
    array = open_rfs(refs[f"chunks-{n} {form}"])["data"]
    assert array.metadata.codecs[0].to_dict()["name"].endswith("sharding_indexed")  # grouped
    picks = _picks(n)
    proxy.wait_idle()
    proxy.reset()
    values = array.vindex[picks] if how == "vindex" else array.oindex[picks]
    np.testing.assert_array_equal(values, _h5(files, f"chunks-{n}", "data", picks))
    requests, fetched = _data_costs(proxy, f"chunks-{n}.h5")
    assert fetched <= BOUND
    if n == 100_000:  # the file is 1.6 MB: each pack read whole fetched all of it
        assert fetched < CHUNK * 4 * n * 3 // 4
    assert requests <= PICKED


def test_a_strided_selection_reads_the_chunks_it_strides_over(files, served) -> None:
    proxy, refs = served
    array = open_rfs(refs["chunks-100000 directory"])["data"]
    proxy.wait_idle()
    proxy.reset()
    selection = slice(3, None, 400)  # one value of every 100th chunk
    np.testing.assert_array_equal(array[selection], _h5(files, "chunks-100000", "data", selection))
    _, fetched = _data_costs(proxy, "chunks-100000.h5")
    assert fetched <= 4 * 1000 * 16 + (1 << 20)


def test_scattered_points_of_a_table_read_their_stored_chunks(files, served) -> None:
    """Points of a 2-D table whose packs hold many stored chunks along both axes: each point
    costs its stored chunk (1 KiB), not its pack (1 MiB)."""
    proxy, refs = served
    rng = np.random.default_rng(3)
    rows, columns = rng.integers(0, ROWS, size=300), rng.integers(0, COLUMNS, size=300)
    touched = len({(r // 64, c // 4) for r, c in zip(rows.tolist(), columns.tolist(), strict=True)})
    array = open_rfs(refs["table directory"])["table"]
    proxy.wait_idle()
    proxy.reset()
    values = array.vindex[rows, columns]
    np.testing.assert_array_equal(values, _h5(files, "table", "table", ())[rows, columns])
    _, fetched = _data_costs(proxy, "table.h5")
    assert fetched <= 4 * touched * 1024 + (1 << 20)


def test_scattered_points_of_compressed_chunks_decode_only_their_stored_chunks(
    files, served
) -> None:
    """Compressed stored chunks packed and decoded by the store: points read and decode the
    stored chunks they lie in, not their packs."""
    proxy, refs = served
    store = RfsStore(refs["zipped directory"])
    layout = store.grouped_layout("data")
    assert layout is not None
    assert layout.decoded
    array = open_rfs(refs["zipped directory"])["data"]
    picks = np.sort(np.random.default_rng(9).choice(64 * 20_000, size=200, replace=False))
    proxy.wait_idle()
    proxy.reset()
    np.testing.assert_array_equal(array.vindex[picks], _h5(files, "zipped", "data", picks))
    _, fetched = _data_costs(proxy, "zipped.h5")
    with h5py.File(files / "zipped.h5") as f:
        stored = f["data"].id.get_storage_size()
    assert fetched < stored / 4  # 200 chunks of 20,000 (and the budget's gaps), not the file


@pytest.mark.parametrize("form", ["directory", "json"])
@pytest.mark.parametrize("columns", [3, slice(None)], ids=["1 column", "32 columns"])
def test_20k_rows_keep_their_one_request(files, served, form, columns) -> None:
    """Dense runs of rows are not sparse: whole inner chunks and the store's merge gap, the
    data in one request (two for rows spanning two shards of the JSON form at most)."""
    proxy, refs = served
    array = open_rfs(refs[f"table {form}"])["table"]
    proxy.wait_idle()
    proxy.reset()
    selection = (slice(10_000, 30_000), columns)
    np.testing.assert_array_equal(array[selection], _h5(files, "table", "table", selection))
    requests, _ = _data_costs(proxy, "table.h5")
    assert requests == 1
    assert proxy.round_trips("table.h5") == 1


def test_narrow_ranges_of_a_packed_shard_match_its_whole_value(files) -> None:
    """Ranges inside one inner chunk are cut from the stored chunks they lie in: byte for byte
    the shard's value, across stored chunks of both axes and off element boundaries."""
    store = RfsStore(generate_rfs(files / "table.h5"), grouped_view="auto")
    prototype = default_buffer_prototype()
    layout = store.grouped_layout("table")
    assert layout is not None
    assert layout.members > 1

    async def check() -> None:
        whole = (await store.get("table/c/0/0", prototype)).to_bytes()
        rng = np.random.default_rng(5)
        starts = rng.integers(16 * layout.count, len(whole) - 5000, size=200).tolist()
        asks = [RangeByteRequest(a, a + int(rng.integers(1, 5000))) for a in starts]
        found = {}
        async for batch in store.get_ranges("table/c/0/0", asks, prototype=prototype):
            found.update({i: buffer.to_bytes() for i, buffer in batch})
        assert [found[i] for i in range(len(asks))] == [whole[r.start : r.end] for r in asks]

    asyncio.run(check())


def test_every_kind_of_sparse_selection_reads_what_h5py_reads(tmp_path: Path) -> None:
    """Big-endian items in packs of stored chunks along both axes: points, masks, orthogonal
    integer arrays (unsorted, repeated) and strides, each picking few of a shard's elements,
    read what h5py reads."""
    rng = np.random.default_rng(0)
    values = rng.integers(-1000, 1000, size=(40_000, 12)).astype(">i2")
    with h5py.File(tmp_path / "points.h5", "w") as f:
        f.create_dataset("t", data=values, chunks=(16, 4))
        f.create_dataset("v", data=values[:, 0].copy(), chunks=(8,))
    root = open_rfs(generate_rfs(tmp_path / "points.h5"))
    assert root.store.grouped_layout("t").members > 1
    t, v = root["t"], root["v"]
    rows = np.sort(rng.choice(40_000, 50, replace=False))
    columns = np.array([1, 7, 11])[rows % 3]
    mask = np.zeros(40_000, dtype=bool)
    mask[rows] = True
    points = mask[:, None] & (np.arange(12) == 5)
    repeated = np.array([39_999, 5, 5, 20_000])
    cases = [
        (t.oindex[rows, [1, 7, 11]], values[np.ix_(rows, [1, 7, 11])]),
        (t.oindex[mask, 2], values[mask, 2]),
        (t.vindex[rows, columns], values[rows, columns]),
        (t.vindex[points], values[points]),
        (t[::997, 3], values[::997, 3]),
        (t[5::1500, 2:9:3], values[5::1500, 2:9:3]),
        (v.oindex[repeated], values[repeated, 0]),
        (v.vindex[rows[::-1]], values[rows[::-1], 0]),
        (v.oindex[mask], values[mask, 0]),
        (v[1::333], values[1::333, 0]),
    ]
    for found, expected in cases:
        np.testing.assert_array_equal(found, expected)
