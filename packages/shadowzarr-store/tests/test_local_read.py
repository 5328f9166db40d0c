"""Every kind of reference, hand-written over local files, reads back the values written."""

from __future__ import annotations

import json
import pickle
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import ChunkDecodeError, SourceChangedError, read_local_rfs
from store_handmade import handmade_document, write_reference_directory, write_sources
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store import RfsStore, open_rfs, open_rfs_array

if TYPE_CHECKING:
    from pathlib import Path

PROTOTYPE = default_buffer_prototype()


@pytest.fixture
def sources(tmp_path: Path):
    return write_sources(tmp_path / "data")


@pytest.fixture
def json_file(sources, tmp_path: Path) -> Path:
    path = tmp_path / "refs.shadowzarr.json"
    path.write_text(json.dumps(handmade_document(sources, str(sources.root), index_dir=False)))
    return path


@pytest.fixture
def directory(sources, tmp_path: Path) -> Path:
    return write_reference_directory(sources, tmp_path / "refs.shadowzarr", str(sources.root))


def _assert_all(root: zarr.Group, expected: dict[str, np.ndarray]) -> None:
    for name, values in expected.items():
        got = root[name][...]
        assert got.dtype == values.dtype.newbyteorder("=") or got.dtype == values.dtype, name
        np.testing.assert_array_equal(got, values, err_msg=name)


def test_json_file_reads_every_kind(sources, json_file: Path) -> None:
    root = open_rfs(json_file)
    assert root.attrs["made"] == "by hand"
    _assert_all(root, sources.expected)


def test_directory_with_index_reads_every_kind(sources, directory: Path) -> None:
    root = open_rfs(directory)
    _assert_all(root, sources.expected)


def test_file_url_and_dict_and_relative_urls(sources, tmp_path: Path) -> None:
    document = handmade_document(sources, sources.root.as_uri(), index_dir=False)
    _assert_all(open_rfs(document), sources.expected)
    # A relative source URL is resolved against the folder holding the references.
    relative = handmade_document(sources, "data", index_dir=False)
    (tmp_path / "relative.json").write_text(json.dumps(relative))
    _assert_all(open_rfs(tmp_path / "relative.json"), sources.expected)


def test_indexed_chunk_costs_one_index_read_then_none(sources, directory: Path) -> None:
    # chunks as stored: the grouped view packs these 12 small chunks into one inner chunk
    # (its own counts are in test_grouped_view.py)
    store = RfsStore(read_local_rfs(directory), grouped_view=0)
    array = zarr.open_array(store, path="indexed", mode="r", zarr_format=3)
    before = store.stats.snapshot()
    np.testing.assert_array_equal(array[60:90], sources.expected["indexed"][60:90])
    cold = store.stats.snapshot() - before
    # The index's zarr.json (once per index array), one index chunk, the data.
    assert (cold.index_chunk_reads, cold.requests) == (1, 3)
    np.testing.assert_array_equal(array[110:140], sources.expected["indexed"][110:140])
    warm = store.stats.snapshot() - before - cold
    assert (warm.index_chunk_reads, warm.requests) == (0, 1)
    # A chunk the index marks as never written costs no data read and reads as fill.
    np.testing.assert_array_equal(array[350:400], np.full(50, -1, dtype="i4"))
    assert (store.stats.snapshot() - before - cold - warm).requests == 0


@pytest.mark.parametrize(
    "byte_range",
    [
        None,
        RangeByteRequest(0, 10),
        RangeByteRequest(7, 801),
        RangeByteRequest(1590, 1700),
        RangeByteRequest(1500, 5000),
        RangeByteRequest(3000, 3100),
        OffsetByteRequest(1234),
        SuffixByteRequest(13),
        SuffixByteRequest(5000),
    ],
)
@pytest.mark.parametrize("key", ["picked/c/2/0", "reordered/c/2/0", "slabs/c/3/0", "floats/c/1"])
async def test_byte_ranges_match_the_whole_value(directory: Path, key: str, byte_range) -> None:
    store = RfsStore(read_local_rfs(directory), grouped_view=0)  # stored keys (slabs/c/3/0)
    whole = (await store.get(key, PROTOTYPE)).to_bytes()
    assert len(whole) == await store.getsize(key)
    part = await store.get(key, PROTOTYPE, byte_range)
    start, stop = {
        type(None): lambda r: (0, len(whole)),
        RangeByteRequest: lambda r: (r.start, r.end),
        OffsetByteRequest: lambda r: (r.offset, len(whole)),
        SuffixByteRequest: lambda r: (max(len(whole) - r.suffix, 0), len(whole)),
    }[type(byte_range)](byte_range)
    assert part.to_bytes() == whole[start:stop]


async def test_partial_read_with_selection_reads_only_needed_records(directory: Path) -> None:
    store = RfsStore(read_local_rfs(directory))
    # picked keeps 8 of every 12 bytes; logical bytes [808, 824) are records 101 and 102 (+1).
    before = store.stats.snapshot()
    part = await store.get("picked/c/0/0", PROTOTYPE, RangeByteRequest(810, 830))
    cost = store.stats.snapshot() - before
    whole = (await store.get("picked/c/0/0", PROTOTYPE)).to_bytes()
    assert part.to_bytes() == whole[810:830]
    assert cost.requests == 1
    assert cost.bytes == 3 * 12  # records 101..103


def test_missing_keys_cost_nothing(directory: Path) -> None:
    store = RfsStore(read_local_rfs(directory))
    root = zarr.open_group(store, mode="r")  # probes .zgroup, .zattrs, .zmetadata
    assert sorted(root.array_keys())[:3] == ["floats", "h5chunked", "h5contiguous"]
    assert store.stats.requests == 0


def test_listing_never_reads_data(sources, directory: Path) -> None:
    store = RfsStore(read_local_rfs(directory), grouped_view=0)  # the stored keys
    root = zarr.open_group(store, mode="r")
    assert sorted(name for name, _ in root.members()) == sorted(sources.expected)
    assert store.stats.requests == 0
    keys = zarr.core.sync.sync(_collect(store.list_prefix("indexed/")))
    assert sorted(keys) == sorted(
        ["indexed/zarr.json", *(f"indexed/c/{i}" for i in range(12) if i != 7)]
    )
    assert store.stats.snapshot().index_chunk_reads == 1
    assert zarr.core.sync.sync(_collect(store.list_dir("slabs"))) == ["c", "zarr.json"]
    assert zarr.core.sync.sync(_collect(store.list_dir("slabs/c"))) == ["0", "1", "2", "3"]
    assert zarr.core.sync.sync(_collect(store.list_dir("indexed/c")))[:3] == ["0", "1", "10"]


async def _collect(iterator) -> list[str]:
    return [item async for item in iterator]


def test_local_file_of_another_size_raises_source_changed(sources, tmp_path: Path) -> None:
    document = handmade_document(sources, str(sources.root), index_dir=False)
    size = (sources.root / "raw.bin").stat().st_size
    document["sources"] = {f"{sources.root}/raw.bin": {"size": size}}
    root = open_rfs(document)
    np.testing.assert_array_equal(root["listed"][:10], sources.expected["listed"][:10])
    with (sources.root / "raw.bin").open("ab") as stream:
        stream.write(b"more")
    with pytest.raises(SourceChangedError, match=r"raw\.bin"):
        root["listed"][300:310]
    unchecked = open_rfs(document, validate_sources=False)
    np.testing.assert_array_equal(unchecked["listed"][300:310], sources.expected["listed"][300:310])


def test_corrupt_fletcher32_chunk_is_an_error(sources, json_file: Path) -> None:
    root = open_rfs(json_file)
    np.testing.assert_array_equal(root["h5chunked"][:], sources.expected["h5chunked"])
    document = json.loads(json_file.read_text())
    _, offset, size = document["refs"]["h5chunked/c/1/0"]
    path = sources.root / "data.h5"
    data = bytearray(path.read_bytes())
    data[offset + size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ChunkDecodeError, match=r"h5chunked/c/1/0.*fletcher32"):
        open_rfs(json_file)["h5chunked"][30:60]


def test_pickled_array_reads_in_a_copy(sources, directory: Path) -> None:
    array = open_rfs(directory)["indexed"]
    copy = pickle.loads(pickle.dumps(array))
    np.testing.assert_array_equal(copy[:], sources.expected["indexed"])
    assert copy.store == array.store


def test_too_long_uncompressed_reference_is_an_error(sources) -> None:
    document = handmade_document(sources, str(sources.root), index_dir=False)
    document["refs"]["listed/c/0/0"] = [f"{sources.root}/raw.bin", 12, 2002]
    with pytest.raises(OSError, match="more than"):
        open_rfs(document)["listed"][:5]


def test_open_rfs_array_opens_one_array(sources, directory: Path) -> None:
    array = open_rfs_array(directory, "slabs")
    assert array.read_only
    np.testing.assert_array_equal(array[...], sources.expected["slabs"])
