"""Benchmark of the Icechunk bridge: references per second, rfs → Icechunk and back.

Three arrays of N chunks each (default 200,000) point into one local file: one described by a
gen entry, one by a chunk index and one listed chunk by chunk in refs. They are written into a
fresh repository on the local filesystem with ``rfs_to_icechunk`` (Icechunk's array-at-once
virtual reference setter) and read back with ``icechunk_to_rfs`` (VirtualiZarr's
IcechunkParser). Run: ``uv run python tools/bench_icechunk.py [--chunks 200000]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import icechunk
import numpy as np
from shadowzarr_icechunk import icechunk_to_rfs, rfs_to_icechunk
from shadowzarr_spec import FileRef, ReferenceFileSystem, RfsBuilder
from shadowzarr_spec.keys import chunk_key

CHUNK_ELEMENTS = 4
ITEMSIZE = 8


def build(folder: Path, n_chunks: int) -> tuple[ReferenceFileSystem, str]:
    chunk_bytes = CHUNK_ELEMENTS * ITEMSIZE
    source = folder / "source.bin"
    with source.open("wb") as stream:
        stream.truncate(n_chunks * chunk_bytes)
    url = str(source)
    builder = RfsBuilder()
    for name in ("gen", "indexed", "listed"):
        builder.add_array(
            name, shape=(n_chunks * CHUNK_ELEMENTS,), data_type="<f8", chunk_shape=(CHUNK_ELEMENTS,)
        )
    builder.add_strided_chunks(
        "gen", url=url, start=0, stride=chunk_bytes, length=chunk_bytes, count=n_chunks
    )
    table = np.empty((n_chunks, 2), dtype=np.uint64)
    table[:, 0] = np.arange(n_chunks, dtype=np.uint64)[::-1] * chunk_bytes
    table[:, 1] = chunk_bytes
    builder.add_index("indexed", url, table)
    rfs = builder.build()
    for i in range(n_chunks):
        rfs.refs[chunk_key("listed", (i,))] = FileRef(url, i * chunk_bytes, chunk_bytes)
    return rfs, f"{folder.resolve().as_uri()}/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200_000, help="chunks per array")
    args = parser.parse_args()
    import virtualizarr.parsers  # noqa: F401  (its first import is slow; not part of the rate)
    with tempfile.TemporaryDirectory(prefix="bench-icechunk-") as tmp:
        folder = Path(tmp)
        rfs, prefix = build(folder, args.chunks)
        total = 3 * args.chunks
        config = icechunk.RepositoryConfig.default()
        config.set_virtual_chunk_container(
            icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(tmp))
        )
        repo = icechunk.Repository.create(
            icechunk.local_filesystem_storage(str(folder / "repo")),
            config=config,
            authorize_virtual_chunk_access={prefix: icechunk.credentials.LocalFileSystemAccess},
        )
        session = repo.writable_session("main")
        start = time.perf_counter()
        rfs_to_icechunk(rfs, session)
        written = time.perf_counter() - start
        start = time.perf_counter()
        session.commit("bench")
        committed = time.perf_counter() - start
        start = time.perf_counter()
        back = icechunk_to_rfs(repo.readonly_session("main"))
        read = time.perf_counter() - start
        assert set(back.indexes) == {"gen", "indexed", "listed"}
        index_table = back.indexes["indexed"].table
        assert index_table is not None
        assert int(index_table[0, 0]) == (args.chunks - 1) * CHUNK_ELEMENTS * ITEMSIZE

        print(f"arrays: gen, chunk index, listed refs; {args.chunks:,} chunks each ({total:,})")
        print(
            f"rfs -> icechunk: {written:.2f} s ({total / written:,.0f} refs/s), "
            f"commit {committed:.2f} s ({total / (written + committed):,.0f} refs/s with it)"
        )
        print(f"icechunk -> rfs: {read:.2f} s ({total / read:,.0f} refs/s)")


if __name__ == "__main__":
    main()
