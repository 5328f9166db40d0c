"""The grouped view with zarr's DEFAULT settings: small stored chunks shown as shards cost about
one round trip per selection, counted at the server (the latency proxy on a single-range server,
as S3 answers), and every value equals h5py's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import zarr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_testing.proxy import LatencyProxy
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store import RfsStore, load_rfs, open_rfs
from shadowzarr_store.views.grouped import PACK_BYTES
from shadowzarr_store.views.slab_shards import SlabShardingCodec

LATENCY = 0.02
ROWS, COLUMNS, CHUNK = 40_000, 32, (64, 4)  # float32: 1 KiB chunks, 20,000 of them
SAMPLES, CHANNELS, REC_CHUNK = 60_000, 64, (128, 16)  # int16: 4 KiB chunks
RECORDING = "acquisition/ElectricalSeries/data"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("grouped")
    table = (np.arange(ROWS * COLUMNS, dtype=np.float64).reshape(ROWS, COLUMNS) / 4).astype("<f4")
    t = np.arange(SAMPLES, dtype=np.int64)[:, None]
    recording = ((t * 2654435761 + np.arange(CHANNELS) * 40503) % 65536 - 32768).astype("<i2")
    with h5py.File(root / "table.h5", "w") as f:
        d = f.create_dataset("table", data=table, chunks=CHUNK)
        d.dims[0].label, d.dims[1].label = "row", "column"
        sparse = f.create_dataset("sparse", (4096,), "<i4", chunks=(16,), fillvalue=-7)
        sparse[160:480] = np.arange(320)  # chunks 10-29 written, the others never
        wide = f.create_dataset("sparse_indexed", (32768,), "<i4", chunks=(16,), fillvalue=-7)
        wide[160:480] = np.arange(320)  # 2,048 chunks: a chunk manifest, mostly never written
        wide[24000:24176] = np.arange(176)
        holes = f.create_dataset("holes", (1 << 20,), "<i4", chunks=(16,), fillvalue=-7)
        holes[100:200] = np.arange(100)  # 4 packs of 16,384 stored chunks; 3 never written
        f.create_dataset(
            "zipped", data=np.arange(8192, dtype="<i4"), chunks=(64,), compression="gzip"
        )
    with h5py.File(root / "recording.h5", "w") as f:
        d = f.create_dataset(RECORDING, data=recording, chunks=REC_CHUNK)
        d.dims[0].label, d.dims[1].label = "time", "channel"
    return root


@pytest.fixture
def served(files: Path, make_proxy) -> tuple[LatencyProxy, dict[str, str]]:
    proxy = make_proxy(latency=LATENCY, ranges="s3", root=files)
    refs = {}
    for name in ("table", "recording"):
        target = files / f"{name}-{proxy.port}.shadowzarr"
        rfs = generate_rfs(
            proxy.url(f"{name}.h5"), local_hdf5_path=files / f"{name}.h5", progress=False
        )
        write_rfs(rfs, target)
        refs[name] = proxy.url(target.name)
        fetched = files / f"{name}-{proxy.port}-fetched.shadowzarr"  # index files not carried
        write_rfs(rfs, fetched, inline_index_bytes=0)
        refs[f"{name} fetched"] = proxy.url(fetched.name)
    proxy.reset()
    return proxy, refs


def _h5(files: Path, name: str, path: str, selection) -> np.ndarray:
    with h5py.File(files / f"{name}.h5", "r") as f:
        return f[path][selection]


def _costs(proxy: LatencyProxy, data: str) -> tuple[int, int, int]:
    """(round trips of everything, requests for the data file, round trips of the data file)."""
    proxy.wait_idle()
    return proxy.round_trips(), proxy.count(path_prefix=data), proxy.round_trips(data)


@pytest.mark.parametrize("columns", [3, slice(None)], ids=["1 column", "32 columns"])
def test_20k_rows_of_1_kib_chunks_take_one_data_round_trip(files, served, columns) -> None:
    proxy, refs = served
    assert zarr.config.get("async.concurrency") == 10  # zarr's default, nothing tuned
    selection = (slice(10_000, 30_000), columns)
    values = open_rfs(refs["table"], grouped_view="auto")["table"][selection]
    np.testing.assert_array_equal(values, _h5(files, "table", "table", selection))
    trips, data_requests, data_trips = _costs(proxy, "table.h5")
    assert data_trips <= 2
    assert data_requests <= 4
    # refs.json, which carries the small index array's files, then the data: the minimum
    assert trips == data_trips + 1
    assert proxy.count(path_prefix=refs["table"].rsplit("/", 1)[1] + "/index/") == 0


def test_stored_view_costs_a_round_trip_per_ten_chunks(files, served) -> None:
    proxy, refs = served
    selection = (slice(10_000, 30_000), 3)
    values = open_rfs(refs["table"], grouped_view=0)["table"][selection]
    np.testing.assert_array_equal(values, _h5(files, "table", "table", selection))
    assert _costs(proxy, "table.h5")[2] >= 30  # what the grouped view saves


@pytest.mark.parametrize(
    "reader", ["open_rfs", "zarr.open_group(RfsStore)", "xarray"], ids=lambda r: r
)
def test_one_second_of_64_channels_of_4_kib_chunks(files, served, reader) -> None:
    proxy, refs = served
    selection = (slice(12_345, 42_345), slice(None))
    if reader == "open_rfs":
        values = open_rfs(refs["recording"], grouped_view="auto")[RECORDING][selection]
    elif reader == "xarray":
        import xarray as xr

        group, _, name = RECORDING.rpartition("/")
        dataset = xr.open_dataset(
            refs["recording"],
            engine="shadowzarr",
            group=group,
            store_options={"grouped_view": "auto"},
        )
        values = dataset[name][selection].values
    else:
        group = zarr.open_group(RfsStore(refs["recording"], grouped_view="auto"), mode="r")
        values = group[RECORDING][selection]
    np.testing.assert_array_equal(values, _h5(files, "recording", RECORDING, selection))
    trips, data_requests, data_trips = _costs(proxy, "recording.h5")
    assert data_trips <= 2
    assert data_requests <= 4
    assert trips <= data_trips + 2


def test_a_single_value_reads_one_inner_chunk(files, served) -> None:
    """Uncompressed stored chunks are packed into inner chunks of about PACK_BYTES: one value
    costs that bounded read-ahead, never the rest of its 4 MiB shard."""
    proxy, refs = served
    array = open_rfs(refs["table"], grouped_view="auto")["table"]
    proxy.wait_idle()
    proxy.reset()
    assert array[20_000, 5] == _h5(files, "table", "table", (20_000, 5))
    proxy.wait_idle()
    # the pack's stored chunks, and the few B-tree nodes HDF5 wrote between them (the merger
    # reads a small gap rather than pay a second request)
    assert PACK_BYTES <= proxy.bytes_sent("table.h5") <= PACK_BYTES * 9 // 8
    assert proxy.count(path_prefix="table.h5") == 1
    before = proxy.bytes_sent("table.h5")
    stored = RfsStore(load_rfs(refs["table"]), grouped_view=0)
    assert zarr.open_array(stored, path="table", mode="r")[20_000, 5] == _h5(
        files, "table", "table", (20_000, 5)
    )
    proxy.wait_idle()
    assert proxy.bytes_sent("table.h5") - before == 1024  # as stored: the one chunk


def test_by_default_small_chunks_are_shown_grouped(files, served) -> None:
    """The view is on unless turned off (a selection of many small chunks in about one round
    trip)."""
    _, refs = served
    rfs = load_rfs(refs["table"])
    array = open_rfs(rfs)["table"]
    assert array.metadata.chunk_grid.chunk_shape != CHUNK
    assert open_rfs(rfs, grouped_view=0)["table"].metadata.chunk_grid.chunk_shape == CHUNK


def test_turned_off_zarr_is_shown_the_metadata_as_stored(files, served) -> None:
    """With ``grouped_view=0`` the ``zarr.json`` zarr gets is the references' own (what the JS
    store shows), and a stored chunk is its own key."""
    _, refs = served
    rfs = load_rfs(refs["table"])
    store = RfsStore(rfs, grouped_view=0)
    assert store.stored_view() is store
    shown = asyncio.run(store.get("table/zarr.json", default_buffer_prototype()))
    assert shown is not None
    document = json.loads(shown.to_bytes())
    assert document == json.loads(rfs.refs["table/zarr.json"].data)
    assert "shadowzarr_view" not in document.get("attributes", {})
    assert zarr.open_array(store, path="table", mode="r").metadata.chunk_grid.chunk_shape == CHUNK
    assert store.grouped_layout("table") is None


def test_a_grouped_array_keeps_its_attributes_and_shards_its_stored_chunks(files, served) -> None:
    """The grouped view's metadata is a sharding codec over the stored chunks and codecs; the
    attributes stay the file's (equal to what h5py gives), with no note added."""
    _, refs = served
    rfs = load_rfs(refs["table"])
    stored = json.loads(rfs.refs["table/zarr.json"].data)
    array = open_rfs(rfs)["table"]
    assert array.metadata.chunk_grid.chunk_shape != CHUNK
    (sharding,) = array.metadata.to_dict()["codecs"]
    assert sharding["name"].endswith("sharding_indexed")
    inner = sharding["configuration"]["chunk_shape"]  # stored chunks, or packs of them
    assert all(size % stored == 0 for size, stored in zip(inner, CHUNK, strict=True))
    assert [c["name"] for c in sharding["configuration"]["codecs"]] == [
        c["name"] for c in stored["codecs"]
    ]
    assert dict(array.attrs) == stored.get("attributes", {})


def test_missing_and_never_written_chunks_read_as_fill(files, served) -> None:
    _proxy, refs = served
    grouped = open_rfs(refs["table"], grouped_view="auto")
    stored = open_rfs(refs["table"], grouped_view=0)
    assert "sparse_indexed" in load_rfs(refs["table"]).indexes  # shard indexes from it
    wide = _h5(files, "table", "sparse_indexed", ())
    for selection in (slice(None), slice(150, 170), slice(16000, 24100), slice(23990, 24200)):
        np.testing.assert_array_equal(grouped["sparse_indexed"][selection], wide[selection])
    expected = _h5(files, "table", "sparse", ())
    # 1-D packs are slabs: our decoder, which hands shards with never-written packs to zarr's
    assert type(grouped["sparse"].metadata.codecs[0]) is SlabShardingCodec
    for selection in ((), slice(0, 100), slice(150, 170), slice(3000, 4096), [0, 200, 4000]):
        got = (
            grouped["sparse"].oindex[selection]
            if isinstance(selection, list)
            else grouped["sparse"][selection]
        )
        np.testing.assert_array_equal(got, expected[selection])
        np.testing.assert_array_equal(got, stored["sparse"][selection])
    np.testing.assert_array_equal(
        grouped["zipped"][100:5000], _h5(files, "table", "zipped", slice(100, 5000))
    )


def test_the_stored_view_is_what_copying_code_sees(files, served) -> None:
    _, refs = served
    store = RfsStore(load_rfs(refs["table"]), grouped_view="auto")
    stored = store.stored_view()
    assert stored is not store
    assert stored.stored_view() is stored
    shown = zarr.open_array(store, path="table", mode="r").metadata
    as_stored = zarr.open_array(stored, path="table", mode="r").metadata
    assert as_stored.chunk_grid.chunk_shape == CHUNK
    assert shown.chunk_grid.chunk_shape == (CHUNK[0] * 512, COLUMNS)  # 4 MiB
    # inner chunks of whole rows of stored chunks, PACK_BYTES of float32 each, inside shards
    assert shown.codecs[0].chunk_shape == (PACK_BYTES // (4 * COLUMNS), COLUMNS)
    zipped = zarr.open_array(store, path="zipped", mode="r").metadata
    # compressed, its 128 chunks listed in refs.json as columns of one file: packed and
    # decoded as an indexed array's are
    assert zipped.codecs[0].chunk_shape == (8192,)

    async def keys(s: RfsStore) -> list[str]:
        return [k async for k in s.list_prefix("sparse/c/")]

    assert len(asyncio.run(keys(stored))) == 20  # chunks 10-29
    assert asyncio.run(keys(store)) == ["sparse/c/0"]  # one shard of 256 stored chunks
    assert RfsStore(load_rfs(refs["table"]), grouped_view=False).options.grouped_view == 0


def test_a_pack_never_written_costs_no_read(files, served) -> None:
    proxy, refs = served
    holes = open_rfs(refs["table"], grouped_view="auto")["holes"]
    proxy.wait_idle()
    before = proxy.count(path_prefix="table.h5")
    first_pack = PACK_BYTES // 4  # int32 values
    assert (holes[first_pack + 100 : 1 << 20] == -7).all()
    proxy.wait_idle()
    assert proxy.count(path_prefix="table.h5") == before  # nothing stored there: no read
    np.testing.assert_array_equal(holes[:1000], _h5(files, "table", "holes", slice(0, 1000)))
    proxy.wait_idle()
    assert proxy.count(path_prefix="table.h5") == before + 1  # the one written pack


def test_byte_ranges_of_a_shard_match_its_whole_value(files: Path) -> None:
    from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
    from zarr.core.buffer import default_buffer_prototype

    store = RfsStore(generate_rfs(files / "table.h5", progress=False), grouped_view="auto")
    prototype = default_buffer_prototype()
    with h5py.File(files / "table.h5") as f:
        sparse, indexed = f["sparse"][:], f["sparse_indexed"][:]

    async def ranges_match(key: str, whole: bytes) -> None:
        for request, expected in (
            (RangeByteRequest(4090, 4200), whole[4090:4200]),
            (OffsetByteRequest(5000), whole[5000:]),
            (SuffixByteRequest(100), whole[-100:]),
            (RangeByteRequest(0, 16), whole[:16]),
        ):
            assert (await store.get(key, prototype, request)).to_bytes() == expected
        batches = [
            b
            async for b in store.get_ranges(
                key,
                [RangeByteRequest(4096, 4160), RangeByteRequest(4160, 4224)],
                prototype=prototype,
            )
        ]
        assert [[(i, buf.to_bytes()) for i, buf in batch] for batch in batches] == [
            [(0, whole[4096:4160]), (1, whole[4160:4224])]
        ]

    async def check() -> None:
        # from a chunk manifest, uncompressed: one inner chunk packs all 2,048 stored chunks (up
        # to PACK_BYTES, here the whole array), the never-written ones as fill
        assert indexed.nbytes <= PACK_BYTES
        whole = (await store.get("sparse_indexed/c/0", prototype)).to_bytes()
        assert len(whole) == await store.getsize("sparse_indexed/c/0") == 16 + indexed.nbytes
        assert np.frombuffer(whole[:16], "<u8").tolist() == [16, indexed.nbytes]
        assert np.array_equal(np.frombuffer(whole[16:], "<i4"), indexed)
        await ranges_match("sparse_indexed/c/0", whole)
        # listed one by one: the inner chunks are the stored chunks, each as stored
        whole = (await store.get("sparse/c/0", prototype)).to_bytes()
        assert len(whole) == await store.getsize("sparse/c/0")
        assert await store.exists("sparse/c/0")
        index = np.frombuffer(whole[: 16 * 256], "<u8").reshape(256, 2)
        assert (index[:10] == 2**64 - 1).all()  # never written: the empty marker
        assert index[10].tolist() == [16 * 256, 64]  # chunk 10, 64 bytes, right after the index
        assert whole[16 * 256 :] == sparse[160:480].tobytes()
        await ranges_match("sparse/c/0", whole)

    asyncio.run(check())


def test_packed_inner_chunks_equal_h5py_at_every_edge(tmp_path: Path) -> None:
    """Packs reaching past the array's end, partly written packs, big-endian items and every
    kind of selection read exactly what h5py reads."""
    rng = np.random.default_rng(7)
    values = rng.integers(-30000, 30000, size=(1003, 7)).astype(">i2")
    with h5py.File(tmp_path / "edges.h5", "w") as f:
        f.create_dataset("full", data=values, chunks=(10, 3))
        part = f.create_dataset("part", (1003, 7), ">i2", chunks=(10, 3), fillvalue=-5)
        part[95:400, 2:6] = values[95:400, 2:6]
        # six columns: packs as wide as the array (seven: wider, the shard's last columns past
        # the array's end); runs of rows take the slab decoder in both
        f.create_dataset("full6", data=values[:, :6], chunks=(10, 3))
        part6 = f.create_dataset("part6", (1003, 6), ">i2", chunks=(10, 3), fillvalue=-5)
        part6[95:400, 2:6] = values[95:400, 2:6]
    rfs = generate_rfs(tmp_path / "edges.h5", manifest_threshold=10, progress=False)
    group = open_rfs(rfs, grouped_view="auto")
    with h5py.File(tmp_path / "edges.h5") as f:
        for name in ("full", "part", "full6", "part6"):
            array, native = group[name], f[name]
            assert array.chunks != (10, 3)  # packed
            assert type(array.metadata.codecs[0]) is SlabShardingCodec
            for start, stop in ((0, 1003), (95, 400), (7, 8), (390, 1003), (0, 95)):
                np.testing.assert_array_equal(array[start:stop], native[start:stop])
                np.testing.assert_array_equal(array[start:stop, 1:5], native[start:stop, 1:5])
            points = (rng.integers(0, 1003, 300), rng.integers(0, native.shape[1], 300))
            rows = np.sort(rng.choice(1003, 50, replace=False))
            for selection in (
                np.s_[:],
                np.s_[997:],
                np.s_[5:333, 1:6],
                np.s_[::13, 5],
                np.s_[1002, :],
            ):
                np.testing.assert_array_equal(array[selection], native[selection])
            np.testing.assert_array_equal(array.vindex[points], native[:][points])
            np.testing.assert_array_equal(array.oindex[rows, [0, 5]], native[:][rows][:, [0, 5]])


@pytest.mark.parametrize("members", [1, 4])
def test_a_shard_index_places_each_inner_chunk_after_the_one_before(members: int) -> None:
    """The synthesized index (built with numpy) against its definition, inner chunk by inner
    chunk: a chunk with any stored member takes the next bytes after the index, one with none
    has the empty marker and takes none."""
    from shadowzarr_store.views.grouped import ShardIndex

    rng = np.random.default_rng(members)
    for _ in range(50):
        count = int(rng.integers(0, 40))
        lengths: list[int | None] = [
            None if rng.random() < 0.4 else int(rng.integers(0, 5000))
            for _ in range(count * members)
        ]
        built = ShardIndex.build(
            [f"k/{j}" for j in range(len(lengths))], lengths, members=members, inner_nbytes=777
        )
        as_array = ShardIndex.build(
            [f"k/{j}" for j in range(len(lengths))],
            np.array([-1 if n is None else n for n in lengths], dtype=np.int64),
            members=members,
            inner_nbytes=777,
        )
        table = np.frombuffer(built.index, dtype="<u8").reshape(count, 2)
        position = 16 * count
        for j in range(count):
            group = [n for n in lengths[j * members : (j + 1) * members] if n is not None]
            if not group:
                assert table[j].tolist() == [2**64 - 1, 2**64 - 1]
                assert built.sizes[j] == 0
                continue
            size = 777 if members > 1 else group[0]
            assert table[j].tolist() == [position, size]
            assert (built.offsets[j], built.sizes[j]) == (position, size)
            position += size
        assert built.total == position
        assert built.stored.tolist() == [n is not None for n in lengths]
        named = [f"k/{j}" if n is not None else None for j, n in enumerate(lengths)]
        assert list(built.keys) == named
        assert (as_array.index, as_array.offsets, as_array.sizes, as_array.total) == (
            built.index,
            built.offsets,
            built.sizes,
            built.total,
        )


def test_a_cold_read_sends_its_data_on_connections_already_open(files, served) -> None:
    """Whole files (the index) and ranges share our kept-alive connections, so the data
    requests of a cold read with remote references find open connections and pay no new
    handshakes (counted at the server: a connection's first request; with TLS on a real
    network each new one costs about two round trips)."""
    proxy, refs = served
    proxy.connect_latency = 0.05  # the handshakes loopback does not have
    selection = (slice(10_000, 30_000), 3)
    values = open_rfs(refs["table fetched"], grouped_view="auto")["table"][selection]
    np.testing.assert_array_equal(values, _h5(files, "table", "table", selection))
    proxy.wait_idle()
    log = proxy.log
    data = [entry for entry in log if entry["path"].endswith("table.h5")]
    index = [entry for entry in log if "/index/" in entry["path"]]
    assert len(index) == 2
    assert 1 <= len(data) <= 2
    assert not any(entry["new_connection"] for entry in data)
    # refs.json's connection carries one of the index's two (the process's one pool)
    assert proxy.connections == len(index)
