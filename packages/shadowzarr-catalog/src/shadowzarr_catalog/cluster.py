"""The jobs on a Dask cluster: each worker generates and publishes its assets itself, and only
the rows come back to this process, which commits them as they arrive (so resuming works as in
a local run). The destination must be one every worker reaches: an object-store prefix, or a
folder they share."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from shadowzarr_catalog.assets import Asset
from shadowzarr_catalog.destination import Destination
from shadowzarr_catalog.formats import Access
from shadowzarr_catalog.job import base_row, run_job

__all__ = ["rows_from_cluster"]


def rows_from_cluster(
    client: Any,
    todo: list[tuple[Asset, str]],
    target: Destination,
    access: Access,
    options: Mapping[str, Any],
    threshold: int | None,
) -> Iterator[dict[str, Any]]:
    """One row per job, in the order they finish; a job lost with its worker is a failed row
    (``retry``: the next run tries it again)."""
    try:
        from distributed import as_completed
    except ModuleNotFoundError as exc:
        raise ImportError(
            "generate_catalog(client=...) needs distributed: pip install 'shadowzarr-catalog[dask]'"
        ) from exc
    job: Callable[..., dict[str, Any]] = run_job
    futures = {
        client.submit(
            job, asset, target, reference, access, dict(options), threshold, pure=False
        ): asset
        for asset, reference in todo
    }
    in_order: Any = as_completed  # untyped in distributed
    for future in in_order(list(futures)):
        asset = futures[future]
        try:
            yield future.result()
        except Exception as exc:  # the worker died or the row could not come back
            row = {**base_row(asset), "status": "failed", "retry": True}
            row.update(error_class=type(exc).__name__, error_message=str(exc)[:2000])
            yield row
        finally:
            future.release()
