"""The notebook summary of a RemoteArray: valid HTML, the fields, and a map of cached chunks."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import RfsBuilder

from shadowzarr_store.remote import open_remote_array

if TYPE_CHECKING:
    from pathlib import Path


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.fills: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "rect":
            self.fills.append(dict(attrs)["fill"] or "")
        elif tag not in ("br", "rect"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag != "rect":
            assert self.open.pop() == tag


def test_the_summary_maps_cached_chunks(tmp_path: Path) -> None:
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.ones((50, 60), "<f4").tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("x", shape=[100, 60], data_type="<f4", chunk_shape=[10, 20])
    for row in range(5):  # rows 50 and on: never written
        for col in range(3):
            builder.add_chunk("x", (row, col), str(raw), (row * 3 + col) * 800, 800)
    remote = open_remote_array(builder.build(), dataset="x", cache="memory")
    remote.fetch((slice(0, 20), slice(None)))  # 2 x 3 chunks
    page = remote._repr_html_()
    cells = _Cells()
    cells.feed(page)
    cells.close()
    assert cells.open == []  # every element closed
    assert len(cells.fills) == 10 * 3
    assert cells.fills.count("#1f77b4") == 6  # cached
    assert cells.fills.count("#ffffff") == 5 * 3  # never written
    assert cells.fills.count("#d0d7de") == 30 - 6 - 15
    for shown in ("(100, 60)", "float32", "memory", "chunks in the cache"):
        assert shown in page
    assert "<td class=k>shape</td>" in remote.info._repr_html_()
