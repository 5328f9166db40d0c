"""A run is polite to each host: at most ``per_host`` assets are asked of one host at once (the
local pool's worker processes and a Dask cluster alike, counted at the server), no more
requests at once than that many generations alone would send, and 429 and 503 answers are
waited out (``Retry-After`` honoured) and retried, the run ending with every asset published."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import distributed
import pandas as pd
import pytest
from catalog_archive import write_hdf5
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_store import open_rfs
from shadowzarr_testing import FaultRule, assert_array_equal_exact

from shadowzarr_catalog import generate_catalog

if TYPE_CHECKING:
    import numpy as np
    from shadowzarr_testing import LatencyProxy

pytestmark = [pytest.mark.network, pytest.mark.timeout(300)]

NAMES = [f"sub-{i % 3}/ses-{i:02d}.h5" for i in range(14)]
PER_HOST = 3


@pytest.fixture
def served(nginx) -> dict[str, dict[str, np.ndarray]]:  # type: ignore[no-untyped-def]
    return {name: write_hdf5(Path(nginx.path(name)), i) for i, name in enumerate(NAMES)}


@pytest.fixture(scope="module")
def cluster() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=4, processes=True, dashboard_address=":0"
        ) as local,
        distributed.Client(local) as client,
    ):
        yield client


def assets_at_once(log: list[dict[str, Any]]) -> int:
    """The most files the server was answering requests for at one moment."""
    events = []
    for entry in log:
        events.append((entry["started"], 1, entry["path"]))
        events.append((entry["started"] + entry["duration"], -1, entry["path"]))
    open_requests: dict[str, int] = {}
    most = 0
    for _, step, path in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts
        open_requests[path] = open_requests.get(path, 0) + step
        most = max(most, sum(1 for n in open_requests.values() if n > 0))
    return most


def assert_published(destination: Path, urls: list[str], served: dict[str, Any]) -> None:
    table = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    assert set(table.status) == {"ok"}, table[["status", "error_class", "error_message"]]
    index = json.loads((destination / "index.json").read_text())
    for url, (name, values) in zip(urls, served.items(), strict=True):
        group = open_rfs(str(destination / index[url]))
        assert_array_equal_exact(group["signal"][:], values["signal"], name)


@pytest.mark.parametrize("where", ["pool", "cluster"])
def test_at_most_per_host_assets_at_once(  # type: ignore[no-untyped-def]
    where: str, make_proxy, served, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    proxy: LatencyProxy = make_proxy(latency=0.03)
    urls = [proxy.url(name) for name in NAMES]
    generate_rfs(urls[0], progress=False)  # what one generation alone asks at once
    alone = proxy.max_concurrent
    proxy.reset()
    client = request.getfixturevalue("cluster") if where == "cluster" else None
    summary = generate_catalog(urls, tmp_path / where, per_host=PER_HOST, client=client)
    assert summary.statuses == {"ok": len(NAMES)}
    # the bound is reached (the jobs did overlap) and never passed
    assert 2 <= assets_at_once(proxy.log) <= PER_HOST
    assert proxy.max_concurrent <= PER_HOST * alone
    assert_published(tmp_path / where, urls, served)


def test_429_and_503_are_waited_out(  # type: ignore[no-untyped-def]
    make_proxy, served, tmp_path: Path
) -> None:
    proxy: LatencyProxy = make_proxy(latency=0.01)
    proxy.set_faults(
        [
            FaultRule("429", path=r"ses-0[0-3]\.h5$", times=3, retry_after=1),
            FaultRule("503", path=r"ses-1[0-3]\.h5$", times=3),
        ]
    )
    urls = [proxy.url(name) for name in NAMES]
    summary = generate_catalog(urls, tmp_path / "catalog")
    assert summary.statuses == {"ok": len(NAMES)}, summary.failures
    assert_published(tmp_path / "catalog", urls, served)
    log = sorted(proxy.log, key=lambda e: e["started"])
    refused = [e for e in log if e["fault"] in ("429", "503")]
    assert sorted(e["fault"] for e in refused) == ["429"] * 3 + ["503"] * 3
    for answer in refused:
        answered = answer["started"] + answer["duration"]
        retried = [e for e in log if e["path"] == answer["path"] and e["started"] >= answered]
        assert retried, answer["path"]  # asked again, and the asset was published
        if answer["fault"] == "429":  # not before the Retry-After the server gave
            assert retried[0]["started"] - answered >= 0.95, answer["path"]
