"""``shadowzarr demo``: the main job end to end on an embedded example, with no internet."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shadowzarr.demo.range_server import RangeServer

__all__ = ["run_demo"]

WINDOW = slice(300_000, 330_000)  # one second, ten seconds in


@dataclass(frozen=True, slots=True)
class Cost:
    what: str
    requests: int
    nbytes: int
    seconds: float

    def line(self) -> str:
        return f"  {self.what:<44} {self.requests:>6} requests {self.nbytes / 1e6:>9.2f} MB {self.seconds:>7.2f} s"


def run_demo(*, seconds: int = 20, latency: float = 0.0, echo: Callable[[str], None] = print) -> int:
    """Write an NWB file, serve it on loopback, generate references over HTTP, read them back
    through NWBZarrIO and compare with h5py over the same server. Returns 0 when equal."""
    from shadowzarr._lazy import import_module_for

    import_module_for("pynwb", "demo", "shadowzarr demo")
    import_module_for("hdmf_zarr", "demo", "shadowzarr demo")
    import_module_for("fsspec", "demo", "shadowzarr demo")
    from shadowzarr.demo.nwb_example import write_example_nwb

    with tempfile.TemporaryDirectory(prefix="shadowzarr-demo-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        source = write_example_nwb(root / "demo.nwb", seconds=seconds)
        echo(f"wrote {source.name} with pynwb: {source.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s")
        with RangeServer(root, latency=latency) as server:
            url = server.url("demo.nwb")
            echo(f"serving it at {url}\n")
            refs_path = root / "demo.shadowzarr"
            generated = _measure(server, "generate_rfs(url) + write_rfs", lambda: _generate(url, refs_path))
            size = sum(p.stat().st_size for p in refs_path.rglob("*") if p.is_file())
            ours, our_values = _measure_read(server, "NWBZarrIO(RfsStore(load_rfs(refs)))", lambda: _read_zarr(refs_path))
            theirs, their_values = _measure_read(server, "NWBHDF5IO(h5py over HTTP, fsspec)", lambda: _read_h5py(url))
        echo(f"references: {refs_path.name}, {size / 1e3:.1f} kB on disk")
        echo("what it cost (server counters):")
        for cost in (generated, ours, theirs):
            echo(cost.line())
        equal = all(np.array_equal(a, b) for a, b in zip(our_values, their_values, strict=True))
        echo(f"\nread: ElectricalSeries data[{WINDOW.start}:{WINDOW.stop}, :] (1 s x 32 channels), "
             "spike times of unit 0, trial starts")
        echo(f"values equal to h5py's: {'yes' if equal else 'NO'}")
        return 0 if equal else 1


def _measure(server: RangeServer, what: str, work: Callable[[], Any]) -> Cost:
    server.reset()
    started = time.perf_counter()
    work()
    return Cost(what, server.counters.requests, server.counters.bytes, time.perf_counter() - started)


def _measure_read(server: RangeServer, what: str, work: Callable[[], list[np.ndarray]]) -> tuple[Cost, list[np.ndarray]]:
    box: list[list[np.ndarray]] = []
    cost = _measure(server, what, lambda: box.append(work()))
    return cost, box[0]


def _generate(url: str, refs_path: Path) -> None:
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec import write_rfs

    write_rfs(generate_rfs(url), refs_path)


def _values(nwbfile: Any) -> list[np.ndarray]:
    return [
        np.asarray(nwbfile.acquisition["ElectricalSeries"].data[WINDOW, :]),
        np.asarray(nwbfile.units["spike_times"][0]),
        np.asarray(nwbfile.trials["start_time"][:]),
    ]


def _read_zarr(refs_path: Path) -> list[np.ndarray]:
    from hdmf_zarr import NWBZarrIO
    from shadowzarr_spec import load_rfs
    from shadowzarr_store import RfsStore

    with NWBZarrIO(RfsStore(load_rfs(refs_path)), mode="r") as io:
        return _values(io.read())


def _read_h5py(url: str) -> list[np.ndarray]:
    import fsspec
    import h5py
    from pynwb import NWBHDF5IO

    with fsspec.open(url, mode="rb", block_size=1024 * 1024) as stream, h5py.File(stream, "r") as handle:
        with NWBHDF5IO(file=handle, mode="r", load_namespaces=True) as io:
            return _values(io.read())
