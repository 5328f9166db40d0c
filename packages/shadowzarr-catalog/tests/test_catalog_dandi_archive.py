"""`generate_catalog` over a 300-asset DANDI-like archive: moto's S3 server holds the files,
the testing package's DANDI-like proxy lists the dandiset page by page and redirects each
download to a presigned URL in front of the bucket. A local thread pool and a Dask
`LocalCluster` of two worker processes make the same catalog; every published reference set
reads what h5py and tifffile read; every failure is a row with a typed error; pandas and duckdb
read the Parquet file; a rerun with nothing changed asks nothing of any asset; replaced and
deleted assets are exactly what a later run redoes; a run whose driver or one of whose Dask
workers is killed mid-run, then run again, ends with a clean run's catalog, no reference set
half written."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import distributed
import duckdb
import h5py
import numpy as np
import pandas as pd
import pytest
import tifffile
from catalog_dandi_archive import ArchiveAsset, build_assets
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import errors as spec_errors
from shadowzarr_store import open_rfs
from shadowzarr_store.remote import errors as remote_errors
from shadowzarr_store.transport import StoreStats, counted
from shadowzarr_store.transport import errors as transport_errors
from shadowzarr_testing import LatencyProxy, assert_array_equal_exact

from shadowzarr_catalog import generate_catalog

if TYPE_CHECKING:
    from shadowzarr_testing import MotoS3

pytestmark = [pytest.mark.slow, pytest.mark.network, pytest.mark.timeout(600)]

SCRIPT = Path(sys.executable).with_name("shadowzarr")
TIMING = ["generated_at", "generation_seconds"]
TYPED = (spec_errors.ShadowzarrError,)


@dataclass
class DandiArchive:
    moto: MotoS3
    bucket: str
    proxy: LatencyProxy
    assets: dict[str, ArchiveAsset]

    @property
    def dandiset(self) -> str:
        return self.proxy.url("api/dandisets/000300/versions/draft/")

    def put(self, asset: ArchiveAsset) -> None:
        self.moto.put(self.bucket, f"blobs/{asset.path}", asset.data)

    def asset_requests(self) -> list[dict[str, Any]]:
        """Requests the proxy saw for any asset's bytes (downloads and presigned reads)."""
        return [e for e in self.proxy.log if e["path"].startswith(("/api/assets/", "/presigned/"))]


@pytest.fixture(scope="module")
def archive(moto_s3: MotoS3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DandiArchive]:
    scratch = tmp_path_factory.mktemp("dandi-archive")
    bucket = moto_s3.create_bucket(f"dandiarchive-{os.getpid()}", public=True)
    assets = build_assets(scratch / "files")
    assert len(assets) >= 300
    proxy = LatencyProxy(f"{moto_s3.endpoint}/{bucket}/blobs").start()
    found = DandiArchive(moto_s3, bucket, proxy, {a.asset_id: a for a in assets})
    for asset in assets:
        found.put(asset)
        proxy.add_asset(asset.asset_id, asset.path)
    try:
        yield found
    finally:
        proxy.stop()


@pytest.fixture(scope="module")
def clean(archive: DandiArchive, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog of one uninterrupted run on the default local pool."""
    destination = tmp_path_factory.mktemp("clean") / "catalog"
    summary = generate_catalog(archive.dandiset, destination)
    assert summary.listed == len(archive.assets)
    return destination


@pytest.fixture(scope="module")
def cluster() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, dashboard_address=":0"
        ) as local,
        distributed.Client(local) as client,
    ):
        yield client


def _table(destination: Path) -> pd.DataFrame:
    table = pd.read_parquet(destination / "catalog.parquet").drop(columns=TIMING)
    return table.sort_values("asset_id").reset_index(drop=True)


def _native(asset: ArchiveAsset) -> dict[str, np.ndarray]:
    """A sample of the asset's values as its native reader reads them: for HDF5 the first and
    last numeric datasets (those the references leave out aside), for TIFF the image."""
    if asset.reader == "tifffile":
        return {"0": tifffile.imread(io.BytesIO(asset.data))}
    names: list[str] = []
    with h5py.File(io.BytesIO(asset.data), "r") as f:
        f.visititems(
            lambda name, node: (
                names.append(name)
                if isinstance(node, h5py.Dataset)
                and node.dtype.kind in "biuf"
                and node.size
                and name not in asset.omitted
                else None
            )
        )
        chosen = sorted(set(sorted(names)[:1] + sorted(names)[-1:]))
        return {name: f[name][()] for name in chosen}


def assert_catalog_matches_archive(destination: Path, archive: DandiArchive) -> None:
    """Every asset has the row its content calls for; every published one reads back equal
    to the native reader; every failure has a typed error."""
    rows = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    index = json.loads((destination / "index.json").read_text())
    assert sorted(rows.index) == sorted(archive.assets)
    for asset_id, asset in archive.assets.items():
        row = rows.loc[asset_id]
        assert row["path"] == asset.path
        assert row["status"] == asset.status, (asset.path, row["error_class"], row["error_message"])
        assert row["size"] == len(asset.data)
        if asset.status in ("ok", "partial"):
            assert sorted(u["name"] for u in row["unsupported"] if u["outcome"] == "omitted") == (
                asset.omitted
            )
            assert row["requests"] >= 1
            assert row["bytes_read"] >= len(asset.data)
            group = open_rfs(str(destination / index[asset_id]))
            for name, values in _native(asset).items():
                assert_array_equal_exact(group[name][...], values, f"{asset.path}:{name}")
        elif asset.status == "failed":
            modules = (spec_errors, remote_errors, transport_errors)
            name = str(row["error_class"])
            error = next((getattr(m, name) for m in modules if hasattr(m, name)), None)
            what = (asset.path, name, row["error_message"])
            assert isinstance(error, type), what
            assert issubclass(error, TYPED), what
            assert row["error_message"]
        else:
            assert row["status"] == "skipped"
            assert row["error_message"]
    assert sorted(index) == sorted(a for a, x in archive.assets.items() if x.reader)


def assert_nothing_half_written(destination: Path) -> None:
    """Every reference set a reader can find (no hidden staging folder) opens whole."""
    for refs in (destination / "refs").rglob("*.shadowzarr"):
        if any(part.startswith(".") for part in refs.relative_to(destination).parts):
            continue
        assert (refs / "refs.json").is_file(), refs
        group = open_rfs(str(refs))
        assert list(group.members(max_depth=None)), refs


def test_the_local_pool_catalogs_the_archive(archive: DandiArchive, clean: Path) -> None:
    assert_catalog_matches_archive(clean, archive)
    assert (clean / "catalog.html").is_file()
    # An HDF5 asset costs the catalog what generate_rfs alone costs it: no probe on top.
    rows = pd.read_parquet(clean / "catalog.parquet").set_index("asset_id")
    hdf5 = [a for a in archive.assets.values() if a.reader == "h5py" and a.status == "ok"]
    for asset in hdf5[::25]:
        alone = StoreStats()
        with counted(alone):
            generate_rfs(archive.proxy.asset_download_url(asset.asset_id), progress=False)
        assert rows.loc[asset.asset_id, "requests"] == alone.requests, asset.path
        assert rows.loc[asset.asset_id, "bytes_read"] == alone.bytes, asset.path


def test_pandas_and_duckdb_read_the_catalog(archive: DandiArchive, clean: Path) -> None:
    table = pd.read_parquet(clean / "catalog.parquet")
    by_duckdb = duckdb.sql(
        "SELECT status, count(*) AS n, sum(size) AS bytes, sum(requests) AS requests "
        f"FROM read_parquet('{clean / 'catalog.parquet'}') GROUP BY status ORDER BY status"
    ).df()
    by_pandas = (
        table.groupby("status")
        .agg(n=("asset_id", "size"), bytes=("size", "sum"), requests=("requests", "sum"))
        .reset_index()
    )
    assert list(by_duckdb.status) == list(by_pandas.status)
    assert list(by_duckdb.n) == list(by_pandas.n)
    assert list(by_duckdb.bytes) == list(by_pandas.bytes)
    assert list(by_duckdb.requests) == list(by_pandas.requests)
    expected = pd.Series([a.status for a in archive.assets.values()]).value_counts()
    assert dict(zip(by_duckdb.status, by_duckdb.n, strict=True)) == expected.to_dict()
    omitted = duckdb.sql(
        "SELECT count(*) FROM (SELECT unnest(unsupported) AS u "
        f"FROM read_parquet('{clean / 'catalog.parquet'}')) WHERE u.outcome = 'omitted'"
    ).fetchall()
    assert omitted[0][0] == sum(len(a.omitted) for a in archive.assets.values())


def test_a_local_cluster_makes_the_same_catalog(
    archive: DandiArchive, clean: Path, cluster: distributed.Client, tmp_path: Path
) -> None:
    destination = tmp_path / "cluster"
    summary = generate_catalog(archive.dandiset, destination, client=cluster)
    assert summary.generated == len(archive.assets)
    pd.testing.assert_frame_equal(_table(destination), _table(clean))
    assert_catalog_matches_archive(destination, archive)


@pytest.mark.parametrize("where", ["local pool", "LocalCluster"])
def test_the_command_catalogs_the_archive(
    archive: DandiArchive, clean: Path, where: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``shadowzarr catalog`` itself, on its default local pool and with ``--scheduler`` on the
    two workers of a `LocalCluster`: the catalog of a clean run, its summary as JSON."""
    destination = tmp_path / "command"
    command = [str(SCRIPT), "catalog", archive.dandiset, str(destination), "-q", "--json"]
    if where == "LocalCluster":
        client: distributed.Client = request.getfixturevalue("cluster")
        assert len(client.scheduler_info()["workers"]) == 2
        command += ["--scheduler", client.scheduler.address]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=500, check=False)
    assert "error:" not in finished.stderr, finished.stderr[-3000:]
    assert finished.returncode == 1, finished.stderr[-3000:]  # the broken assets failed
    summary = json.loads(finished.stdout)
    assert (summary["listed"], summary["generated"]) == (len(archive.assets),) * 2
    expected = pd.Series([a.status for a in archive.assets.values()]).value_counts()
    assert summary["statuses"] == expected.to_dict()
    assert sorted(summary["failures"]) == sorted(
        a.asset_id for a in archive.assets.values() if a.status == "failed"
    )
    pd.testing.assert_frame_equal(_table(destination), _table(clean))
    assert_catalog_matches_archive(destination, archive)


def test_a_rerun_asks_nothing_of_any_asset(
    archive: DandiArchive, clean: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "again"
    shutil.copytree(clean, destination)
    archive.proxy.reset()
    summary = generate_catalog(archive.dandiset, destination)
    assert (summary.generated, summary.unchanged, summary.removed) == (0, len(archive.assets), 0)
    assert archive.asset_requests() == []
    assert archive.proxy.count(path_prefix="/api/dandisets/") >= 2  # the listing, page by page
    pd.testing.assert_frame_equal(_table(destination), _table(clean))


def _rows_committed(destination: Path) -> int:
    try:
        with sqlite3.connect(f"file:{destination / 'catalog.sqlite'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT count(*) FROM assets").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_the_driver_killed_mid_run_then_resumed(
    archive: DandiArchive, clean: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "resumed"
    command = [str(SCRIPT), "catalog", archive.dandiset, str(destination), "-q"]
    running = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while _rows_committed(destination) < 60 and running.poll() is None:
        assert time.monotonic() < deadline, "the catalog run never committed 60 rows"
        time.sleep(0.01)
    running.send_signal(signal.SIGKILL)
    assert running.wait(timeout=30) == -signal.SIGKILL, "the run ended before it was killed"
    done = _rows_committed(destination)
    assert 60 <= done < len(archive.assets)
    assert not (destination / "catalog.parquet").exists()
    assert_nothing_half_written(destination)

    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    # exit status 1: the assets that failed in this run (broken files) are listed
    assert finished.returncode in (0, 1), finished.stderr[-3000:]
    assert f"{len(archive.assets) - done} generated" in finished.stdout, finished.stdout
    pd.testing.assert_frame_equal(_table(destination), _table(clean))
    assert_nothing_half_written(destination)
    assert_catalog_matches_archive(destination, archive)


def test_a_dask_worker_killed_mid_run_then_rerun(
    archive: DandiArchive, clean: Path, cluster: distributed.Client, tmp_path: Path
) -> None:
    destination = tmp_path / "worker-killed"
    victim = next(iter(cluster.run(os.getpid).values()))
    committed: list[dict[str, Any]] = []

    def kill_after_forty(row: dict[str, Any]) -> None:
        committed.append(row)
        if len(committed) == 40:
            os.kill(victim, signal.SIGKILL)  # jobs are queued on both workers at this point

    summary = generate_catalog(
        archive.dandiset, destination, client=cluster, progress=kill_after_forty
    )
    assert summary.generated == len(archive.assets)
    assert victim not in cluster.run(os.getpid).values()
    expected = {a.asset_id: a.status for a in archive.assets.values()}
    rows = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    lost = rows[rows.status != rows.index.map(expected)]
    # Dask reruns the killed worker's jobs elsewhere; a job it gave up on is a failed row to
    # retry, never a reference set half written.
    assert (lost.status == "failed").all()
    assert lost.retry.all()
    assert_nothing_half_written(destination)

    again = generate_catalog(archive.dandiset, destination)
    assert again.generated == len(lost)
    pd.testing.assert_frame_equal(
        _table(destination).drop(columns=["requests", "bytes_read"]),
        _table(clean).drop(columns=["requests", "bytes_read"]),
    )
    assert_catalog_matches_archive(destination, archive)


def test_replaced_and_deleted_assets_are_what_a_rerun_redoes(
    archive: DandiArchive, clean: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "updated"
    shutil.copytree(clean, destination)
    first = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    ok = [a for a in archive.assets.values() if a.status == "ok" and a.reader == "h5py"]
    replaced, deleted = ok[:3], ok[3]
    originals = {a.asset_id: a.data for a in replaced}
    try:
        for number, asset in enumerate(replaced):
            asset.data = ok[10 + number].data  # other bytes: a new ETag, a new blob id
            archive.put(asset)
        archive.proxy.remove_asset(deleted.asset_id)
        archive.proxy.reset()

        summary = generate_catalog(archive.dandiset, destination)
        assert (summary.generated, summary.removed) == (3, 1)
        rows = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
        changed = rows.generated_at != first.generated_at
        assert sorted(rows.index[changed]) == sorted(a.asset_id for a in replaced)
        assert rows.loc[deleted.asset_id, "status"] == "removed"
        assert deleted.asset_id not in json.loads((destination / "index.json").read_text())
        read = {e["path"] for e in archive.asset_requests()}
        assert {p.split("/")[3] for p in read if p.startswith("/api/assets/")} == {
            a.asset_id for a in replaced
        }
        index = json.loads((destination / "index.json").read_text())
        for asset in replaced:
            group = open_rfs(str(destination / index[asset.asset_id]))
            for name, values in _native(asset).items():
                assert_array_equal_exact(group[name][...], values, f"{asset.path}:{name}")
    finally:
        for asset in replaced:
            asset.data = originals[asset.asset_id]
            archive.put(asset)
        archive.proxy.add_asset(deleted.asset_id, deleted.path)
