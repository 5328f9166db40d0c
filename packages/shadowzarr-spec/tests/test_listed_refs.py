"""Listed chunks held as columns (ListedRefs) behave exactly as the dict of references did.

The reference behaviour is parsing one entry at a time (`check_key`, then `parse_ref`) into a
dict, which is what `rfs_from_json` did before columns: every test compares with it.
"""

from __future__ import annotations

import pickle
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shadowzarr_spec import (
    FileRef,
    InlineRef,
    RfsBuilder,
    ShadowzarrError,
    read_local_rfs,
    rfs_from_json,
    rfs_to_json,
    write_rfs,
)
from shadowzarr_spec.keys import check_key
from shadowzarr_spec.listed_refs import ListedRefs
from shadowzarr_spec.parse import MIN_COLUMN_CHUNKS, parse_ref

URL = "https://example.org/data/f.bin"
N = max(2 * MIN_COLUMN_CHUNKS, 128)


def one_at_a_time(document: dict[str, Any]) -> dict[str, Any]:
    templates = document.get("templates", {})
    refs = {}
    for key, value in document["refs"].items():
        check_key(key)
        refs[key] = parse_ref(key, value, templates)
    return refs


def chunk_entries(path: str, n: int, url: str = "{{u0}}") -> dict[str, Any]:
    prefix = f"{path}/c/" if path else "c/"
    return {f"{prefix}{i}": [url, 1000 - i, 7 + i] for i in range(n)}


def document_of(refs: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "templates": {"u0": URL}, "refs": refs}


def test_chunks_become_columns_in_file_order() -> None:
    refs = {
        "zarr.json": '{"zarr_format":3,"node_type":"group"}',
        **chunk_entries("a", N),
        "a/zarr.json": "{}",
        **{f"b/c/{i}/{j}": [f"https://h/{i % 3}", i, j] for i in range(12) for j in range(12)},
        "a/c/0/0": ["https://h/rank", 1, 2],  # another rank under a/: stays in the dict
        "a/c/007": ["https://h/zero", 1, 2],  # not a canonical chunk key: stays in the dict
        "a/c/9999": "inline bytes",
        "a/c/10000": ["{{u0}}"],
        "a/c/10001": ["{{u0}}", 64.0, 8.0],  # integral floats are integers, in columns too
        "c/3": ["{{u0}}", 5, 6],  # the root's chunks, too few for columns
        **{f"a/c/{N + i}": [URL, i, 1] for i in range(20)},  # a second run of a's chunks
    }
    document = document_of(refs)
    expected = one_at_a_time(document)
    parsed = rfs_from_json(document).refs
    assert isinstance(parsed, ListedRefs)
    assert {"a", "b"} <= set(parsed.columns)
    assert list(parsed) == list(expected)
    assert list(parsed.items()) == list(expected.items())
    assert list(parsed.values()) == list(expected.values())
    assert len(parsed) == len(expected)
    assert parsed == expected
    assert expected == dict(parsed.items())
    for key, ref in expected.items():
        assert parsed[key] == ref
        assert parsed.get(key) == ref
        assert key in parsed
    for missing in ["a/c/5000", "a/c/-1", "b/c/12/0", "b/c/1", "b/c/1/2/3", "z/c/0", "a/c"]:
        assert missing not in parsed
        assert parsed.get(missing) is None
        with pytest.raises(KeyError):
            parsed[missing]


def test_sparse_chunks_are_found() -> None:
    """Chunks far apart in the grid use a sorted lookup, not a table over the grid."""
    coords = [i * 1_000_003 for i in range(N)]
    document = document_of({f"a/c/{c}/7": ["{{u0}}", c, 1] for c in coords})
    parsed = rfs_from_json(document).refs
    assert isinstance(parsed, ListedRefs)
    assert "a" in parsed.columns
    assert parsed[f"a/c/{coords[5]}/7"] == FileRef(URL, coords[5], 1)
    assert f"a/c/{coords[5] + 1}/7" not in parsed
    assert parsed == one_at_a_time(document)


def test_changes_behave_as_on_a_dict() -> None:
    document = document_of({"zarr.json": "{}", **chunk_entries("a", N)})
    expected = one_at_a_time(document)
    parsed = rfs_from_json(document).refs
    copy = parsed.copy()  # type: ignore[attr-defined]
    for refs in (parsed, expected):
        refs["new"] = InlineRef(b"x")  # a new key goes last
        refs["zarr.json"] = InlineRef(b"{ }")  # an old key keeps its place
    assert list(parsed.items()) == list(expected.items())
    for refs in (parsed, expected):
        refs["a/c/3"] = InlineRef(b"chunk")  # a chunk held in columns, replaced in place
        del refs["a/c/4"]
    assert list(parsed.items()) == list(expected.items())
    assert parsed.popitem() == expected.popitem()
    assert list(reversed(parsed)) == list(reversed(expected))
    assert list((parsed | {"x": InlineRef(b"")}).items()) == list(
        (expected | {"x": InlineRef(b"")}).items()
    )
    assert copy == one_at_a_time(document)  # the copy did not change
    assert pickle.loads(pickle.dumps(copy)) == copy


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("../c/1", ["{{u0}}", 0, 1]),
        ("a/c/1", ["{{u0}}", -1, 1]),
        ("a/c/1", ["{{u0}}", 2**53, 1]),
        ("a/c/1", ["{{u0}}", True, 1]),
        ("a/c/1", ["{{u0}}", 1.5, 1]),
        ("a/c/1", ["{{u0}}", "1", 1]),
        ("a/c/1", ["", 0, 1]),
        ("a/c/1", [7, 0, 1]),
        ("a/c/1", ["{{nope}}", 0, 1]),
        ("a/c/1", ["{{u0}}", 0]),
        ("a/c/1", "base64:@@"),
        ("a//c/1", ["{{u0}}", 0, 1]),
        ("a/c/" + "1" * 5000, ["{{u0}}", 0, 1]),
    ],
)
def test_errors_are_those_of_one_entry_at_a_time(key: str, value: Any) -> None:
    """A bad entry after many good chunks of its array fails as it would alone."""
    document = document_of({**chunk_entries("a", N), key: value, **chunk_entries("b", N)})
    with pytest.raises(ShadowzarrError) as alone:
        one_at_a_time(document)
    with pytest.raises(type(alone.value)) as parsed:
        rfs_from_json(document)
    assert str(parsed.value) == str(alone.value)


def test_written_files_read_back_to_the_same_bytes(tmp_path: Path) -> None:
    builder = RfsBuilder()
    builder.add_array("a", shape=(N * 4, 6), data_type="<i2", chunk_shape=(4, 3))
    coords = np.stack(np.unravel_index(np.arange(N * 2), (N, 2)), axis=1)
    offsets = np.random.default_rng(3).permutation(N * 2).astype(np.uint64) * 24
    builder.add_chunks("a", coords, URL, offsets, np.full(N * 2, 24, dtype=np.uint64))
    built = builder.build()
    first = write_rfs(built, tmp_path / "first.json")
    loaded = read_local_rfs(first)
    assert isinstance(loaded.refs, ListedRefs)
    assert loaded.refs == built.refs
    second = write_rfs(loaded, tmp_path / "second.json")
    assert second.read_bytes() == first.read_bytes()
    assert rfs_to_json(loaded) == rfs_to_json(built)


REFS_100K = 100_000
HELD_BOUND = 5_000_000
"""Bytes still allocated once 10**5 listed chunks are open: 50 a chunk. A dict of FileRef
objects held 17.5 MB (175 a chunk); the columns hold about 2.2 MB."""
PEAK_BOUND = 35_000_000
"""Peak bytes while opening them: the parsed JSON (about 290 bytes a chunk) plus the columns.
Before columns (stdlib JSON, FileRef objects) the peak was 39.8 MB; now about 29 MB."""


def test_opening_a_large_v1_file_keeps_memory_small(tmp_path: Path) -> None:
    builder = RfsBuilder()
    builder.add_array("data", shape=(REFS_100K * 10,), data_type="<f4", chunk_shape=(10,))
    order = np.random.default_rng(0).permutation(REFS_100K).astype(np.uint64)
    builder.add_chunks(
        "data",
        np.arange(REFS_100K).reshape(-1, 1),
        "https://example.org/f.bin",
        order * 40,
        np.full(REFS_100K, 40, dtype=np.uint64),
    )
    path = write_rfs(builder.build(), tmp_path / "refs.json")
    del builder
    tracemalloc.start()
    try:
        rfs = read_local_rfs(path)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(rfs.refs) == REFS_100K + 2
    assert rfs.refs["data/c/99999"] == FileRef("https://example.org/f.bin", int(order[-1]) * 40, 40)
    assert held < HELD_BOUND, f"{held / 1e6:.1f} MB held"
    assert peak < PEAK_BOUND, f"{peak / 1e6:.1f} MB at the peak"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("mixed", [False, True])
def test_directories_written_from_columns_are_those_of_the_dict(
    tmp_path: Path, mixed: bool
) -> None:
    """Columns go to a chunk manifest as the dict's references would (``mixed``: some chunks of
    the array are in the dict, an integral float offset, the rest in columns)."""
    builder = RfsBuilder()
    builder.add_array("a", shape=(N * 4, 6), data_type="<i2", chunk_shape=(4, 3))
    builder.add_array("small", shape=(8,), data_type="<i2", chunk_shape=(4,))
    coords = np.stack(np.unravel_index(np.arange(N * 2), (N, 2)), axis=1)
    offsets = np.random.default_rng(4).permutation(N * 2).astype(np.uint64) * 24
    builder.add_chunks("a", coords, URL, offsets, np.full(N * 2, 24, dtype=np.uint64))
    builder.add_chunk("small", (1,), URL, 5, 8)
    document = rfs_to_json(builder.build())
    if mixed:
        document["refs"]["a/c/0/0"][1] = float(document["refs"]["a/c/0/0"][1])
    listed = rfs_from_json(document)
    assert isinstance(listed.refs, ListedRefs)
    plain = rfs_from_json(document)
    plain.refs = one_at_a_time(document)
    for name, rfs in (("listed", listed), ("plain", plain)):
        write_rfs(rfs, tmp_path / name, manifest_threshold=10)
    assert _tree(tmp_path / "listed") == _tree(tmp_path / "plain")
    assert "index/a/zarr.json" in _tree(tmp_path / "listed")
    reread = read_local_rfs(tmp_path / "listed")
    assert "a/c/0/0" not in reread.refs  # in the index now
    assert reread.refs["small/c/1"] == FileRef(URL, 5, 8)


def test_chunks_of_a_grid_too_large_for_one_index_are_found() -> None:
    """Coordinates whose grid has more cells than an int64 counts (hostile keys) still read."""
    big = 10**17
    document = document_of({f"a/c/{big + i}/{big - i}": ["{{u0}}", i, 1] for i in range(N)})
    parsed = rfs_from_json(document).refs
    assert isinstance(parsed, ListedRefs)
    assert parsed[f"a/c/{big + 3}/{big - 3}"] == FileRef(URL, 3, 1)
    assert f"a/c/{big + 3}/{big - 4}" not in parsed
    assert parsed == one_at_a_time(document)


@pytest.mark.parametrize(
    "points",
    [
        [(i, j) for i in range(30) for j in range(4)],  # dense: a lookup table
        [(7 * i, 1000 * j) for i in range(30) for j in range(4)],  # sparse: a sorted search
        [(2**40 * i, 2**40 * j) for i in range(30) for j in range(4)],  # past int64: a dict
    ],
)
def test_rows_of_many_chunks_are_row_of_each(points: list[tuple[int, int]]) -> None:
    """`ChunkColumns.rows_of` finds the rows `row` finds, -1 where `row` finds none."""
    shuffled = [points[i] for i in np.random.default_rng(3).permutation(len(points))]
    refs = {f"a/c/{i}/{j}": ["u", 10 * n, 10] for n, (i, j) in enumerate(shuffled)} | {
        "a/zarr.json": "{}"
    }
    listed = rfs_from_json({"version": 1, "refs": refs}).refs
    assert isinstance(listed, ListedRefs)
    columns = listed.columns["a"]
    asked = [*points, (1, 10**6), (-1, 0), (0, 2**62), (5, 5)]
    rows = columns.rows_of(np.array(asked, dtype=np.int64))
    assert rows.tolist() == [-1 if columns.row(p) is None else columns.row(p) for p in asked]
    assert [columns.ref(r) for r in rows[: len(points)].tolist()] == [
        listed[f"a/c/{i}/{j}"] for i, j in points
    ]
    assert columns.rows_of(np.zeros((0, 2), dtype=np.int64)).tolist() == []
    assert columns.rows_of(np.zeros((3, 1), dtype=np.int64)).tolist() == [-1] * 3  # other rank


def test_only_columns_when_no_other_key_lies_under_the_chunks() -> None:
    refs: dict[str, Any] = {f"a/c/{i}": ["u", i, 1] for i in range(100)}
    plain = rfs_from_json({"version": 1, "refs": refs}).refs
    assert isinstance(plain, ListedRefs)
    assert plain.only_columns("a") is plain.columns["a"]
    assert plain.only_columns("b") is None
    spelled = rfs_from_json({"version": 1, "refs": {**refs, "a/c/5": ["u", 5.0, 1.0]}}).refs
    assert isinstance(spelled, ListedRefs)  # JSON has one number type: 5.0 is the integer 5
    assert spelled.only_columns("a") is spelled.columns["a"]
    assert spelled["a/c/5"] == FileRef("u", 5, 1)
    assert type(spelled["a/c/5"].offset) is int
    refs["a/c/100"] = "base64:AAEC"  # an inline chunk beside the columns
    mixed = rfs_from_json({"version": 1, "refs": refs}).refs
    assert isinstance(mixed, ListedRefs)
    assert "a" in mixed.columns
    assert mixed.only_columns("a") is None
