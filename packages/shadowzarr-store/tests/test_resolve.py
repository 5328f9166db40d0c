"""The logical → physical mapping on its own: records, selections, padding, bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shadowzarr_spec import ChunkDecodeError, Selection, SourceError
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from shadowzarr_store.merge import plan_runs
from shadowzarr_store.resolve import (
    ChunkLayout,
    SourceValue,
    byte_window,
    fill_pattern,
    plan_read,
)


def test_byte_window_clips_like_memory_store() -> None:
    assert byte_window(RangeByteRequest(8, 20), 10) == (8, 10)
    assert byte_window(RangeByteRequest(12, 15), 10) == (10, 10)
    assert byte_window(OffsetByteRequest(12), 10) == (10, 10)
    assert byte_window(SuffixByteRequest(20), 10) == (0, 10)
    assert byte_window(SuffixByteRequest(0), 10) == (10, 10)
    with pytest.raises(TypeError, match="Unexpected byte_range"):
        byte_window((0, 2), 10)  # type: ignore[arg-type]


def test_fill_pattern_keeps_element_phase() -> None:
    fill = np.array(-7, dtype="<i4").tobytes()
    assert fill_pattern(fill, 8, 8) == fill * 2
    assert fill_pattern(fill, 6, 6) == fill[2:] + fill


def test_selection_range_maps_to_whole_records() -> None:
    selection = Selection(12, ((2, 10),))  # 8 of every 12 bytes
    layout = ChunkLayout(chunk_nbytes=800, fill=b"\x01\x00", selection=selection)
    value = SourceValue("a/c/0", "f", 1000, 1200, layout)  # 100 records = 800 logical bytes
    plan = plan_read(value, RangeByteRequest(20, 30))  # records 2 and 3
    assert (plan.start, plan.end, plan.skip, plan.want) == (1024, 1048, 4, 10)
    raw = bytes(range(24))
    assert plan.assemble(raw) == (raw[2:10] + raw[14:22])[4:14]


def test_short_source_is_padded_only_where_the_recorded_size_proves_it() -> None:
    layout = ChunkLayout(8, b"\xaa\xbb", None)
    # The file is 4 bytes (recorded): the reference of 6 runs 2 past its end.
    padded = SourceValue("a/c/1", "f", 0, 6, layout, file_size=4)
    plan = plan_read(padded, None)
    assert (plan.start, plan.end, plan.want) == (0, 6, 8)
    assert plan.assemble(b"\0" * 4) == b"\0" * 4 + b"\xaa\xbb\xaa\xbb"
    assert plan.complete(b"\0" * 4)
    # A body shorter than the recorded size says, or no size recorded: an error, never fill.
    with pytest.raises(SourceError, match="recorded size"):
        plan.assemble(b"\0" * 3)
    assert not plan.complete(b"\0" * 3)
    unrecorded = plan_read(SourceValue("a/c/1", "f", 0, 6, layout), None)
    with pytest.raises(SourceError, match="no size is recorded"):
        unrecorded.assemble(b"\0" * 4)
    assert not unrecorded.complete(b"\0" * 4)
    # What the reference itself leaves short of the chunk is padding, with no read.
    assert plan_read(padded, RangeByteRequest(6, 8)).reads_nothing
    assert plan_read(padded, RangeByteRequest(6, 8)).assemble(b"") == b"\xaa\xbb"
    # A reference starting at or past the recorded end is refused before any read.
    with pytest.raises(SourceError, match="past the end"):
        plan_read(SourceValue("a/c/2", "f", 4, 6, layout, file_size=4), None).check_start()
    # A partial read wholly past the recorded end, of a chunk starting inside it, is padding.
    tail = plan_read(padded, RangeByteRequest(4, 6))
    assert tail.past_recorded_end
    assert tail.assemble(b"") == b"\xaa\xbb"
    encoded = SourceValue("b/c/1", "f", 0, 6, None, file_size=4)
    with pytest.raises(SourceError, match="ends before"):
        plan_read(encoded, None).assemble(b"\0" * 4)
    with pytest.raises(ChunkDecodeError, match="more than"):
        plan_read(SourceValue("a/c/1", "f", 0, 10, ChunkLayout(8, b"\0", None)), None)


class _Read:
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


def test_runs_respect_gap_and_span() -> None:
    reads = [_Read(0, 10), _Read(15, 25), _Read(100, 110), _Read(111, 300)]
    runs = plan_runs(reads, merge_gap=10, max_merge_size=1000)  # type: ignore[type-var]
    assert [[(r.start, r.end) for r in run] for run in runs] == [
        [(0, 10), (15, 25)],
        [(100, 110), (111, 300)],
    ]
    runs = plan_runs(reads, merge_gap=100, max_merge_size=120)  # type: ignore[type-var]
    assert [len(run) for run in runs] == [3, 1]


@given(
    data=st.data(),
    record=st.integers(1, 12),
    records=st.integers(0, 40),
    pad=st.integers(0, 30),
)
def test_any_range_equals_the_slice_of_the_whole(data, record: int, records: int, pad: int) -> None:
    """Every byte range of a value equals that slice of the whole value, records or not."""
    start = data.draw(st.integers(0, record - 1))
    stop = data.draw(st.integers(start + 1, record))
    selection = Selection(record, ((start, stop),)) if record > 1 else None
    kept = (stop - start) if selection else 1
    chunk_nbytes = records * kept + pad * 2
    layout = ChunkLayout(chunk_nbytes, b"\x5a\xa5", selection)
    raw = bytes(np.random.default_rng(records).integers(0, 256, records * record, dtype="u1"))
    value = SourceValue("k", "f", 0, len(raw), layout)
    whole = plan_read(value, None)
    logical = whole.assemble(raw[whole.start : whole.end])
    assert len(logical) == chunk_nbytes
    a = data.draw(st.integers(0, chunk_nbytes + 3))
    b = data.draw(st.integers(0, chunk_nbytes + 3))
    part = plan_read(value, RangeByteRequest(a, b))
    assert part.assemble(raw[part.start : part.end]) == logical[a : max(a, b)]
