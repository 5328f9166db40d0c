"""``shadowzarr demo``: the main job end to end on an embedded example, with no internet."""

from __future__ import annotations

import os
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
        from shadowzarr_spec.units import format_bytes

        return (
            f"  {self.what:<44} {self.requests:>6} requests {format_bytes(self.nbytes):>10} "
            f"{self.seconds:>7.2f} s"
        )


TRY_YOURS = "now try your own file: shadowzarr generate <url> -o x.shadowzarr"


def run_demo(
    *,
    seconds: int = 20,
    latency: float = 0.0,
    keep: str | os.PathLike[str] | None = None,
    echo: Callable[[str], None] = print,
    results: dict[str, Any] | None = None,
) -> int:
    """Write an NWB file, serve it on loopback, generate references over HTTP, read them back
    through NWBZarrIO and compare with h5py over the same server. Returns 0 when equal;
    ``results`` (if given) receives the costs and the comparison as plain values. The files go
    to a temporary folder, deleted at the end, or to ``keep`` (created if missing), kept."""
    from shadowzarr._lazy import import_module_for

    import_module_for("pynwb", "demo", "shadowzarr demo")
    import_module_for("hdmf_zarr", "demo", "shadowzarr demo")
    import_module_for("fsspec", "demo", "shadowzarr demo")

    if keep is not None:
        folder = Path(keep)
        folder.mkdir(parents=True, exist_ok=True)
        return _run_in(folder, seconds, latency, echo, results, kept=True)
    with tempfile.TemporaryDirectory(prefix="shadowzarr-demo-") as tmp:
        return _run_in(Path(tmp), seconds, latency, echo, results, kept=False)


def _run_in(
    root: Path,
    seconds: int,
    latency: float,
    echo: Callable[[str], None],
    results: dict[str, Any] | None,
    *,
    kept: bool,
) -> int:
    from shadowzarr_spec.units import format_bytes

    from shadowzarr.demo.nwb_example import write_example_nwb

    started = time.perf_counter()
    source = write_example_nwb(root / "demo.nwb", seconds=seconds)
    echo(
        f"wrote {source} with pynwb: {format_bytes(source.stat().st_size)} in "
        f"{time.perf_counter() - started:.1f} s"
    )
    refs_path = root / "demo.shadowzarr"
    with RangeServer(root, latency=latency) as server:
        url = server.url("demo.nwb")
        echo(f"serving it at {url}\n")
        generated = _measure(
            server, "generate_rfs(url) + write_rfs", lambda: _generate(url, refs_path)
        )
        size = sum(p.stat().st_size for p in refs_path.rglob("*") if p.is_file())
        ours, our_values = _measure_read(
            server, "NWBZarrIO(RfsStore(read_local_rfs(refs)))", lambda: _read_zarr(refs_path)
        )
        theirs, their_values = _measure_read(
            server, "NWBHDF5IO(h5py over HTTP, fsspec)", lambda: _read_h5py(url)
        )
    echo(f"references: {refs_path}, {format_bytes(size)} on disk")
    echo("what it cost (server counters):")
    for cost in (generated, ours, theirs):
        echo(cost.line())
    equal = all(np.array_equal(a, b) for a, b in zip(our_values, their_values, strict=True))
    echo(
        f"\nread: ElectricalSeries data[{WINDOW.start}:{WINDOW.stop}, :] (1 s x 32 channels), "
        "spike times of unit 0, trial starts"
    )
    echo(f"values equal to h5py's: {'yes' if equal else 'NO'}\n")
    if kept:
        echo(
            f"kept in {root}: demo.nwb and demo.shadowzarr (whose references point at the demo's "
            f"server, stopped now; shadowzarr generate {source} -o local.shadowzarr makes "
            "references to the file itself)"
        )
    else:
        echo(
            "demo.nwb and demo.shadowzarr were in a temporary folder, deleted now "
            "(shadowzarr demo --keep DIR keeps them)"
        )
    echo(TRY_YOURS)
    if results is not None:
        results.update(
            references_bytes=size,
            costs=[
                {"what": c.what, "requests": c.requests, "bytes": c.nbytes, "seconds": c.seconds}
                for c in (generated, ours, theirs)
            ],
            equal=bool(equal),
            kept=str(root) if kept else None,
        )
    return 0 if equal else 1


def _measure(server: RangeServer, what: str, work: Callable[[], Any]) -> Cost:
    server.reset()
    started = time.perf_counter()
    work()
    return Cost(
        what, server.counters.requests, server.counters.bytes, time.perf_counter() - started
    )


def _measure_read(
    server: RangeServer, what: str, work: Callable[[], list[np.ndarray]]
) -> tuple[Cost, list[np.ndarray]]:
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
    from shadowzarr_spec import read_local_rfs
    from shadowzarr_store import RfsStore

    with NWBZarrIO(RfsStore(read_local_rfs(refs_path)), mode="r") as io:
        return _values(io.read())


def _read_h5py(url: str) -> list[np.ndarray]:
    import fsspec
    import h5py
    from pynwb import NWBHDF5IO

    with (
        fsspec.open(url, mode="rb", block_size=1024 * 1024) as stream,
        h5py.File(stream, "r") as handle,
        NWBHDF5IO(file=handle, mode="r", load_namespaces=True) as io,
    ):
        return _values(io.read())
