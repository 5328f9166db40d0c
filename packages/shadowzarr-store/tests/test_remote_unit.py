"""Remote arrays without a server: addresses, the chunks a selection reads, cache policies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr
from store_handmade import array_meta

from shadowzarr_store import LocalCache, MemoryCache
from shadowzarr_store.remote import (
    DEFAULT_CACHE_BYTES,
    AddressError,
    CachePolicy,
    OfflineError,
    ReferenceCache,
    SourceIdentity,
    make_caches,
    open_remote_array,
    parse_address,
    scrub_url,
)
from shadowzarr_store.remote.selection import chunk_keys, normalize_selection


@pytest.mark.parametrize(
    "source",
    [
        "https://host/d/file.nwb::/acquisition/ElectricalSeries/data",
        "https://host/d/file.nwb::acquisition/ElectricalSeries/data",
        "https://host/d/file.nwb/acquisition/ElectricalSeries/data",
    ],
)
def test_three_spellings_of_one_dataset(source: str) -> None:
    address = parse_address(source)
    assert address.container == "https://host/d/file.nwb"
    assert address.format == "hdf5"
    assert address.dataset == "acquisition/ElectricalSeries/data"
    assert parse_address("https://host/d/file.nwb", dataset="/acquisition/ElectricalSeries/data")
    assert str(address) == "https://host/d/file.nwb::/acquisition/ElectricalSeries/data"


def test_formats_from_names_and_explicit() -> None:
    assert parse_address("/x/img.ome.tiff/0/1").format == "tiff"
    assert parse_address("/x/img.ome.tiff/0/1").dataset == "0/1"
    assert parse_address("https://h/a.zarr/g/arr").container == "https://h/a.zarr"
    assert parse_address("https://h/refs.json").format == "references"
    assert parse_address("https://h/download/", source_format="hdf5").dataset == ""
    # A suffix inside a directory name is still the container: the last one wins.
    assert parse_address("/d/set.h5.d/file.h5/a").container == "/d/set.h5.d/file.h5"


def test_address_errors() -> None:
    with pytest.raises(AddressError, match="cannot tell the format"):
        parse_address("https://h/blob")
    with pytest.raises(AddressError, match="dataset="):
        parse_address("https://h/f.h5::/a", dataset="b")


def test_local_directories_are_told_apart(tmp_path: Path) -> None:
    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "refs.json").write_text("{}")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "zarr.json").write_text("{}")
    assert parse_address(tmp_path / "refs").format == "references"
    assert parse_address(tmp_path / "store").format == "zarr"


def test_chunk_keys_cover_the_selection() -> None:
    array = zarr.create_array(
        zarr.storage.MemoryStore(), name="g/a", shape=(10, 7), chunks=(4, 3), dtype="i2"
    )
    assert list(chunk_keys(array, (slice(3, 5), 4))) == ["g/a/c/0/1", "g/a/c/1/1"]
    assert len(list(chunk_keys(array))) == 3 * 3
    assert list(chunk_keys(array, (slice(9, 9),))) == []
    assert list(chunk_keys(array, (-1, ...))) == ["g/a/c/2/0", "g/a/c/2/1", "g/a/c/2/2"]
    assert normalize_selection(slice(None, None, -2), (5,)) == (slice(0, 5),)
    with pytest.raises(IndexError):
        list(chunk_keys(array, (10,)))
    with pytest.raises(TypeError):
        list(chunk_keys(array, ([1, 2],)))


def test_policies_and_their_bounds(tmp_path: Path) -> None:
    assert make_caches("none").size_bytes == 0
    memory = make_caches(CachePolicy.MEMORY)
    assert memory.memory is not None
    assert memory.memory.max_size_bytes == DEFAULT_CACHE_BYTES == 256 * 2**20
    with pytest.raises(ValueError, match="bounded"):
        make_caches("memory", None)
    disk = make_caches("disk", cache_dir=tmp_path)
    assert disk.disk is not None
    assert disk.disk.max_size_bytes == DEFAULT_CACHE_BYTES
    assert disk.disk.directory == tmp_path / "chunks"
    assert make_caches("disk", None, tmp_path).max_size_bytes is None
    shared = MemoryCache(1000)
    assert make_caches("memory", memory_cache=shared).memory is shared
    local = LocalCache(tmp_path / "x")
    assert make_caches("disk", local_cache=local).disk is local
    with pytest.raises(ValueError, match="sometimes"):
        make_caches("sometimes")


def test_scrub_url_drops_credentials() -> None:
    assert scrub_url("https://me:pw@h/f.h5?X-Amz-Signature=s&token=t&v=2") == "https://h/f.h5?v=2"
    assert scrub_url("/local/path.h5") == "/local/path.h5"


def _document(tmp_path: Path) -> tuple[dict, np.ndarray]:
    values = np.arange(60, dtype="<i4").reshape(6, 10)
    (tmp_path / "raw.bin").write_bytes(values.tobytes())
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "a/zarr.json": array_meta([6, 10], [2, 10], "int32"),
    }
    for i in range(3):
        refs[f"a/c/{i}/0"] = [str(tmp_path / "raw.bin"), i * 80, 80]
    return {"version": 1, "refs": refs}, values


def test_references_in_memory_and_local_read_cached(tmp_path: Path) -> None:
    document, values = _document(tmp_path)
    remote = open_remote_array(document, dataset="a", cache="memory")
    np.testing.assert_array_equal(remote[:], values)
    np.testing.assert_array_equal(np.asarray(remote), values)
    assert remote.read_cached((slice(0, 2),))[0]
    fresh = open_remote_array(document, dataset="a", cache="memory")
    hit, got = fresh.read_cached((slice(0, 2),))
    assert not hit  # a local file read is not a cache hit
    assert got is None
    with pytest.raises(ValueError, match="needs a cache"):
        open_remote_array(document, dataset="a", cache="none").fetch()


def test_reference_cache_round_trip(tmp_path: Path) -> None:
    document, values = _document(tmp_path)
    cache = ReferenceCache(tmp_path / "refcache")
    from shadowzarr_spec import read_local_rfs

    identity = SourceIdentity("https://h/f.h5", '"abc"', 123)
    assert cache.latest("r") is None
    cache.put("r", identity, read_local_rfs(document), "a")
    found = cache.latest("r")
    assert found is not None
    assert found[0] == identity
    assert found[2] == "a"
    assert cache.get("r", SourceIdentity("https://h/f.h5", '"other"', 123)) is None
    other = SourceIdentity("https://h/f.h5", '"new"', 124)
    cache.put("r", other, read_local_rfs(document), "a")
    assert cache.get("r", identity) is None  # references of the old identity are forgotten
    remote = open_remote_array(found[1], dataset="a")
    np.testing.assert_array_equal(remote[:], values)


def test_offline_open_without_cached_references(tmp_path: Path) -> None:
    with pytest.raises(OfflineError, match="no cached references"):
        open_remote_array("https://127.0.0.1:9/f.json", cache_dir=tmp_path, offline=True)


def test_a_rewritten_local_reference_file_is_never_served_stale(tmp_path: Path) -> None:
    """A local reference file is its own cache: it is read at every open, even when sources are
    assumed immutable, and never copied into the reference cache (a copy could outlive a
    rewrite)."""
    document, values = _document(tmp_path)
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(document))
    first = open_remote_array(str(refs), dataset="a", cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(first[:], values)
    second = open_remote_array(str(refs), dataset="a", cache_dir=tmp_path / "cache")
    assert second.info["references"] == "generated"  # read from the file, not a cached copy
    assert not (tmp_path / "cache" / "references").exists()
    # The same file name, other chunks: the first chunk now points at the last one's bytes.
    document["refs"]["a/c/0/0"] = document["refs"]["a/c/2/0"]
    refs.write_text(json.dumps(document))
    again = open_remote_array(str(refs), dataset="a", cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(again[:2], values[4:6])
