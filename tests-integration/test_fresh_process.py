"""A fresh process pays its start-up at import, not inside its first read: importing the store
leaves the libraries a read does not need unimported, and the first open and read of a
reference folder over HTTP imports nothing more (aiohttp included: ranges, multi-range requests
and whole files go on the transport's own connections)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import h5py
import numpy as np
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing.nginx import NginxServer

NOT_FOR_READING = ("aiohttp", "xarray", "dask", "pandas", "h5py", "IPython", "ipywidgets")

FIRST_READ = """
import json, sys
from shadowzarr_store import open_rfs
heavy = sorted(name for name in {heavy!r} if name in sys.modules)
before = set(sys.modules)
values = open_rfs(sys.argv[1])["data"][:]
print(json.dumps({{"heavy": heavy, "new": sorted(set(sys.modules) - before),
                  "sum": int(values.sum(dtype="i8")), "shape": list(values.shape)}}))
"""


def test_first_read_of_a_fresh_process_imports_nothing(
    nginx: NginxServer, nginx_root: Path
) -> None:
    data = np.arange(64 * 1024, dtype="<i4").reshape(256, 256)
    with h5py.File(nginx_root / "fresh.h5", "w") as f:
        f.create_dataset("data", data=data, chunks=(16, 16))
    rfs = generate_rfs(
        nginx.url("fresh.h5"), local_hdf5_path=nginx_root / "fresh.h5", progress=False
    )
    write_rfs(rfs, nginx_root / "fresh.shadowzarr")
    code = FIRST_READ.format(heavy=NOT_FOR_READING)
    done = subprocess.run(
        [sys.executable, "-c", code, nginx.url("fresh.shadowzarr")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["shape"] == [256, 256]
    assert found["sum"] == int(data.sum(dtype="i8"))
    assert found["heavy"] == []  # imported by nothing `import shadowzarr_store` runs
    assert found["new"] == []  # the first open and read import nothing


SET_UP_AT_OPEN = """
import json, sys, threading
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import prefault_stats
helpers = lambda: [t.name for t in threading.enumerate() if t.name == "shadowzarr-prefault"]
array = open_rfs(sys.argv[1])["data"]
stats = prefault_stats()
at_open = {"helpers": helpers(), "started": stats.threads_started, "prepared": stats.prepared}
values = array[:]
print(json.dumps({"at_open": at_open, "helpers": helpers(), "started": stats.threads_started,
                  "prepared": stats.prepared, "received_into": stats.received_into,
                  "sum": int(values.sum(dtype="i8"))}))
"""


def test_opening_starts_the_page_helper_and_the_first_read_receives_into_its_buffers(
    nginx: NginxServer, nginx_root: Path
) -> None:
    """The set-up a first read would pay is done at open: the thread that maps fresh buffers'
    pages is running before the read, which starts none, and the read's large range answers
    (1 MiB and more) are received into buffers made, and mapped, while their requests were
    out."""
    data = np.arange(1024 * 1024, dtype="<i4").reshape(1024, 1024)
    with h5py.File(nginx_root / "fresh-large.h5", "w") as f:
        f.create_dataset("data", data=data, chunks=(64, 1024))
    rfs = generate_rfs(
        nginx.url("fresh-large.h5"), local_hdf5_path=nginx_root / "fresh-large.h5", progress=False
    )
    write_rfs(rfs, nginx_root / "fresh-large.shadowzarr")
    done = subprocess.run(
        [sys.executable, "-c", SET_UP_AT_OPEN, nginx.url("fresh-large.shadowzarr")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["sum"] == int(data.sum(dtype="i8"))
    assert found["at_open"] == {"helpers": ["shadowzarr-prefault"], "started": 1, "prepared": 0}
    assert found["helpers"] == ["shadowzarr-prefault"]
    assert found["started"] == 1  # none started by the read
    assert found["prepared"] >= 1  # 4 MiB of 256 KiB chunks: merged ranges of 1 MiB and more
    assert found["received_into"] == found["prepared"]
