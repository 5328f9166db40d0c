"""Findings of the adversarial review of the read path, each reproduced as it was reported.

Most findings have a test beside the code that fixed them (tools/fuzz/RESULTS.md lists every
finding with its test). These are the ones whose report is about what reading a whole reference
file does: a gen entry of 10**12 keys walked by ``members()``, ``store.list()`` and
``materialize``; a shape of 10**15 elements as one chunk; and the exceptions that escaped the
project's error tree from our own code (codec and array metadata, local reads, offsets,
fletcher32), from zarr's metadata validation and from URLs no client can send. Each must be a
`ShadowzarrError` naming the key or URL, or (gen) the right values without any walk of the keys.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import h5py
import numcodecs
import numpy as np
import pytest
import zarr
from shadowzarr import open_array
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import (
    ChunkDecodeError,
    ReferenceFormatError,
    ShadowzarrError,
    SourceAccessError,
    SourceChangedError,
    SourceError,
    UnsupportedFeatureError,
    write_rfs,
)
from shadowzarr_store import materialize, open_rfs
from zarr.core.sync import sync

GROUP = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
VALUES = np.arange(64, dtype="<u4")


def _meta(**changes: Any) -> str:
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [64],
        "data_type": "uint32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [BYTES],
        "attributes": {},
        **changes,
    }
    return json.dumps(document)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(VALUES.tobytes())
    return path


def _gen(data: Path, key: str) -> dict[str, Any]:
    return {
        "key": key,
        "url": str(data),
        "offset": "{{(i % 8) * 32}}",
        "length": "32",
        "dimensions": {"i": {"stop": 10**12}},
    }


def _list(store: Any) -> list[str]:
    async def collect() -> list[str]:
        return [key async for key in store.list()]

    return sync(collect())


def test_a_gen_entry_of_10_12_chunks_is_listed_and_copied_only_inside_the_grid(
    tmp_path: Path, data: Path
) -> None:
    """Reported: ``members()`` and ``store.list()`` raised MemoryError, ``materialize`` ran
    forever. The grid has 8 chunks: those are the keys listed and copied."""
    document = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "g/zarr.json": _meta(
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": [8]}}
            ),
        },
        "gen": [_gen(data, "g/c/{{i}}")],
    }
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(document))
    root = open_rfs(refs)
    assert [name for name, _ in root.members(max_depth=None)] == ["g"]
    keys = _list(root.store.stored_view())
    assert sorted(k for k in keys if "/c/" in k) == [f"g/c/{i}" for i in range(8)]
    # as zarr sees the array by default: its 8 small chunks grouped into one shard
    assert sorted(k for k in _list(root.store) if "/c/" in k) == ["g/c/0"]
    np.testing.assert_array_equal(root["g"][:], VALUES)
    materialize(refs, tmp_path / "copy", progress=False)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "copy", path="g")[:], VALUES)


def test_a_gen_entry_of_10_12_keys_outside_any_grid_is_refused(data: Path) -> None:
    """Keys that are no array's chunks would have to be walked one by one: refused by name."""
    document = {"version": 1, "refs": {"zarr.json": GROUP}, "gen": [_gen(data, "x{{i}}")]}
    root = open_rfs(document)
    with pytest.raises(ReferenceFormatError, match=r"x\{\{i\}\}.*1000000000000 keys"):
        list(root.members(max_depth=None))
    with pytest.raises(ReferenceFormatError, match="1000000000000 keys"):
        _list(root.store)


def test_10_15_elements_as_one_chunk_is_refused_before_any_allocation(data: Path) -> None:
    """Reported: MemoryError in the fill padding. The chunk's size is known from the metadata."""
    document = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "a/zarr.json": _meta(
                shape=[10**15],
                data_type="uint8",
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": [10**15]}},
            ),
            "a/c/0": [str(data), 0, 256],
        },
    }
    root = open_rfs(document)
    with pytest.raises(UnsupportedFeatureError, match=r"array 'a'.*max_chunk_bytes"):
        root["a"][:10]


UNTYPED_BEFORE: dict[str, tuple[dict[str, Any], type[ShadowzarrError], str]] = {
    # our own code (codecs.py, arrays.py, decode_limits.py): TypeError/AttributeError before
    "codec a string": ({"codecs": ["bytes"]}, ReferenceFormatError, "array 'a'"),
    "codec name not a string": ({"codecs": [{"name": 5}]}, ReferenceFormatError, "array 'a'"),
    "configuration a list": (
        {"codecs": [{"name": "bytes", "configuration": []}]},
        ReferenceFormatError,
        "array 'a'",
    ),
    "zstd level not an integer": (
        {"codecs": [BYTES, {"name": "zstd", "configuration": {"level": "x", "checksum": False}}]},
        ReferenceFormatError,
        "array 'a'",
    ),
    "shape of strings": ({"shape": ["x"]}, ReferenceFormatError, "array 'a'"),
    "shape null": ({"shape": None}, ReferenceFormatError, "array 'a'"),
    "chunk shape 0": (
        {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0]}}},
        ReferenceFormatError,
        "array 'a'",
    ),
    # zarr's metadata validation, reached through open_rfs
    "unknown data type": ({"data_type": "uint3"}, ReferenceFormatError, "array 'a'"),
    "fill value out of range": (
        {"data_type": "int8", "fill_value": 1000},
        ReferenceFormatError,
        "array 'a'",
    ),
    "shape and chunks of other lengths": ({"shape": [4, 4]}, ReferenceFormatError, "array 'a'"),
    "separator not / or .": (
        {"chunk_key_encoding": {"name": "default", "configuration": {"separator": "x"}}},
        ReferenceFormatError,
        "array 'a'",
    ),
    "must_understand extension": (
        {"extra": {"must_understand": True}},
        ReferenceFormatError,
        "array 'a'",
    ),
    # numcodecs' constructor, run by zarr only at the first decode: TypeError before
    "numcodecs keyword it does not know": (
        {"codecs": [BYTES, {"name": "numcodecs.zlib", "configuration": {"level": 1, "x_": 2}}]},
        ReferenceFormatError,
        "array 'a': codec 'numcodecs.zlib'",
    ),
    # fletcher32 over fewer bytes than its checksum: IndexError before
    "fletcher32 over 2 bytes": (
        {"codecs": [BYTES, {"name": "numcodecs.fletcher32", "configuration": {}}], "_chunk": 2},
        ChunkDecodeError,
        "'a/c/0'",
    ),
}


@pytest.mark.parametrize("name", sorted(UNTYPED_BEFORE))
@pytest.mark.filterwarnings("ignore:.*chunk shape:UserWarning")  # zarr's note on chunk shape 0
def test_malformed_array_metadata_gives_our_error_naming_the_array(data: Path, name: str) -> None:
    changes, error, named = UNTYPED_BEFORE[name]
    changes = dict(changes)
    size = changes.pop("_chunk", 256)
    document = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "a/zarr.json": _meta(**changes),
            "a/c/0": [str(data), 0, size],
        },
    }
    with pytest.raises(error) as caught:
        open_rfs(document)["a"][...]
    assert named in str(caught.value)
    assert not isinstance(_root_cause(caught.value), ShadowzarrError)  # chained to the cause


def _root_cause(error: BaseException) -> BaseException:
    while error.__cause__ is not None:
        error = error.__cause__
    return error


@pytest.mark.parametrize(
    ("reference", "error", "named"),
    [
        # whole chunks (256 bytes), so the reference alone is sound
        # local reads (fetch/local.py): OSError/ValueError before
        (["/tmp/x\x00y", 0, 256], SourceError, "x\\x00y"),
        (["/" + "x" * 5000, 0, 256], SourceError, "xxxx"),
        (["{directory}", 0, 256], SourceError, "{directory}"),
        (["{data}/below", 0, 256], SourceError, "below"),
        # offsets past what an integer holds (resolve.py): OverflowError before
        (["{data}", 2**62, 2**62], ReferenceFormatError, "'a/c/0'"),
        # URLs no client can send, schemes that are not ours: yarl's and aiohttp's errors before
        (["http://127.0.0.1:99999/x", 0, 256], SourceAccessError, "127.0.0.1:99999"),
        (["http://[::1/x", 0, 256], SourceAccessError, "[::1/x"),
        (["ftp://127.0.0.1:9/x", 0, 256], SourceAccessError, "'ftp' scheme"),
        (["gopher://127.0.0.1:9/x", 0, 256], SourceAccessError, "'gopher' scheme"),
        (["unix:///tmp/x.sock", 0, 256], SourceAccessError, "'unix' scheme"),
    ],
    ids=[
        "NUL in a path",
        "name too long",
        "a directory",
        "through a file",
        "offset 2**62 + size 2**62",
        "port past 65535",
        "broken IPv6 host",
        "ftp",
        "gopher",
        "unix",
    ],
)
def test_chunk_references_no_reader_can_follow_give_our_error(
    data: Path, reference: list[Any], error: type[ShadowzarrError], named: str
) -> None:
    places = {"{directory}": str(data.parent), "{data}": str(data)}
    url = str(reference[0])
    for mark, place in places.items():
        url = url.replace(mark, place)
        named = named.replace(mark, place)
    document = {
        "version": 1,
        "refs": {"zarr.json": GROUP, "a/zarr.json": _meta(), "a/c/0": [url, *reference[1:]]},
    }
    with pytest.raises(error) as caught:
        open_rfs(document)["a"][...]
    assert named in str(caught.value)


def _h5(path: Path, values: np.ndarray, mtime_ns: int | None = None) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=values, chunks=(1024,))  # chunks too large to be inlined
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.mark.parametrize("mtime", ["new", "kept"])
def test_a_same_size_rewrite_of_a_local_file_is_seen_by_open_array_and_references(
    tmp_path: Path, mtime: str
) -> None:
    """Reported: references recorded only a local file's size (a same-size rewrite read the new
    bytes as the old array's), while open_array went by mtime. Both now compare size, mtime
    and a sampled hash: open_array sees the new file (never cached chunks or references of the
    old one), even with the old mtime put back; references made for the old file refuse it,
    the old mtime put back or not (an mtime proves nothing: the sampled bytes decide)."""
    path = tmp_path / "f.h5"
    old = np.arange(8192, dtype="<i4")
    new = old[::-1].copy()
    _h5(path, old)
    size, stamp = path.stat().st_size, path.stat().st_mtime_ns
    references = tmp_path / "refs.json"
    write_rfs(generate_rfs(str(path), progress=False), references)
    np.testing.assert_array_equal(open_rfs(references)["a"][:], old)
    cache = tmp_path / "cache"
    np.testing.assert_array_equal(open_array(f"{path}::/a", cache="disk", cache_dir=cache)[:], old)
    _h5(path, new, stamp if mtime == "kept" else stamp + 10**10)
    assert path.stat().st_size == size
    np.testing.assert_array_equal(open_array(f"{path}::/a", cache="disk", cache_dir=cache)[:], new)
    with pytest.raises(SourceChangedError, match="rewritten"):
        open_rfs(references)["a"][:]


def test_members_of_a_group_with_two_bad_arrays_print_nothing_but_the_error(
    tmp_path: Path,
) -> None:
    """zarr's ``members()`` raises the first member's error and abandons the other tasks; the
    second bad array's error was reported on stderr as "Task exception was never retrieved"
    (found by the long fuzz run). The caller gets one typed error and nothing is printed."""
    bad = {"a": _meta(codecs=["bytes"]), "b": _meta(shape=None)}
    refs = {"zarr.json": GROUP, **{f"{name}/zarr.json": meta for name, meta in bad.items()}}
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"version": 1, "refs": refs}))
    code = """
        import gc, sys
        from shadowzarr_spec import ReferenceFormatError
        from shadowzarr_store import open_rfs
        root = open_rfs(sys.argv[1])
        try:
            list(root.members(max_depth=None))
        except ReferenceFormatError as exc:
            print(type(exc).__name__)
        gc.collect()
    """
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", textwrap.dedent(code), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ReferenceFormatError"
    assert done.stderr == ""


def test_a_selection_record_past_2_63_bytes_is_refused(data: Path) -> None:
    """Found by the long fuzz run: numpy's ValueError ("Maximum allowed dimension exceeded")
    when a selection's record of 2**64 bytes was applied."""
    document = {
        "version": 2,
        "refs": {"zarr.json": GROUP, "a/zarr.json": _meta(), "a/c/0": [str(data), 0, 256]},
        "selections": {"a": {"record_size": 2**64, "keep": [[0, 4]]}},
    }
    with pytest.raises(ReferenceFormatError, match="record_size"):
        open_rfs(document)["a"][...]


def test_a_codec_name_holding_a_nul_is_a_missing_codec_of_that_array(data: Path) -> None:
    """Found by the long fuzz run: the stand-in for a codec that is not installed was a class
    named after it, and ``type()`` refuses a NUL (ValueError)."""
    document = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "a/zarr.json": _meta(codecs=[BYTES, {"name": "zlib\x00"}]),
            "a/c/0": [str(data), 0, 256],
            "b/zarr.json": _meta(),
            "b/c/0": [str(data), 0, 256],
        },
    }
    root = open_rfs(document)
    with pytest.raises(UnsupportedFeatureError, match=r"array 'a' needs codec 'zlib\\x00'"):
        root["a"][...]
    np.testing.assert_array_equal(root["b"][...], VALUES)


def test_a_string_chunk_claiming_a_billion_items_is_refused_before_any_allocation() -> None:
    """Found by the long fuzz run (6.5 GB of heap in one case): numcodecs' vlen-utf8 decoder
    allocates an object array of the item count its header states before reading any item."""
    strings = numcodecs.VLenUTF8().encode(np.array(["a", "bc", "", "def"], dtype=object))
    claim = (10**9).to_bytes(4, "little") + strings[4:]
    document = {
        "version": 1,
        "refs": {
            "zarr.json": GROUP,
            "s/zarr.json": _meta(
                shape=[4],
                data_type="string",
                fill_value="",
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": [4]}},
                codecs=[{"name": "vlen-utf8", "configuration": {}}],
            ),
            "s/c/0": "base64:" + base64.b64encode(claim).decode(),
            "t/zarr.json": _meta(
                shape=[4],
                data_type="string",
                fill_value="",
                chunk_grid={"name": "regular", "configuration": {"chunk_shape": [4]}},
                codecs=[{"name": "vlen-utf8", "configuration": {}}],
            ),
            "t/c/0": "base64:" + base64.b64encode(strings).decode(),
        },
    }
    root = open_rfs(document)
    assert list(root["t"][:]) == ["a", "bc", "", "def"]
    tracemalloc.start()
    try:
        with pytest.raises(ChunkDecodeError, match=r"'s/c/0'.*header says 1000000000"):
            root["s"][:]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak} bytes allocated refusing the chunk"
