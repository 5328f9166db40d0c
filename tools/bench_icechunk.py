"""Benchmark of the Icechunk bridge: references per second, rfs → Icechunk and back.

For each way an array's chunks can be described (a gen entry, a chunk manifest, refs listed one
by one), an array of N chunks (default 200,000) pointing into one local file is written into a
fresh repository on the local filesystem with ``rfs_to_icechunk`` (Icechunk's array-at-once
virtual reference setter), committed, and read back with ``icechunk_to_rfs`` (VirtualiZarr's
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
CHUNK_BYTES = CHUNK_ELEMENTS * ITEMSIZE
KINDS = ("gen", "index", "refs")


def build(kind: str, url: str, n_chunks: int) -> ReferenceFileSystem:
    """An array of ``n_chunks`` chunks of ``url``, described the way ``kind`` says; chunk i is
    at (n_chunks - 1 - i) * CHUNK_BYTES for the index (so it is no evenly spaced gen)."""
    builder = RfsBuilder()
    builder.add_array(
        "data", shape=(n_chunks * CHUNK_ELEMENTS,), data_type="<f8", chunk_shape=(CHUNK_ELEMENTS,)
    )
    if kind == "gen":
        builder.add_strided_chunks(
            "data", url=url, start=0, stride=CHUNK_BYTES, length=CHUNK_BYTES, count=n_chunks
        )
    elif kind == "index":
        table = np.empty((n_chunks, 2), dtype=np.uint64)
        table[:, 0] = np.arange(n_chunks, dtype=np.uint64)[::-1] * CHUNK_BYTES
        table[:, 1] = CHUNK_BYTES
        builder.add_index("data", url, table)
    rfs = builder.build()
    if kind == "refs":
        for i in range(n_chunks):
            rfs.refs[chunk_key("data", (i,))] = FileRef(url, i * CHUNK_BYTES, CHUNK_BYTES)
    return rfs


def run(kind: str, folder: Path, url: str, n_chunks: int) -> tuple[float, float, float]:
    prefix = f"{folder.resolve().as_uri()}/"
    rfs = build(kind, url, n_chunks)
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(folder)))
    )
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(folder / f"repo-{kind}")),
        config=config,
        authorize_virtual_chunk_access={prefix: icechunk.credentials.LocalFileSystemAccess},
    )
    session = repo.writable_session("main")
    start = time.perf_counter()
    rfs_to_icechunk(rfs, session)
    written = time.perf_counter() - start
    start = time.perf_counter()
    session.commit(kind)
    committed = time.perf_counter() - start
    start = time.perf_counter()
    back = icechunk_to_rfs(repo.readonly_session("main"))
    read = time.perf_counter() - start
    table = back.indexes["data"].table
    assert table is not None
    assert len(table) == n_chunks
    return written, committed, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200_000, help="chunks per array")
    args = parser.parse_args()
    import virtualizarr.parsers  # noqa: F401  (its first import is slow; not part of the rate)

    n = args.chunks
    print(f"{n:,} chunks per array; refs/s (seconds)")
    print(f"{'chunks in':<10}{'rfs -> icechunk':>24}{'+ commit':>22}{'icechunk -> rfs':>24}")
    with tempfile.TemporaryDirectory(prefix="bench-icechunk-") as tmp:
        folder = Path(tmp)
        source = folder / "source.bin"
        with source.open("wb") as stream:
            stream.truncate(n * CHUNK_BYTES)
        for kind in KINDS:
            written, committed, read = run(kind, folder, str(source), n)
            print(
                f"{kind:<10}{n / written:>15,.0f} ({written:5.2f})"
                f"{n / (written + committed):>13,.0f} ({committed:5.2f})"
                f"{n / read:>15,.0f} ({read:5.2f})"
            )


if __name__ == "__main__":
    main()
