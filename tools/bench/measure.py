"""One row of the table: a reader's median wall time, requests, bytes and peak memory.

Peak memory is the kernel's high-water mark of the resident set size (reset before the run
through /proc/self/clear_refs), minus the size when the run started. Not tracemalloc (it slows
every peer down and misses what C libraries allocate) and not a sampling thread: a thread that
wakes every few milliseconds takes the GIL from the reader being timed, which slowed
Python-heavy readers (reference generation) by a third. A peer in its own environment reports
its own process's peak the same way.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from server import BenchServer

_PAGE = 4096
SLOW_RUN = 30.0
"""A reader whose first run takes longer than this (s) is run only once: the median of several
would not change the verdict and would stretch a full benchmark past an hour."""


@dataclass(slots=True)
class Row:
    """What one reader did in one case of a workload, or why it did not run."""

    workload: str
    case: str
    reader: str
    ours: bool = False
    seconds: float | None = None
    runs: list[float] = field(default_factory=list)
    requests: int | None = None
    bytes: int | None = None
    round_trips: int | None = None
    """Waves of requests the server saw (see `LatencyProxy.round_trips`)."""
    peak_mb: float | None = None
    equal: bool | None = None
    not_run: str | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def rss_bytes() -> int:
    with open("/proc/self/statm") as stream:
        return int(stream.read().split()[1]) * _PAGE


class PeakSampler:
    """Highest RSS above the starting one: the kernel's high-water mark (VmHWM), reset when the
    run starts. Where the mark cannot be reset, a thread samples RSS every 5 ms instead."""

    def __init__(self) -> None:
        self.start = rss_bytes()
        self.peak = self.start
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> PeakSampler:
        if not _reset_high_water_mark():
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        else:
            self.peak = max(self.peak, _high_water_mark())
        self.peak = max(self.peak, rss_bytes())

    @property
    def mb(self) -> float:
        return (self.peak - self.start) / 1e6


def _reset_high_water_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as stream:
            stream.write("5")
    except OSError:
        return False
    return _high_water_mark() > 0


def _high_water_mark() -> int:
    try:
        with open("/proc/self/status") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


Check = Callable[[Any], bool]


def measure(
    row: Row,
    server: BenchServer | None,
    run: Callable[[], Any],
    check: Check,
    *,
    runs: int,
    setup: Callable[[], Any] | None = None,
    warmup: int = 0,
) -> Row:
    """Run ``run`` ``runs`` times (each after ``setup``, untimed), keeping the median time and
    the requests, bytes and peak memory of the first run; ``check`` judges every result.
    ``warmup`` runs come first, checked and not timed: a read of tens of megabytes is slower
    while the process's memory is new to it (the kernel zeroes each fresh page), so without
    them the first row of a case pays for the rows after it."""
    equal = True
    started = time.perf_counter()
    for _ in range(warmup):
        if setup is not None:
            setup()
        equal = equal and bool(check(run()))
    for index in range(runs):
        if index == 1 and row.runs[0] > SLOW_RUN:
            row.note = f"1 run (> {SLOW_RUN:.0f} s)"
            break
        if setup is not None:
            setup()
        if server is not None:
            server.reset()
        with PeakSampler() as sampler:
            start = time.perf_counter()
            result = run()
            seconds = time.perf_counter() - start
        row.runs.append(seconds)
        if index == 0:
            row.peak_mb = sampler.mb
            if server is not None:  # before the check, whose own reads are not the run's
                counts = server.counts()
                row.requests, row.bytes = counts.requests, counts.bytes
                row.round_trips = counts.round_trips
        equal = equal and bool(check(result))
    row.seconds = statistics.median(row.runs)
    row.equal = equal
    print(
        f"    {row.case} | {row.reader}: {row.seconds:.3f} s, {row.requests} requests "
        f"({time.perf_counter() - started:.0f} s in all)",
        flush=True,
    )
    return row


def not_run(row: Row, reason: str) -> Row:
    row.not_run = reason
    return row


def same(expected: np.ndarray) -> Check:
    return lambda actual: np.array_equal(np.asarray(actual), expected)
