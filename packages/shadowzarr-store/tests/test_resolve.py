"""The logical → physical mapping on its own: records, selections, padding, bounds."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shadowzarr_spec import (
    MISSING_CHUNK,
    ChunkDecodeError,
    ReferenceFileSystem,
    Selection,
    SourceError,
    rfs_from_json,
)
from shadowzarr_spec.listed_refs import ListedRefs
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from shadowzarr_store.merge import plan_runs
from shadowzarr_store.resolve import (
    ChunkLayout,
    Resolver,
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


def test_a_short_chunk_is_padded_only_by_elements_outside_the_array() -> None:
    # int16 chunks of 4 elements (8 bytes) of an array of 7: chunk 1 holds 3 inside it
    layout = ChunkLayout(8, b"\xaa\xbb", None, shape=(7,), chunk_shape=(4,), order=(0,))
    short = SourceValue("a/c/1", "f", 0, 6, layout, file_size=100)
    plan = plan_read(short, None)
    assert (plan.start, plan.end, plan.want) == (0, 6, 8)
    assert plan.assemble(b"\0" * 6) == b"\0" * 6 + b"\xaa\xbb"
    # What the reference itself leaves short of the chunk is padding, with no read.
    assert plan_read(short, RangeByteRequest(6, 8)).reads_nothing
    assert plan_read(short, RangeByteRequest(6, 8)).assemble(b"") == b"\xaa\xbb"
    # A source answering fewer bytes than the reference holds: an error, never fill.
    for file_size in (100, None):
        value = SourceValue("a/c/1", "f", 0, 6, layout, file_size=file_size)
        with pytest.raises(SourceError, match="fewer than the reference holds"):
            plan_read(value, None).assemble(b"\0" * 4)
        assert not plan_read(value, None).complete(b"\0" * 4)
    # Shorter than the elements inside the array, inside the array, or longer than a chunk.
    for key, size in (("a/c/1", 4), ("a/c/0", 6)):
        for byte_range in (None, RangeByteRequest(6, 8), RangeByteRequest(0, 2)):
            with pytest.raises(ChunkDecodeError, match=f"chunk '{key}' of array 'a' holds {size}"):
                plan_read(SourceValue(key, "f", 0, size, layout), byte_range)
    with pytest.raises(ChunkDecodeError, match="more than"):
        plan_read(SourceValue("a/c/1", "f", 0, 10, layout), None)
    # A reference running past the recorded end of its file, whatever part is read.
    for offset in (96, 100, 200):
        for byte_range in (None, RangeByteRequest(0, 2), RangeByteRequest(6, 8)):
            with pytest.raises(SourceError, match="past the end of the file"):
                plan_read(SourceValue("a/c/1", "f", offset, 6, layout, file_size=100), byte_range)
    encoded = SourceValue("b/c/1", "f", 0, 6, None, file_size=100)
    with pytest.raises(SourceError, match="fewer than the reference holds"):
        plan_read(encoded, None).assemble(b"\0" * 4)


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
    # chunk 1 of an array of one element: outside it, so any length up to the chunk pads
    layout = ChunkLayout(chunk_nbytes, b"\x5a\xa5", selection, (1,), (1,), (0,))
    raw = bytes(np.random.default_rng(records).integers(0, 256, records * record, dtype="u1"))
    value = SourceValue("a/c/1", "f", 0, len(raw), layout)
    whole = plan_read(value, None)
    logical = whole.assemble(raw[whole.start : whole.end])
    assert len(logical) == chunk_nbytes
    a = data.draw(st.integers(0, chunk_nbytes + 3))
    b = data.draw(st.integers(0, chunk_nbytes + 3))
    part = plan_read(value, RangeByteRequest(a, b))
    assert part.assemble(raw[part.start : part.end]) == logical[a : max(a, b)]


def _listed(extra: dict[str, object], urls: int = 1, gen: bool = False) -> ReferenceFileSystem:
    """Array ``a`` of 200 chunks of 4 bytes listed in a version-1 document (held as columns)."""
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [800],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    refs: dict[str, object] = {"zarr.json": '{"zarr_format":3,"node_type":"group"}'}
    refs["a/zarr.json"] = json.dumps(meta)
    refs |= {f"a/c/{i}": [f"https://h/{i % urls}.bin", 16 * i, 4] for i in range(0, 200)}
    refs |= extra
    document: dict[str, object] = {"version": 1, "refs": refs}
    if gen:
        document["gen"] = [
            {
                "key": "a/c/{{i}}",
                "url": "https://h/gen.bin",
                "offset": "{{4 * i}}",
                "length": 4,
                "dimensions": {"i": {"start": 200, "stop": 210}},
            }
        ]
    return rfs_from_json(document)


@pytest.mark.parametrize(
    ("extra", "urls", "gen", "table"),
    [
        ({}, 1, False, True),  # every chunk in columns of one file: a table of entries
        ({}, 2, False, False),  # two files
        ({"a/c/150": "base64:AAECAw=="}, 1, False, False),  # an inline chunk beside
        ({}, 1, True, False),  # a gen entry lists more chunks
    ],
)
def test_listed_chunks_resolve_from_their_columns(
    extra: dict[str, object], urls: int, gen: bool, table: bool
) -> None:
    """`Resolver.resolve_chunks` of listed chunks equals `resolve` of each; `entries` gives
    the same offsets and sizes from the columns when they hold every chunk of one file."""
    rfs = _listed(extra, urls, gen)
    assert isinstance(rfs.refs, ListedRefs)
    resolver = Resolver(rfs, None)
    assert (resolver.listed_table("a") is not None) == table
    chunks: list[tuple[int, ...] | None] = [(i,) for i in (0, 150, 199, 205, 300)] + [None]
    keys, values = asyncio.run(resolver.resolve_chunks("a", chunks))
    assert keys == [f"a/c/{i}" for i in (0, 150, 199, 205, 300)] + [None]
    expected = [asyncio.run(resolver.resolve(k)) if k else None for k in keys]
    assert values == expected
    assert (values[3] is not None) == gen  # chunk 205: the gen entry's
    if table:
        points = np.array([[0], [150], [199], [205], [-1]], dtype=np.int64)
        url, offsets, sizes = asyncio.run(resolver.entries("a", points))
        assert url == "https://h/0.bin"
        missing = int(MISSING_CHUNK)
        assert offsets.tolist() == [0, 2400, 3184, missing, missing]
        assert sizes.tolist() == [4, 4, 4, missing, missing]
