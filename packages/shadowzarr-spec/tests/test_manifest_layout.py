"""Chunk manifests written by other Zarr writers read as their own zarr.json describes them.

zarr-python writes each index here with its own choices (chunk shapes unlike ours, the last axis cut
in two, zstd, gzip, no compressor, big-endian, transposed, ``v2`` keys, a fill value of 0 with empty
chunks never written, which is refused); every table must load equal to the one written (the store's
reading of them: shadowzarr-store's ``test_index_arrays``). Compressed index chunks are checked
before any native decoder runs: a Blosc index chunk claiming 512 MiB is refused from its header.
"""

from __future__ import annotations

import shutil
import tracemalloc
from typing import TYPE_CHECKING, Any

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.codecs import BytesCodec, GzipCodec, TransposeCodec, ZstdCodec

from shadowzarr_spec import (
    MISSING_CHUNK,
    ReferenceFormatError,
    RfsBuilder,
    SourceNotFoundError,
    UnsupportedFeatureError,
    load_index_table,
    read_local_rfs,
    write_rfs,
)

if TYPE_CHECKING:
    from pathlib import Path

CHUNKS = 4800  # data chunks of 2 uint32 each
GRID = (CHUNKS,)


def _directory(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A reference directory (written by shadowzarr) over a file of CHUNKS 8-byte chunks,
    every tenth never written; returns it and its index table."""
    values = np.arange(CHUNKS * 2, dtype="<u4")
    data = tmp_path / "data.bin"
    data.write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "a",
        shape=(CHUNKS * 2,),
        data_type="<u4",
        chunk_shape=(2,),
        fill_value=7,
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}],
    )
    for i in range(CHUNKS):
        if i % 10 != 3:
            builder.add_chunk("a", (i,), str(data), 8 * i, 8)
    # the index array's own files only (not carried in refs.json): those are what these
    # tests rewrite and damage
    directory = write_rfs(builder.build(), tmp_path / "refs", inline_index_bytes=0)
    return directory, load_index_table(read_local_rfs(directory), "a")


WRITERS: dict[str, dict[str, Any]] = {
    "other-chunks-zstd": {"chunks": (600, 2)},  # zarr-python's default compressor
    "last-axis-split-gzip": {"chunks": (1000, 1), "compressors": [GzipCodec(level=5)]},
    "uncompressed-big-endian": {
        "chunks": (1200, 2),
        "compressors": None,
        "serializer": BytesCodec(endian="big"),
    },
    "transposed": {"chunks": (700, 2), "filters": [TransposeCodec(order=(1, 0))]},
    "v2-keys-zstd": {
        "chunks": (2400, 2),
        "compressors": [ZstdCodec(level=3)],
        "chunk_key_encoding": {"name": "v2", "separator": "."},
    },
}


def _rewrite_index(directory: Path, table: np.ndarray, fill: int, **options: Any) -> None:
    root = directory / "index" / "a"
    shutil.rmtree(root)
    index = zarr.create_array(
        store=str(root),
        shape=table.shape,
        dtype="uint64",
        fill_value=fill,
        zarr_format=3,
        config={"write_empty_chunks": False},
        **options,
    )
    index[...] = table


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_an_index_written_by_zarr_python_loads_equal(tmp_path: Path, writer: str) -> None:
    directory, table = _directory(tmp_path)
    _rewrite_index(directory, table, int(MISSING_CHUNK), **WRITERS[writer])
    rfs = read_local_rfs(directory)
    np.testing.assert_array_equal(load_index_table(rfs, "a"), table)


def test_a_missing_index_chunk_is_an_error_not_the_fill_value(tmp_path: Path) -> None:
    """Empty index chunks left unwritten (write_empty_chunks=False): refused, since a lost
    file would otherwise read every chunk it covers as never written."""
    directory, table = _directory(tmp_path)
    sparse = np.zeros_like(table)
    sparse[:600] = table[:600]
    _rewrite_index(directory, sparse, 0, chunks=(600, 2))
    assert not (directory / "index" / "a" / "c" / "5" / "0").exists()
    with pytest.raises(SourceNotFoundError, match="chunk c/1/0 is missing"):
        load_index_table(read_local_rfs(directory), "a")


def test_a_blosc_index_chunk_claiming_512_mib_is_refused_from_its_header(tmp_path: Path) -> None:
    directory, _ = _directory(tmp_path)
    bomb = numcodecs.Blosc("zstd", 5, numcodecs.Blosc.SHUFFLE).encode(bytes(512 << 20))
    assert len(bomb) < 8 << 20
    (directory / "index" / "a" / "c" / "0" / "0").write_bytes(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(ReferenceFormatError, match="not valid Blosc data"):
            load_index_table(read_local_rfs(directory), "a")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak} bytes allocated refusing the bomb"


def test_a_sharded_index_is_refused_by_name(tmp_path: Path) -> None:
    directory, table = _directory(tmp_path)
    _rewrite_index(directory, table, int(MISSING_CHUNK), chunks=(600, 2), shards=(1200, 2))
    with pytest.raises(UnsupportedFeatureError, match="sharding_indexed"):
        load_index_table(read_local_rfs(directory), "a")
