"""Chunks that would decompress beyond their chunk size are refused before zarr decodes them.

Every codec gets a legitimate chunk (encoded by numcodecs, read back through zarr, compared with
the values) and a bomb: the same codec over far more bytes than a chunk holds. Bombs are 16x the
chunk (64 KiB chunks, 1 MiB bombs) except where noted, so the tests stay fast.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import numcodecs
import numpy as np
import pytest
import zarr
from shadowzarr_spec import ArrayInfo, ChunkDecodeError, RfsBuilder

from shadowzarr_store import RfsStore
from shadowzarr_store.decode_limits import (
    DEFLATE_MAX_RATIO,
    VARIABLE_FLOOR,
    chunk_guard,
)

if TYPE_CHECKING:
    from pathlib import Path

ITEMS = 16384  # float32: 64 KiB chunks
CHUNK_BYTES = ITEMS * 4
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
SHUFFLE = {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}
FLETCHER = {"name": "numcodecs.fletcher32", "configuration": {}}

# name → (numcodecs codec, zarr codec entry)
CODECS: dict[str, tuple[Any, dict[str, Any]]] = {
    "numcodecs.zlib": (
        numcodecs.Zlib(1),
        {"name": "numcodecs.zlib", "configuration": {"level": 1}},
    ),
    "gzip": (numcodecs.GZip(1), {"name": "gzip", "configuration": {"level": 1}}),
    "numcodecs.gzip": (
        numcodecs.GZip(1),
        {"name": "numcodecs.gzip", "configuration": {"level": 1}},
    ),
    "zstd": (numcodecs.Zstd(1), {"name": "zstd", "configuration": {"level": 1, "checksum": False}}),
    "numcodecs.zstd": (
        numcodecs.Zstd(1),
        {"name": "numcodecs.zstd", "configuration": {"level": 1}},
    ),
    "blosc": (
        numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE, blocksize=0),
        {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 5,
                "shuffle": "shuffle",
                "typesize": 4,
                "blocksize": 0,
            },
        },
    ),
    "numcodecs.blosc": (
        numcodecs.Blosc("zstd", 5, numcodecs.Blosc.NOSHUFFLE),
        {
            "name": "numcodecs.blosc",
            "configuration": {"cname": "zstd", "clevel": 5, "shuffle": 0, "blocksize": 0},
        },
    ),
    "numcodecs.lz4": (numcodecs.LZ4(), {"name": "numcodecs.lz4", "configuration": {}}),
    "numcodecs.bz2": (numcodecs.BZ2(1), {"name": "numcodecs.bz2", "configuration": {"level": 1}}),
    "numcodecs.lzma": (numcodecs.LZMA(), {"name": "numcodecs.lzma", "configuration": {}}),
}


def _values(items: int = ITEMS) -> np.ndarray:
    return np.cumsum(np.random.default_rng(7).normal(size=items)).astype("<f4")


def _open(
    tmp_path: Path,
    codecs: list[dict[str, Any]],
    chunk: bytes,
    *,
    inline: bool,
    items: int = ITEMS,
    data_type: Any = "<f4",
    fill_value: Any = 0,
) -> zarr.Array[Any]:
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "a",
        shape=(items,),
        data_type=data_type,
        chunk_shape=(items,),
        fill_value=fill_value,
        codecs=codecs,
    )
    if inline:
        builder.add_inline_chunk("a", (0,), chunk)
    else:
        path = tmp_path / "chunk.bin"
        path.write_bytes(b"head" + chunk)
        builder.add_chunk("a", (0,), str(path), 4, len(chunk))
    return zarr.open_array(RfsStore(builder.build()), path="a", mode="r", zarr_format=3)


@pytest.mark.parametrize("inline", [False, True], ids=["file", "inline"])
@pytest.mark.parametrize("name", sorted(CODECS))
def test_legitimate_chunk_reads_exactly_and_a_bomb_is_refused(
    tmp_path: Path, name: str, inline: bool
) -> None:
    codec, entry = CODECS[name]
    values = _values()
    legit = _open(tmp_path, [BYTES, entry], codec.encode(values.tobytes()), inline=inline)
    np.testing.assert_array_equal(legit[:], values)

    bomb = codec.encode(bytes(16 * CHUNK_BYTES))
    assert len(bomb) < CHUNK_BYTES // 8
    array = _open(tmp_path, [BYTES, entry], bomb, inline=inline)
    with pytest.raises(ChunkDecodeError, match=r"chunk 'a/c/0' would decompress") as caught:
        array[:]
    assert str(CHUNK_BYTES) in str(caught.value)
    assert ("inline reference" in str(caught.value)) is inline


def test_a_slightly_oversized_chunk_is_refused_too(tmp_path: Path) -> None:
    """The limit is the chunk's size exactly: one extra element is already refused."""
    for name in ("numcodecs.zlib", "zstd", "blosc", "numcodecs.lz4"):
        codec, entry = CODECS[name]
        chunk = codec.encode(_values(ITEMS + 1).tobytes())
        with pytest.raises(ChunkDecodeError, match=str(CHUNK_BYTES)):
            _open(tmp_path, [BYTES, entry], chunk, inline=True)[:]


def test_hdf5_chain_with_shuffle_and_fletcher32(tmp_path: Path) -> None:
    """HDF5's deflate chain: the checksum wraps the zlib stream, which holds shuffled bytes."""
    zlib_codec, zlib_entry = CODECS["numcodecs.zlib"]
    codecs = [BYTES, SHUFFLE, zlib_entry, FLETCHER]

    def encode(raw: bytes) -> bytes:
        shuffled = numcodecs.Shuffle(4).encode(raw)
        return bytes(numcodecs.Fletcher32().encode(zlib_codec.encode(shuffled)))

    values = _values()
    np.testing.assert_array_equal(
        _open(tmp_path, codecs, encode(values.tobytes()), inline=False)[:], values
    )
    with pytest.raises(ChunkDecodeError, match=r"numcodecs\.zlib"):
        _open(tmp_path, codecs, encode(bytes(16 * CHUNK_BYTES)), inline=False)[:]


def test_nested_compressors_are_checked_layer_by_layer(tmp_path: Path) -> None:
    """zlib inside blosc: the outer layer is small and honest, the inner one is the bomb."""
    blosc_codec, blosc_entry = CODECS["numcodecs.blosc"]
    zlib_codec, zlib_entry = CODECS["numcodecs.zlib"]
    codecs = [BYTES, zlib_entry, blosc_entry]
    values = _values()
    legit = blosc_codec.encode(zlib_codec.encode(values.tobytes()))
    np.testing.assert_array_equal(_open(tmp_path, codecs, legit, inline=True)[:], values)
    bomb = blosc_codec.encode(zlib_codec.encode(bytes(16 * CHUNK_BYTES)))
    with pytest.raises(ChunkDecodeError, match=r"\(numcodecs.zlib\)"):
        _open(tmp_path, codecs, bomb, inline=True)[:]


def _zstd_frame(blocks: bytes, *, content_size: int | None = None) -> bytes:
    """A zstd frame with a 128 KiB window (no single segment), content size optional."""
    descriptor = 0 if content_size is None else 0b10 << 6  # 4-byte content size
    header = struct.pack("<IBB", 0xFD2FB528, descriptor, (17 - 10) << 3)
    if content_size is not None:
        header += struct.pack("<I", content_size)
    return header + blocks


def _block(kind: int, size: int, payload: bytes, *, last: bool) -> bytes:
    return (int(last) | kind << 1 | size << 3).to_bytes(3, "little") + payload


def test_zstd_frames_without_a_content_size_are_bounded_by_their_blocks(tmp_path: Path) -> None:
    entry = CODECS["zstd"][1]
    values = _values()
    raw = values.tobytes()
    legit = _zstd_frame(_block(0, len(raw), raw, last=True))  # one raw block, no content size
    np.testing.assert_array_equal(_open(tmp_path, [BYTES, entry], legit, inline=True)[:], values)
    # 128 RLE blocks of 128 KiB each: 16 MiB from 526 bytes, stated nowhere in the frame header.
    rle = b"".join(_block(1, 128 << 10, b"\0", last=i == 127) for i in range(128))
    bomb = _zstd_frame(rle)
    assert len(bomb) < 600
    with pytest.raises(ChunkDecodeError, match="16777216 bytes"):
        _open(tmp_path, [BYTES, entry], bomb, inline=True)[:]
    # Two frames, each declaring 48 KiB: the sum exceeds a 64 KiB chunk.
    half = numcodecs.Zstd(1).encode(bytes(48 << 10))
    with pytest.raises(ChunkDecodeError, match=str(96 << 10)):
        _open(tmp_path, [BYTES, entry], half + half, inline=True)[:]


@pytest.mark.parametrize(
    ("name", "chunk", "why"),
    [
        ("blosc", b"\x02\x01", "shorter than its header"),
        ("numcodecs.lz4", b"\x01", "shorter than its header"),
        ("zstd", b"not a zstd frame", "no zstd frame"),
        ("zstd", _zstd_frame(_block(2, 10, b"", last=True)), "ends early"),
        ("numcodecs.zlib", b"\x78\x9c" + b"\xff" * 8000, "not valid"),
    ],
)
def test_malformed_headers_and_streams_are_chunk_decode_errors(
    tmp_path: Path, name: str, chunk: bytes, why: str
) -> None:
    with pytest.raises(ChunkDecodeError, match=why):
        _open(tmp_path, [BYTES, CODECS[name][1]], chunk, inline=True)[:]


def test_variable_size_strings_get_a_generous_bound(tmp_path: Path) -> None:
    vlen = {"name": "vlen-utf8", "configuration": {}}
    codec, entry = CODECS["zstd"]
    words = np.array(["alpha", "β" * 3000, ""] + ["x" * 100] * 13, dtype=object)
    encoded = numcodecs.VLenUTF8().encode(words)
    chunk = codec.encode(encoded)
    array = _open(
        tmp_path, [vlen, entry], chunk, inline=True, items=16, data_type="string", fill_value=""
    )
    assert list(array[:]) == list(words)
    info = ArrayInfo("s", (16,), (16,), "string", "", (vlen, entry), {})
    guard = chunk_guard(info)
    assert guard is not None
    assert guard.layers[0].limit == VARIABLE_FLOOR
    bomb = codec.encode(bytes(VARIABLE_FLOOR + 1))
    with pytest.raises(ChunkDecodeError):
        guard.check(bomb, "s/c/0", "test")


def test_guards_only_arrays_with_a_checkable_compressor() -> None:
    def info(*codecs: dict[str, Any]) -> ArrayInfo:
        return ArrayInfo("a", (ITEMS,), (ITEMS,), "float32", 0, codecs, {})

    assert chunk_guard(info(BYTES)) is None
    assert chunk_guard(info(BYTES, SHUFFLE, FLETCHER)) is None
    assert chunk_guard(info({"name": "imagecodecs_jpeg"})) is None
    # An unknown codec outside the compressor hides it.
    assert chunk_guard(info(BYTES, CODECS["zstd"][1], {"name": "imagecodecs_lzw"})) is None
    guard = chunk_guard(info(BYTES, SHUFFLE, CODECS["numcodecs.zlib"][1], FLETCHER))
    assert guard is not None
    assert [(layer.kind, layer.limit) for layer in guard.layers] == [
        ("checksum", guard.layers[1].limit + guard.layers[1].limit // 8 + 1024),
        ("deflate", CHUNK_BYTES),
        ("shuffle", CHUNK_BYTES),
    ]


def test_small_deflate_streams_are_not_inflated_and_large_ones_are(tmp_path: Path) -> None:
    """A stream too short to reach the limit even at deflate's best ratio is never inflated."""
    guard = chunk_guard(
        ArrayInfo("a", (ITEMS,), (ITEMS,), "float32", 0, (BYTES, CODECS["gzip"][1]), {})
    )
    assert guard is not None
    short = b"\x1f\x8b" + b"\xff" * (CHUNK_BYTES // DEFLATE_MAX_RATIO - 2)  # not even gzip
    guard.check(short, "a/c/0", "test")  # accepted unread: zarr reports the damage
    with pytest.raises(ChunkDecodeError, match="not valid"):
        guard.check(short + b"\xff" * 64, "a/c/0", "test")


def test_only_header_reads_and_small_inflates_run_on_the_event_loop() -> None:
    def guard(*codecs: dict[str, Any]) -> Any:
        found = chunk_guard(ArrayInfo("a", (1 << 20,), (1 << 20,), "float32", 0, codecs, {}))
        assert found is not None
        return found

    values = _values(1 << 20).tobytes()  # 4 MiB chunks
    zlib_entry, zstd_entry = CODECS["numcodecs.zlib"][1], CODECS["zstd"][1]
    blosc_codec, blosc_entry = CODECS["numcodecs.blosc"]
    assert guard(BYTES, blosc_entry).cheap(blosc_codec.encode(values))
    assert not guard(BYTES, zlib_entry).cheap(numcodecs.Zlib(1).encode(values))
    assert guard(BYTES, zlib_entry).cheap(b"x" * 4000)  # cannot reach 4 MiB: not inflated
    assert not guard(BYTES, zstd_entry).cheap(numcodecs.Zstd(1).encode(values))
    assert guard(BYTES, zstd_entry).cheap(numcodecs.Zstd(1).encode(bytes(1 << 22)))
    assert not guard(BYTES, zlib_entry, blosc_entry).cheap(b"x" * 100)


def test_a_damaged_outer_layer_of_nested_compressors_is_a_chunk_decode_error(
    tmp_path: Path,
) -> None:
    zlib_entry, blosc_codec = CODECS["numcodecs.zlib"][1], CODECS["numcodecs.blosc"][0]
    blosc_entry = CODECS["numcodecs.blosc"][1]
    # zlib level 0 stores, so blosc has something to compress (and check) in its blocks.
    chunk = blosc_codec.encode(numcodecs.Zlib(0).encode(bytes(CHUNK_BYTES)))
    truncated = chunk[: len(chunk) // 2]  # an honest header over half the blocks
    with pytest.raises(ChunkDecodeError, match=r"not valid numcodecs\.blosc data"):
        _open(tmp_path, [BYTES, zlib_entry, blosc_entry], truncated, inline=True)[:]
