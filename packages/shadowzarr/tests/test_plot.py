"""The layout picture: drawn from the store's own plan, with the requests it will send."""

from __future__ import annotations

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
