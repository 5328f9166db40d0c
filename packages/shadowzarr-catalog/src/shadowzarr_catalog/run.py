"""`generate_catalog`: references for every asset of an archive, published with a catalog.

The jobs run on worker processes of this machine by default, two per core, each keeping a few
generations in flight on threads (`processes.py`): a generation waits on round trips most of its
time, but what it computes (tens of milliseconds an asset) would leave threads of one process
queued on its GIL. Where workers cannot be forked safely (macOS, Windows, a process that has
imported obstore) or with ``processes=0``, the jobs run on a thread pool of this process. A
per-host bound (``per_host``) keeps a run polite to each server; the transport under every
generator retries 429 and 503 answers with backoff (honouring ``Retry-After``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Literal

from shadowzarr_spec import SourceError
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.units import format_bytes
from shadowzarr_store.progress_display import progress_display
from shadowzarr_store.transport import redact

from shadowzarr_catalog.assets import Asset, host_of
from shadowzarr_catalog.cluster import rows_from_cluster
from shadowzarr_catalog.destination import Destination
from shadowzarr_catalog.formats import Access, check_generator_options
from shadowzarr_catalog.job import base_row, run_job
from shadowzarr_catalog.listing import list_assets, with_identities
from shadowzarr_catalog.page import PAGE_FILE, catalog_page, viewer_files
from shadowzarr_catalog.paths import SUFFIXES, reference_location
from shadowzarr_catalog.processes import WorkerPool, default_processes, fork_is_safe
from shadowzarr_catalog.row_objects import (
    MAX_ROW_BYTES,
    ROWS_FOLDER,
    ignored,
    is_row_key,
    read_row_object,
    row_object,
    row_object_key,
)
from shadowzarr_catalog.state import (
    STATE_FILE,
    CatalogState,
    identity_decides,
    needs_generation,
)
from shadowzarr_catalog.summary import CatalogSummary
from shadowzarr_catalog.table import CATALOG_FILE, INDEX_FILE, catalog_parquet, index_json

__all__ = ["DEFAULT_PER_HOST", "DEFAULT_WORKERS", "generate_catalog"]

DEFAULT_WORKERS = 12
"""Jobs in flight: a job waits on round trips more than it computes, so a core's worker needs
several to stay busy (at 20 ms a request, about 4 to 6)."""
DEFAULT_PER_HOST = 12
"""At most this many jobs ask one host at once (a job sends one request at a time, or a few
ranges together): about what the AWS command line sends to S3 at once (10)."""
STATE_UPLOAD_SECONDS = 30.0
"""How often the progress database of an object-store catalog is copied to the destination."""
ROW_WRITES = 8
"""Row objects of an object-store catalog being written at once (a row's PUT does not hold up
the next job's dispatch; a run killed loses at most these rows besides its jobs in flight)."""


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def generate_catalog(
    source: str | os.PathLike[str] | Iterable[str],
    destination: str | os.PathLike[str],
    *,
    headers: Mapping[str, Mapping[str, str]] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    allowed_urls: Iterable[str] | None = None,
    dandi_api_key: str | None = None,
    include: str | None = None,
    form: Literal["directory", "json"] = "directory",
    workers: int | None = None,
    processes: int | None = None,
    per_host: int = DEFAULT_PER_HOST,
    manifest_threshold: int | None = 1000,
    retry_failed: bool = False,
    progress: bool | Callable[[dict[str, Any]], None] = False,
    client: Any = None,
    **generator_options: Any,
) -> CatalogSummary:
    """Generate references for every asset of ``source`` and publish them with a catalog at
    ``destination`` (a local folder or an ``s3://``/``gs://``/``az://`` prefix).

    ``source``: a local folder (walked), a ``.txt``/``.csv`` file of URLs and paths, an
    iterable of URLs and paths, an object-store prefix, or a DANDI dandiset version
    (``dandi://000123/draft``, its web page or its API URL). ``include`` is a glob on asset
    paths (``*.nwb``). ``form``: one reference directory per asset, or one JSON file.
    ``workers`` jobs run at once (default 12), at most ``per_host`` against one host, spread
    over ``processes`` forked worker processes (default: two per core on Linux; 0 runs them
    on threads of this process, the default elsewhere).
    ``headers``, ``allowed_urls`` and ``storage_options`` go with every request (the
    destination's writes use ``storage_options`` too); ``dandi_api_key`` authenticates the
    dandiset's listing. ``generator_options`` go to the generators (HDF5's names; TIFF takes
    those it knows). ``progress``: True shows the assets done on stderr (a bar on a terminal or in a
    notebook, plain lines in a log) and each failure; a callable is called with
    each asset's row as it is committed. ``client``: a
    ``distributed.Client`` whose workers generate and publish the assets (``workers`` and
    ``processes`` then do not apply, ``per_host`` does; the destination must be one every
    worker reaches).

    A run resumes where a killed one stopped and regenerates only new and changed assets, and
    failed ones whose row says ``retry`` (a refusal, a network failure; with ``retry_failed``
    every failure): see the package README. Returns the run's `CatalogSummary`.
    """
    if form not in SUFFIXES:
        raise ValueError(f"form must be 'directory' or 'json', not {form!r}")
    if per_host < 1 or (workers is not None and workers < 1):
        raise ValueError("workers and per_host must be at least 1")
    if processes is not None and processes < 0:
        raise ValueError("processes must be 0 (threads of this process) or more")
    check_generator_options(generator_options)
    started = time.perf_counter()
    access = Access(
        headers=headers,
        allowed_urls=tuple(allowed_urls) if allowed_urls is not None else None,
        storage_options=storage_options,
    )
    target = Destination(destination, storage_options)
    local_root = Path(target.root) if target.local else None
    workers = workers or DEFAULT_WORKERS
    pool = _worker_pool(
        client, processes, workers, target, access, generator_options, manifest_threshold
    )
    with pool or contextlib.nullcontext():
        assets = list_assets(
            source,
            access.transport(),
            include=include,
            dandi_api_key=dandi_api_key,
            exclude_folder=local_root,
        )
        with _state_for(target) as state:
            state.merge_row_objects(a.asset_id for a in assets)
            previous = state.rows()
            unknown = _unidentified(assets, previous, form, retry_failed)
            assets = with_identities(assets, unknown, access.transport())
            listed = {a.asset_id: a for a in assets}
            removed = 0
            for asset_id, row in previous.items():
                if asset_id not in listed and row["status"] != "removed":
                    state.put({**row, "status": "removed"})
                    removed += 1
            todo = [
                (a, ref)
                for a in assets
                if needs_generation(
                    a,
                    previous.get(a.asset_id),
                    ref := _reference(a, form),
                    retry_failed=retry_failed,
                )
            ]

            def on_threads(jobs: list[tuple[Asset, str]]) -> Iterator[dict[str, Any]]:
                return _rows_from_threads(
                    jobs,
                    target,
                    access,
                    generator_options,
                    manifest_threshold,
                    workers,
                    per_host,
                )

            if client is not None:
                rows_done = rows_from_cluster(
                    client, todo, target, access, generator_options, manifest_threshold, per_host
                )
            elif pool is not None:
                rows_done = pool.rows(todo, per_host, on_threads)
            else:
                rows_done = on_threads(todo)
            failures = _commit(rows_done, len(todo), state, progress)
            rows = list(state.rows().values())
            target.write_file(CATALOG_FILE, catalog_parquet(rows))
            target.write_file(INDEX_FILE, index_json(rows))
            target.write_files(viewer_files())
            target.write_file(PAGE_FILE, catalog_page(rows, f"Catalog of {_source_name(source)}"))
    summary = CatalogSummary(
        destination=str(target),
        listed=len(assets),
        generated=len(todo),
        unchanged=len(assets) - len(todo),
        removed=removed,
        statuses=CatalogSummary.count([r["status"] for r in rows]),
        failures=failures,
        seconds=time.perf_counter() - started,
    )
    return summary


def _source_name(source: str | os.PathLike[str] | Iterable[str]) -> str:
    if isinstance(source, str | os.PathLike):
        return redact(os.fspath(source))
    return "a list of URLs and paths"


def _unidentified(
    assets: list[Asset], previous: Mapping[str, dict[str, Any]], form: str, retry_failed: bool
) -> set[str]:
    """Assets of a URL list (no listing says their size or ETag) that an earlier run recorded
    with one: a probe tells whether they changed. A new asset needs none: its generation
    learns its size and ETag from its first answer."""
    return {
        a.asset_id
        for a in assets
        if a.size is None
        and a.etag is None
        and host_of(a.url) != "local"
        and (row := previous.get(a.asset_id)) is not None
        and (row.get("size"), row.get("etag")) != (None, None)
        and identity_decides(row, _reference(a, form), retry_failed=retry_failed)
    }


def _reference(asset: Asset, form: str) -> str:
    return reference_location(asset.path, asset.asset_id, form)


def _worker_pool(
    client: Any,
    processes: int | None,
    workers: int,
    target: Destination,
    access: Access,
    options: Mapping[str, Any],
    threshold: int | None,
) -> WorkerPool | None:
    """The worker processes of a local run, forked now, before the run's first object-store
    request; None when the jobs run on threads (0 processes, a cluster, or a process whose
    object-store runtime already runs)."""
    processes = min(default_processes() if processes is None else processes, workers)
    if client is not None or processes < 1 or not fork_is_safe():
        return None
    threads = -(-workers // processes)
    return WorkerPool(target, access, options, threshold, processes=processes, threads=threads)


def _rows_from_threads(
    todo: list[tuple[Asset, str]],
    target: Destination,
    access: Access,
    options: Mapping[str, Any],
    threshold: int | None,
    workers: int,
    per_host: int,
) -> Iterator[dict[str, Any]]:
    """Every job on a thread pool of this process; rows in the order the jobs finish."""
    hosts: dict[str, threading.BoundedSemaphore] = {
        host: threading.BoundedSemaphore(per_host) for host in {host_of(a.url) for a, _ in todo}
    }

    def job(asset: Asset, reference: str) -> dict[str, Any]:
        with hosts[host_of(asset.url)]:
            return run_job(asset, target, reference, access, options, threshold)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="catalog") as pool:
        pending: dict[Future[dict[str, Any]], Asset] = {
            pool.submit(job, asset, reference): asset for asset, reference in _interleaved(todo)
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                asset = pending.pop(future)
                try:
                    yield future.result()
                except Exception as exc:  # run_job records failures; this is a bug's net
                    row = {**base_row(asset), "status": "failed", "retry": True}
                    row.update(error_class=type(exc).__name__, error_message=str(exc)[:2000])
                    yield row


def _commit(
    rows: Iterator[dict[str, Any]],
    total: int,
    state: _SyncedState,
    progress: bool | Callable[[dict[str, Any]], None],
) -> dict[str, str]:
    """Commit each row as it comes (in this thread); returns this run's failures. The display
    shows, besides the assets done and the time left, the failures so far, the bytes of the
    assets done and those their generations read, the rate, and the last asset."""
    failures: dict[str, str] = {}
    display = progress_display(
        "catalog", total=total, unit="assets", show=False if callable(progress) else progress
    )
    started = time.monotonic()
    done = assets_bytes = read = 0
    with display:
        for row in rows:
            state.put(row)
            if row["status"] in ("failed", "refused"):
                failures[row["asset_id"]] = f"{row['error_class']}: {row['error_message']}"
                if progress is True:
                    display.write(f"{row['status']} {row['path']}: {failures[row['asset_id']]}")
            if callable(progress):
                progress(row)
            done += 1
            assets_bytes += row["size"] or 0
            read += row["bytes_read"] or 0
            rate = done * 60 / max(time.monotonic() - started, 1e-3)
            display.update(
                detail=f"{len(failures):,} failed, {format_bytes(assets_bytes)} of assets, "
                f"{format_bytes(read)} read, {rate:,.0f} assets/min, "
                f"last {row['status']} {row['path']}"
            )
    return failures


def _interleaved(todo: list[tuple[Asset, str]]) -> list[tuple[Asset, str]]:
    """Jobs ordered round-robin over hosts, so the pool's threads do not all wait on one host's
    bound while another host's jobs queue behind them."""
    by_host: dict[str, list[tuple[Asset, str]]] = {}
    for item in todo:
        by_host.setdefault(host_of(item[0].url), []).append(item)
    queues = list(by_host.values())
    ordered = []
    while queues:
        for queue in list(queues):
            ordered.append(queue.pop(0))
            if not queue:
                queues.remove(queue)
    return ordered


class _SyncedState:
    """The progress database.

    At a local destination it lives there and each row is committed as it comes. For an object
    store it is a local copy, fetched at the start and copied back every
    `STATE_UPLOAD_SECONDS` and at the end; so that a run killed in between loses no finished
    asset, each row is also PUT as a small object under ``catalog.rows/`` of the destination
    as it comes (after its asset's reference set; `ROW_WRITES` at once). The next run lists
    that folder (one request per 1,000 objects) and reads the row objects its copy has not
    folded in (one GET each; a malformed or foreign one is ignored with a `CatalogRowWarning`);
    once a copy holding row objects is uploaded they are deleted (one request per 1,000), so
    the folder holds about `STATE_UPLOAD_SECONDS` of rows. A ``removed`` mark is kept in the
    copy only: a listing makes it again at no cost.
    """

    def __init__(self, target: Destination) -> None:
        self._target = target
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._folded: list[str] = []
        """Row objects the local copy holds, to delete once it is uploaded."""
        self._writer: ThreadPoolExecutor | None = None
        self._writes: deque[Future[None]] = deque()
        if target.local:
            path = Path(target.root, STATE_FILE)
        else:
            digest = hashlib.sha256(target.root.encode()).hexdigest()[:12]
            self._scratch = tempfile.TemporaryDirectory(prefix=f"shadowzarr-catalog-{digest}-")
            path = Path(self._scratch.name, STATE_FILE)
            copy = target.read_file(STATE_FILE)
            if copy is not None:
                path.write_bytes(copy)
        self._path = path
        self._state = CatalogState(path)
        self._uploaded = time.monotonic()

    def merge_row_objects(self, listed: Iterable[str]) -> None:
        """Fold in the rows a run left as objects after the database copy uploaded last, in the
        order they were written; ``listed``: the asset ids the source lists (a row object of an
        asset neither listed nor in the database is foreign)."""
        if self._scratch is None:
            return
        folded = self._state.folded()
        found = sorted(self._target.list_files(ROWS_FOLDER), key=lambda o: o.key)
        unread = []
        for listed_object in found:
            if listed_object.key in folded:
                self._folded.append(listed_object.key)
            elif not is_row_key(listed_object.key):
                ignored(listed_object.key, "not a row object's name")
            elif listed_object.size > MAX_ROW_BYTES:
                ignored(listed_object.key, f"{listed_object.size:,} bytes, more than a row has")
            else:
                unread.append(listed_object.key)
        if unread:
            known = set(listed).union(self._state.asset_ids())
            with ThreadPoolExecutor(max_workers=8, thread_name_prefix="catalog-rows") as pool:
                for key, data in zip(unread, pool.map(self._target.read_file, unread), strict=True):
                    if data is None:  # deleted since the listing
                        continue
                    row = read_row_object(key, data, known)
                    if row is not None:
                        self._state.fold(key, row)
                        self._folded.append(key)
        gone = folded.difference(o.key for o in found)
        if gone:
            self._state.unfold(sorted(gone))

    def rows(self) -> dict[str, dict[str, Any]]:
        return self._state.rows()

    def put(self, row: dict[str, Any]) -> None:
        if self._scratch is None or row["status"] == "removed":
            self._state.put(row)
            return
        key = row_object_key(row["asset_id"])
        self._written(ROW_WRITES - 1)
        if self._writer is None:
            self._writer = ThreadPoolExecutor(ROW_WRITES, thread_name_prefix="catalog-rows")
        self._writes.append(self._writer.submit(self._target.write_file, key, row_object(row)))
        self._state.fold(key, row)
        self._folded.append(key)
        if time.monotonic() - self._uploaded > STATE_UPLOAD_SECONDS:
            self.upload()

    def _written(self, pending: int) -> None:
        """Wait until at most ``pending`` row objects are being written; raises the error of
        one that failed (as a failed write of the database or the catalog does)."""
        while self._writes and (len(self._writes) > pending or self._writes[0].done()):
            self._writes.popleft().result()

    def upload(self) -> None:
        """Copy the database to the destination, then delete the row objects it holds (a run
        killed between the two finds them listed as folded in, and does not read them)."""
        if self._scratch is None:
            return
        self._written(0)
        self._state.checkpoint()
        self._target.write_file(STATE_FILE, self._path.read_bytes())
        self._uploaded = time.monotonic()
        folded, self._folded = self._folded, []
        try:
            self._target.delete_files(folded)
        except SourceError:  # they stay; the next run skips them as folded and tries again
            self._folded = folded
            return
        self._state.unfold(folded)

    def __enter__(self) -> _SyncedState:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.upload()
        finally:
            if self._writer is not None:
                self._writer.shutdown()
            self._state.close()
            if self._scratch is not None:
                self._scratch.cleanup()


def _state_for(target: Destination) -> _SyncedState:
    return _SyncedState(target)
