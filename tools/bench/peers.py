"""How each tool opens references for reading, so every workload opens them the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import zarr


def kerchunk_group(refs: dict[str, Any] | str, **options: Any) -> zarr.Group:
    """kerchunk references (a dict, a JSON path or a Parquet folder) read through fsspec's
    ReferenceFileSystem over HTTP, as zarr format 2."""
    import fsspec
    from zarr.storage import FsspecStore

    if isinstance(refs, str):  # fetched whole and parsed: what opening a kerchunk JSON costs
        refs = json.loads(fsspec.filesystem("http").cat(refs))
    fs = fsspec.filesystem(
        "reference",
        fo=refs,
        remote_protocol="http",
        remote_options={"asynchronous": True},
        asynchronous=True,
        **options,
    )
    return zarr.open_group(FsspecStore(fs, read_only=True, path=""), mode="r", zarr_format=2)


BLOCKCACHE_BLOCK = 5 * 2**20
"""fsspec's default block size, which its block cache keeps per block read."""


def h5py_blockcache_file(url: str, block_size: int = BLOCKCACHE_BLOCK) -> Any:
    """An fsspec HTTP file with the block cache (each block read is kept for the life of the
    file), the way fsspec's documentation suggests handing a remote HDF5 file to h5py."""
    import fsspec

    return fsspec.open(url, "rb", block_size=block_size, cache_type="blockcache").open()


def kerchunk_refs(local: Path, url: str) -> dict[str, Any]:
    """kerchunk's SingleHdf5ToZarr references of a local HDF5 file, pointing at ``url``."""
    from kerchunk.hdf import SingleHdf5ToZarr

    refs = SingleHdf5ToZarr(str(local), inline_threshold=0).translate()
    for value in refs["refs"].values():
        if isinstance(value, list) and value and value[0] == str(local):
            value[0] = url
    return refs


def icechunk_repository(rfs: Any, path: Path) -> Any:
    from shadowzarr_icechunk import write_icechunk_repository

    return write_icechunk_repository(rfs, path)


def icechunk_group(path: Path, prefixes: list[str]) -> zarr.Group:
    """A committed repository on local disk whose virtual chunks are read over HTTP from the
    servers ``prefixes`` (opened anew: nothing cached from an earlier open)."""
    import icechunk

    repository = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(path)),
        authorize_virtual_chunk_access=dict.fromkeys(prefixes, icechunk.credentials.HttpAccess),
    )
    session = repository.readonly_session("main")
    return zarr.open_group(session.store, mode="r", zarr_format=3)
