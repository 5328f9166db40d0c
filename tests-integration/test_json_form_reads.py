"""The JSON form of references reads like the directory form (issue 43): a version-1 ``.json``
listing every chunk costs the same requests and bytes as a reference directory with a chunk
manifest for 20k rows of one column, of 32 columns and 1,000 scattered chunks, counted at a
single-range latency proxy (as S3 answers), and both equal h5py's read.

A listed array's chunks are held as columns (`shadowzarr_spec.listed_refs`), and the grouped
view takes a shard's entries from them with numpy as it does from a chunk manifest, instead of
resolving every reference of each shard it touches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_spec.listed_refs import ListedRefs
from shadowzarr_store import load_rfs, open_rfs
from shadowzarr_testing.proxy import LatencyProxy

ROWS, COLUMNS, CHUNK = 40_000, 32, (64, 4)  # float32: 1 KiB chunks, 5,000 of them
READ = 20_000
LATENCY = 0.005


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("json-form")
    values = (np.arange(ROWS * COLUMNS, dtype=np.float64).reshape(ROWS, COLUMNS) * 0.5).astype(
        "<f4"
    )
    with h5py.File(folder / "table.h5", "w") as f:
        f.create_dataset("table", data=values, chunks=CHUNK)
    return folder


@pytest.fixture
def served(table: Path, make_proxy: Any) -> tuple[LatencyProxy, dict[str, str]]:
    proxy: LatencyProxy = make_proxy(latency=LATENCY, ranges="s3", root=table)
    rfs = generate_rfs(proxy.url("table.h5"), local_hdf5_path=table / "table.h5", progress=False)
    forms = {"directory": f"table-{proxy.port}.shadowzarr", "json": f"table-{proxy.port}.json"}
    for name in forms.values():
        write_rfs(rfs, table / name)
    return proxy, {form: proxy.url(name) for form, name in forms.items()}


def _scattered() -> tuple[np.ndarray, np.ndarray]:
    """One value of each of 1,000 random chunks."""
    grid = (ROWS // CHUNK[0], COLUMNS // CHUNK[1])
    chunks = np.random.default_rng(7).choice(grid[0] * grid[1], size=1000, replace=False)
    return (chunks // grid[1]) * CHUNK[0] + 5, (chunks % grid[1]) * CHUNK[1] + 1


SELECTIONS: dict[str, Any] = {
    "20k rows x 1 column": (slice(7_000, 7_000 + READ), 3),
    "20k rows x 32 columns": (slice(7_000, 7_000 + READ), slice(None)),
    "1,000 scattered chunks": _scattered(),
}


def _read(proxy: LatencyProxy, refs: str, selection: Any) -> tuple[np.ndarray, tuple[int, ...]]:
    """Values of ``selection`` read through a freshly opened store, and (requests, round trips,
    bytes) of the read alone, from the proxy's own counters."""
    array = open_rfs(refs, grouped_view="auto")["table"]
    proxy.wait_idle()
    proxy.reset()
    values = array.vindex[selection] if isinstance(selection[0], np.ndarray) else array[selection]
    proxy.wait_idle()
    return values, (proxy.count(), proxy.round_trips(), proxy.bytes_sent())


@pytest.mark.network
@pytest.mark.parametrize("case", list(SELECTIONS))
def test_the_json_form_reads_as_the_directory_form(
    table: Path, served: tuple[LatencyProxy, dict[str, str]], case: str
) -> None:
    proxy, refs = served
    assert isinstance(load_rfs(refs["json"]).refs, ListedRefs)  # every chunk listed
    assert "table" in load_rfs(refs["directory"]).indexes  # every chunk in a chunk manifest
    selection = SELECTIONS[case]
    with h5py.File(table / "table.h5") as f:
        expected = f["table"][:][selection]
    counted = {}
    for form, url in refs.items():
        values, counted[form] = _read(proxy, url, selection)
        np.testing.assert_array_equal(values, expected, err_msg=f"{case}, {form} form")
    # (the directory form's chunk manifest is carried in its refs.json: no read of its own)
    requests, trips, nbytes = counted["json"]
    assert (requests, nbytes) == (counted["directory"][0], counted["directory"][2]), counted
    # whether two requests overlap in time is the machine's doing: at most one trip each
    assert 1 <= trips <= requests, counted
