"""generate_catalog(client=...): worker processes of a Dask cluster generate and publish, this
process commits the rows; the catalog is the one a local run makes."""

from __future__ import annotations

from pathlib import Path

import distributed
import pandas as pd
import pytest
from catalog_archive import make_archive
from test_catalog_local import assert_published

from shadowzarr_catalog import generate_catalog


@pytest.mark.timeout(300)
def test_a_local_dask_cluster_makes_the_local_runs_catalog(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    expected = make_archive(root, count=3)
    generate_catalog(root, tmp_path / "local")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        summary = generate_catalog(root, tmp_path / "cluster", client=client)
        workers_pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert len(workers_pids) == 2
    assert summary.statuses == {"failed": 2, "ok": len(expected), "skipped": 1}
    timing = ["generated_at", "generation_seconds"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "cluster/catalog.parquet").drop(columns=timing),
        pd.read_parquet(tmp_path / "local/catalog.parquet").drop(columns=timing),
    )
    assert_published(tmp_path / "cluster", expected)


@pytest.mark.timeout(300)
def test_a_client_that_is_not_the_default_one(tmp_path: Path) -> None:
    """A client made with ``set_as_default=False`` (as the command's ``--scheduler`` makes it)
    runs the jobs as well: nothing asks distributed for its default client."""
    root = tmp_path / "archive"
    expected = make_archive(root, count=2)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        with pytest.raises(ValueError, match="No clients found"):
            distributed.default_client()
        summary = generate_catalog(root, tmp_path / "cluster", client=client)
    assert summary.statuses == {"failed": 2, "ok": len(expected), "skipped": 1}
    assert_published(tmp_path / "cluster", expected)
