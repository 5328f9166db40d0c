"""h5py over RemoteFile through the shared fault-injecting proxy in front of nginx."""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_spec import SourceError
from shadowzarr_store.transport import RangeSource, TransportOptions
from shadowzarr_testing.faults import FaultRule

from shadowzarr_hdf5.remote import RemoteFile, read_chunk_table

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


@pytest.mark.network
@pytest.mark.parametrize("multi_range", [False, True])
def test_transient_faults_are_retried_under_h5py(
    write_h5: Callable[..., Path], nginx, nginx_root: Path, make_proxy, multi_range: bool
) -> None:
    path = write_h5(nginx_root / "f.h5", "appended", "earliest", "gzip")
    with h5py.File(path, "r") as f:
        expected = {name: f[name][...] for name in f}
        counts = {name: f[name].id.get_num_chunks() for name in f}
    proxy = make_proxy(nginx.url(""), faults=0.2, seed=7)
    url = proxy.url("f.h5")
    fetcher = RangeSource(url, TransportOptions(multi_range=multi_range, backoff=0.01))
    remote = RemoteFile(fetcher, block_size=4096, max_run_blocks=2)
    with fetcher, remote, h5py.File(remote, "r") as f:
        for name, values in expected.items():
            assert len(read_chunk_table(remote, f[name])) == counts[name]
            np.testing.assert_array_equal(f[name][...], values)
        assert remote.stats.retries > 0


@pytest.mark.network
def test_a_range_request_answered_whole_is_an_error(nginx, nginx_root: Path, make_proxy) -> None:
    (nginx_root / "blob.bin").write_bytes(bytes(range(256)) * 100)
    # Both attempts answered whole (a 200 to a Range is retried like any wrong answer).
    proxy = make_proxy(nginx.url(""), faults=[FaultRule("ignore_range", times=2)])
    fetcher = RangeSource(proxy.url("blob.bin"), TransportOptions(retries=1, backoff=0))
    with fetcher, pytest.raises(SourceError, match="ignored the Range header"):
        fetcher.fetch_many([(100, 50)])


@pytest.mark.network
def test_a_wrong_content_range_is_retried_not_a_change(nginx, nginx_root: Path, make_proxy) -> None:
    data = bytes(range(256)) * 100
    (nginx_root / "blob.bin").write_bytes(data)
    rule = FaultRule("wrong_range", times=1, honest=True, shift=3)
    proxy = make_proxy(nginx.url(""), faults=[rule])
    with RangeSource(proxy.url("blob.bin"), TransportOptions(backoff=0)) as fetcher:
        assert fetcher.fetch_many([(100, 50)]) == [data[100:150]]
        assert fetcher.stats.retries == 1
    assert proxy.count() == 2
