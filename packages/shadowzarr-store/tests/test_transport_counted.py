"""`counted`: every request of every transport opened inside the block, also in the transport
loop's tasks, counted into one `StoreStats`; two blocks on two threads count apart."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs

from shadowzarr_store.transport import RangeSource, StoreStats, counted

pytestmark = pytest.mark.network


def _write(path: str, rows: int) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(rows * 4, dtype="<i4").reshape(rows, 4), chunks=(8, 4))


def test_each_block_counts_its_own_requests(nginx, make_proxy) -> None:  # type: ignore[no-untyped-def]
    proxy = make_proxy(ranges="s3")
    names = ["a.h5", "b.h5", "c.h5"]
    for i, name in enumerate(names):
        _write(nginx.path(name), 50 + 30 * i)

    def generate(name: str) -> StoreStats:
        stats = StoreStats()
        with counted(stats):
            generate_rfs(proxy.url(name), progress=False)
            with RangeSource(proxy.url(name)) as source:
                source.fetch_many([(0, 8), (100, 8)])
        return stats

    with ThreadPoolExecutor(3) as pool:
        found = dict(zip(names, pool.map(generate, names), strict=True))
    for name, stats in found.items():
        assert stats.requests == proxy.count(path_prefix=f"/{name}") >= 2, name
        assert stats.bytes == proxy.bytes_sent(f"/{name}"), name

    proxy.reset()
    outside = StoreStats()
    with counted(outside):
        pass
    generate_rfs(proxy.url("a.h5"), progress=False)  # after the block: not counted
    assert outside.requests == 0
    assert proxy.requests > 0
