"""The notebook summary of a remote array (``_repr_html_``): what it is, where it comes from,
what the cache holds (a map of its chunks) and what reading it has cost so far.

Plain HTML and inline SVG with their own class names, so it renders the same in Jupyter,
VS Code and a static export, and needs no JavaScript. Every value is escaped.
"""

from __future__ import annotations

import html
import math
from typing import Any, Protocol

import numpy as np

from shadowzarr_store.summary_style import STYLE

__all__ = ["MAP_CELLS", "info_html", "remote_array_html"]

MAP_CELLS = 48
"""Cells per side of the chunk map at most; a cell stands for several chunks beyond that."""


_CACHED = "#1f77b4"
_COLD = "#d0d7de"
_MISSING = "#ffffff"


class Summarized(Protocol):
    """What the summary reads of a `RemoteArray` (named by its fields, so that this module does
    not import the class that imports it)."""

    _caches: Any

    @property
    def array(self) -> Any: ...
    @property
    def store(self) -> Any: ...
    @property
    def urlpath(self) -> str: ...
    @property
    def dataset(self) -> str: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def cache_bytes(self) -> int: ...
    @property
    def max_cache_bytes(self) -> int | None: ...
    @property
    def info_items(self) -> tuple[tuple[str, str], ...]: ...


def remote_array_html(remote: Summarized) -> str:
    """The summary of ``remote``: its fields, a map of which chunks are cached, its traffic."""
    items = dict(remote.info_items)
    groups = {
        "array": ("shape", "dtype", "chunks", "codecs", "nbytes"),
        "source": (
            "source",
            "source size",
            "source etag",
            "data files",
            "references",
            "assume immutable",
        ),
        "cache": ("cache", "cache bytes", "offline"),
        "traffic": ("traffic",),
    }
    rows = []
    for title, names in groups.items():
        rows.append(f"<tr><th colspan=2>{title}</th></tr>")
        for name in names:
            value = items.get(name, "")
            shown = (
                _cache_bar(remote) + html.escape(value)
                if name == "cache bytes"
                else (html.escape(value))
            )
            rows.append(f"<tr><td class=k>{html.escape(name)}</td><td>{shown}</td></tr>")
    chunk_map = _chunk_map(remote)
    return (
        STYLE
        + "<div class=szr>"
        + f"<h4>RemoteArray {html.escape(remote.dataset or '/')}</h4>"
        + f"<div class=sub>{html.escape(remote.urlpath)}</div>"
        + "<div class=cols><table>"
        + "".join(rows)
        + "</table>"
        + chunk_map
        + "</div></div>"
    )


def info_html(items: tuple[tuple[str, str], ...]) -> str:
    """The fields of ``remote.info`` as a table."""
    rows = "".join(
        f"<tr><td class=k>{html.escape(name)}</td><td>{html.escape(value)}</td></tr>"
        for name, value in items
    )
    return STYLE + f"<div class=szr><table>{rows}</table></div>"


def _cache_bar(remote: Summarized) -> str:
    cap = remote.max_cache_bytes
    if not cap:
        return ""
    share = min(1.0, remote.cache_bytes / cap)
    return f"<span class=bar><i style='width:{100 * share:.1f}%'></i></span>"


def _chunk_map(remote: Summarized) -> str:
    """An SVG of the chunk grid (the first two axes; later ones folded in): cached, not
    cached, never written. Answered from the cache alone, without a request."""
    state = _chunk_states(remote)
    if state is None:
        return ""
    rows, cols = state.shape
    cell = max(4, min(14, 300 // max(rows, cols)))
    rects = []
    for r in range(rows):
        for c in range(cols):
            value = state[r, c]
            color = _MISSING if value < 0 else _blend(value)
            rects.append(
                f"<rect x={c * cell} y={r * cell} width={cell - 1} height={cell - 1} "
                f"fill='{color}' stroke='#d0d7de' stroke-width='0.5'/>"
            )
    grid = remote.array.shards or remote.array.chunks
    counts = [math.ceil(s / g) if s else 0 for s, g in zip(remote.shape, grid, strict=True)]
    note = " × ".join(f"{n:,}" for n in counts) + " chunks (axis 0 down, axis 1 across)"
    if len(counts) > 2:
        note += "; later axes folded into the columns"
    if len(counts) == 1:
        note = f"{counts[0]:,} chunks, in rows of {cols}"
    if rows * cols < math.prod(counts):
        note += "; a cell stands for several"
    svg = (
        f"<svg width={cols * cell} height={rows * cell} role=img "
        f"aria-label='chunk map'>{''.join(rects)}</svg>"
    )
    legend = (
        "<div class=legend>"
        f"<span style='background:{_CACHED}'></span>cached"
        f"<span style='background:{_COLD};'></span>not cached"
        f"<span style='background:{_MISSING};border:1px solid #d0d7de'></span>never written</div>"
    )
    return (
        "<div><table><tr><th>chunks in the cache</th></tr></table>"
        f"<div class=sub>{html.escape(note)}</div>{svg}{legend}</div>"
    )


def _chunk_states(remote: Summarized) -> np.ndarray | None:
    """Per map cell: the share of its chunks that are cached (0…1), or -1 if none written."""
    from zarr.core.sync import sync

    from shadowzarr_store.remote.cached_chunks import chunk_is_cached

    array = remote.array
    grid = array.shards or array.chunks
    counts = [math.ceil(s / g) if s else 0 for s, g in zip(array.shape, grid, strict=True)]
    if not counts or 0 in counts:
        return None
    rows = counts[0]
    cols = math.prod(counts[1:]) if len(counts) > 1 else 1
    if len(counts) == 1:  # one axis: wrap it into lines
        cols = min(rows, MAP_CELLS)
        rows = math.ceil(counts[0] / cols)
    step_r = math.ceil(rows / MAP_CELLS)
    step_c = math.ceil(cols / MAP_CELLS)
    cells = np.zeros((math.ceil(rows / step_r), math.ceil(cols / step_c)))
    written = np.zeros_like(cells)
    total = np.zeros_like(cells)
    prefix = f"{array.path}/" if array.path else ""
    caches = remote._caches  # same package: the array's own caches
    store = remote.store
    sample = _sample(math.prod(counts), limit=4096)

    async def visit() -> None:
        for linear in sample:
            coords = tuple(int(c) for c in np.unravel_index(linear, counts))
            if len(counts) == 1:
                r, c = divmod(coords[0], cols)
            else:
                r = coords[0]
                c = int(np.ravel_multi_index(coords[1:], counts[1:])) if len(counts) > 1 else 0
            key = prefix + array.metadata.encode_chunk_key(coords)
            value = await store.resolver.resolve(key)
            cell = (r // step_r, c // step_c)
            total[cell] += 1
            if value is None:
                continue
            written[cell] += 1
            if await chunk_is_cached(store, caches, key):
                cells[cell] += 1

    sync(visit())
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(written > 0, cells / np.maximum(written, 1), -1.0)
    share[total == 0] = -1.0
    return share


def _sample(count: int, limit: int) -> np.ndarray:
    """Every chunk number, or ``limit`` of them spread evenly (a map of a huge array is
    drawn from a sample, so it never costs more than a few thousand lookups)."""
    if count <= limit:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, limit).astype(np.int64))


def _blend(share: float) -> str:
    """From the not-cached grey to the cached blue."""
    cold = np.array([0xD0, 0xD7, 0xDE], dtype=float)
    warm = np.array([0x1F, 0x77, 0xB4], dtype=float)
    mixed = cold + (warm - cold) * float(share)
    return "#" + "".join(f"{round(v):02x}" for v in mixed)
