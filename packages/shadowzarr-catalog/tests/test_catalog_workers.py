"""The catalog's forked workers: what they inherit from the parent stays out of their garbage
collector's reach (its full collections would walk every inherited object and write to it,
copying the page that holds it)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from shadowzarr_catalog import processes
from shadowzarr_catalog.assets import Asset
from shadowzarr_catalog.destination import Destination
from shadowzarr_catalog.formats import Access
from shadowzarr_catalog.job import base_row


def _collector_state(asset: Asset, *args: object) -> dict[str, Any]:
    """A job that reports, in its row, what the worker's collector holds (runs in the child)."""
    del args
    row = base_row(asset)
    row["datasets"] = gc.get_freeze_count()
    row["chunks"] = len(gc.get_objects())
    row["status"] = "ok"
    return row


def test_a_worker_leaves_what_it_inherited_to_no_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "run_job", _collector_state)  # forked: the child has it too
    inherited = len(gc.get_objects())
    assert inherited > 10_000  # this process imported zarr, numpy and h5py
    pool = processes.WorkerPool(
        Destination(tmp_path / "out", None), Access(), {}, None, processes=1, threads=1
    )
    asset = Asset("a", "a.h5", str(tmp_path / "a.h5"))

    def on_threads(_: list[tuple[Asset, str]]) -> Any:
        raise AssertionError("the job ran in this process, not in a worker")

    (row,) = list(pool.rows([(asset, "refs/a")], 1, on_threads))
    assert row["status"] == "ok"
    assert row["datasets"] >= inherited * 0.9  # frozen: out of every generation's reach
    assert row["chunks"] < inherited * 0.1  # the collector tracks only what the worker made
