"""Malformed reference files give a ReferenceFormatError, never a crash or a silent fill."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from shadowzarr_spec import (
    FileRef,
    InlineRef,
    ReferenceFormatError,
    node_type,
    parse_json,
    read_local_rfs,
    rfs_from_json,
)
from shadowzarr_spec.errors import UnsafePathError


def test_every_value_kind() -> None:
    rfs = rfs_from_json(
        {
            "version": 1,
            "templates": {"u0": "https://example.org/f.h5"},
            "refs": {"a": "text", "b": "base64:AAE=", "c": ["{{u0}}"], "d": ["{{u0}}", 5, 7]},
        }
    )
    assert rfs.refs == {
        "a": InlineRef(b"text"),
        "b": InlineRef(b"\x00\x01"),
        "c": FileRef("https://example.org/f.h5"),
        "d": FileRef("https://example.org/f.h5", 5, 7),
    }


def test_version_zero_is_just_refs() -> None:
    assert rfs_from_json({"zarr.json": "{}"}).refs == {"zarr.json": InlineRef(b"{}")}


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"version": 3, "refs": {}},
        {"version": 1, "refs": []},
        {"version": 1, "refs": {"a": ["f", -1, 3]}},
        {"version": 1, "refs": {"a": ["f", 1]}},
        {"version": 1, "refs": {"a": ["f", "1", 3]}},
        {"version": 1, "refs": {"a": ["f", 1, 2**64]}},
        {"version": 1, "refs": {"a": 5}},
        {"version": 1, "refs": {"a": "base64:@@@"}},
        {"version": 1, "refs": {"a": ["{{nope}}", 0, 1]}},
        {"version": 1, "refs": {}, "surprise": 1},
        {"version": 2, "refs": {}, "selections": {"a": {"record_size": 4, "keep": [[3, 9]]}}},
        {"version": 2, "refs": {}, "sources": {"u": {"size": -4}}},
        {"version": 2, "refs": {}, "indexes": {"a": {"url": "f"}}},
        {"version": 1, "refs": {}, "indexes": {"a": {"url": "f", "index": "index/a"}}},
    ],
)
def test_malformed(document: object) -> None:
    with pytest.raises(ReferenceFormatError):
        rfs_from_json(document)


@pytest.mark.parametrize("key", ["../x", "/abs", "a/../b", "a//b", "a/./b", "a\\b"])
def test_keys_that_escape_are_refused(key: str) -> None:
    with pytest.raises(UnsafePathError):
        rfs_from_json({"version": 1, "refs": {key: "x"}})


@pytest.mark.parametrize("index", ["../elsewhere", "/etc/passwd", "index/../../x"])
def test_index_paths_that_escape_are_refused(index: str) -> None:
    with pytest.raises(UnsafePathError):
        rfs_from_json({"version": 2, "refs": {}, "indexes": {"a": {"url": "f", "index": index}}})


def test_legacy_bare_non_finite_tokens_load(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    inner = '{\\"attributes\\": {\\"r\\": NaN, \\"m\\": -Infinity}}'
    path.write_text('{"version": 1, "refs": {"a/zarr.json": "' + inner + '"}}')
    ref = read_local_rfs(path).refs["a/zarr.json"]
    assert isinstance(ref, InlineRef)
    attributes = parse_json(ref.data)["attributes"]
    assert math.isnan(attributes["r"])
    assert attributes["m"] == -math.inf


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (b'{"zarr_format":3,"node_type":"array","attributes":{"node_type":"group"}}', "array"),
        (b'{"attributes":{"node_type":"array"},"node_type":"group"}', "group"),
        (b'{"attributes":{"node_type":"array"}}', None),
        (b'{"node_type":3}', None),
        (b'["node_type","array"]', None),
        (b'{"node_type":"array"', None),
        (b"", None),
    ],
)
def test_node_type_reads_only_the_top_level_member(document: bytes, expected: str | None) -> None:
    assert node_type(document) == expected
    if expected is not None:
        assert parse_json(document)["node_type"] == expected
