"""Reading arrays back from a reference file system, for tests, until shadowzarr_store exists.

It follows the format's reading rules directly (refs, then gen; a chunk that ends early at the
end of a file is padded with the fill value; a longer one is an error) and reads local files
only, so it is independent of the store it will later be compared with.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import FileRef, InlineRef

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem


def array_metadata(rfs: ReferenceFileSystem, path: str) -> dict:
    ref = rfs.refs[f"{path}/zarr.json" if path else "zarr.json"]
    assert isinstance(ref, InlineRef)
    return json.loads(ref.data)


def _chunk_ref(rfs: ReferenceFileSystem, key: str) -> FileRef | InlineRef | None:
    if key in rfs.refs:
        return rfs.refs[key]
    for entry in rfs.gen:
        found = entry.lookup(key)
        if found is not None:
            return found
    return None


def _read(ref: FileRef | InlineRef) -> bytes:
    if isinstance(ref, InlineRef):
        return ref.data
    with open(ref.url, "rb") as f:
        if ref.offset is None:
            return f.read()
        f.seek(ref.offset)
        return f.read(ref.size)


def read_array(rfs: ReferenceFileSystem, path: str) -> np.ndarray:
    """The whole array at ``path``, decoded from the bytes its references point at."""
    meta = array_metadata(rfs, path)
    shape = tuple(meta["shape"])
    chunk_shape = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    order = None
    endian = "little"
    for codec in meta["codecs"]:
        if codec["name"] == "transpose":
            order = tuple(codec["configuration"]["order"])
        elif codec["name"] == "bytes":
            endian = codec.get("configuration", {}).get("endian", "little")
        else:
            raise AssertionError(f"unexpected codec {codec}")
    dtype = np.dtype(meta["data_type"]).newbyteorder("<" if endian == "little" else ">")
    out = np.zeros(shape, dtype=dtype)
    grid = tuple(math.ceil(s / c) for s, c in zip(shape, chunk_shape, strict=True))
    chunk_bytes = math.prod(chunk_shape) * dtype.itemsize
    for coords in np.ndindex(*grid):
        key = f"{path}/c/" + "/".join(str(c) for c in coords)
        ref = _chunk_ref(rfs, key)
        if ref is None:
            continue
        data = _read(ref)
        assert len(data) <= chunk_bytes, f"{key}: {len(data)} bytes for a {chunk_bytes}-byte chunk"
        if isinstance(ref, FileRef) and ref.size is not None and len(data) < ref.size:
            data += b"\x00" * (chunk_bytes - len(data))  # padding rule: end of file
        assert len(data) == chunk_bytes, f"{key}: {len(data)} bytes, expected {chunk_bytes}"
        stored_shape = chunk_shape if order is None else tuple(chunk_shape[i] for i in order)
        chunk = np.frombuffer(data, dtype=dtype).reshape(stored_shape)
        if order is not None:
            chunk = chunk.transpose(np.argsort(order))
        region = tuple(
            slice(c * n, min((c + 1) * n, s))
            for c, n, s in zip(coords, chunk_shape, shape, strict=True)
        )
        out[region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
    return out
