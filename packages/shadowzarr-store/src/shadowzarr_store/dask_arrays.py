"""``to_dask(array)``: a dask array of an array read through an `RfsStore`, one task per shard.

``da.from_zarr(array)`` makes a task of each of zarr's (inner) chunks; in the grouped view those
are the stored chunks, a few KiB each, so a read of a large array becomes tens of thousands of
tasks each asking for its own range. A shard is what the store reads in about one request, so
one task per shard (``chunks=array.shards``) costs about one request per task.
"""

from __future__ import annotations

from typing import Any

__all__ = ["task_chunks", "to_dask"]


def task_chunks(array: Any) -> tuple[int, ...]:
    """The chunk shape a dask task should read: a shard of the view, or a stored chunk."""
    return tuple(array.shards or array.chunks)


def to_dask(array: Any, **from_zarr: Any) -> Any:
    """``dask.array.from_zarr(array, chunks=task_chunks(array))`` (``chunks=`` may be given to
    choose others; further keywords go to ``from_zarr``). Needs dask: ``pip install dask``."""
    try:
        import dask.array as da
    except ImportError as exc:
        raise ImportError("to_dask needs dask: pip install 'dask[array]'") from exc
    from_zarr.setdefault("chunks", task_chunks(array))
    return da.from_zarr(array, **from_zarr)  # type: ignore[no-untyped-call]
