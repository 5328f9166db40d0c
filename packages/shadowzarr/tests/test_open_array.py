"""shadowzarr.open_array on HDF5/NWB files served by nginx: one dataset in one call, references
cached by source identity, cache policies, prefetch, offline reads and warm export."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
import zarr
from shadowzarr_spec import SourceChangedError
from shadowzarr_store import RfsStore, open_rfs
from shadowzarr_store.remote import OfflineError, RemoteArray

import shadowzarr

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network

DATA = "acquisition/ElectricalSeries/data"


def _write_nwb_like(path: Path, seed: int = 0, rows: int = 2000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.integers(-2000, 2000, (rows, 8), dtype=np.int16)
    with h5py.File(path, "w") as file:
        file.attrs["session_description"] = "test"
        series = file.create_group("acquisition/ElectricalSeries")
        series.create_dataset("data", data=data, chunks=(100, 8), compression="gzip")
        series.create_dataset("timestamps", data=np.arange(rows) / 30000.0, chunks=(500,))
        for index in range(40):  # datasets the one-dataset open must never read
            file.create_dataset(f"processing/unit{index}", data=rng.random(300), chunks=(50,))
    return data


@pytest.fixture
def served(nginx: NginxServer, nginx_root: Path) -> tuple[str, np.ndarray]:
    return nginx.url("session.nwb"), _write_nwb_like(nginx_root / "session.nwb")


def test_three_spellings_open_the_same_dataset(
    served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, expected = served
    forms = [
        shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path / "a"),
        shadowzarr.open_array(f"{url}/{DATA}", cache_dir=tmp_path / "b"),
        shadowzarr.open_array(url, dataset=DATA, cache_dir=tmp_path / "c"),
    ]
    for remote in forms:
        assert isinstance(remote, RemoteArray)
        assert isinstance(remote.array, zarr.Array)
        assert remote.shape == expected.shape
        assert remote.dtype == expected.dtype
        np.testing.assert_array_equal(remote[:], expected)
        np.testing.assert_array_equal(remote[150:420, 3], expected[150:420, 3])


def test_second_open_sends_no_request(
    nginx: NginxServer, served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, expected = served
    nginx.reset()
    first = shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path)
    first_open = nginx.count()
    assert first_open > 0
    assert first.info["references"] == "generated"
    nginx.reset()
    second = shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path)
    assert nginx.count() == 0
    assert second.info["references"].startswith("cached")
    np.testing.assert_array_equal(second[:300], expected[:300])
    assert nginx.count() > 0  # the chunks themselves are read, of course


def test_one_dataset_reads_fewer_bytes_than_the_whole_file(
    nginx: NginxServer, served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, _ = served
    shadowzarr.generate_rfs(url, progress=False)
    whole = nginx.bytes_sent()
    nginx.reset()
    shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path)
    assert nginx.bytes_sent() < whole


def test_fetch_then_read_cached_offline_sends_nothing(
    nginx: NginxServer, served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, expected = served
    remote = shadowzarr.open_array(f"{url}::/{DATA}", cache="disk", cache_dir=tmp_path)
    hit, values = remote.read_cached(slice(0, 500))
    assert (hit, values) == (False, None)
    seen: list[tuple[int, int]] = []
    remote.fetch(
        slice(0, 500), max_concurrency=2, progress=lambda done, total: seen.append((done, total))
    )
    assert seen[-1] == (5, 5)
    assert remote.cache_bytes > 0
    nginx.reset()
    remote.offline = True
    hit, values = remote.read_cached(slice(100, 450))
    assert hit
    np.testing.assert_array_equal(values, expected[100:450])
    np.testing.assert_array_equal(remote[0:500], expected[0:500])
    with pytest.raises(OfflineError, match="offline"):
        remote[1500:1600]
    assert nginx.count() == 0
    assert remote.read_cached(slice(1500, 1600)) == (False, None)


def test_disk_cache_survives_a_new_process_state(
    nginx: NginxServer, served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, expected = served
    shadowzarr.open_array(f"{url}::/{DATA}", cache="disk", cache_dir=tmp_path).fetch()
    nginx.reset()
    again = shadowzarr.open_array(f"{url}::/{DATA}", cache="disk", cache_dir=tmp_path, offline=True)
    np.testing.assert_array_equal(again[:], expected)
    assert nginx.count() == 0
    assert again.traffic.cache_hits == 20
    assert again.traffic.requests == 0


def test_replaced_file_invalidates_when_not_assumed_immutable(
    nginx: NginxServer, served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, expected = served
    remote = shadowzarr.open_array(
        f"{url}::/{DATA}", cache="disk", cache_dir=tmp_path, assume_immutable=False
    )
    np.testing.assert_array_equal(remote[:], expected)
    trusting = shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path / "t")
    old_identity = remote.identity
    scratch = tmp_path / "new.nwb"
    replaced = _write_nwb_like(scratch, seed=5, rows=2100)
    nginx.write_file("session.nwb", scratch.read_bytes())
    np.testing.assert_array_equal(remote[:], replaced)
    assert remote.identity != old_identity
    assert remote.shape == (2100, 8)
    # The old source's cached chunks are gone from the disk cache; only the new ETag remains.
    with sqlite3.connect(tmp_path / "chunks" / "chunks.sqlite3") as connection:
        sources = {row[0] for row in connection.execute("SELECT DISTINCT source FROM chunks")}
    connection.close()
    assert sources
    assert all(remote.identity.etag in source for source in sources)
    assert old_identity.etag not in "".join(sources)
    assert remote.refresh() is False
    with pytest.raises(SourceChangedError):
        trusting[:]  # assumed immutable: the recorded ETag catches the change, no wrong bytes


def test_info_and_traffic(served: tuple[str, np.ndarray], tmp_path: Path) -> None:
    url, _expected = served
    remote = shadowzarr.open_array(f"{url}::/{DATA}", cache="memory", cache_dir=tmp_path)
    remote[:200]
    info = remote.info
    text = str(info)
    for needed in ("shape", "(2000, 8)", "int16", "(100, 8)", "zlib", "session.nwb", "memory"):
        assert needed in text
    assert info["source size"] != "unknown"
    assert remote.traffic.requests >= 2
    before = remote.traffic
    remote[:200]
    after = remote.traffic
    assert after.requests == before.requests
    assert after.cache_hits == before.cache_hits + 2


def test_export_with_warm_chunks_reads_without_the_source(
    nginx: NginxServer, nginx_root: Path, served: tuple[str, np.ndarray], tmp_path: Path
) -> None:
    url, expected = served
    remote = shadowzarr.open_array(f"{url}::/{DATA}", cache="disk", cache_dir=tmp_path / "cache")
    remote.fetch(slice(0, 300))
    exported = remote.export(tmp_path / "portable")
    text = (exported / "refs.json").read_text()
    assert str(tmp_path / "cache") not in text
    (nginx_root / "session.nwb").unlink()
    elsewhere = open_rfs(exported)
    np.testing.assert_array_equal(elsewhere[DATA][0:300], expected[0:300])
    store = elsewhere.store
    assert isinstance(store, RfsStore)
    with pytest.raises(FileNotFoundError, match="404"):
        elsewhere[DATA][1000:1100]


def test_reductions_through_dask(served: tuple[str, np.ndarray], tmp_path: Path) -> None:
    import dask.array as da

    url, expected = served
    remote = shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path)
    lazy = da.from_zarr(remote.array)
    assert lazy.chunks[0][0] == 100
    np.testing.assert_array_equal(lazy.sum(axis=0).compute(), expected.sum(axis=0))
    np.testing.assert_allclose(lazy.mean(axis=1).compute(), expected.mean(axis=1))
    assert lazy.min().compute() == expected.min()
    assert lazy.max().compute() == expected.max()
    np.testing.assert_allclose(lazy.std(axis=0).compute(), expected.std(axis=0))


def test_export_of_an_array_with_a_manifest(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    data = np.arange(3000 * 4, dtype="<i4").reshape(3000, 4)
    with h5py.File(nginx_root / "many.h5", "w") as file:
        file.create_dataset("g/x", data=data, chunks=(2, 4))  # 1500 chunks: an index array
    remote = shadowzarr.open_array(
        nginx.url("many.h5") + "::/g/x", cache="disk", cache_dir=tmp_path / "c"
    )
    assert "g/x" in remote.rfs.indexes
    remote.fetch(slice(0, 100))
    exported = remote.export(tmp_path / "portable")
    assert len(list((exported / "data" / "g" / "x" / "c").iterdir())) == 50
    (nginx_root / "many.h5").unlink()
    elsewhere = open_rfs(exported)["g/x"]
    np.testing.assert_array_equal(elsewhere[0:100], data[:100])
    with pytest.raises(FileNotFoundError, match="404"):
        elsewhere[500:502]
