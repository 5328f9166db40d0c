"""The jobs on worker processes of this machine, a few at once in each.

An asset's generation costs tens of milliseconds of CPU in one interpreter (header parsing,
building and checking the references, encoding them), so threads of one process queue on its
GIL and a pool of them uses about one core. Here one forked worker per core runs ``threads``
jobs on threads of its own (each job waits on round trips most of its time), while this
process hands out the jobs, at most ``per_host`` at once against one host over all workers, and
yields the rows as they come back (the caller commits each, so resuming works as in a thread
pool). Workers are forked: they start with this process's imports (numpy, h5py and zarr take
seconds of CPU to import again). They are forked before the run makes its first object-store
request, and not at all once this process has imported obstore, whose runtime's threads would
be missing in a child (its requests would wait forever): the jobs then run on threads. A
worker that dies loses only the jobs it had in flight: each is a failed row the next run tries
again, and a new worker takes its place. A worker whose parent dies exits.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from shadowzarr_catalog.assets import Asset, host_of
from shadowzarr_catalog.destination import Destination
from shadowzarr_catalog.formats import Access
from shadowzarr_catalog.job import base_row, run_job

__all__ = ["WorkerPool", "default_processes", "fork_is_safe"]

type Job = tuple[int, Asset, str]
"""A job's number, its asset and the asset's reference location."""


def default_processes() -> int:
    """Two workers per core this process may use, where workers can be forked (Linux); 0
    elsewhere (macOS and Windows do not fork safely: the jobs stay on threads). Two, because a
    worker's jobs queue on its interpreter lock while another process's core sits waiting on
    round trips: 12 jobs at 20 ms a request on 2 cores made 2,800 assets a minute on 4 workers,
    2,100 on 2 (`tools/bench/catalog.py`'s archive)."""
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    return 2 * len(os.sched_getaffinity(0))


def fork_is_safe() -> bool:
    """Whether obstore (the transport's object-store client) has not been imported in this
    process: its first request starts a tokio runtime whose threads a forked child lacks, so the
    child's own object-store requests would wait forever, and whether it ran cannot be asked
    (its threads' names vary). Not imported: not run. A tokio thread seen by name also says no."""
    if any(name == "obstore" or name.startswith("obstore.") for name in list(sys.modules)):
        return False
    try:
        tasks = os.listdir("/proc/self/task")
        names = [Path("/proc/self/task", t, "comm").read_text() for t in tasks]
    except OSError:
        return False
    return not any(name.startswith("tokio-") for name in names)


@dataclass(slots=True)
class _Worker:
    process: Any  # multiprocessing's ForkProcess, untyped
    connection: Connection
    in_flight: dict[int, Asset] = field(default_factory=dict)


class WorkerPool:
    """``processes`` forked workers running ``threads`` jobs each. Started before the run
    lists its source or reads its destination (an object store's first request starts the
    runtime that makes forking unsafe); used once, by `rows`."""

    def __init__(
        self,
        target: Destination,
        access: Access,
        options: Mapping[str, Any],
        threshold: int | None,
        *,
        processes: int,
        threads: int,
    ) -> None:
        self._setting = (target, access, dict(options), threshold, threads)
        self.threads = threads
        self._workers: list[_Worker] = []
        self._finished = False
        for _ in range(processes):
            self._workers.append(_start(*self._setting))

    def rows(
        self,
        todo: list[tuple[Asset, str]],
        per_host: int,
        fallback: Callable[[list[tuple[Asset, str]]], Iterator[dict[str, Any]]],
    ) -> Iterator[dict[str, Any]]:
        """One row per job, in the order they finish. A dead worker is replaced while jobs
        wait, if it can still be forked safely; when none is left, ``fallback`` runs the
        rest (threads of this process)."""
        queues: OrderedDict[str, deque[Job]] = OrderedDict()
        for number, (asset, reference) in enumerate(todo):
            queues.setdefault(host_of(asset.url), deque()).append((number, asset, reference))
        busy: dict[str, int] = dict.fromkeys(queues, 0)

        def next_job() -> Job | None:
            """Round-robin over the hosts with room under their bound."""
            for host in list(queues):
                if busy[host] < per_host:
                    job = queues[host].popleft()
                    if queues[host]:
                        queues.move_to_end(host)
                    else:
                        del queues[host]
                    busy[host] += 1
                    return job
            return None

        workers = self._workers
        while True:
            for worker in workers:
                while len(worker.in_flight) < self.threads and (job := next_job()) is not None:
                    worker.in_flight[job[0]] = job[1]
                    try:
                        worker.connection.send(job)
                    except OSError:  # it died: its sentinel says so, and the job is lost with it
                        break
            if not any(w.in_flight for w in workers):
                break
            ready = set(
                wait([w.connection for w in workers] + [w.process.sentinel for w in workers])
            )
            for worker in list(workers):
                if worker.connection not in ready and worker.process.sentinel not in ready:
                    continue
                alive = True
                try:
                    while worker.connection.poll():
                        number, row = worker.connection.recv()
                        asset = worker.in_flight.pop(number)
                        busy[host_of(asset.url)] -= 1
                        yield row
                except (EOFError, OSError):
                    alive = False
                if alive and worker.process.is_alive():
                    continue
                yield from _lost(worker, busy)
                workers.remove(worker)
                if queues and fork_is_safe():
                    workers.append(_start(*self._setting))
        rest = [(asset, reference) for queue in queues.values() for _, asset, reference in queue]
        if rest:
            yield from fallback(rest)
        self._finished = True

    def close(self) -> None:
        """Workers told to finish (a run that ended), or killed (one cut short)."""
        _stop(self._workers, gently=self._finished or not any(w.in_flight for w in self._workers))

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _lost(worker: _Worker, busy: dict[str, int]) -> Iterator[dict[str, Any]]:
    """The rows of the jobs a dead worker had in flight."""
    worker.process.join(timeout=5)
    code = worker.process.exitcode
    worker.connection.close()
    for asset in worker.in_flight.values():
        busy[host_of(asset.url)] -= 1
        row = {**base_row(asset), "status": "failed", "retry": True}
        row["error_class"] = "WorkerDied"
        row["error_message"] = f"the worker process generating it died (exit code {code})"
        yield row
    worker.in_flight.clear()


def _start(
    target: Destination,
    access: Access,
    options: dict[str, Any],
    threshold: int | None,
    threads: int,
) -> _Worker:
    ours, theirs = multiprocessing.Pipe()
    context = multiprocessing.get_context("fork")
    process = context.Process(
        target=_serve,
        args=(theirs, ours, target, access, options, threshold, threads),
        name="shadowzarr-catalog",
        daemon=True,
    )
    with warnings.catch_warnings():
        # Python warns that forking a process with threads may deadlock the child: a worker
        # takes no lock of another thread (the transport drops its loop and pools at a fork)
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        process.start()
    theirs.close()
    return _Worker(process, ours)


def _stop(workers: list[_Worker], *, gently: bool) -> None:
    """Workers told to finish (nothing is in flight), or killed when the run was cut short."""
    for worker in workers:
        try:
            if gently:
                worker.connection.send(None)
            worker.connection.close()
        except OSError:
            pass
    for worker in workers:
        if not gently:
            worker.process.kill()
        worker.process.join(timeout=30)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()


def _serve(
    connection: Connection,
    parents: Connection,
    target: Destination,
    access: Access,
    options: Mapping[str, Any],
    threshold: int | None,
    threads: int,
) -> None:
    """A worker: run each job it is sent on one of ``threads`` threads and send its row back;
    exit when told to (None) or when the parent is gone."""
    parents.close()  # the parent's end, inherited: only the parent's own copy may hold it open
    # The objects inherited from the parent (zarr's, numpy's, h5py's: tens of thousands) live
    # as long as the worker: out of reach of its garbage collector, whose full collections
    # would walk them and write to each, copying every page that holds one. In 7 paired runs of
    # `tools/bench/catalog.py`'s archive (4 workers): 2-13% more assets a minute (median 8%),
    # 3-13% less CPU per asset (median 7%), better in every pair.
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops us
    sending = threading.Lock()

    def run(number: int, asset: Asset, reference: str) -> None:
        try:
            row = run_job(asset, target, reference, access, options, threshold)
        except Exception as exc:  # run_job records failures; this is a bug's net
            row = {**base_row(asset), "status": "failed", "retry": True}
            row.update(error_class=type(exc).__name__, error_message=str(exc)[:2000])
        try:
            with sending:
                connection.send((number, row))
        except OSError:  # the parent is gone
            os._exit(0)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="catalog") as pool:
        while True:
            try:
                job = connection.recv()
            except (EOFError, OSError):  # the parent is gone: its run is over
                os._exit(0)
            if job is None:
                break
            pool.submit(run, *job)
