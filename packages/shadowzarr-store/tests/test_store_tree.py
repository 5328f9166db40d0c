"""What a store shows of itself: the tree (text and notebook HTML), its traffic, and the
display of zarr groups and arrays over it in IPython."""

from __future__ import annotations

import html
from pathlib import Path

import h5py
import numpy as np
import pytest
import zarr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import RfsBuilder, write_rfs

from shadowzarr_store import RfsStore, open_rfs
from shadowzarr_store.notebook_display import node_html, node_text


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "session.h5"
    with h5py.File(source, "w") as file:
        file.create_dataset(
            "acquisition/<em>raw&",
            data=np.arange(20_000 * 32, dtype="<i2").reshape(20_000, 32),
            chunks=(16, 32),
        )
        file.create_dataset(
            "acquisition/timestamps", data=np.arange(1_000) / 3e4, chunks=(100,), compression=4
        )
        file["rate"] = 30_000
    refs = write_rfs(generate_rfs(str(source), progress=False), tmp_path / "s.shadowzarr")
    return source, refs


def _stored_bytes(source: Path, path: str) -> int:
    with h5py.File(source, "r") as file:
        dataset = file[path]
        return sum(dataset.id.get_chunk_info(i).size for i in range(dataset.id.get_num_chunks()))


def test_the_tree_names_each_array_with_its_chunks_codecs_and_bytes(
    session: tuple[Path, Path],
) -> None:
    source, refs = session
    store = open_rfs(refs, grouped_view="auto").store
    assert isinstance(store, RfsStore)
    tree = store.tree()
    nodes = {node.path: node for node in tree.nodes}
    assert [n.path for n in tree.nodes] == [
        "",
        "acquisition",
        "acquisition/<em>raw&",
        "acquisition/timestamps",
        "rate",
    ]
    raw = nodes["acquisition/<em>raw&"]
    assert (raw.shape, raw.dtype, raw.chunks) == ((20_000, 32), "int16", (16, 32))
    assert raw.shown_chunks != raw.chunks  # 1 KiB chunks are shown grouped into shards
    assert raw.shown_chunks[0] % 16 == 0
    assert raw.shown_chunks[1] == 32
    assert raw.indexed  # 1,250 chunks: a chunk manifest, read on demand
    timestamps = nodes["acquisition/timestamps"]
    assert timestamps.referenced_bytes == _stored_bytes(source, "acquisition/timestamps")
    assert "numcodecs.zlib" in timestamps.codecs
    assert timestamps.sources == (str(source),)
    assert nodes["rate"].inline_bytes == 8
    text = str(tree)
    assert text.splitlines()[0].startswith(f"RfsStore {refs}: 2 groups, 3 arrays, ")
    assert "    timestamps  float64  (1,000,)  chunks (100,)" in text
    assert "session.h5" in text


def test_the_html_escapes_names_from_the_file(session: tuple[Path, Path]) -> None:
    _, refs = session
    shown = open_rfs(refs).store._repr_html_()
    assert "<em>raw&" not in shown
    assert html.escape("<em>raw&") in shown
    assert "(20,000, 32)" in shown
    assert "int16" in shown
    assert "<script" not in shown


def test_a_tree_of_many_nodes_shows_the_first_and_counts_the_rest(tmp_path: Path) -> None:
    builder = RfsBuilder()
    builder.add_group("")
    for index in range(20_000):
        builder.add_group(f"g{index:05}")
    store = RfsStore(builder.build())
    tree = store.tree(max_nodes=50)
    assert len(tree.nodes) == 50
    assert tree.more == 20_001 - 50
    assert str(tree).endswith("… and 19,951 more")
    shown = store._repr_html_()  # the default bound
    assert shown.count("<tr>") < 300
    assert "… and 19,801 more" in shown


def test_traffic_is_what_the_store_counted(session: tuple[Path, Path]) -> None:
    _, refs = session
    group = open_rfs(refs)
    assert group.store.traffic.stats.requests == 0
    values = group["acquisition/timestamps"][:]
    np.testing.assert_array_equal(values, np.arange(1_000) / 3e4)
    traffic = group.store.traffic
    assert traffic.stats == group.store.stats.snapshot()
    assert traffic.stats.requests >= 1
    assert traffic.stats.bytes > 0
    assert f"{traffic.stats.requests:,} requests" in str(traffic)
    assert "requests" in traffic._repr_html_()


def test_groups_and_arrays_over_the_store_display_its_subtree(
    session: tuple[Path, Path],
) -> None:
    _, refs = session
    group = open_rfs(refs)
    shown = node_html(group["acquisition"])
    assert shown is not None
    assert "timestamps" in shown
    assert "(1,000,)" in shown
    assert "rate" not in shown.replace("rates", "")  # outside acquisition/
    array_shown = node_html(group["acquisition/timestamps"])
    assert array_shown is not None
    assert "shadowzarr.plot.layout(array)" in array_shown
    assert node_html(zarr.open_group(zarr.storage.MemoryStore(), mode="w")) is None
    text = node_text(group["acquisition/timestamps"])
    assert text is not None
    first, *rows = text.splitlines()
    assert first == repr(group["acquisition/timestamps"])
    assert rows[0].startswith("RfsStore ")
    assert rows[-1].split()[:5] == ["timestamps", "float64", "(1,000,)", "chunks", "(100,)"]
    assert "session.h5" in rows[-1]
    group_text = node_text(group)
    assert group_text is not None
    assert "<em>raw&" in group_text  # text is not escaped
    assert "rate" in group_text
    assert node_text(zarr.open_group(zarr.storage.MemoryStore(), mode="w")) is None


def test_session_traffic_is_every_store_of_the_process_counted_once(
    session: tuple[Path, Path],
) -> None:
    """``session_traffic()``: the reads of two stores, one of them inside a ``counted`` block
    (whose requests count into the block's stats and the store's), each counted once."""
    from dataclasses import fields

    from shadowzarr_store import SESSION_STATS, MemoryCache, StoreStats, session_traffic
    from shadowzarr_store.transport.stats import counted

    _, refs = session
    before = session_traffic().stats
    first, second = open_rfs(refs, memory_cache=MemoryCache(1 << 20)), open_rfs(refs)
    first["acquisition/timestamps"][:]
    block = StoreStats()
    with counted(block):
        third = open_rfs(refs)
        third["acquisition/timestamps"][:500]
    second["acquisition/<em>raw&"][:100, 3]
    first["acquisition/timestamps"][:]  # again: the memory cache's hits count too
    after = session_traffic()
    stores = [g.store.stats.snapshot() for g in (first, second, third)]
    # the block sees the transport's counts (requests, bytes), as the store does
    assert (block.requests, block.bytes) == (stores[2].requests, stores[2].bytes)
    assert stores[0].cache_hits > 0
    for field in fields(after.stats):
        total = sum(getattr(s, field.name) for s in stores)
        assert getattr(after.stats - before, field.name) == total, field.name
    assert after.stats.requests - before.requests == sum(s.requests for s in stores) >= 3
    assert str(after).startswith(f"traffic of this session: {after.stats.requests:,} requests")
    assert "<h4>traffic of this session</h4>" in after._repr_html_()
    assert SESSION_STATS.snapshot() == after.stats
