"""Large reference files parsed a slice of refs at a time: the same references as a whole parse,
and the whole parse whenever slicing cannot keep JSON's meaning."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from shadowzarr_spec import (
    ReferenceFormatError,
    RfsBuilder,
    parse_json,
    refs_text,
    rfs_from_json,
    write_rfs,
)
from shadowzarr_spec.listed_refs import ListedRefs
from shadowzarr_spec.plain_slice import plain_slice
from shadowzarr_spec.refs_text import rfs_from_json_text

URL = "https://example.org/data.bin"


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slice texts from 1 KiB on, about 200 bytes a slice (every test file is cut many times)."""
    monkeypatch.setattr(refs_text, "SLICED_FROM_BYTES", 1024)
    monkeypatch.setattr(refs_text, "_SLICE_BYTES", 200)
    monkeypatch.setattr(refs_text, "_SEARCH_BYTES", 16)


def _document(n: int) -> dict[str, Any]:
    """Metadata and inline values among the chunks of two arrays, one of them 2-D."""
    meta = {"zarr_format": 3, "node_type": "group", "attributes": {"note": '],"x":[1],'}}
    refs: dict[str, Any] = {"zarr.json": json.dumps(meta)}
    for i in range(n):
        refs[f"a/c/{i}"] = ["{{u}}", 100 * i, 100]
        if i % 7 == 3:
            refs[f"b/c/{i}/0"] = [URL, 10 * i, 10]
        if i == n // 2:
            refs["a/zarr.json"] = '{"odd": "],[\\"],\\"b\\":[1],"}'
            refs["b/c/x"] = "base64:AAEC"
    return {"version": 1, "templates": {"u": URL}, "refs": refs}


def _text(document: dict[str, Any], spaced: bool) -> bytes:
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(document, separators=separators).encode()


@pytest.mark.usefixtures("small_slices")
@pytest.mark.parametrize("spaced", [False, True])
def test_sliced_parse_equals_whole(spaced: bool) -> None:
    document = _document(400)
    text = _text(document, spaced)
    sliced = rfs_from_json_text(text, base="/x")
    assert sliced is not None
    whole = rfs_from_json(parse_json(text), base="/x")
    assert isinstance(sliced.refs, ListedRefs)
    assert sliced.refs.columns
    assert list(sliced.refs) == list(whole.refs)  # same keys in the same order
    assert dict(sliced.refs.items()) == dict(whole.refs.items())
    assert (sliced.base, sliced.version) == (whole.base, whole.version)


@pytest.mark.usefixtures("small_slices")
@pytest.mark.parametrize(
    "repeat",
    [
        ("a/c/3", ["{{u}}", 5, 5]),  # a chunk listed twice
        ("zarr.json", '{"zarr_format": 3, "node_type": "group"}'),  # another key twice
        ("a/c/9", "base64:AAEC"),  # a chunk both listed and inline
    ],
)
def test_a_key_in_two_slices_is_parsed_whole(repeat: tuple[str, Any]) -> None:
    """JSON keeps a repeated key's last value in its first place: slicing cannot, so the
    whole document is parsed."""
    key, value = repeat
    text = _text(_document(400), False)
    text = text[:-2] + b"," + json.dumps(key).encode() + b":" + json.dumps(value).encode() + b"}}"
    assert rfs_from_json_text(text) is None


@pytest.mark.usefixtures("small_slices")
@pytest.mark.parametrize(
    "text",
    [
        b'{"version": 1, "refs": {"a/c/0": ["u", NaN, 1]}}' + b" " * 2000,  # msgspec refuses
        b'{"version": 1, "refs": []}' + b" " * 2000,  # refs not an object
        b'{"a/c/0": ["' + b"x" * 2000 + b'", 0, 1]}',  # version 0: the refs alone
    ],
)
def test_what_slicing_cannot_read_is_parsed_whole(text: bytes) -> None:
    assert rfs_from_json_text(text) is None


@pytest.mark.usefixtures("small_slices")
def test_a_cut_inside_a_value_is_cut_again_further_on() -> None:
    """A ``],`` inside a nested value or a string: the slice is not JSON and is cut again
    further on; the references are the whole parse's."""
    refs: dict[str, Any] = {f"a/c/{i}": [URL, i, 1] for i in range(100)}
    refs["a/zarr.json"] = "],],],],],],],],],],],],],],],],],],],],],],],],],],],],],],],],],],"
    refs["a/c/50"] = [[URL], [1], [2]]
    text = _text({"version": 1, "refs": refs}, False)
    assert rfs_from_json_text(text) is None  # an invalid file: the whole parse words the error
    with pytest.raises(ReferenceFormatError, match="a/c/50"):
        rfs_from_json(parse_json(text))
    del refs["a/c/50"]
    text = _text({"version": 1, "refs": refs}, False)
    sliced = rfs_from_json_text(text)
    assert sliced is not None
    assert dict(sliced.refs.items()) == dict(rfs_from_json(parse_json(text)).refs.items())


def test_a_large_file_never_holds_every_entry_as_objects(tmp_path: Any) -> None:
    """150,000 listed chunks: the sliced parse allocates a fraction of a whole parse's peak."""
    builder = RfsBuilder()
    n = 150_000
    builder.add_array("data", shape=(n * 16,), data_type="<f4", chunk_shape=(16,))
    import numpy as np

    order = np.random.default_rng(0).permutation(n).astype(np.uint64)
    builder.add_chunks("data", np.arange(n).reshape(-1, 1), URL, order * 64, np.full(n, 64))
    path = write_rfs(builder.build(), tmp_path / "refs.json")
    text = path.read_bytes()
    assert len(text) >= refs_text.SLICED_FROM_BYTES

    def peak(parse: Any) -> tuple[Any, int]:
        tracemalloc.start()
        try:
            found = parse()
            return found, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    sliced, sliced_peak = peak(lambda: rfs_from_json_text(text))
    whole, whole_peak = peak(lambda: rfs_from_json(parse_json(text)))
    assert sliced is not None
    assert sliced.refs == whole.refs
    assert sliced_peak < whole_peak / 3, (sliced_peak, whole_peak)


def _chunks_document(keys: list[str], url: str = URL, offsets: Any = None) -> dict[str, Any]:
    meta = '{"zarr_format": 3, "node_type": "group"}'
    sizes = offsets if offsets is not None else [7 * i + 1 for i in range(len(keys))]
    refs: dict[str, Any] = {"zarr.json": meta}
    for i, (key, size) in enumerate(zip(keys, sizes, strict=True)):
        refs[key] = [url, 10**12 + i, size]
    return {"version": 1, "refs": refs}


_PLAIN = [f"a/c/{i}" for i in range(300)]


@pytest.mark.usefixtures("small_slices")
@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.parametrize(
    ("keys", "url", "sliced_parse"),
    [
        (_PLAIN, URL, True),
        ([f"x2/c/{i}/{j}" for i in range(60) for j in range(5)], "s3://b2/f10.bin", True),
        ([f"c/{i}/0/{j}" for i in range(100) for j in range(3)], "{{u}}", True),  # the root
        (_PLAIN[:150] + [f"b/c/{i}/1" for i in range(150)], URL, True),  # two arrays
        (_PLAIN[:150] + [f"a/c/0{i}" for i in range(150)], URL, None),  # keys led by 0
        (_PLAIN[:150] + [f"a/c/{i}/1" for i in range(150)], URL, False),  # two ranks
    ],
)
def test_slices_of_chunk_references_read_as_a_whole_parse(
    spaced: bool, keys: list[str], url: str, sliced_parse: bool | None
) -> None:
    """Slices of nothing but chunk references are read with numpy (`plain_slice`); the
    references always equal the whole parse's, whatever the keys, spacing and URLs (or, with
    many chunk keys beside the columns, the whole parse is made instead)."""
    document = _chunks_document(keys, url)
    document["templates"] = {"u": URL}
    text = _text(document, spaced)
    sliced = rfs_from_json_text(text)
    whole = rfs_from_json(parse_json(text))
    if sliced_parse is not None:
        assert (sliced is not None) == sliced_parse
    if sliced is not None:
        assert list(sliced.refs) == list(whole.refs)
        assert dict(sliced.refs.items()) == dict(whole.refs.items())


@pytest.mark.parametrize("spaced", [False, True])
def test_a_slice_of_chunk_references_is_read_with_numpy(spaced: bool) -> None:
    entries = {f"t/c/{i}/{j}": [URL, 4096 * (3 * i + j), 4096] for i in range(50) for j in range(3)}
    separators = (", ", ": ") if spaced else (",", ":")
    piece = json.dumps(entries, separators=separators).encode()[1:-1]
    plain = plain_slice(piece)
    assert plain is not None
    assert (plain.path, plain.first_key, plain.url) == ("t", "t/c/0/0", URL)
    assert plain.coords.tolist() == [[int(k.split("/")[2]), int(k.split("/")[3])] for k in entries]
    assert plain.offsets.tolist() == [v[1] for v in entries.values()]
    assert plain.sizes.tolist() == [4096] * len(entries)
    for other in (
        piece.replace(b"4096]", b"4096.0]", 1),  # a float
        piece.replace(b"t/c/7/1", b"t/c/07/1"),  # not canonical
        piece.replace(b"t/c/7/1", b"u/c/7/1"),  # another array
        piece.replace(b"t/c/7/1", b"t/c/7/1/0"),  # another rank
        piece.replace(b"t/c/7/1", b"t/c/7//1"),
        piece.replace(URL.encode(), b"https://other.bin", 1),  # another URL
        piece.replace(b"t/c/7/1", b"t/c/7/\\u0031"),  # an escape
        piece[:-1] + b", 3]",  # a longer list
        piece.replace(b"]", b" ]", 1),  # other spacing
        piece.replace(b"t/c/7/1", b"t/c/7/" + b"1" * 19),  # too long a number
    ):
        assert plain_slice(other) is None, other[:200]
