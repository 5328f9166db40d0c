"""xarray (with dask) opens references through RfsStore: many threads, one store, merged reads."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
import xarray as xr
import zarr
from shadowzarr_spec import read_local_rfs
from shadowzarr_store import RfsStore

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network


def _array(shape: list[int], chunks: list[int], dtype: str, dims: list[str]) -> str:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {"units": "uV"},
            "dimension_names": dims,
        }
    )


def test_xarray_with_dask_reads_through_the_store(nginx: NginxServer, nginx_root: Path) -> None:
    values = np.random.default_rng(4).standard_normal((4000, 8)).astype("<f4")
    time = np.arange(4000, dtype="<f8") / 1000
    (nginx_root / "signal.bin").write_bytes(values.tobytes())
    (nginx_root / "time.bin").write_bytes(time.tobytes())
    refs = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "signal/zarr.json": _array([4000, 8], [250, 8], "float32", ["time", "channel"]),
        "time/zarr.json": _array([4000], [4000], "float64", ["time"]),
        "time/c/0": [nginx.url("time.bin"), 0, time.nbytes],
    }
    for i in range(16):
        refs[f"signal/c/{i}/0"] = [nginx.url("signal.bin"), i * 8000, 8000]
    store = RfsStore(read_local_rfs({"version": 1, "refs": refs}))
    dataset = xr.open_zarr(store, consolidated=False, zarr_format=3, chunks={"time": 500})
    assert dataset["signal"].attrs["units"] == "uV"
    nginx.reset()
    with zarr.config.set({"async.concurrency": 64}):
        signal = dataset["signal"].compute(scheduler="threads")
    np.testing.assert_array_equal(signal.values, values)
    np.testing.assert_array_equal(dataset["time"].values, time)
    assert nginx.count(path_prefix="signal.bin") < 16  # neighbouring chunks were merged
    assert float(dataset["signal"].sel(time=1.5, method="nearest")[3]) == values[1500, 3]
