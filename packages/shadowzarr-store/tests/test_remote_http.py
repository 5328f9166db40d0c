"""Remote arrays over references served by nginx (and the latency proxy), with request counts
from the servers' own logs: reopen, cache bounds, prefetch, offline reads, identity, export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from shadowzarr_spec import SourceChangedError, SourceNotFoundError
from store_handmade import array_meta
from zarr.core.sync import sync

from shadowzarr_store import MemoryCache, open_rfs
from shadowzarr_store.remote import OfflineError, open_remote_array, probe_identity
from shadowzarr_store.transport import Transport

if TYPE_CHECKING:
    from shadowzarr_testing import LatencyProxy, NginxServer
    from shadowzarr_testing.plugin import MakeProxy

pytestmark = pytest.mark.network

CHUNK_ROWS, COLUMNS, CHUNKS = 100, 4, 10
CHUNK_BYTES = CHUNK_ROWS * COLUMNS * 4


def _serve(root: Path, base_url: str, *, name: str = "raw.bin", seed: int = 0) -> np.ndarray:
    """raw int32 samples plus ``refs.json`` pointing into them (array ``x``, 10 chunks)."""
    values = np.random.default_rng(seed).integers(-9999, 9999, (CHUNKS * CHUNK_ROWS, COLUMNS))
    values = values.astype("<i4")
    (root / name).write_bytes(values.tobytes())
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "x/zarr.json": array_meta([CHUNKS * CHUNK_ROWS, COLUMNS], [CHUNK_ROWS, COLUMNS], "int32"),
    }
    for i in range(CHUNKS):
        refs[f"x/c/{i}/0"] = [f"{base_url}{name}", i * CHUNK_BYTES, CHUNK_BYTES]
    (root / "refs.json").write_text(json.dumps({"version": 1, "refs": refs}))
    return values


def test_second_open_costs_no_request(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    values = _serve(nginx_root, nginx.url(""))
    nginx.reset()
    first = open_remote_array(nginx.url("refs.json") + "/x", cache_dir=tmp_path)
    assert nginx.count(path_prefix="/refs.json") == 2  # 1 byte for the identity, GET the refs
    assert first.info["references"] == "generated"
    nginx.reset()
    second = open_remote_array(nginx.url("refs.json"), dataset="x", cache_dir=tmp_path)
    assert nginx.count() == 0
    np.testing.assert_array_equal(second[:], values)
    assert nginx.count(path_prefix="/refs.json") == 0


def test_memory_cache_is_bounded_lru(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    values = _serve(nginx_root, nginx.url(""))
    bound = 3 * CHUNK_BYTES
    remote = open_remote_array(
        nginx.url("refs.json::x"), cache="memory", max_cache_bytes=bound, cache_dir=tmp_path
    )
    remote.fetch()
    assert remote.cache_bytes == bound
    assert remote.max_cache_bytes == bound
    hit, got = remote.read_cached(slice(900, 1000))
    assert hit
    np.testing.assert_array_equal(got, values[900:])
    assert remote.read_cached(slice(0, 100)) == (False, None)  # least recently used: gone
    remote[450:460]
    assert remote.cache_bytes <= bound


@pytest.mark.parametrize(("bound", "kept"), [(4 * CHUNK_BYTES, 4), (None, CHUNKS)])
def test_disk_cache_bound_or_unbounded(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path, bound: int | None, kept: int
) -> None:
    _serve(nginx_root, nginx.url(""))
    remote = open_remote_array(
        nginx.url("refs.json::x"), cache="disk", max_cache_bytes=bound, cache_dir=tmp_path
    )
    remote.fetch()
    assert remote.cache_bytes == kept * CHUNK_BYTES
    hits = sum(remote.read_cached(slice(i * 100, i * 100 + 1))[0] for i in range(CHUNKS))
    assert hits == kept


def test_one_cache_shared_by_two_arrays(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    values = _serve(nginx_root, nginx.url(""))
    shared = MemoryCache(10**6)
    a = open_remote_array(nginx.url("refs.json::x"), memory_cache=shared, cache_dir=tmp_path)
    b = open_remote_array(nginx.url("refs.json::x"), memory_cache=shared, cache_dir=tmp_path)
    a.fetch(slice(0, 200))
    hit, got = b.read_cached(slice(0, 200))
    assert hit
    np.testing.assert_array_equal(got, values[:200])


def test_fetch_bounded_concurrency_then_offline_sends_nothing(
    nginx: NginxServer, nginx_root: Path, make_proxy: MakeProxy, tmp_path: Path
) -> None:
    proxy: LatencyProxy = make_proxy(latency=0.02)
    values = _serve(nginx_root, proxy.url(""))
    remote = open_remote_array(
        proxy.url("refs.json::x"), cache="disk", cache_dir=tmp_path, max_concurrency=2
    )
    proxy.reset()
    progress: list[tuple[int, int]] = []
    remote.fetch(slice(0, 1000), progress=lambda *p: progress.append(p))
    proxy.wait_idle()
    assert 0 < proxy.max_concurrent <= 2
    assert progress[-1] == (CHUNKS, CHUNKS)
    assert [done for done, _ in progress] == list(range(1, CHUNKS + 1))
    proxy.reset()
    remote.offline = True
    hit, got = remote.read_cached(...)
    assert hit
    np.testing.assert_array_equal(got, values)
    np.testing.assert_array_equal(remote[5:995, 1], values[5:995, 1])
    assert proxy.requests == 0
    assert remote.traffic.cache_hits >= 2 * CHUNKS


def test_offline_refuses_to_fetch(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    _serve(nginx_root, nginx.url(""))
    remote = open_remote_array(nginx.url("refs.json::x"), cache_dir=tmp_path)
    nginx.reset()
    remote.offline = True
    with pytest.raises(OfflineError, match=r"offline: .*raw\.bin is not cached"):
        remote[0:10]
    assert nginx.count() == 0
    remote.offline = False
    remote[0:10]
    assert nginx.count() == 1


def test_identity_refresh_of_replaced_references(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    old = _serve(nginx_root, nginx.url(""))
    watching = open_remote_array(
        nginx.url("refs.json::x"), cache="memory", cache_dir=tmp_path, assume_immutable=False
    )
    np.testing.assert_array_equal(watching[:], old)
    nginx.reset()
    np.testing.assert_array_equal(watching[:100], old[:100])
    # One identity check per operation (a 1-byte ranged GET), nothing else.
    assert [e.range for e in nginx.entries()] == ["bytes=0-0"]
    new = _serve(nginx_root, nginx.url(""), name="raw2.bin", seed=1)
    nginx.write_file("refs.json", (nginx_root / "refs.json").read_bytes())  # a new ETag
    np.testing.assert_array_equal(watching[:], new)
    assert watching.cache_bytes == CHUNKS * CHUNK_BYTES  # the old bytes were dropped
    trusting = open_remote_array(nginx.url("refs.json::x"), cache_dir=tmp_path / "t")
    np.testing.assert_array_equal(trusting[:], new)


def test_changed_data_file_raises_instead_of_mixing(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    _serve(nginx_root, nginx.url(""))
    document = json.loads((nginx_root / "refs.json").read_text())
    identity = sync(probe_identity(Transport(), nginx.url("raw.bin")))
    document["sources"] = {nginx.url("raw.bin"): {"size": identity.size, "etag": identity.etag}}
    (nginx_root / "refs.json").write_text(json.dumps(document))
    remote = open_remote_array(nginx.url("refs.json::x"), cache_dir=tmp_path)
    remote[:100]
    nginx.write_file("raw.bin", b"\0" * (CHUNKS * CHUNK_BYTES + 8))
    with pytest.raises(SourceChangedError):
        remote[100:200]


def test_export_with_warm_chunks(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    values = _serve(nginx_root, nginx.url(""))
    secret_base = nginx.url("").replace("://", "://reader:hunter2@")
    document = json.loads((nginx_root / "refs.json").read_text())
    for ref in document["refs"].values():
        if isinstance(ref, list):
            ref[0] = f"{secret_base}raw.bin?token=abc123"
    remote = open_remote_array(document, dataset="x", cache="disk", cache_dir=tmp_path / "c")
    remote.fetch(slice(200, 500))
    exported = remote.export(tmp_path / "portable")
    text = (exported / "refs.json").read_text()
    for leaked in ("hunter2", "abc123", str(tmp_path / "c")):
        assert leaked not in text
    assert sorted(p.name for p in (exported / "data" / "x" / "c").iterdir()) == ["2", "3", "4"]
    cold = remote.export(tmp_path / "cold", include_cache=False)
    assert not (cold / "data").exists()
    (nginx_root / "raw.bin").unlink()
    elsewhere = open_rfs(exported)["x"]
    np.testing.assert_array_equal(elsewhere[200:500], values[200:500])
    with pytest.raises(SourceNotFoundError, match="404"):
        elsewhere[0:100]


def test_info_traffic_and_dask_reductions(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    import dask.array as da

    values = _serve(nginx_root, nginx.url(""))
    remote = open_remote_array(nginx.url("refs.json::x"), cache="memory", cache_dir=tmp_path)
    lazy = da.from_zarr(remote.array)
    assert lazy.numblocks == (CHUNKS, 1)
    np.testing.assert_array_equal(lazy.sum(axis=0).compute(), values.sum(axis=0))
    np.testing.assert_allclose(lazy.mean(axis=1).compute(), values.mean(axis=1))
    np.testing.assert_array_equal(lazy.min(axis=0).compute(), values.min(axis=0))
    np.testing.assert_array_equal(lazy.max().compute(), values.max())
    np.testing.assert_allclose(lazy.std(axis=0).compute(), values.std(axis=0))
    traffic = remote.traffic
    assert traffic.bytes >= values.nbytes
    assert traffic.cache_hits > 0  # every reduction after the first came from memory
    text = str(remote.info)
    for needed in ("(1000, 4)", "int32", "(100, 4)", "refs.json::/x", "memory", "requests"):
        assert needed in text


async def test_afetch_from_async_code(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    values = _serve(nginx_root, nginx.url(""))
    remote = open_remote_array(nginx.url("refs.json::x"), cache="memory", cache_dir=tmp_path)
    assert await remote.afetch((slice(300, 700), 2), max_concurrency=3) is remote
    await remote.aclose()
    nginx.reset()
    hit, got = remote.read_cached((slice(300, 700), 2))
    assert hit
    np.testing.assert_array_equal(got, values[300:700, 2])
    assert nginx.count() == 0
    assert remote.traffic.requests >= 1


def test_arrays_pickle_for_dask_workers(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    import pickle

    values = _serve(nginx_root, nginx.url(""))
    remote = open_remote_array(nginx.url("refs.json::x"), cache="disk", cache_dir=tmp_path)
    remote.fetch(slice(0, 100))
    copy = pickle.loads(pickle.dumps(remote.array))
    nginx.reset()
    np.testing.assert_array_equal(copy[:100], values[:100])
    assert nginx.count() == 0  # the disk cache travels by its path
