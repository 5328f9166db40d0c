"""The layout picture: where an array's chunks lie in its source file, and what a read costs.

Three panels, drawn from the store's own knowledge (`shadowzarr_store.request_plan`):

1. the whole file as a strip of bytes: this array's chunks, other arrays' chunks, and the
   bytes no reference points to (headers, heaps, chunk-index nodes, data not referenced);
2. an enlargement of the part a selection reads (or, without one, of the file's start, where
   the headers end and the first chunk begins), with each chunk drawn and the requests the
   store sends for the selection under it, as its request merger plans them;
3. the numbered lookup of the selection's first chunk: zarr's key, the reference or the
   manifest chunk that gives its bytes, and the range request.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec.units import format_bytes

from shadowzarr.plot.byte_strip import Kind, bin_coverage, dominant_kinds

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from shadowzarr_store.request_plan import PlannedRequest

    from shadowzarr.plot.layout_data import LayoutData

__all__ = ["layout_figure", "save_figure"]

THIS_ARRAY = "#1f77b4"
OTHER_ARRAYS = "#9ecae1"
UNREFERENCED = "#d9d9d9"
UNREFERENCED_MARK = "#636363"
SELECTED = "#d62728"
REQUEST = "#2ca02c"
INDEX = "#ff7f0e"
BINS = 1600


def layout_figure(data: LayoutData, *, width: float = 12.0) -> Figure:
    """The picture of ``data`` as a matplotlib `Figure` (no pyplot: no window, no global state)."""
    from matplotlib.figure import Figure

    has_plan = data.plan is not None and bool(data.plan.chunks)
    figure = Figure(figsize=(width, 7.6 if has_plan else 6.2), dpi=110, layout="constrained")
    rows = [1.1, 1.5, 1.25] if has_plan else [1.1, 1.2, 0.7]
    axes = figure.subplots(3, 1, gridspec_kw={"height_ratios": rows})
    figure.suptitle(_title(data), fontsize=12.5, fontweight="bold", linespacing=1.5)
    window = _zoom_window(data)
    _whole_file(axes[0], data, window)
    _zoom(axes[1], data, window, width)
    if has_plan:
        _lookup(axes[2], data)
    else:
        _summary(axes[2], data)
    return figure


def _title(data: LayoutData) -> str:
    name = data.url.rstrip("/").rsplit("/", 1)[-1] or data.url
    return (
        f"Where {data.path} lies in {name} ({format_bytes(data.file_size)})\n"
        f"{data.data_type} {_shape(data.shape)} in {len(data.chunks):,} chunks of "
        f"{_shape(data.chunk_shape)}"
        + (", looked up in a chunk manifest" if data.indexed else ", listed in the references")
    )


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(f"{n:,}" for n in shape) + ")"


# -- panel 1: the whole file -----------------------------------------------------------------


def _unreferenced(data: LayoutData) -> list[tuple[int, int]]:
    """The bytes of the file that no chunk reference covers (headers, heaps, index nodes…)."""
    covered = sorted([(c.start, c.end) for c in data.chunks] + list(data.other_chunks))
    gaps: list[tuple[int, int]] = []
    position = 0
    for start, end in covered:
        if start > position:
            gaps.append((position, start))
        position = max(position, end)
    if position < data.file_size:
        gaps.append((position, data.file_size))
    return gaps


def _whole_file(axes: Axes, data: LayoutData, window: tuple[int, int]) -> None:
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch, Rectangle

    selected = {c.key for c in data.plan.chunks} if data.plan is not None else set()
    lanes = [
        (
            "not referenced",
            [Kind.of(_UNREFERENCED_LABEL, UNREFERENCED_MARK, _unreferenced(data))],
        ),
        ("other arrays", [Kind.of("chunks of other arrays", OTHER_ARRAYS, data.other_chunks)]),
        (
            "this array",
            [
                Kind.of(
                    f"chunks of {data.path}", THIS_ARRAY, [(c.start, c.end) for c in data.chunks]
                ),
                Kind.of(
                    "chunks the selection reads",
                    SELECTED,
                    [(c.start, c.end) for c in data.chunks if c.key in selected],
                ),
            ],
        ),
    ]
    edges = np.linspace(0, data.file_size, BINS + 1)
    for row, (_, kinds) in enumerate(lanes):
        shown = dominant_kinds([bin_coverage(kind, edges) for kind in kinds])
        colors = np.array([to_rgb("white")] + [to_rgb(kind.color) for kind in kinds])
        axes.imshow(
            colors[shown + 1][np.newaxis, :, :],
            aspect="auto",
            extent=(0, data.file_size, row + 0.12, row + 0.88),
            interpolation="nearest",
        )
    axes.add_patch(
        Rectangle(
            (window[0], -0.1),
            max(window[1] - window[0], data.file_size / BINS),
            len(lanes) + 0.2,
            fill=False,
            edgecolor="black",
            linewidth=1.4,
            clip_on=False,
        )
    )
    axes.set_xlim(0, data.file_size)
    axes.set_ylim(0, len(lanes))
    axes.set_yticks([row + 0.5 for row in range(len(lanes))])
    axes.set_yticklabels([name for name, _ in lanes])
    axes.tick_params(axis="y", length=0, labelsize=9)
    _byte_axis(axes, 0, data.file_size)
    axes.set_title(
        f"the whole file, in {BINS} columns of {format_bytes(data.file_size / BINS)}: a column is "
        "coloured where it holds any such byte (black frame: enlarged below)",
        fontsize=10,
        loc="left",
    )
    handles = [
        Patch(color=UNREFERENCED_MARK, label=_UNREFERENCED_LABEL),
        Patch(color=OTHER_ARRAYS, label="chunks of other arrays"),
        Patch(color=THIS_ARRAY, label=f"chunks of {data.path}"),
    ]
    if selected:
        handles.append(Patch(color=SELECTED, label="chunks the selection reads"))
    if data.plan is not None and data.plan.requests:
        handles.append(Patch(color=REQUEST, label="requests the store sends"))
    axes.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.0, -0.42),
        ncol=3 if len(handles) > 3 else len(handles),
        fontsize=9,
        frameon=False,
        handlelength=1.6,
    )


_UNREFERENCED_LABEL = "not referenced: headers, heaps, chunk-index nodes…"


# -- panel 2: the enlargement ----------------------------------------------------------------


def _zoom_window(data: LayoutData) -> tuple[int, int]:
    """The bytes the selection's requests span, or the file's start up to its third chunk."""
    if data.plan is not None and data.plan.requests:
        starts = [r.start for r in data.plan.requests if r.url == data.url]
        ends = [r.end for r in data.plan.requests if r.url == data.url]
        if starts:
            low, high = min(starts), max(ends)
            pad = max((high - low) // 12, 256)
            return max(0, low - pad), min(data.file_size, high + pad)
    ordered = sorted(data.chunks, key=lambda c: c.start)
    end = ordered[min(2, len(ordered) - 1)].end
    return 0, min(data.file_size, end + max(end // 20, 64))


def _zoom(axes: Axes, data: LayoutData, window: tuple[int, int], width: float) -> None:
    low, high = window
    selected = {c.key for c in data.plan.chunks} if data.plan is not None else set()
    axes.broken_barh([(low, high - low)], (0.55, 0.4), facecolors=UNREFERENCED_MARK)
    others = [(s, e - s) for s, e in data.other_chunks if e > low and s < high]
    if others:
        axes.broken_barh(others, (0.55, 0.4), facecolors=OTHER_ARRAYS, edgecolor="white", lw=0.6)
    visible = [c for c in data.chunks if c.end > low and c.start < high]
    plain = [(c.start, c.size) for c in visible if c.key not in selected]
    chosen = [(c.start, c.size) for c in visible if c.key in selected]
    if plain:
        axes.broken_barh(plain, (0.55, 0.4), facecolors=THIS_ARRAY, edgecolor="white", lw=0.6)
    if chosen:
        axes.broken_barh(chosen, (0.55, 0.4), facecolors=SELECTED, edgecolor="white", lw=0.6)
    span = high - low
    if len(visible) <= 24:
        for chunk in visible:
            middle = (max(chunk.start, low) + min(chunk.end, high)) / 2
            if (min(chunk.end, high) - max(chunk.start, low)) / span > 0.025:
                axes.text(
                    middle,
                    0.75,
                    "c/" + "/".join(map(str, chunk.coords)),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white",
                    clip_on=True,
                )
    first = min(data.chunks, key=lambda c: c.start)
    if data.plan is None and low <= first.start <= high:
        axes.annotate(
            f"first chunk at byte {first.start:,}: "
            f"{format_bytes(first.start)} of headers before it",
            xy=(first.start, 0.95),
            xytext=(first.start, 1.18),
            ha="left" if first.start < low + span / 2 else "right",
            fontsize=9,
            arrowprops={"arrowstyle": "->", "color": "black"},
        )
    if data.plan is not None:
        requests = [r for r in data.plan.requests if r.url == data.url]
        for request in requests:
            axes.broken_barh(
                [(request.start, request.size)],
                (0.22, 0.2),
                facecolors=REQUEST,
                edgecolor="white",
                lw=0.8,
            )
        _label_requests(axes, requests, low, high, axes.get_position().width * width)
        measured = (
            ""
            if data.measured is None
            else f" (measured: {data.measured.requests} request"
            f"{'s' * (data.measured.requests != 1)}, {format_bytes(data.measured.bytes)})"
        )
        ahead = len(data.plan.read_ahead)
        title = (
            f"enlarged: {data.plan.selection} reads {len(data.plan.chunks)} chunks "
            f"({format_bytes(data.plan.chunk_bytes)})"
            + (f", with {ahead} more of their packs," if ahead else "")
            + f" in {len(requests)} planned request{'s' * (len(requests) != 1)} "
            f"({format_bytes(sum(r.size for r in requests))}){measured}; the store joins reads "
            f"< {format_bytes(data.plan.merge_gap)} apart, {data.plan.concurrency} "
            + ("shards" if data.plan.grouped else "reads")
            + " at a time"
        )
        # wrapped to the axes' width (about 5.6 points a character at 10 points)
        columns = max(60, int((width - 1.4) * 72 / 5.6))
        axes.set_title(_wrap(title, columns), fontsize=10, loc="left")
    else:
        axes.set_title(
            "the start of the file, enlarged: headers, then the first chunks",
            fontsize=10,
            loc="left",
        )
    axes.set_xlim(low, high)
    axes.set_ylim(-0.1 if data.plan is not None else 0.45, 1.05 if data.plan is not None else 1.35)
    axes.set_yticks([0.32, 0.75] if data.plan is not None else [0.75])
    axes.set_yticklabels(["requests", "file bytes"] if data.plan is not None else ["file bytes"])
    axes.tick_params(axis="y", length=0, labelsize=9)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    _byte_axis(axes, low, high)


def _label_requests(
    axes: Axes, requests: Sequence[PlannedRequest], low: int, high: int, inches: float
) -> None:
    """One label per request under its bar, in two rows, none overlapping another nor cut at
    the axes' edges: the longest form that fits for every request (chunks and size, size,
    number); with too many requests for even numbers, those that fit (the title has totals)."""
    span = max(high - low, 1)
    per_char = span * (8.5 * 0.56 / 72) / max(inches, 0.1)  # bytes one character covers
    forms = [
        [
            f"request {n}: {len(r.chunks)} chunk{'s' * (len(r.chunks) > 1)}, {format_bytes(r.size)}"
            for n, r in enumerate(requests, 1)
        ],
        [f"{n}: {format_bytes(r.size)}" for n, r in enumerate(requests, 1)],
        [str(n) for n in range(1, len(requests) + 1)],
    ]
    middles = [(max(r.start, low) + min(r.end, high)) / 2 for r in requests]
    placed: list[tuple[float, int, str]] = []
    for texts in forms:
        placed = _place_labels(texts, middles, low, high, per_char)
        if len(placed) == len(texts):
            break
    for centre, row, text in placed:
        axes.text(centre, 0.16 - 0.11 * row, text, ha="center", va="top", fontsize=8.5)


def _place_labels(
    texts: list[str], middles: list[float], low: int, high: int, per_char: float
) -> list[tuple[float, int, str]]:
    """(centre, row, text) of each label that fits: centred on its bar unless that would cut
    it at an edge, in the first of two rows where it keeps a character's space from others."""
    taken: list[list[tuple[float, float]]] = [[], []]
    placed = []
    for text, middle in zip(texts, middles, strict=True):
        half = len(text) * per_char / 2
        left = min(max(middle - half, low), high - 2 * half)
        right = left + 2 * half
        if left < low:
            continue  # wider than the axes
        for row in (0, 1):
            if all(right + per_char < a or left > b + per_char for a, b in taken[row]):
                taken[row].append((left, right))
                placed.append((left + half, row, text))
                break
    return placed


# -- panel 3: the numbered lookup, or a summary ----------------------------------------------


def _lookup(axes: Axes, data: LayoutData) -> None:
    from matplotlib.patches import FancyBboxPatch

    plan = data.plan
    assert plan is not None
    chunk = plan.chunks[0]
    key = chunk.key
    coords = "/".join(map(str, chunk.coords))
    short = _tail(key, 3)
    if data.indexed and plan.index_chunks:
        block = plan.index_chunks[0].rsplit("/c/", 1)[-1]
        count = len(plan.index_chunks)
        second = (
            f"{short} is not listed in refs.json, so the store reads chunk c/{block} of the "
            f"array's chunk manifest (index/…/{_tail(data.path, 1)})\n"
            f"{count} index chunk{'s' * (count > 1)} for the whole selection, then kept "
            "in memory"
        )
        third = (
            f"entry [{coords.replace('/', ', ')}] of that index chunk:\n"
            f"offset {chunk.start:,}, size {chunk.size:,}"
        )
    else:
        second = f"{short} is listed in the references:\n[url, {chunk.start:,}, {chunk.size:,}]"
        third = f"bytes {chunk.start:,}–{chunk.end - 1:,}\nof {_tail(data.url, 1)}"
    steps = [
        f"zarr asks the store for\n…/{_tail(key, 4)}\n(the first of {len(plan.chunks)} chunks of "
        f"{plan.selection})",
        second,
        third,
        f"the store sends {len(plan.requests)} range request"
        f"{'s' * (len(plan.requests) != 1)}\n({format_bytes(plan.request_bytes)}) for all "
        f"{len(plan.chunks)} chunks"
        + (f" (and {len(plan.read_ahead)} more of their packs)" if plan.read_ahead else "")
        + ";\nzarr decodes them",
    ]
    # the boxes' rounded padding reaches past 0 and 1: a margin keeps the last one whole
    axes.set_xlim(-0.02, 1.02)
    axes.set_ylim(0, 1)
    axes.axis("off")
    axes.set_title(
        "how the first chunk of the selection is found (cold read: nothing cached)",
        fontsize=10,
        loc="left",
    )
    width, gap = 0.22, (1 - 4 * 0.22) / 3
    for number, text in enumerate(steps):
        left = number * (width + gap)
        color = (
            INDEX if (number == 1 and data.indexed) else ("#f2f2f2" if number != 3 else "#e5f5e0")
        )
        axes.add_patch(
            FancyBboxPatch(
                (left, 0.08),
                width,
                0.78,
                boxstyle="round,pad=0.01,rounding_size=0.02",
                facecolor=color,
                alpha=0.35 if number == 1 and data.indexed else 1.0,
                edgecolor="#555555",
            )
        )
        axes.text(
            left + 0.012,
            0.80,
            f"{number + 1}",
            fontsize=12,
            fontweight="bold",
            va="top",
            bbox={"boxstyle": "circle,pad=0.25", "facecolor": "white", "edgecolor": "#555555"},
        )
        axes.text(
            left + width / 2 + 0.015,
            0.40,
            _wrap(text, 34),
            ha="center",
            va="center",
            fontsize=8.6,
            linespacing=1.35,
        )
        if number < 3:
            axes.annotate(
                "",
                xy=(left + width + gap * 0.9, 0.47),
                xytext=(left + width + gap * 0.1, 0.47),
                arrowprops={"arrowstyle": "-|>", "color": "#555555", "lw": 1.5},
            )


def _summary(axes: Axes, data: LayoutData) -> None:
    axes.axis("off")
    ordered = sorted(data.chunks, key=lambda c: c.start)
    sizes = np.array([c.size for c in ordered])
    gaps = np.array([b.start - a.end for a, b in itertools.pairwise(ordered)])
    where = "listed in the references" if not data.indexed else "looked up in a chunk manifest"
    adjacent = int(np.sum(gaps == 0)) if gaps.size else 0
    lines = [
        f"{len(data.chunks):,} chunks of {format_bytes(float(np.median(sizes)))} (median) "
        f"= {format_bytes(float(sizes.sum()))} of the file's {format_bytes(data.file_size)}; "
        f"each is {where}.",
        f"{adjacent:,} of {gaps.size:,} neighbouring chunks touch"
        + (
            f"; the largest gap between two is {format_bytes(float(gaps.max()))}."
            if gaps.size and gaps.max() > 0
            else "."
        ),
        "Pass a selection (--select, or select=) to see which chunks and requests a read costs.",
    ]
    if data.other_urls:
        lines.append(f"Also in {len(data.other_urls)} other file(s), not drawn.")
    axes.text(0.0, 0.9, "\n".join(lines), va="top", fontsize=10, family="sans-serif")


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(
        "\n".join(textwrap.wrap(line, width, break_on_hyphens=False, break_long_words=True))
        for line in text.split("\n")
    )


def _tail(text: str, parts: int) -> str:
    pieces = text.rstrip("/").split("/")
    return "/".join(pieces[-parts:])


# -- axes ------------------------------------------------------------------------------------


def _byte_axis(axes: Axes, low: float, high: float) -> None:
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    span = max(high - low, 1)
    unit, scale = _unit(span)
    step = _nice_step(span / scale / 7) * scale
    axes.xaxis.set_major_locator(MultipleLocator(step))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _tick(value, scale, step)))
    axes.set_xlabel(f"byte offset in the file ({unit})", fontsize=9)
    axes.tick_params(axis="x", labelsize=9)


def _unit(span: float) -> tuple[str, float]:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if span >= 4 * scale:
            return unit, scale
    return "bytes", 1


def _nice_step(rough: float) -> float:
    """1, 2, 2.5 or 5 times a power of ten, near ``rough``."""
    if rough <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(rough))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if rough <= factor * power:
            return factor * power
    return 10.0 * power


def _tick(value: float, scale: float, step: float) -> str:
    shown = value / scale
    decimals = max(0, -math.floor(math.log10(step / scale)) + (1 if (step / scale) % 1 else 0))
    decimals = min(decimals, 3)
    return f"{shown:,.{decimals}f}"


def save_figure(figure: Figure, path: str | os.PathLike[str]) -> None:
    figure.savefig(path, dpi=110, facecolor="white")
