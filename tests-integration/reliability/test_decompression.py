"""Chunks that decompress far beyond their declared size (zip bombs) are refused, not returned.

Budget: one 16 MiB bomb per codec (zlib, zstd, blosc), fetched from a file and inline in the
references, for a chunk declared as 4 KiB. Known gap (see the suite's report): the refusal comes
from zarr's codec pipeline after the whole bomb is decompressed, so memory is bounded only by the
bomb's size, and the error is zarr's ValueError rather than `ChunkDecodeError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numcodecs
import pytest
import zarr
from shadowzarr_spec import RfsBuilder, ShadowzarrError
from shadowzarr_store import RfsStore

if TYPE_CHECKING:
    from pathlib import Path

RAW = b"\0" * (16 << 20)
CODECS = {
    "zlib": (numcodecs.Zlib(1), {"name": "numcodecs.zlib", "configuration": {"level": 1}}),
    "zstd": (
        numcodecs.Zstd(1),
        {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    ),
    "blosc": (
        numcodecs.Blosc("zstd", 5, numcodecs.Blosc.SHUFFLE, typesize=4),
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
}


@pytest.mark.parametrize("inline", [False, True], ids=["fetched", "inline"])
@pytest.mark.parametrize("name", sorted(CODECS))
def test_a_chunk_decompressing_far_beyond_its_size_is_refused(
    tmp_path: Path, name: str, inline: bool
) -> None:
    codec, config = CODECS[name]
    bomb = codec.encode(RAW)
    assert len(bomb) < len(RAW) // 100
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "a",
        shape=(1024,),
        data_type="<i4",
        chunk_shape=(1024,),
        fill_value=0,
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, config],
    )
    if inline:
        builder.add_inline_chunk("a", (0,), bomb)
    else:
        path = tmp_path / "bomb.bin"
        path.write_bytes(bomb)
        builder.add_chunk("a", (0,), str(path), 0, len(bomb))
    rfs = builder.build()
    if inline:
        assert rfs.refs["a/c/0"].data == bomb
    array = zarr.open_array(RfsStore(rfs), path="a", mode="r", zarr_format=3)
    with pytest.raises((ValueError, ShadowzarrError), match=r"reshape|size|bytes"):
        array[:]
