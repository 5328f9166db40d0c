"""zarr's worker threads started when a store opens (`worker_threads`), in fresh processes:
counted in threads, never timed. The first read then starts no thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs

from shadowzarr_store.worker_threads import pool_size

CHILD = r"""
import json, sys, threading, time
import numpy as np
import zarr
from shadowzarr_store import open_rfs

def workers():
    prefix = "zarr_pool_" if zarr.config.get("threading.max_workers") else "asyncio_"
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(prefix))

group = open_rfs(sys.argv[1])
expected = int(sys.argv[2])
deadline = time.monotonic() + 60  # the threads start without open waiting for them
while len(workers()) < expected and sys.argv[3] == "on" and time.monotonic() < deadline:
    time.sleep(0.01)
after_open = workers()
values = group["recording"][:]
print(json.dumps({
    "after_open": after_open,
    "after_read": workers(),
    "asyncio_threads": sum(t.name.startswith("asyncio_") for t in threading.enumerate()),
    "sum": int(values.astype(np.int64).sum()),
}))
"""


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("workers")
    t = np.arange(1 << 16, dtype=np.int64)[:, None]
    recording = ((t * 2654435761 + np.arange(64) * 40503) % 65536 - 32768).astype("<i2")
    with h5py.File(root / "recording.h5", "w") as f:
        f.create_dataset("recording", data=recording, chunks=(128, 16))  # 4 KiB: packs
    target = root / "recording.shadowzarr"
    write_rfs(generate_rfs(root / "recording.h5", progress=False), target)
    return target, int(recording.astype(np.int64).sum())


def _fresh(target: Path, warm: bool, zarr_pool: int | None = None) -> dict[str, object]:
    env = {**os.environ, "SHADOWZARR_WARM_WORKERS": "1" if warm else "0"}
    if zarr_pool is not None:
        env["ZARR_THREADING__MAX_WORKERS"] = str(zarr_pool)  # zarr's own pool
    expected = pool_size() if zarr_pool is None else zarr_pool
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(target), str(expected), "on" if warm else "off"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_open_starts_every_worker_and_the_first_read_starts_none(
    references: tuple[Path, int],
) -> None:
    target, total = references
    found = _fresh(target, warm=True)
    assert found["sum"] == total
    assert len(found["after_open"]) == pool_size()  # type: ignore[arg-type]
    assert found["after_read"] == found["after_open"]
    # Without it, the first read starts the workers.
    cold = _fresh(target, warm=False)
    assert cold["sum"] == total
    assert cold["after_open"] == []
    assert len(cold["after_read"]) >= 1  # type: ignore[arg-type]


def test_zarr_s_own_pool_is_the_one_started(references: tuple[Path, int]) -> None:
    """With zarr's ``threading.max_workers`` set, zarr's pool is the loop's: no second pool."""
    target, total = references
    found = _fresh(target, warm=True, zarr_pool=3)
    assert found["sum"] == total
    assert found["after_open"] == ["zarr_pool_0", "zarr_pool_1", "zarr_pool_2"]
    assert found["asyncio_threads"] == 0
    assert found["after_read"] == found["after_open"]
