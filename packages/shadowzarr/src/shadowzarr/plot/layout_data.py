"""What the layout picture shows, gathered once from the store (no matplotlib needed): the
extents of an array's chunks and of every other array's in the same file, and the planned (and
optionally measured) cost of reading a selection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadowzarr_spec import array_info, array_paths
from zarr.core.sync import sync

if TYPE_CHECKING:
    from shadowzarr_store import RfsStore
    from shadowzarr_store.request_plan import ChunkExtent, Measured, SelectionPlan

__all__ = ["LayoutData", "choose_array", "layout_data"]


@dataclass(frozen=True, slots=True)
class LayoutData:
    """What the picture shows, gathered once (no matplotlib needed)."""

    path: str
    url: str
    file_size: int
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    data_type: str
    chunks: tuple[ChunkExtent, ...]
    other_chunks: tuple[tuple[int, int], ...]
    other_urls: tuple[str, ...]
    plan: SelectionPlan | None
    indexed: bool
    listed_in_refs: bool
    measured: Measured | None = None


def layout_data(
    store: RfsStore,
    path: str | None = None,
    select: Any = None,
    *,
    context: bool = True,
    measure: bool = False,
) -> LayoutData:
    """Gather the extents of ``path``'s chunks (and, with ``context``, every other array's in
    the same file) and the planned cost of reading ``select`` (with ``measure``, also what a
    cold read of it really sends)."""
    from shadowzarr_store.request_plan import array_extents, measure_selection, plan_selection

    rfs = store.rfs
    path = choose_array(store) if path is None else path.strip("/")
    info = array_info(rfs, path)
    if info is None:
        from shadowzarr_spec import DatasetNotFoundError

        raise DatasetNotFoundError(f"{path!r} is not an array of these references")
    extents = sync(array_extents(store, path))
    if not extents:
        raise ValueError(f"{path!r}: no chunk of this array lies in a source file (all inline)")
    by_url: dict[str, int] = {}
    for extent in extents:
        by_url[extent.url] = by_url.get(extent.url, 0) + extent.size
    url = max(by_url, key=lambda u: by_url[u])
    mine = tuple(e for e in extents if e.url == url)
    others: list[tuple[int, int]] = []
    if context:
        for other in array_paths(rfs):
            if other != path:
                others.extend(
                    (e.start, e.end) for e in sync(array_extents(store, other)) if e.url == url
                )
    recorded = rfs.sources.get(url)
    ends = [e.end for e in mine] + [end for _, end in others]
    size = recorded.size if recorded is not None and recorded.size else max(ends)
    plan = None if select is None else sync(plan_selection(store, path, select))
    measured = measure_selection(store, path, select) if measure and select is not None else None
    return LayoutData(
        path=path,
        url=url,
        file_size=int(size),
        shape=info.shape,
        chunk_shape=info.chunk_shape,
        data_type=str(info.data_type),
        chunks=mine,
        other_chunks=tuple(others),
        other_urls=tuple(u for u in by_url if u != url),
        plan=plan,
        indexed=path in rfs.indexes,
        listed_in_refs=any(e.key in rfs.refs for e in mine[:1]),
        measured=measured,
    )


def choose_array(store: RfsStore) -> str:
    """The array to draw when none is named: the one with the most bytes in source files."""
    from shadowzarr_store.request_plan import array_extents

    best, best_bytes = None, -1
    for path in array_paths(store.rfs):
        total = sum(e.size for e in sync(array_extents(store, path)))
        if total > best_bytes:
            best, best_bytes = path, total
    if best is None or best_bytes <= 0:
        raise ValueError("no array of these references has chunks in a source file")
    return best
