"""A store key read once: what it names, for every later step of a read."""

from __future__ import annotations

import pytest

from shadowzarr_spec.keys import ParsedKey, parse_key


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("zarr.json", ParsedKey("zarr.json", None, (), metadata=True)),
        ("a/b/zarr.json", ParsedKey("a/b/zarr.json", None, (), metadata=True)),
        ("a/b/c/0/12", ParsedKey("a/b/c/0/12", "a/b", (0, 12))),
        ("c/3", ParsedKey("c/3", "", (3,))),
        ("scalar/c", ParsedKey("scalar/c", "scalar", ())),
        ("a/c/01", ParsedKey("a/c/01", None)),  # not a coordinate as zarr writes one
        ("a/.zattrs", ParsedKey("a/.zattrs", None)),
        ("a/zarr.json/c/1", ParsedKey("a/zarr.json/c/1", "a/zarr.json", (1,))),
    ],
)
def test_a_key_names_a_node_document_a_chunk_or_neither(key: str, parsed: ParsedKey) -> None:
    assert parse_key(key) == parsed
