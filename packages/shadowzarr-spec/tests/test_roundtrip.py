"""Random builders survive write_rfs → read_local_rfs in both forms, byte for byte."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_attribute_conventions import same, values

from shadowzarr_spec import (
    MISSING_CHUNK,
    FileRef,
    InlineRef,
    ReferenceFileSystem,
    ReferenceFormatError,
    RfsBuilder,
    array_info,
    decode_attributes,
    load_index_table,
    read_local_rfs,
    rfs_from_json,
    rfs_to_json,
    write_rfs,
)
from shadowzarr_spec.io import _with_loaded_indexes

DTYPES = ["<i2", ">i4", "<u8", "|u1", "<f4", ">f8", "|b1", "<f2"]


@st.composite
def builders(draw: st.DrawFn) -> tuple[RfsBuilder, dict[str, dict[str, Any]]]:
    builder = RfsBuilder()
    expected_attributes: dict[str, dict[str, Any]] = {}
    root_attributes = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3))
    builder.add_group("", root_attributes)
    expected_attributes[""] = root_attributes
    for n in range(draw(st.integers(1, 4))):
        path = f"g{n % 2}/arr{n}"
        ndim = draw(st.integers(1, 3))
        shape = draw(st.lists(st.integers(1, 40), min_size=ndim, max_size=ndim))
        chunks = [draw(st.integers(1, s)) for s in shape]
        attributes = draw(st.dictionaries(st.sampled_from(["x", "y"]), values, max_size=2))
        dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        builder.add_array(
            path, shape=shape, data_type=dtype, chunk_shape=chunks, attributes=attributes
        )
        expected_attributes[path] = attributes
        grid = [math.ceil(s / c) for s, c in zip(shape, chunks, strict=True)]
        kind = draw(st.sampled_from(["refs", "index", "gen", "inline"]))
        url = f"https://example.org/{draw(st.sampled_from(['a', 'b']))}.h5"
        if kind == "refs":
            for coords in np.ndindex(*grid):
                if draw(st.booleans()):
                    builder.add_chunk(
                        path, coords, url, draw(st.integers(0, 2**40)), draw(st.integers(0, 2**20))
                    )
        elif kind == "index":
            table = np.full((*grid, 2), MISSING_CHUNK, dtype=np.uint64)
            written = draw(
                st.lists(st.booleans(), min_size=table.size // 2, max_size=table.size // 2)
            )
            flat = table.reshape(-1, 2)
            for i, keep in enumerate(written):
                if keep:
                    flat[i] = (i * 977, 100 + i)
            builder.add_index(path, url, table)
        elif kind == "gen":
            builder.add_strided_chunks(
                path,
                url=url,
                start=draw(st.integers(0, 4096)),
                stride=4096,
                length=draw(st.integers(1, 4096)),
                count=draw(st.integers(1, grid[0])),
            )
        else:
            builder.add_inline_chunk(path, (0,) * ndim, draw(st.binary(max_size=64)))
    builder.add_source("https://example.org/a.h5", size=2**42, etag='"abc"')
    return builder, expected_attributes


def canonical(rfs: Any) -> dict[str, Any]:
    document = rfs_to_json(_with_loaded_indexes(rfs), expand=True)
    document.pop("templates", None)
    document["refs"] = {
        k: (v.url, v.offset, v.size) if isinstance(v, FileRef) else v.data
        for k, v in sorted(
            read_local_rfs(
                json.loads(json.dumps(rfs_to_json(_with_loaded_indexes(rfs), expand=True)))
            ).refs.items()
        )
    }
    return document


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=builders(), threshold=st.sampled_from([None, 0, 3, 1000]))
def test_both_forms_round_trip(
    tmp_path: Path, data: tuple[RfsBuilder, dict[str, Any]], threshold: int | None
) -> None:
    builder, attributes = data
    rfs = builder.build()
    expected = canonical(rfs)
    single = write_rfs(rfs, tmp_path / "refs.json")
    directory = write_rfs(rfs, tmp_path / "refs.shadowzarr", manifest_threshold=threshold)
    loaded_single = read_local_rfs(single)
    loaded_directory = read_local_rfs(directory)
    assert loaded_single.version == 1
    assert loaded_directory.version == loaded_directory.required_version
    assert canonical(loaded_single) == expected
    assert canonical(loaded_directory) == expected
    assert loaded_directory.sources == rfs.sources
    for path, want in attributes.items():
        ref = loaded_directory.refs[f"{path}/zarr.json" if path else "zarr.json"]
        assert isinstance(ref, InlineRef)
        stored = json.loads(ref.data)
        assert same(decode_attributes(stored["attributes"]), want)
    for path in loaded_directory.indexes:
        info = array_info(loaded_directory, path)
        assert info is not None
        assert load_index_table(loaded_directory, path).shape == (*info.grid, 2)


def test_directory_uses_indexes_above_the_threshold(tmp_path: Path) -> None:
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("a", shape=[2000], data_type="<i4", chunk_shape=[1])
    for i in range(1500):
        builder.add_chunk("a", (i,), "https://example.org/x.h5", 4 * i, 4)
    rfs = builder.build()
    directory = write_rfs(rfs, tmp_path / "x.shadowzarr")
    document = json.loads((directory / "refs.json").read_text())
    assert document["version"] == 2
    entry = document["indexes"]["a"]
    assert (entry["url"], entry["index"]) == ("{{u0}}", "index/a")
    # the index array's files are carried in refs.json too, byte for byte as stored
    carried = read_local_rfs(directory).indexes["a"].files
    assert sorted(carried) == ["c/0/0", "zarr.json"]
    for key, data in carried.items():
        assert (directory / "index/a" / key).read_bytes() == data
    assert not any(key.startswith("a/c/") for key in document["refs"])
    table = load_index_table(read_local_rfs(directory), "a")
    assert table.shape == (2000, 2)
    assert (table[:1500, 0] == np.arange(1500) * 4).all()
    assert (table[1500:] == MISSING_CHUNK).all()
    meta = json.loads((directory / "index/a/zarr.json").read_text())
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [2000, 2]
    single = json.loads(write_rfs(rfs, tmp_path / "x.json").read_text())
    assert single["version"] == 1
    assert len([k for k in single["refs"] if k.startswith("a/c/")]) == 1500


def test_overwriting_a_directory_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "data.txt").write_text("keep me")
    builder = RfsBuilder()
    builder.add_group("")
    with pytest.raises(ValueError, match="not a reference directory"):
        write_rfs(builder.build(), tmp_path / "precious")
    assert (tmp_path / "precious" / "data.txt").read_text() == "keep me"


def _indexed_rfs(arrays: int, chunks: int) -> ReferenceFileSystem:
    builder = RfsBuilder()
    builder.add_group("")
    for a in range(arrays):
        builder.add_array(f"a{a}", shape=[chunks], data_type="<i4", chunk_shape=[1])
        for i in range(chunks):
            builder.add_chunk(f"a{a}", (i,), "https://example.org/x.h5", 4 * (a * chunks + i), 4)
    return builder.build()


def test_index_files_are_carried_up_to_the_limits(tmp_path: Path) -> None:
    rfs = _indexed_rfs(2, 1500)
    none = write_rfs(rfs, tmp_path / "none.shadowzarr", inline_index_bytes=0)
    assert all(
        "files" not in e for e in json.loads((none / "refs.json").read_text())["indexes"].values()
    )
    assert all(not i.files for i in read_local_rfs(none).indexes.values())
    sizes = [
        sum(len(p.read_bytes()) for p in (none / "index" / a).rglob("*") if p.is_file())
        for a in ("a0", "a1")
    ]
    below = write_rfs(rfs, tmp_path / "below.shadowzarr", inline_index_bytes=min(sizes) - 1)
    assert all(not i.files for i in read_local_rfs(below).indexes.values())
    exact = write_rfs(rfs, tmp_path / "exact.shadowzarr", inline_index_bytes=max(sizes))
    assert all(i.files for i in read_local_rfs(exact).indexes.values())
    stored = sizes[0]
    # the total is bounded too: arrays past the budget keep their files on disk only
    import shadowzarr_spec.io as io

    original = io.INLINE_INDEX_TOTAL
    io.INLINE_INDEX_TOTAL = stored
    try:
        budget = read_local_rfs(write_rfs(rfs, tmp_path / "budget.shadowzarr"))
    finally:
        io.INLINE_INDEX_TOTAL = original
    assert [bool(budget.indexes[p].files) for p in ("a0", "a1")] == [True, False]
    # a loaded directory written again as JSON text keeps them
    again = rfs_to_json(read_local_rfs(exact))
    assert (
        again["indexes"]["a0"]["files"]
        == json.loads((exact / "refs.json").read_text())["indexes"]["a0"]["files"]
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([], "must be an object"),
        ({"zarr.json": 3}, "must map keys to strings"),
        ({"../../etc/passwd": "x"}, "escapes"),
        ({"/abs": "x"}, "must be relative"),
        ({"c/0": "base64:not base64!"}, "is not base64"),
    ],
)
def test_bad_index_files_are_refused(files: object, message: str) -> None:
    document = {
        "version": 2,
        "refs": {"zarr.json": '{"zarr_format":3,"node_type":"group"}'},
        "indexes": {"a": {"url": "https://example.org/x.h5", "index": "index/a", "files": files}},
    }
    with pytest.raises(ReferenceFormatError, match=message):
        rfs_from_json(document)


def test_an_index_carried_in_refs_json_loads_without_its_directory(tmp_path: Path) -> None:
    """References read from a URL (no local directory): the carried files are the index; an
    index not carried cannot be loaded here and says so."""
    rfs = _indexed_rfs(1, 1500)
    for carried in (True, False):
        carry = {} if carried else {"inline_index_bytes": 0}
        directory = write_rfs(rfs, tmp_path / f"{carried}.shadowzarr", **carry)
        document = json.loads((directory / "refs.json").read_text())
        remote = rfs_from_json(document, base="https://example.org/refs")
        if carried:
            table = load_index_table(remote, "a0")
            assert (table[:, 0] == np.arange(1500) * 4).all()
            assert (table == load_index_table(read_local_rfs(directory), "a0")).all()
        else:
            with pytest.raises(ReferenceFormatError, match="neither carried in refs"):
                load_index_table(remote, "a0")
