"""The request plan tells the truth: for a cold read, the requests and bytes it predicts are the
ones nginx serves, and the index chunks it names are the ones read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import zarr
from shadowzarr_spec import RfsBuilder, write_rfs
from zarr.core.sync import sync

from shadowzarr_store import RfsStore, load_rfs
from shadowzarr_store.request_plan import array_extents, measure_selection, plan_selection

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = pytest.mark.network

ROWS, COLS, CHUNK_ROWS = 4000, 6, 100
CHUNK = CHUNK_ROWS * 4  # one column of float32 per chunk


def _serve(nginx: NginxServer, nginx_root: Path, carried: bool = False) -> tuple[Path, np.ndarray]:
    """Chunks of one column each, channel-major, with gaps between some of them: small gaps
    (merged), large ones (not), as a file written in pieces has."""
    values = np.random.default_rng(9).standard_normal((ROWS, COLS)).astype("<f4")
    blob = bytearray(b"\0" * 4096)  # "headers"
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("signal", shape=[ROWS, COLS], data_type="<f4", chunk_shape=[CHUNK_ROWS, 1])
    url = nginx.url("signal.bin")
    for row in range(ROWS // CHUNK_ROWS):
        for col in range(COLS):
            gap = 40_000 if (row * COLS + col) % 7 == 3 else 512
            blob += b"\xff" * gap
            offset = len(blob)
            blob += values[row * CHUNK_ROWS : (row + 1) * CHUNK_ROWS, col].tobytes()
            builder.add_chunk("signal", (row, col), url, offset, CHUNK)
    (nginx_root / "signal.bin").write_bytes(bytes(blob))
    builder.add_source(url, size=len(blob))
    carry = {} if carried else {"inline_index_bytes": 0}  # index files in refs.json, or not
    refs = write_rfs(
        builder.build(), nginx_root / "signal.shadowzarr", manifest_threshold=50, **carry
    )
    return refs, values


@pytest.mark.parametrize(
    "selection",
    [
        (slice(0, 300), 2),  # 3 chunks of one column: far apart
        (slice(250, 420), slice(None)),  # whole rows: chunks close together, some gaps large
        (slice(3000, 3800), slice(1, 3)),  # 16 chunks: more than zarr reads at once
    ],
)
def test_the_plan_is_what_nginx_serves(
    nginx: NginxServer, nginx_root: Path, selection: tuple[Any, ...]
) -> None:
    refs, values = _serve(nginx, nginx_root)
    rfs = load_rfs(nginx.url(refs.name))
    assert "signal" in rfs.indexes  # 240 chunks > 50: a chunk manifest
    # the plan of a store that reads chunks as stored (planned on its own twin: planning
    # reads the index, which a second read of the same store would not fetch again)
    plan = sync(plan_selection(RfsStore(rfs, grouped_view=0), "signal", selection))
    stored = RfsStore(rfs, grouped_view=0)
    assert not plan.grouped
    assert len(plan.index_chunks) >= 1
    nginx.reset()
    got = zarr.open_array(stored, path="signal", mode="r", zarr_format=3)[selection]
    np.testing.assert_array_equal(got, values[selection])
    _served_as_planned(nginx, plan)
    assert nginx.count(path_prefix="signal.shadowzarr/index/") == len(plan.index_chunks) + len(
        plan.index_metadata
    )
    assert plan.chunk_bytes == len(plan.chunks) * CHUNK


def test_an_index_carried_in_refs_json_is_neither_planned_nor_fetched(
    nginx: NginxServer, nginx_root: Path
) -> None:
    refs, values = _serve(nginx, nginx_root, carried=True)
    rfs = load_rfs(nginx.url(refs.name))
    assert set(rfs.indexes["signal"].files) == {"zarr.json", "c/0/0/0"}
    selection = (slice(250, 420), slice(None))
    plan = sync(plan_selection(RfsStore(rfs, grouped_view=0), "signal", selection))
    store = RfsStore(rfs, grouped_view=0)
    assert (plan.index_chunks, plan.index_metadata) == ((), ())
    nginx.reset()
    got = zarr.open_array(store, path="signal", mode="r", zarr_format=3)[selection]
    np.testing.assert_array_equal(got, values[selection])
    assert nginx.count(path_prefix="signal.shadowzarr/index/") == 0
    assert store.stats.snapshot().index_chunk_reads == 0
    _served_as_planned(nginx, plan)


def test_a_long_selection_sends_at_most_the_plan(nginx: NginxServer, nginx_root: Path) -> None:
    """40 chunks, 4 times what zarr reads at once: how many merge depends on which requests
    finish together, so the plan (reads finishing one by one) is an upper bound, and the
    measurement is what nginx saw."""
    refs, _ = _serve(nginx, nginx_root)
    store = RfsStore(load_rfs(nginx.url(refs.name)), grouped_view=0)
    selection = (slice(None), 5)
    plan = sync(plan_selection(store, "signal", selection))
    nginx.reset()
    measured = measure_selection(store, "signal", selection)
    sent = nginx.count(path_prefix="signal.bin")
    assert measured.requests == sent + nginx.count(path_prefix="signal.shadowzarr/index/")
    assert measured.index_chunk_reads == len(plan.index_chunks)
    assert len(plan.chunks) == 40
    # how many joins happen over four waves is the event loop's timing (a loaded machine
    # spreads a wave's answers over several flushes), so the count is bounded by the chunks, and
    # the shape of every range is what the plan allows
    assert sent < len(plan.chunks)  # some were merged
    _served_as_planned(nginx, plan, slack=len(plan.chunks) - len(plan.requests))


def test_extents_are_every_stored_chunk(nginx: NginxServer, nginx_root: Path) -> None:
    refs, _ = _serve(nginx, nginx_root)
    extents = sync(array_extents(RfsStore(load_rfs(refs)), "signal"))
    assert len(extents) == (ROWS // CHUNK_ROWS) * COLS
    assert all(extent.size == CHUNK for extent in extents)
    assert [e.start for e in extents] == sorted(e.start for e in extents)
    assert min(e.start for e in extents) == 4096 + 512


def _served_as_planned(nginx: NginxServer, plan: Any, *, slack: int = 1) -> None:
    """nginx served the plan's requests, give or take the joins timing decides: requests of
    one wave are answered at about the same moment, and whether their successors meet in one
    flush or several is the event loop's timing, not the plan's (a loaded machine spreads a
    wave's answers, so fewer join: at most one request a chunk; at most ``slack`` joins more
    than planned). Either way every range starts and ends at a planned chunk, holds every
    chunk once, and joins chunks only across gaps the merger joins."""
    served = sorted(
        (int(a), int(b) + 1)
        for a, b in (
            e.range.removeprefix("bytes=").split("-")
            for e in nginx.entries()
            if e.uri.endswith("signal.bin")
        )
    )
    assert len(plan.requests) - slack <= len(served) <= len(plan.chunks)
    chunks = sorted({(c.start, c.end) for c in plan.chunks})
    holding = {start: end for start, end in served}
    position = 0
    for start, end in served:
        assert chunks[position][0] == start  # every chunk once, in order, nothing else
        while chunks[position][1] < end:
            assert 0 <= chunks[position + 1][0] - chunks[position][1] <= plan.merge_gap
            position += 1
        assert chunks[position][1] == end
        position += 1
    assert position == len(chunks)
    assert len(holding) == len(served)


@pytest.mark.parametrize("selection", [(slice(0, 300), 2), (slice(250, 420), slice(None))])
def test_the_plan_of_the_grouped_view_is_what_it_sends(
    nginx: NginxServer, nginx_root: Path, selection: tuple[Any, ...]
) -> None:
    """The store shows these small chunks as shards of packs and reads whole packs: the plan
    of the store as it is configured counts those reads (issue 45), not the stored chunks'."""
    refs, _ = _serve(nginx, nginx_root)
    store = RfsStore(load_rfs(nginx.url(refs.name)), grouped_view="auto")
    plan = sync(plan_selection(store, "signal", selection))
    assert plan.grouped
    nginx.reset()
    measured = measure_selection(store, "signal", selection)
    served = [e for e in nginx.entries() if e.uri.endswith("signal.bin")]
    assert len(served) == len(plan.requests)
    assert sum(e.body_bytes_sent for e in served) == plan.request_bytes
    index_reads = len(plan.index_chunks) + len(plan.index_metadata)
    assert measured.requests == len(plan.requests) + index_reads
    # plus the index's bytes, but none when the process already holds the index file and the
    # server's 304 says it is unchanged (the transport keeps small files by ETag)
    assert measured.bytes >= plan.request_bytes
