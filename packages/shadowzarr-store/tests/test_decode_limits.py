"""Chunks that would decompress beyond their chunk size are refused before zarr decodes them.

Every codec gets a legitimate chunk (encoded by numcodecs, read back through zarr, compared with
the values) and a bomb: the same codec over far more bytes than a chunk holds. Bombs are 16x the
chunk (64 KiB chunks, 1 MiB bombs) except where noted, so the tests stay fast.
"""

from __future__ import annotations

import asyncio
import struct
from typing import TYPE_CHECKING, Any

import numcodecs
import numpy as np
import pytest
import zarr
from shadowzarr_spec import ChunkDecodeError, RfsBuilder

from shadowzarr_store import RfsStore
from shadowzarr_store.array_checks import ArrayChecks
from shadowzarr_store.codec_policy import compressed_bound
from shadowzarr_store.decode_limits import VARIABLE_FLOOR

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
    with pytest.raises(ChunkDecodeError, match=r"chunk 'a/c/0': would decompress") as caught:
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
        ("blosc", b"\x02\x01", "shorter than the 16-byte header"),
        ("numcodecs.lz4", b"\x01", "shorter than its header"),
        ("zstd", b"not a zstd frame", "no zstd frame"),
        ("zstd", _zstd_frame(_block(2, 10, b"", last=True)), "ends early"),
        ("numcodecs.zlib", b"\x78\x9c" + b"\xff" * 8000, "not valid numcodecs.zlib data"),
    ],
)
def test_malformed_headers_and_streams_are_chunk_decode_errors(
    tmp_path: Path, name: str, chunk: bytes, why: str
) -> None:
    with pytest.raises(ChunkDecodeError, match=why):
        _open(tmp_path, [BYTES, CODECS[name][1]], chunk, inline=True)[:]


def _checks(*codecs: dict[str, Any], items: int = ITEMS, data_type: Any = "float32") -> Any:
    document = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [items],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [items]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "" if data_type == "string" else 0,
        "codecs": list(codecs),
        "attributes": {},
    }
    return ArrayChecks.from_document("a", document, 2 << 30)


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
    checks = _checks(vlen, entry, items=16, data_type="string")
    assert checks.layers[0].limit == VARIABLE_FLOOR
    bomb = codec.encode(bytes(VARIABLE_FLOOR + 1))
    with pytest.raises(ChunkDecodeError, match="would decompress"):
        asyncio.run(checks.verify(bomb, "a/c/0", "test"))


def test_layers_and_their_limits_follow_the_chain_inside_out() -> None:
    checks = _checks(BYTES, SHUFFLE, CODECS["numcodecs.zlib"][1], FLETCHER)
    assert [(layer.role, layer.name, layer.limit) for layer in checks.layers] == [
        ("checksum", "numcodecs.fletcher32", compressed_bound("deflate", CHUNK_BYTES)),
        ("deflate", "numcodecs.zlib", CHUNK_BYTES),
        ("transform", "numcodecs.shuffle", CHUNK_BYTES),
    ]
    assert checks.stored_bound == compressed_bound("deflate", CHUNK_BYTES) + 4
    assert checks.verified
    plain = _checks(BYTES)
    assert not plain.verified
    assert plain.stored_bound == CHUNK_BYTES
    # A codec shadowzarr does not know: decoded as zarr decodes it, with no size bound.
    assert _checks(BYTES, {"name": "crc32c"}).stored_bound == CHUNK_BYTES + 4


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("numcodecs.zlib", lambda chunk: chunk[: len(chunk) // 2]),  # cut
        ("gzip", lambda chunk: chunk[:-4] + b"\0\0\0\0"),  # wrong length in the trailer
        ("zstd", lambda chunk: chunk[:12] + bytes(len(chunk) - 12)),  # blocks zeroed
        ("blosc", lambda chunk: chunk[:-1]),  # shorter than its header says
        ("numcodecs.lz4", lambda chunk: chunk[:4] + bytes(len(chunk) - 4)),
        ("numcodecs.bz2", lambda chunk: chunk[:40]),
        ("numcodecs.lzma", lambda chunk: chunk[:-8] + b"\xff" * 8),
    ],
)
def test_damaged_streams_are_chunk_decode_errors_before_zarr_sees_them(
    tmp_path: Path, name: str, damage: Any
) -> None:
    """Streams zarr's own decoder would refuse with its own error type are refused here with
    ours, naming the chunk and its file."""
    codec, entry = CODECS[name]
    chunk = bytes(damage(bytes(codec.encode(_values().tobytes()))))
    with pytest.raises(ChunkDecodeError, match=r"chunk\.bin: chunk 'a/c/0'"):
        _open(tmp_path, [BYTES, entry], chunk, inline=False)[:]


def test_a_failed_fletcher32_checksum_is_a_chunk_decode_error(tmp_path: Path) -> None:
    chunk = bytearray(numcodecs.Fletcher32().encode(_values().tobytes()))
    chunk[100] ^= 1
    with pytest.raises(ChunkDecodeError, match=r"'a/c/0'.*fletcher32"):
        _open(tmp_path, [BYTES, FLETCHER], bytes(chunk), inline=False)[:]
    with pytest.raises(ChunkDecodeError, match=r"'a/c/0'.*fletcher32"):
        _open(tmp_path, [BYTES, FLETCHER], b"\x01\x02", inline=True)[:]  # shorter than a sum


def test_a_reference_larger_than_any_compressed_chunk_is_refused_before_reading(
    tmp_path: Path,
) -> None:
    """A 4-byte file referenced as 2 GiB of zstd for a 64 KiB chunk: refused from the sizes
    alone (no read: the file is far shorter than the reference)."""
    path = tmp_path / "tiny.bin"
    path.write_bytes(b"tiny")
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "a",
        shape=(ITEMS,),
        data_type="<f4",
        chunk_shape=(ITEMS,),
        fill_value=0,
        codecs=[BYTES, CODECS["zstd"][1]],
    )
    builder.add_chunk("a", (0,), str(path), 0, 2**31)
    store = RfsStore(builder.build())
    array = zarr.open_array(store, path="a", mode="r", zarr_format=3)
    with pytest.raises(ChunkDecodeError, match=r"holds 2147483648 bytes, more than the \d+ bytes"):
        array[:]
    assert store.stats.snapshot().requests == 0


def test_a_damaged_outer_layer_of_nested_compressors_is_a_chunk_decode_error(
    tmp_path: Path,
) -> None:
    zlib_entry, blosc_codec = CODECS["numcodecs.zlib"][1], CODECS["numcodecs.blosc"][0]
    blosc_entry = CODECS["numcodecs.blosc"][1]
    # zlib level 0 stores, so blosc has something to compress (and check) in its blocks.
    chunk = blosc_codec.encode(numcodecs.Zlib(0).encode(bytes(CHUNK_BYTES)))
    truncated = chunk[: len(chunk) // 2]  # an honest header over half the blocks
    with pytest.raises(ChunkDecodeError, match=r"not valid Blosc data"):
        _open(tmp_path, [BYTES, zlib_entry, blosc_entry], truncated, inline=True)[:]
