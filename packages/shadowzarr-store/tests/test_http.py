"""Reading through a real nginx (and our fault/DANDI proxy): counts come from their own logs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import multiprocessing
import threading
import time
import urllib.request
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import (
    FileRef,
    SourceChangedError,
    SourceError,
    SourceNotFoundError,
)
from shadowzarr_testing import FaultRule
from store_handmade import array_meta, write_reference_directory, write_sources
from zarr.abc.store import RangeByteRequest
from zarr.core.buffer import default_buffer_prototype

from shadowzarr_store import RfsStore, load_rfs, open_rfs

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network
PROTOTYPE = default_buffer_prototype()


def _etag(url: str) -> str:
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["ETag"]


def test_directory_over_http_reads_every_kind(nginx: NginxServer, nginx_root: Path) -> None:
    sources = write_sources(nginx_root / "data")
    write_reference_directory(sources, nginx_root / "refs.shadowzarr", nginx.url("data"))
    root = open_rfs(nginx.url("refs.shadowzarr"))
    for name, values in sources.expected.items():
        np.testing.assert_array_equal(root[name][...], values, err_msg=name)


def _small_chunks(nginx_root: Path, count: int = 300, chunk_bytes: int = 2048) -> np.ndarray:
    values = np.arange(count * chunk_bytes // 2, dtype="<i2")
    (nginx_root / "small.bin").write_bytes(values.tobytes())
    return values


def _small_chunk_refs(url: str, count: int = 300, chunk_bytes: int = 2048) -> dict:
    items = chunk_bytes // 2
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "x/zarr.json": array_meta([count * items], [items], "int16"),
    }
    for i in range(count):
        refs[f"x/c/{i}"] = [url, i * chunk_bytes, chunk_bytes]
    return {"version": 1, "refs": refs}


@pytest.mark.parametrize(("concurrency", "most"), [(100, 3), (10, 30)])
def test_300_small_chunks_are_merged(
    nginx: NginxServer, nginx_root: Path, concurrency: int, most: int
) -> None:
    values = _small_chunks(nginx_root)
    # the merger's work on the chunks as stored (the grouped view joins this array's listed
    # chunks from their entries, as a chunk manifest's: test_packed_reads)
    store = RfsStore(load_rfs(_small_chunk_refs(nginx.url("small.bin"))), grouped_view=0)
    array = zarr.open_array(store, path="x", mode="r", zarr_format=3)
    nginx.reset()
    with zarr.config.set({"async.concurrency": concurrency}):
        np.testing.assert_array_equal(array[:], values)
    assert nginx.count() <= most
    assert nginx.bytes_sent() == values.nbytes
    assert store.stats.merged_chunks == 300


def test_merging_off_sends_one_request_per_chunk(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=40)
    store = RfsStore(load_rfs(_small_chunk_refs(nginx.url("small.bin"), 40)), max_merge_size=0)
    nginx.reset()
    with zarr.config.set({"async.concurrency": 100}):
        np.testing.assert_array_equal(zarr.open_array(store, path="x", mode="r")[:], values[:])
    assert nginx.count() == 40


def test_indexed_array_over_http_costs_one_index_read(nginx: NginxServer, nginx_root: Path) -> None:
    """A cold read costs the index's zarr.json (read as its own metadata says), one index
    chunk and the data; a warm one only the data."""
    sources = write_sources(nginx_root / "data")
    write_reference_directory(sources, nginx_root / "refs.shadowzarr", nginx.url("data"))
    root = open_rfs(nginx.url("refs.shadowzarr"))
    expected = sources.expected["indexed"]
    nginx.reset()
    np.testing.assert_array_equal(root["indexed"][260:290], expected[260:290])
    uris = [entry.uri for entry in nginx.entries()]
    assert sorted(uris) == [
        "/data/indexed.bin",
        "/refs.shadowzarr/index/indexed/c/0/0",
        "/refs.shadowzarr/index/indexed/zarr.json",
    ]
    nginx.reset()
    np.testing.assert_array_equal(root["indexed"][500:520], expected[500:520])
    assert [entry.uri for entry in nginx.entries()] == ["/data/indexed.bin"]


def test_partial_read_of_a_large_chunk_moves_only_the_records(
    nginx: NginxServer, nginx_root: Path
) -> None:
    # One chunk of 20,000 records of 770 bytes (384 + 1 int16 channels), selection keeps 384.
    rng = np.random.default_rng(3)
    data = rng.integers(-(2**15), 2**15, size=(20_000, 385), dtype="<i2")
    (nginx_root / "imec.bin").write_bytes(data.tobytes())
    document = {
        "version": 2,
        "refs": {
            "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
            "ap/zarr.json": array_meta([20_000, 384], [20_000, 384], "int16"),
            "ap/c/0/0": [nginx.url("imec.bin"), 0, data.nbytes],
        },
        "selections": {"ap": {"record_size": 770, "keep": [[0, 768]]}},
    }
    store = RfsStore(load_rfs(document))
    row = 768
    nginx.reset()
    part = zarr.core.sync.sync(
        store.get("ap/c/0/0", PROTOTYPE, RangeByteRequest(100 * row + 10, 103 * row))
    )
    assert part.to_bytes() == data[100:103, :384].tobytes()[10:]
    assert nginx.count() == 1
    assert nginx.bytes_sent() == 3 * 770
    nginx.reset()
    np.testing.assert_array_equal(zarr.open_array(store, path="ap")[:], data[:, :384])
    assert nginx.bytes_sent() == data.nbytes


def _recorded(nginx: NginxServer, nginx_root: Path, name: str) -> dict:
    url = nginx.url(name)
    document = _small_chunk_refs(url, count=4)
    document["sources"] = {url: {"size": (nginx_root / name).stat().st_size, "etag": _etag(url)}}
    return document


def test_replaced_file_raises_source_changed(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=4)
    document = _recorded(nginx, nginx_root, "small.bin")
    array = open_rfs(document)["x"]
    np.testing.assert_array_equal(array[:], values)
    nginx.write_file("small.bin", (values + 1).tobytes())  # same size, new ETag
    with pytest.raises(SourceChangedError, match=r"small\.bin"):
        array[:]
    assert any(entry.status == 412 and entry.if_match for entry in nginx.entries())
    np.testing.assert_array_equal(open_rfs(document, validate_sources=False)["x"][:], values + 1)


def test_file_of_another_size_raises_source_changed(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=4)
    document = _recorded(nginx, nginx_root, "small.bin")
    document["sources"][nginx.url("small.bin")].pop("etag")
    nginx.write_file("small.bin", values.tobytes() + b"tail")
    with pytest.raises(SourceChangedError, match=r"small\.bin"):
        open_rfs(document)["x"][:]


def test_missing_file_names_the_url_and_later_reads_work(
    nginx: NginxServer, nginx_root: Path
) -> None:
    values = _small_chunks(nginx_root, count=4)
    document = _small_chunk_refs(nginx.url("small.bin"), count=4)
    document["refs"]["x/c/2"] = [nginx.url("gone.bin"), 0, 2048]
    array = open_rfs(document)["x"]
    with pytest.raises(SourceNotFoundError, match=r"gone\.bin"):
        array[:]
    np.testing.assert_array_equal(array[:2048], values[:2048])


@pytest.mark.parametrize(
    "rule",
    [
        FaultRule("503", times=2),
        FaultRule("500", times=1),
        FaultRule("reset", times=2),
        FaultRule("truncate", times=1),
        FaultRule("429", times=1, retry_after=0),
    ],
    ids=lambda rule: rule.kind,
)
def test_transient_faults_are_retried(
    make_proxy, nginx: NginxServer, nginx_root: Path, rule: FaultRule
) -> None:
    values = _small_chunks(nginx_root, count=8)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=rule)
    store = RfsStore(load_rfs(_small_chunk_refs(proxy.url("small.bin"), count=8)), backoff=0.01)
    np.testing.assert_array_equal(zarr.open_array(store, path="x")[:], values)
    assert store.stats.retries >= 1
    assert any(entry["fault"] == rule.kind for entry in proxy.log)


@pytest.mark.parametrize(
    "rule",
    [FaultRule("ignore_range"), FaultRule("wrong_range", shift=3)],
    ids=lambda rule: rule.kind,
)
def test_wrong_answers_to_a_range_are_errors(
    make_proxy, nginx: NginxServer, nginx_root: Path, rule: FaultRule
) -> None:
    _small_chunks(nginx_root, count=4)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=rule)
    array = open_rfs(_small_chunk_refs(proxy.url("small.bin"), count=4))["x"]
    with pytest.raises(SourceError, match=r"small\.bin bytes"):
        array[:]


def test_persistent_5xx_gives_up_with_an_error(make_proxy, nginx: NginxServer, nginx_root: Path):
    _small_chunks(nginx_root, count=2)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=FaultRule("503"))
    store = RfsStore(load_rfs(_small_chunk_refs(proxy.url("small.bin"), 2)), retries=2, backoff=0)
    with pytest.raises(SourceError, match="gave up after 3 attempts"):
        zarr.open_array(store, path="x")[:]


def test_threads_and_event_loops_share_one_store(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=64)
    store = RfsStore(load_rfs(_small_chunk_refs(nginx.url("small.bin"), 64)))
    array = zarr.open_array(store, path="x", mode="r")
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(3):
                np.testing.assert_array_equal(array[:], values)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []

    async def read_async() -> None:
        async_array = await zarr.api.asynchronous.open_array(store=store, path="x", mode="r")
        np.testing.assert_array_equal(await async_array.getitem(slice(None)), values)
        await store.aclose()

    asyncio.run(read_async())
    asyncio.run(read_async())  # a second loop gets its own session


def test_dandi_presigned_url_is_renewed_and_token_stays_home(
    make_proxy, nginx: NginxServer, nginx_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = _small_chunks(nginx_root, count=6)
    proxy: LatencyProxy = make_proxy(nginx.url(""), presign_ttl=1.0)
    url = proxy.add_asset("asset-1", "small.bin", embargoed=True)
    monkeypatch.setenv("SHADOWZARR_TEST_DANDI_KEY", proxy.api_key)
    document = _small_chunk_refs(url, count=6)
    document["sources"] = {url: {"size": values.nbytes, "etag": _etag(nginx.url("small.bin"))}}
    store = RfsStore(
        load_rfs(document),
        dandi_api_hosts={f"127.0.0.1:{proxy.port}": "SHADOWZARR_TEST_DANDI_KEY"},
    )
    array = zarr.open_array(store, path="x", mode="r")
    np.testing.assert_array_equal(array[:], values)
    np.testing.assert_array_equal(array[:100], values[:100])  # reuses the presigned URL
    downloads = [e for e in proxy.log if e["route"] == "api"]
    assert len(downloads) == 1

    time.sleep(1.2)  # the presigned URL expires; the next read is refused, then renewed
    np.testing.assert_array_equal(array[:], values)
    log = proxy.log
    downloads = [e for e in log if e["route"] == "api"]
    presigned = [e for e in log if e["route"] == "presigned"]
    assert len(downloads) == 2
    assert any(e["status"] == 403 for e in presigned)
    assert all(e["headers"].get("authorization") == f"token {proxy.api_key}" for e in downloads)
    assert all("authorization" not in e["headers"] for e in presigned)
    assert all(e["headers"].get("if-match") for e in presigned)


def test_dandi_without_token_is_refused_with_a_hint(
    make_proxy, nginx: NginxServer, nginx_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_chunks(nginx_root, count=2)
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    url = proxy.add_asset("asset-2", "small.bin", embargoed=True)
    monkeypatch.delenv("SHADOWZARR_TEST_DANDI_KEY", raising=False)
    store = RfsStore(
        load_rfs(_small_chunk_refs(url, count=2)),
        dandi_api_hosts={f"127.0.0.1:{proxy.port}": "SHADOWZARR_TEST_DANDI_KEY"},
    )
    with pytest.raises(PermissionError, match="SHADOWZARR_TEST_DANDI_KEY"):
        zarr.open_array(store, path="x")[:]


def test_resolve_url_hook(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=3)
    document = _small_chunk_refs("s3://bucket/small.bin", count=3)
    seen: list[str] = []

    async def resolve(url: str) -> str | None:
        seen.append(url)
        return nginx.url(url.removeprefix("s3://bucket/"))

    array = open_rfs(document, resolve_url=resolve)["x"]
    np.testing.assert_array_equal(array[:], values)
    assert set(seen) == {"s3://bucket/small.bin"}


def test_a_stalled_response_times_out_and_is_retried(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    values = _small_chunks(nginx_root, count=4)
    proxy: LatencyProxy = make_proxy(
        nginx.url(""), faults=FaultRule("stall", times=1, stall_seconds=5)
    )
    store = RfsStore(
        load_rfs(_small_chunk_refs(proxy.url("small.bin"), count=4)), timeout=0.3, backoff=0
    )
    np.testing.assert_array_equal(zarr.open_array(store, path="x")[:], values)
    assert store.stats.retries == 1


def test_chunks_above_merge_below_are_not_merged(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=12, chunk_bytes=100_000)
    document = _small_chunk_refs(nginx.url("small.bin"), count=12, chunk_bytes=100_000)
    with zarr.config.set({"async.concurrency": 100}):
        nginx.reset()
        np.testing.assert_array_equal(open_rfs(document, merge_below=64 * 1024)["x"][:], values)
        assert nginx.count() == 12
        nginx.reset()
        np.testing.assert_array_equal(open_rfs(document)["x"][:], values)  # any size merges
        assert nginx.count() == 1


@pytest.mark.slow
def test_pickled_array_reads_in_another_process(nginx: NginxServer, nginx_root: Path) -> None:
    values = _small_chunks(nginx_root, count=8)
    array = open_rfs(_small_chunk_refs(nginx.url("small.bin"), count=8))["x"]
    np.testing.assert_array_equal(array[:10], values[:10])  # a session exists in this process
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        np.testing.assert_array_equal(pool.submit(np.asarray, array).result(timeout=120), values)


def test_dandi_resolution_is_shared_and_retried(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    values = _small_chunks(nginx_root, count=8)
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    url = proxy.add_asset("asset-3", "small.bin")
    proxy.fail_next(1, "503", path="^/api/")
    store = RfsStore(
        load_rfs(_small_chunk_refs(url, count=8)),
        dandi_api_hosts={f"127.0.0.1:{proxy.port}": "SHADOWZARR_TEST_DANDI_KEY"},
        max_merge_size=0,
        backoff=0.01,
    )
    np.testing.assert_array_equal(zarr.open_array(store, path="x")[:], values)
    statuses = [e["status"] for e in proxy.log if e["route"] == "api"]
    assert statuses == [503, 302]  # eight concurrent reads, one resolution (after one retry)
    assert len([e for e in proxy.log if e["route"] == "presigned"]) == 8


def test_a_failed_merged_request_is_retried_member_by_member(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    values = _small_chunks(nginx_root, count=8)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=FaultRule("ignore_range", times=1))
    # No retries: the merged request fails at its one attempt (a 200 to a Range is retried).
    store = RfsStore(load_rfs(_small_chunk_refs(proxy.url("small.bin"), count=8)), retries=0)
    with zarr.config.set({"async.concurrency": 100}):
        np.testing.assert_array_equal(zarr.open_array(store, path="x")[:], values)
    ranges = [entry["range"] for entry in proxy.log]
    assert ranges[0] == f"bytes=0-{8 * 2048 - 1}"  # the merged request, answered with 200
    assert sorted(ranges[1:]) == sorted(f"bytes={i * 2048}-{i * 2048 + 2047}" for i in range(8))


def test_whole_file_reference_of_known_size_reads_partially(
    nginx: NginxServer, nginx_root: Path
) -> None:
    values = _small_chunks(nginx_root, count=1, chunk_bytes=50_000)
    url = nginx.url("small.bin")
    document = {
        "version": 1,
        "refs": {"c/0": [url], "d/0": [url]},
        "sources": {url: {"size": values.nbytes}},
    }
    store = RfsStore(load_rfs(document))
    nginx.reset()
    part = zarr.core.sync.sync(store.get("c/0", PROTOTYPE, RangeByteRequest(1000, 1010)))
    assert part.to_bytes() == values.tobytes()[1000:1010]
    assert nginx.bytes_sent() == 10
    whole = zarr.core.sync.sync(store.get("d/0", PROTOTYPE))
    assert whole.to_bytes() == values.tobytes()
    assert zarr.core.sync.sync(store.getsize("d/0")) == values.nbytes


def test_byte_range_past_the_end_of_a_short_slab_reads_as_fill(
    nginx: NginxServer, nginx_root: Path
) -> None:
    sources = write_sources(nginx_root / "data")
    write_reference_directory(sources, nginx_root / "refs.shadowzarr", nginx.url("data"))
    store = RfsStore(load_rfs(nginx.url("refs.shadowzarr")), grouped_view=0)  # stored keys
    whole = zarr.core.sync.sync(store.get("slabs/c/3/0", PROTOTYPE)).to_bytes()
    assert whole[800:] == np.full(800, -7, dtype="<i2").tobytes()  # 800 bytes left in the file
    for start, stop in ((1000, 1100), (790, 900), (2390, 2400)):
        part = zarr.core.sync.sync(
            store.get("slabs/c/3/0", PROTOTYPE, RangeByteRequest(start, stop))
        )
        assert part.to_bytes() == whole[start:stop]
    # A chunk starting past the recorded end of its file is an error, not fill values; so is
    # one whose file's size is not recorded (the server's 416 is then the error).
    store.rfs.refs["slabs/c/3/0"] = FileRef(nginx.url("data/raw.bin"), 10**7, 100)
    with pytest.raises(SourceError, match="past the end of the file"):
        zarr.core.sync.sync(store.get("slabs/c/3/0", PROTOTYPE))
    store.rfs.refs["h5chunked/c/0/0"] = FileRef(nginx.url("data/data.h5"), 10**7, 100)
    with pytest.raises(SourceError, match="past the end of the file"):
        zarr.core.sync.sync(store.get("h5chunked/c/0/0", PROTOTYPE))
    del store.rfs.sources[nginx.url("data/data.h5")]
    with pytest.raises(SourceError, match=r"416|past the end"):
        zarr.core.sync.sync(store.get("h5chunked/c/0/0", PROTOTYPE))
