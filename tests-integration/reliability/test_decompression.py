"""Chunks that decompress far beyond their size (zip bombs) are refused before zarr decodes them.

Budget: one 16 MiB bomb per codec (zlib, gzip, zstd with and without a content size, blosc,
LZ4, bzip2, LZMA) for a chunk declared as 4 KiB, fetched from nginx and inline in the references
(16 bombs), each refused with `ChunkDecodeError` naming the chunk and where it came from (the
deflate ones by their size alone, before they are read), with
at most a few chunk sizes of memory allocated (traced); the same codecs' legitimate chunks read
bit-exact over nginx; an HDF5 file (shuffle, deflate, fletcher32) written by h5py reads equal to
h5py, and the same references with a bomb in place of a chunk are refused.
"""

from __future__ import annotations

import functools
import struct
import tracemalloc
from typing import TYPE_CHECKING, Any

import h5py
import numcodecs
import numpy as np
import pytest
import zarr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import ChunkDecodeError, InlineRef, RfsBuilder
from shadowzarr_store import RfsStore
from shadowzarr_testing import assert_array_equal_exact

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

pytestmark = [pytest.mark.network]

BOMB_BYTES = 16 << 20
ITEMS = 1024  # int32: 4 KiB chunks
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _zstd_unsized(raw_size: int) -> bytes:
    """A zstd frame of RLE blocks that states no content size (the header cannot be trusted)."""
    block = 128 << 10
    count = raw_size // block
    header = struct.pack("<IBB", 0xFD2FB528, 0, (17 - 10) << 3)
    blocks = b"".join(
        (int(i == count - 1) | 1 << 1 | block << 3).to_bytes(3, "little") + b"\0"
        for i in range(count)
    )
    return header + blocks


# name → (encode raw bytes, zarr codec entry)
CODECS: dict[str, tuple[Any, dict[str, Any]]] = {
    "zlib": (numcodecs.Zlib(1).encode, {"name": "numcodecs.zlib", "configuration": {"level": 1}}),
    "gzip": (numcodecs.GZip(1).encode, {"name": "gzip", "configuration": {"level": 1}}),
    "zstd": (
        numcodecs.Zstd(1).encode,
        {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    ),
    "zstd-unsized": (
        lambda raw: _zstd_unsized(len(raw)) if not any(raw) else numcodecs.Zstd(1).encode(raw),
        {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    ),
    "blosc": (
        numcodecs.Blosc("zstd", 5, numcodecs.Blosc.SHUFFLE, typesize=4).encode,
        {
            "name": "blosc",
            "configuration": {
                "cname": "zstd",
                "clevel": 5,
                "shuffle": "shuffle",
                "typesize": 4,
                "blocksize": 0,
            },
        },
    ),
    "lz4": (numcodecs.LZ4().encode, {"name": "numcodecs.lz4", "configuration": {}}),
    "bz2": (numcodecs.BZ2(9).encode, {"name": "numcodecs.bz2", "configuration": {"level": 9}}),
    # A 1 MiB dictionary (preset 1): the decoder's dictionary is not the bomb's output.
    "lzma": (numcodecs.LZMA(preset=1).encode, {"name": "numcodecs.lzma", "configuration": {}}),
}


@functools.cache
def _bomb(name: str) -> bytes:
    bomb = bytes(CODECS[name][0](bytes(BOMB_BYTES)))
    assert len(bomb) < BOMB_BYTES // 200, f"{name}: {len(bomb)} bytes is no bomb"
    return bomb


def _references(name: str, chunk: bytes, *, url: str | None) -> RfsBuilder:
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "a",
        shape=(ITEMS,),
        data_type="<i4",
        chunk_shape=(ITEMS,),
        fill_value=0,
        codecs=[BYTES, CODECS[name][1]],
    )
    if url is None:
        builder.add_inline_chunk("a", (0,), chunk)
    else:
        builder.add_chunk("a", (0,), url, 0, len(chunk))
    return builder


@pytest.mark.parametrize("inline", [False, True], ids=["fetched", "inline"])
@pytest.mark.parametrize("name", sorted(CODECS))
def test_a_chunk_decompressing_far_beyond_its_size_is_refused(
    nginx: NginxServer, nginx_root: Path, name: str, inline: bool
) -> None:
    bomb = _bomb(name)
    url = None
    if not inline:
        (nginx_root / f"{name}.bomb").write_bytes(bomb)
        url = nginx.url(f"{name}.bomb")
    rfs = _references(name, bomb, url=url).build()
    if inline:
        assert isinstance(rfs.refs["a/c/0"], InlineRef)
    store = RfsStore(rfs)
    array = zarr.open_array(store, path="a", mode="r", zarr_format=3)
    tracemalloc.start()
    try:
        with pytest.raises(ChunkDecodeError) as caught:
            array[:]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        store.close()
    message = str(caught.value)
    assert "'a/c/0'" in message
    # Refused by what it would decompress to, or (deflate bombs of 70 KiB and more) already by
    # its size: no 4 KiB chunk compresses to that much.
    assert "4096 bytes" in message or "any chunk of array 'a' compresses to" in message
    assert (url if url else "inline reference") in message
    # Refused after at most about a MiB of output (the inflate step), never the 16 MiB.
    assert peak < 4 << 20, f"{name}: {peak} bytes allocated while refusing the bomb"


@pytest.mark.parametrize("name", sorted(CODECS))
def test_legitimate_chunks_of_each_codec_read_bit_exact(
    nginx: NginxServer, nginx_root: Path, name: str
) -> None:
    values = np.random.default_rng(3).integers(-1000, 1000, ITEMS, dtype="<i4")
    chunk = bytes(CODECS[name][0](values.tobytes()))
    (nginx_root / f"{name}.chunk").write_bytes(chunk)
    rfs = _references(name, chunk, url=nginx.url(f"{name}.chunk")).build()
    array = zarr.open_array(RfsStore(rfs), path="a", mode="r", zarr_format=3)
    assert_array_equal_exact(array[:], values, name)


def test_hdf5_deflate_chunks_read_equal_to_h5py_and_a_bomb_among_them_is_refused(
    nginx: NginxServer, nginx_root: Path
) -> None:
    path = nginx_root / "filtered.h5"
    values = np.cumsum(np.random.default_rng(5).normal(size=(64, 4096)), axis=1).astype("<f4")
    with h5py.File(path, "w") as file:
        file.create_dataset(
            "signal",
            data=values,
            chunks=(16, 1024),
            compression="gzip",
            compression_opts=4,
            shuffle=True,
            fletcher32=True,
        )
    rfs = generate_rfs(nginx.url("filtered.h5"), local_hdf5_path=path, progress=False)
    with h5py.File(path, "r") as file:
        expected = file["signal"][...]
    array = zarr.open_array(RfsStore(rfs), path="signal", mode="r", zarr_format=3)
    assert_array_equal_exact(array[:], expected, "HDF5 deflate chunks")

    # The same references, with one chunk replaced by a bomb in HDF5's own chain.
    raw = numcodecs.Shuffle(4).encode(bytes(BOMB_BYTES))
    bomb = bytes(numcodecs.Fletcher32().encode(numcodecs.Zlib(9).encode(raw)))
    rfs.refs["signal/c/1/2"] = InlineRef(bomb)
    array = zarr.open_array(RfsStore(rfs), path="signal", mode="r", zarr_format=3)
    assert_array_equal_exact(array[:16], expected[:16], "rows before the bomb")
    with pytest.raises(ChunkDecodeError, match=r"'signal/c/1/2'.*numcodecs\.zlib"):
        array[16:32]
