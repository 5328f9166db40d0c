"""Faults injected by the shared proxy between RfsStore and nginx: retried, detected, bounded.

Budgets: the big read is a 1 GiB sparse file holding 2,048 chunks of 64 KiB (128 MiB of data),
read through zarr with one request per chunk (merging off) at a 10% fault rate over the kinds
reset/500/503/429/truncate/stall (seeded, ~200 faults); the other tests send tens of requests.
"""

from __future__ import annotations

import asyncio
import urllib.request
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import SourceChangedError, SourceError
from shadowzarr_store import LocalCache, RfsStore
from shadowzarr_testing import FaultRule, assert_array_equal_exact

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = [pytest.mark.network]

# One request per chunk and short timeouts, so every fault costs at most about a second.
UNMERGED = {"merge_gap": 0, "max_merge_size": 0, "merge_below": 0}
FAST_RETRIES = {"timeout": 1.0, "retries": 8, "backoff": 0.02, "max_backoff": 0.5}


def _etag(url: str) -> str:
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["ETag"]


def _open(refs, **options) -> zarr.Array:
    return zarr.open_array(RfsStore(refs, **options), path="pattern", mode="r", zarr_format=3)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_full_read_at_ten_percent_faults_is_exact(
    nginx: NginxServer, nginx_root: Path, make_pattern, make_proxy, wrong_bytes
) -> None:
    """2,048 chunk requests, 10% faults (reset/500/503/429/truncate/stall): every value right.

    Retries are bounded (at most ``retries + 1`` requests a chunk) and the read ends well within
    the test timeout even though stalls hang for 30 s (the store times out after 1 s).
    """
    pattern = make_pattern(nginx_root / "big.bin", chunks=2048, chunk_items=16384, stride=1 << 19)
    proxy = make_proxy(
        faults=0.1,
        fault_kinds=("reset", "500", "503", "429", "truncate", "stall"),
        seed=13,
    )
    url = proxy.url("big.bin")
    refs = pattern.references(
        url, size=pattern.path.stat().st_size, etag=_etag(nginx.url("big.bin"))
    )
    array = _open(refs, **UNMERGED, **FAST_RETRIES)
    store = array.store
    actual = array[:]
    proxy.wait_idle(timeout=30)
    faults = [entry for entry in proxy.log if entry["fault"]]
    assert wrong_bytes(actual, pattern.expected) == 0
    assert_array_equal_exact(actual, pattern.expected, "pattern under faults")
    assert len(faults) >= 100, f"only {len(faults)} faults injected"
    assert {entry["fault"] for entry in faults} >= {"reset", "500", "503", "429", "truncate"}
    assert proxy.requests <= pattern.chunks * (FAST_RETRIES["retries"] + 1)
    assert store.stats.snapshot().retries >= len(faults) // 2
    print(
        f"\nfaults: {len(faults)} injected over {proxy.requests} requests, "
        f"{pattern.chunks} chunks read, retries {store.stats.snapshot().retries}"
    )


def test_past_the_retry_budget_the_error_names_source_and_range(
    nginx_root: Path, make_pattern, make_proxy
) -> None:
    """Every request answered 503: 3 attempts (retries=2), then an error with URL and range."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=4, chunk_items=256)
    proxy = make_proxy()
    proxy.fail_matching(r"p\.bin", "503")
    array = _open(pattern.references(proxy.url("p.bin")), **UNMERGED, retries=2, backoff=0.01)
    with pytest.raises(SourceError) as caught:
        array[256:512]
    message = str(caught.value)
    assert proxy.url("p.bin") in message
    assert "bytes 1024-2047" in message
    assert "3 attempts" in message
    assert proxy.count(path_prefix="/p.bin") == 3


@pytest.mark.parametrize(
    "rule",
    [
        FaultRule("ignore_range", times=1000),
        FaultRule("wrong_range", times=1000, shift=4, honest=True),
        FaultRule("wrong_range", times=1000, shift=-4, honest=True),
    ],
    ids=["200-whole-file", "range-shifted-forward", "range-shifted-back"],
)
def test_a_server_answering_another_range_is_detected(
    nginx_root: Path, make_pattern, make_proxy, rule: FaultRule
) -> None:
    """No wrong bytes: a 200 to a Range request or another Content-Range is an error, not data."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=8, chunk_items=256)
    proxy = make_proxy(faults=[rule])
    array = _open(pattern.references(proxy.url("p.bin")), **UNMERGED, retries=1)
    with pytest.raises(SourceError, match=r"Range|range") as caught:
        array[512:1024]
    assert proxy.url("p.bin") in str(caught.value)
    assert proxy.log
    assert all(entry["fault"] == rule.kind for entry in proxy.log)


def test_a_range_served_after_a_lost_fault_is_exact(
    nginx_root: Path, make_pattern, make_proxy
) -> None:
    """Ignored Ranges past the retry budget are an error; then an honest server: the store's
    next read is right (nothing stuck). One ignored Range within the budget is retried."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=8, chunk_items=256)
    proxy = make_proxy(faults=[FaultRule("ignore_range", times=2)])
    array = _open(pattern.references(proxy.url("p.bin")), **UNMERGED, retries=1)
    with pytest.raises(SourceError, match="ignored the Range"):
        array[0:256]
    assert_array_equal_exact(array[:], pattern.expected, "after the fault")
    proxy.set_faults([FaultRule("ignore_range", times=1)])
    assert_array_equal_exact(array[256:512], pattern.expected[256:512], "retried")
    assert [entry["fault"] for entry in proxy.log].count("ignore_range") == 3


def _replace(nginx: NginxServer, make_pattern, name: str, pattern, salt: int) -> None:
    """A new version of the file: same size and layout, other values, new ETag."""
    staging = make_pattern(
        pattern.path.with_name("staging.bin"), pattern.chunks, pattern.chunk_items, salt=salt
    )
    nginx.write_file(name, staging.path.read_bytes())


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "local-cache"])
def test_source_replaced_mid_read_never_mixes_versions(
    nginx: NginxServer, nginx_root: Path, make_pattern, tmp_path: Path, cached: bool
) -> None:
    """Half the chunks read (and cached), the file replaced: the rest raise SourceChangedError.

    With a LocalCache the old half still comes from the cache as the recorded version, but a
    read touching a new chunk fails instead of joining new bytes to old ones.
    """
    pattern = make_pattern(nginx_root / "p.bin", chunks=16, chunk_items=256)
    url = nginx.url("p.bin")
    refs = pattern.references(url, size=pattern.path.stat().st_size, etag=_etag(url))
    options = {"local_cache": LocalCache(tmp_path / "cache")} if cached else {}
    array = _open(refs, **UNMERGED, **options)
    half = pattern.chunks * pattern.chunk_items // 2
    assert_array_equal_exact(array[:half], pattern.expected[:half], "first half")
    _replace(nginx, make_pattern, "p.bin", pattern, salt=1_000_000)
    assert _etag(url) != refs.sources[url].etag
    with pytest.raises(SourceChangedError, match=r"p\.bin"):
        array[:]
    with pytest.raises(SourceChangedError):
        array[half:]
    if cached:
        assert_array_equal_exact(array[:half], pattern.expected[:half], "cached first half")
        fresh = _open(refs, **UNMERGED, local_cache=LocalCache(tmp_path / "cache"))
        with pytest.raises(SourceChangedError):
            fresh[:]


def test_local_source_replaced_with_other_size_is_refused(tmp_path: Path, make_pattern) -> None:
    pattern = make_pattern(tmp_path / "p.bin", chunks=8, chunk_items=256)
    refs = pattern.references(str(pattern.path), size=pattern.path.stat().st_size)
    array = _open(refs)
    assert_array_equal_exact(array[:256], pattern.expected[:256], "before")
    with open(pattern.path, "ab") as stream:
        stream.write(b"\0" * 4)
    with pytest.raises(SourceChangedError, match=r"p\.bin"):
        array[256:]


@pytest.mark.timeout(60)
def test_a_stall_past_the_timeout_is_retried_not_hung(
    nginx_root: Path, make_pattern, make_proxy
) -> None:
    """A response that hangs 30 s before its headers: given up after 0.5 s, retried, correct."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=4, chunk_items=256)
    proxy = make_proxy(faults=[FaultRule("stall", times=2, stall_seconds=30.0)])
    array = _open(pattern.references(proxy.url("p.bin")), **UNMERGED, timeout=0.5, backoff=0.01)

    async def read() -> np.ndarray:
        return await asyncio.wait_for(asyncio.to_thread(lambda: array[:]), timeout=20)

    assert_array_equal_exact(asyncio.run(read()), pattern.expected, "after stalls")
    assert array.store.stats.snapshot().retries >= 2


@pytest.mark.parametrize("sized", [False, True], ids=["no-size-recorded", "size-recorded"])
def test_a_short_answer_claiming_the_end_of_the_file_is_never_padded_nor_cached(
    nginx_root: Path, make_pattern, make_proxy, tmp_path: Path, sized: bool
) -> None:
    """Every range answered 206 with half its bytes and a Content-Range saying the file ends
    there. Plain kerchunk references (no size recorded) cannot tell that from a short file, so
    the short read is an error, never fill values; with the size recorded the lie is seen. In
    both, nothing reaches the LocalCache, and once the fault is gone every value reads right."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=12, chunk_items=256)
    proxy = make_proxy(faults=[FaultRule("short_end")])
    url = proxy.url("p.bin")
    refs = pattern.references(url, size=pattern.path.stat().st_size if sized else None)
    cache = LocalCache(tmp_path / "cache")
    array = _open(refs, **UNMERGED, retries=1, backoff=0.01, local_cache=cache)
    for chunk in range(pattern.chunks):
        window = slice(chunk * 256, (chunk + 1) * 256)
        with pytest.raises(SourceError, match=r"p\.bin"):
            array[window]
    assert len(cache) == 0
    proxy.clear_faults()
    assert_array_equal_exact(array[:], pattern.expected, "after the fault")
    assert len(cache) == pattern.chunks
