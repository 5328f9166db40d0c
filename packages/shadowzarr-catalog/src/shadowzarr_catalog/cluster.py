"""The jobs on a Dask cluster: each worker generates and publishes its assets itself, and only
the rows come back to this process, which commits them as they arrive (so resuming works as in
a local run). The destination must be one every worker reaches: an object-store prefix, or a
folder they share. At most ``per_host`` jobs against one host are on the cluster at once, however
many workers it has: the next job of a host is submitted when one of its jobs has finished."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from shadowzarr_catalog.assets import Asset, host_of
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
    per_host: int,
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
    queues: OrderedDict[str, deque[tuple[Asset, str]]] = OrderedDict()
    for asset, reference in todo:
        queues.setdefault(host_of(asset.url), deque()).append((asset, reference))
    busy: dict[str, int] = dict.fromkeys(queues, 0)
    futures: dict[Any, Asset] = {}

    def submitted() -> list[Any]:
        """The jobs of every host with room under its bound, round-robin over the hosts."""
        new: list[Any] = []
        while True:
            host = next((h for h in queues if busy[h] < per_host), None)
            if host is None:
                return new
            asset, reference = queues[host].popleft()
            if queues[host]:
                queues.move_to_end(host)
            else:
                del queues[host]
            busy[host] += 1
            future = client.submit(
                job, asset, target, reference, access, dict(options), threshold, pure=False
            )
            futures[future] = asset
            new.append(future)

    untyped: Any = as_completed  # no type hints in distributed
    in_order = untyped(submitted(), loop=client.loop)  # the default client may be another
    for future in in_order:
        asset = futures.pop(future)
        try:
            yield future.result()
        except Exception as exc:  # the worker died or the row could not come back
            row = {**base_row(asset), "status": "failed", "retry": True}
            row.update(error_class=type(exc).__name__, error_message=str(exc)[:2000])
            yield row
        finally:
            future.release()
            busy[host_of(asset.url)] -= 1
            in_order.update(submitted())
