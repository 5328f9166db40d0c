"""Pictures of references (``pip install 'shadowzarr[plot]'``, which installs matplotlib).

``shadowzarr.plot.layout(refs, array, select=…)`` returns a matplotlib `Figure` of where an
array's chunks lie in its source file and what reading ``select`` costs; ``shadowzarr layout``
draws the same picture from the command line.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["layout", "require_matplotlib"]


def require_matplotlib(wanted: str = "shadowzarr.plot") -> None:
    """Raise an ImportError that says what to install when matplotlib is missing."""
    try:
        importlib.import_module("matplotlib")
    except ImportError as exc:
        raise ImportError(
            f"{wanted} draws with matplotlib, which is not installed: "
            "pip install 'shadowzarr[plot]'"
        ) from exc


def layout(
    refs: Any,
    array: str | None = None,
    *,
    select: Any = None,
    context: bool = True,
    measure: bool = False,
    width: float = 12.0,
    **store_options: Any,
) -> Figure:
    """The layout picture of ``array`` (default: the array with the most bytes in files).

    Parameters
    ----------
    refs
        References (a path, URL, dict or `ReferenceFileSystem`), an `RfsStore`, a
        `RemoteArray`, or a `zarr.Array` or `zarr.Group` from ``open_rfs`` (an array is drawn
        itself unless ``array`` names another; a group's ``array`` is a path inside it).
    select
        A selection (``(slice(0, 30000), 17)`` or the text ``"0:30000, 17"``): the chunks it
        reads and the requests the store sends for them are drawn.
    context
        Also find where every other array's chunks lie (slower for many arrays).
    measure
        Also read ``select`` (cold, through a fresh store) and show what it really sent; the
        planned requests are exact up to ``async.concurrency`` chunks, an upper bound beyond.
    **store_options
        `RfsStore` options; the request merging drawn is the one these give.
    """
    require_matplotlib()
    from shadowzarr_store import RfsStore, open_rfs_store
    from shadowzarr_store.remote import RemoteArray

    from shadowzarr.plot.layout_data import layout_data
    from shadowzarr.plot.layout_figure import layout_figure
    from shadowzarr.selection_text import parse_selection

    if isinstance(refs, RemoteArray):
        store, array = refs.store, array or refs.dataset
    elif isinstance(getattr(refs, "store", None), RfsStore) and hasattr(refs, "path"):
        # a zarr Array or Group read through open_rfs: its store, and its path
        store = refs.store
        inside = "/".join(part for part in (refs.path, array) if part)
        array = inside if array or _is_array(refs) else array
    elif isinstance(refs, RfsStore):
        store = refs
    else:
        store = open_rfs_store(
            os.fspath(refs) if isinstance(refs, os.PathLike) else refs, **store_options
        )
    if isinstance(select, str):
        select = parse_selection(select)
    data = layout_data(store, array, select, context=context, measure=measure)
    return layout_figure(data, width=width)


def _is_array(node: Any) -> bool:
    import zarr

    return isinstance(node, zarr.Array)
