"""The layout picture: drawn from the store's own plan, with the requests it will send."""

from __future__ import annotations

import itertools
import sys
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex
from shadowzarr_spec import write_rfs
from zarr.core.sync import sync

import shadowzarr
import shadowzarr.plot
from shadowzarr.cli import main
from shadowzarr.plot.byte_strip import Kind, bin_coverage, dominant_kinds
from shadowzarr.plot.layout_figure import REQUEST, SELECTED
from shadowzarr.selection_text import parse_selection

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def refs(tmp_path: Path) -> Path:
    data = np.arange(60_000 * 8, dtype="<i2").reshape(60_000, 8)
    with h5py.File(tmp_path / "session.nwb", "w") as file:
        file.create_dataset("acquisition/data", data=data, chunks=(1_000, 2))
        file.create_dataset("acquisition/timestamps", data=np.arange(60_000) / 3e4, chunks=(6000,))
    rfs = shadowzarr.generate_rfs(str(tmp_path / "session.nwb"), progress=False)
    return write_rfs(rfs, tmp_path / "session.shadowzarr")  # 240 chunks: listed in refs


def _colored(axes, color: str) -> list:  # type: ignore[no-untyped-def]
    return [
        c
        for c in axes.collections
        if isinstance(c, PolyCollection) and to_hex(c.get_facecolor()[0]) == to_hex(color)
    ]


def test_the_picture_draws_the_planned_requests(refs: Path, tmp_path: Path) -> None:
    from shadowzarr_store import open_rfs_store
    from shadowzarr_store.request_plan import plan_selection

    selection = (slice(2_500, 4_500), slice(2, 6))
    figure = shadowzarr.plot.layout(refs, "acquisition/data", select=selection)
    plan = sync(plan_selection(open_rfs_store(refs), "acquisition/data", selection))
    whole, zoom, lookup = figure.axes
    bars = _colored(zoom, REQUEST)
    assert sum(len(bar.get_paths()) for bar in bars) == len(plan.requests)
    chosen = sum(len(c.get_paths()) for c in _colored(zoom, SELECTED))
    assert chosen == len(plan.chunks) == 3 * 2
    assert "planned request" in zoom.get_title(loc="left")
    assert "byte offset in the file" in whole.get_xlabel()
    texts = " ".join(t.get_text() for t in lookup.texts)
    assert "listed in the references" in texts
    png = tmp_path / "layout.png"
    figure.savefig(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_writes_the_picture(
    refs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "out.png"
    code = main(["layout", str(refs), "--select", "0:3000, 0", "--png", str(png), "--measure"])
    out = capsys.readouterr().out
    assert code == 0
    assert "acquisition/data" in out  # the array with the most bytes, when none is named
    assert "measured cold read" in out
    assert png.stat().st_size > 10_000


def test_a_clear_hint_without_matplotlib(refs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'shadowzarr\[plot\]'"):
        shadowzarr.plot.layout(refs)


def test_bins_count_every_byte() -> None:
    kind = Kind.of("chunks", "#000000", [(0, 10), (15, 40), (95, 100)])
    edges = np.linspace(0, 100, 11)
    coverage = bin_coverage(kind, edges)
    assert coverage.sum() == 10 + 25 + 5
    np.testing.assert_allclose(coverage, [10, 5, 10, 10, 0, 0, 0, 0, 0, 5])
    other = Kind.of("selected", "#ff0000", [(20, 22)])
    shown = dominant_kinds([coverage, bin_coverage(other, edges)])
    assert shown.tolist() == [0, 0, 1, 0, -1, -1, -1, -1, -1, 0]


@pytest.fixture
def small_chunks(tmp_path: Path) -> Path:
    """4 KiB chunks looked up in a chunk manifest: the store reads them through its grouped view,
    packed (a selection's packs are read whole)."""
    data = np.arange(60_000 * 64, dtype="<i2").reshape(60_000, 64)
    with h5py.File(tmp_path / "small.h5", "w") as file:
        file.create_dataset("acq/data", data=data, chunks=(128, 16))
    rfs = shadowzarr.generate_rfs(str(tmp_path / "small.h5"), progress=False)
    return write_rfs(rfs, tmp_path / "small.shadowzarr", manifest_threshold=10)


@pytest.mark.parametrize("select", ["0:3000, 0:20", "0:30000", "100:200, 5", "0:60000:7, 3:40"])
def test_the_plan_is_what_the_store_sends_for_small_chunks(
    small_chunks: Path, select: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45: the plan modelled the stored chunks, not the grouped view the store reads
    (6 planned requests of 2.3 MB where one of 3.1 MB went out)."""
    import json

    layout = ["layout", str(small_chunks), "acq/data", "--select", select, "--measure", "--json"]
    for flags in ([], ["--grouped-view"]):  # the store's default, and said so
        assert main([*layout, *flags]) == 0
        document = json.loads(capsys.readouterr().out)
        plan, measured = document["selection"], document["measured"]
        assert plan["grouped"] is True
        assert len(plan["requests"]) == measured["requests"]
        assert plan["request_bytes"] == measured["bytes"]
    # what a user's own read sends, through open_rfs with its defaults
    array = shadowzarr.open_rfs(small_chunks)["acq/data"]
    array[parse_selection(select)]
    assert array.store.stats.requests == measured["requests"]
    assert array.store.stats.bytes == measured["bytes"]


def test_without_the_grouped_view_the_plan_is_of_the_stored_chunks(
    small_chunks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    layout = ["layout", str(small_chunks), "acq/data", "--select", "0:3000, 0:20", "--measure"]
    assert main([*layout, "--json", "--no-grouped-view"]) == 0
    document = json.loads(capsys.readouterr().out)
    plan, measured = document["selection"], document["measured"]
    assert plan["grouped"] is False
    assert plan["chunks"] == 24 * 2  # rows 0-3071 in chunks of 128, columns 0-31 of 16
    assert len(plan["requests"]) == measured["requests"]
    assert plan["request_bytes"] == measured["bytes"]


def test_strided_selections_plan_only_the_chunks_they_touch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    data = np.arange(40_000 * 64, dtype="<f8").reshape(40_000, 64)
    with h5py.File(tmp_path / "big.h5", "w") as file:
        file.create_dataset("d", data=data, chunks=(1_000, 64), compression="gzip")
    refs = write_rfs(
        shadowzarr.generate_rfs(str(tmp_path / "big.h5"), progress=False), tmp_path / "b.json"
    )
    code = main(["layout", str(refs), "d", "--select", "0:40000:3000", "--measure", "--json"])
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert document["selection"]["chunks"] == 14  # rows 0, 3000, …, 39000: one chunk each
    assert len(document["selection"]["requests"]) == document["measured"]["requests"] == 14
    assert document["selection"]["request_bytes"] == document["measured"]["bytes"]


def test_request_labels_neither_overlap_nor_leave_the_picture(tmp_path: Path) -> None:
    """Labels of many requests: one row each way, none over another, none cut at an edge; the
    title wraps, and the last box of the lookup is whole."""
    data = np.arange(40_000 * 64, dtype="<f8").reshape(40_000, 64)
    with h5py.File(tmp_path / "big.h5", "w") as file:
        file.create_dataset("d", data=data, chunks=(1_000, 64), compression="gzip")
    refs = write_rfs(
        shadowzarr.generate_rfs(str(tmp_path / "big.h5"), progress=False), tmp_path / "b.json"
    )
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for select in ((slice(0, 40_000, 3_000),), (slice(0, 12_000, 2_000),)):
        figure = shadowzarr.plot.layout(refs, "d", select=select)
        canvas = FigureCanvasAgg(figure)
        canvas.draw()  # lays the picture out as savefig does
        renderer = canvas.get_renderer()
        page = figure.bbox
        _, zoom, lookup = figure.axes
        touched = len(range(*select[0].indices(40_000)))  # one chunk, one request each
        labels = [t for t in zoom.texts if t.get_text()[:1].isdigit() or "request" in t.get_text()]
        assert len(labels) == touched
        boxes = [label.get_window_extent(renderer) for label in labels]
        for box in boxes:
            assert page.x0 <= box.x0
            assert box.x1 <= page.x1
        for first, second in itertools.combinations(boxes, 2):
            assert not first.overlaps(second)
        title = zoom._left_title  # type: ignore[attr-defined]  # (the loc="left" title)
        assert title.get_window_extent(renderer).x1 <= page.x1
        for patch in lookup.patches:
            extent = patch.get_window_extent(renderer)
            assert lookup.bbox.x0 - 1 <= extent.x0
            assert extent.x1 <= lookup.bbox.x1 + 1


def test_an_array_from_open_rfs_is_one_call_from_its_picture(refs: Path) -> None:
    """``shadowzarr.plot.layout(group["acquisition/data"])`` draws that array, like the
    references and its path would."""
    group = shadowzarr.open_rfs(refs)
    selection = (slice(2_500, 4_500), slice(2, 6))
    from_array = shadowzarr.plot.layout(group["acquisition/data"], select=selection)
    from_group = shadowzarr.plot.layout(group["acquisition"], "data", select=selection)
    from_refs = shadowzarr.plot.layout(refs, "acquisition/data", select=selection)
    for figure in (from_array, from_group):
        for drawn, expected in zip(figure.axes, from_refs.axes, strict=True):
            assert drawn.get_title(loc="left") == expected.get_title(loc="left")
            assert len(_colored(drawn, SELECTED)) == len(_colored(expected, SELECTED))
    assert from_array.get_suptitle() == from_refs.get_suptitle()
    assert "acquisition/data" in from_array.get_suptitle()
