"""Short and overrunning chunk references (issue 39 items 3 and 6): an uncompressed chunk reads
padded only by elements outside the array, a reference past the recorded end of its file is
refused, and a corrupt compressed chunk is the store's typed error, on every read path: plain
reads, the grouped view (open_rfs's default), the sharded view, JSON and directory forms, with
and without recorded source sizes."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numcodecs
import numpy as np
import pytest
from shadowzarr_spec import (
    MISSING_CHUNK,
    ChunkDecodeError,
    ReferenceFormatError,
    RfsBuilder,
    SourceError,
    SourceInfo,
    write_rfs,
)

from shadowzarr_store import open_rfs

VIEWS = [
    {"grouped_view": 0},
    {},  # the grouped view, open_rfs's default
    {"sharded_view": "auto"},
    {"sharded_view": 65536},
]
FORMS = ["refs.json", "refs.shadowzarr"]
BYTES = [{"name": "bytes", "configuration": {"endian": "little"}}]
ZLIB = [*BYTES, {"name": "numcodecs.zlib", "configuration": {"level": 1}}]
FLETCHER = [*BYTES, {"name": "numcodecs.fletcher32", "configuration": {}}]


def _values(n: int) -> np.ndarray:
    return ((np.arange(n, dtype=np.int64) * 2654435761) % 65521 - 32000).astype("<i2")


def _write(
    tmp_path: Path,
    form: str,
    arrays: dict[str, tuple[int, int, np.ndarray]],
    data: bytes,
    *,
    record_size: bool,
    codecs: list[dict] = BYTES,
) -> Path:
    """Arrays ``name: (shape, chunk, index table)`` of int16 over ``data``; the directory form
    keeps each table as a chunk manifest, the JSON form lists its chunks."""
    source = tmp_path / "data.bin"
    source.write_bytes(data)
    builder = RfsBuilder()
    builder.add_group("")
    for name, (shape, chunk, table) in arrays.items():
        builder.add_array(
            name, shape=[shape], data_type="int16", chunk_shape=[chunk], codecs=codecs
        )
        builder.add_index(name, str(source), table)
    rfs = builder.build()
    if record_size:  # after the build: the builder refuses a reference past a recorded end
        rfs.sources[str(source)] = SourceInfo(size=len(data))
    return write_rfs(rfs, tmp_path / form, manifest_threshold=0)


def _table(offsets: list[int], sizes: list[int]) -> np.ndarray:
    return np.array(list(zip(offsets, sizes, strict=True)), dtype=np.uint64).reshape(-1, 2)


@pytest.mark.parametrize("record_size", [True, False])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("options", VIEWS)
def test_a_short_chunk_inside_the_array_is_refused(
    tmp_path: Path, options: dict, form: str, record_size: bool
) -> None:
    """Index rows claiming 100 bytes for 512-byte chunks in the middle of the file: refused,
    naming the array and the key, where the chunks around them read."""
    values = _values(64 * 256)
    table = _table([512 * i for i in range(64)], [512] * 64)
    table[10, 1] = table[40, 1] = 100
    target = _write(
        tmp_path, form, {"a": (64 * 256, 256, table)}, values.tobytes(), record_size=record_size
    )
    array = open_rfs(target, **options)["a"]
    with pytest.raises(ChunkDecodeError, match=r"chunk 'a/c/10' of array 'a' holds 100 bytes"):
        array[:]
    with pytest.raises(ChunkDecodeError, match=r"'a/c/(10|40)' of array 'a' holds 100"):
        array[40 * 256 + 200 : 40 * 256 + 210]  # only bytes the reference leaves out
    if options == {"grouped_view": 0}:  # the grouped view reads a pack of chunks around it
        np.testing.assert_array_equal(array[256 * 20 : 256 * 30], values[256 * 20 : 256 * 30])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("options", VIEWS)
def test_a_4_mib_chunk_referencing_100_bytes_is_refused(
    tmp_path: Path, options: dict, form: str
) -> None:
    n = 2 * 1024 * 1024
    target = _write(
        tmp_path, form, {"a": (n, n, _table([0], [100]))}, _values(n).tobytes(), record_size=True
    )
    array = open_rfs(target, **options)["a"]
    for selection in (slice(None), slice(1_000_000, 1_000_010), slice(0, 10)):
        with pytest.raises(ChunkDecodeError, match=r"'a/c/0' of array 'a' holds 100 bytes"):
            array[selection]


@pytest.mark.parametrize("record_size", [True, False])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("options", VIEWS)
def test_a_last_chunk_past_the_end_of_the_file_is_refused_and_a_clipped_one_reads(
    tmp_path: Path, options: dict, form: str, record_size: bool
) -> None:
    """1,000 rows in chunks of 256: the last chunk's 232 rows are the file's last 464 bytes.
    Its reference claiming the whole chunk (512 bytes, 48 past the end) is refused, never
    padded; clipped to the 464 bytes there are, it reads (padded past the array's end)."""
    values = _values(1000)
    offsets = [512 * i for i in range(4)]
    past = _table(offsets, [512, 512, 512, 512])
    clipped = _table(offsets, [512, 512, 512, 464])
    stops = _table(offsets, [512, 512, 512, 400])  # the array's last 32 rows missing
    arrays = {
        "past": (1000, 256, past),
        "clipped": (1000, 256, clipped),
        "stops": (1000, 256, stops),
    }
    target = _write(tmp_path, form, arrays, values.tobytes(), record_size=record_size)
    root = open_rfs(target, **options)
    for selection in (slice(None), slice(990, 1000), slice(800, 810)):
        with pytest.raises(SourceError, match="c/3"):
            root["past"][selection]
        with pytest.raises(ChunkDecodeError, match=r"'stops/c/3' of array 'stops' holds 400"):
            root["stops"][selection]
        np.testing.assert_array_equal(root["clipped"][selection], values[selection])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("options", VIEWS)
def test_size_0_rows_are_missing_at_offset_0_and_refused_elsewhere(
    tmp_path: Path, options: dict, form: str
) -> None:
    values = _values(8 * 256)
    table = _table([512 * i for i in range(8)], [512] * 8)
    table[2] = (0, 0)
    table[5] = MISSING_CHUNK
    bad = table.copy()
    bad[6] = (512, 0)
    arrays = {"a": (8 * 256, 256, table), "bad": (8 * 256, 256, bad)}
    target = _write(tmp_path, form, arrays, values.tobytes(), record_size=True)
    root = open_rfs(target, **options)
    expected = values.copy()
    expected[2 * 256 : 3 * 256] = expected[5 * 256 : 6 * 256] = 0  # the fill value
    np.testing.assert_array_equal(root["a"][:], expected)
    with pytest.raises(ReferenceFormatError, match="bad/c/6"):
        root["bad"][:]


def _compressed_data(codec: str) -> tuple[bytes, np.ndarray, np.ndarray]:
    """64 chunks of 16 int32 values (zlib or fletcher32), chunk 5 damaged: a bit flip in its
    zlib stream, or a fletcher32 chunk cut to 3 bytes (shorter than its checksum)."""
    values = np.arange(64 * 16, dtype="<i4")
    blob = bytearray()
    table = np.zeros((64, 2), dtype=np.uint64)
    fletcher = numcodecs.Fletcher32()
    for i in range(64):
        raw = values[i * 16 : (i + 1) * 16].tobytes()
        stored = zlib.compress(raw) if codec == "zlib" else bytes(fletcher.encode(raw))
        if i == 5:
            stored = stored[:10] + b"\xff\xff\xff" + stored[13:] if codec == "zlib" else stored[:3]
        table[i] = (len(blob), len(stored))
        blob += stored
    return bytes(blob), table, values


@pytest.mark.parametrize("codec", ["zlib", "fletcher32"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("options", VIEWS)
def test_a_corrupt_compressed_chunk_is_a_typed_error_on_every_path(
    tmp_path: Path, options: dict, form: str, codec: str
) -> None:
    blob, table, values = _compressed_data(codec)
    source = tmp_path / "data.bin"
    source.write_bytes(blob)
    builder = RfsBuilder()
    builder.add_group("")
    codecs = ZLIB if codec == "zlib" else FLETCHER
    builder.add_array("z", shape=[1024], data_type="int32", chunk_shape=[16], codecs=codecs)
    builder.add_index("z", str(source), table)
    target = write_rfs(builder.build(), tmp_path / form, manifest_threshold=0)
    array = open_rfs(target, **options)["z"]
    for selection in (slice(None), slice(80, 96), slice(70, 100)):
        with pytest.raises(ChunkDecodeError, match=rf"'z/c/5'.*numcodecs\.{codec}"):
            array[selection]
    if options == {"grouped_view": 0}:  # the grouped view reads a pack of chunks around it
        np.testing.assert_array_equal(array[200:400], values[200:400])


@pytest.mark.parametrize("options", VIEWS)
def test_an_empty_inline_chunk_of_a_compressed_array_is_a_typed_error(
    tmp_path: Path, options: dict
) -> None:
    """An empty inline value is a value: in the grouped view it became an empty inner chunk of
    a shard, which zarr's sharding codec handed to zlib and fletcher32 (`zlib.error`,
    `IndexError`) instead of the store's checks."""
    refs: dict = {"zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"})}
    blob = bytearray()
    fletcher = numcodecs.Fletcher32()
    for name, codecs in (("z", ZLIB), ("f", FLETCHER)):
        refs[f"{name}/zarr.json"] = json.dumps(
            {
                "zarr_format": 3,
                "node_type": "array",
                "shape": [1024],
                "data_type": "int32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": 0,
                "codecs": codecs,
            }
        )
        for i in range(64):
            raw = np.arange(i * 16, (i + 1) * 16, dtype="<i4").tobytes()
            stored = zlib.compress(raw) if name == "z" else bytes(fletcher.encode(raw))
            refs[f"{name}/c/{i}"] = ["data.bin", len(blob), len(stored)]
            blob += stored
        refs[f"{name}/c/7"] = ""
    (tmp_path / "data.bin").write_bytes(bytes(blob))
    (tmp_path / "refs.json").write_text(json.dumps({"version": 1, "refs": refs}))
    root = open_rfs(tmp_path / "refs.json", **options)
    for name in "zf":
        with pytest.raises(ChunkDecodeError, match=f"'{name}/c/7'"):
            root[name][112:128]
