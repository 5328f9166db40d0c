"""Shared fixtures of the generate_rfs tests: open what we generate as zarr groups."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import zarr
from shadowzarr_spec import FileRef, InlineRef, ReferenceFileSystem, read_local_rfs, rfs_to_json
from shadowzarr_spec.arrays import array_info
from zarr.core.buffer import cpu
from zarr.storage import MemoryStore


def _fill_bytes(info: Any) -> bytes:
    array = zarr.create_array(
        MemoryStore(), shape=(1,), dtype=_native(info), fill_value=None, zarr_format=3
    )
    del array
    from zarr.core.dtype import get_data_type_from_json

    zdtype = get_data_type_from_json(info.data_type, zarr_format=3)
    scalar = zdtype.from_json_scalar(info.fill_value, zarr_format=3)
    native = zdtype.to_native_dtype()
    return np.array([scalar], dtype=native).tobytes()


def _native(info: Any) -> Any:
    from zarr.core.dtype import get_data_type_from_json

    return get_data_type_from_json(info.data_type, zarr_format=3).to_native_dtype()


def materialize(rfs: ReferenceFileSystem) -> zarr.Group:
    """Every key of ``rfs`` read into memory, short uncompressed chunks padded with the fill
    value, as a read-only zarr group: an independent reader of what generate_rfs writes."""
    document = rfs_to_json(rfs, expand=True)
    expanded = read_local_rfs(document)
    values: dict[str, Any] = {}
    for key, ref in expanded.refs.items():
        if isinstance(ref, InlineRef):
            values[key] = cpu.Buffer.from_bytes(ref.data)
    for key, ref in expanded.refs.items():
        if not isinstance(ref, FileRef):
            continue
        with open(ref.url, "rb") as handle:
            if ref.offset is None:
                data = handle.read()
            else:
                handle.seek(ref.offset)
                data = handle.read(ref.size)
        array_path = key.rsplit("/c", 1)[0] if "/c" in key else ""
        info = array_info(expanded, array_path)
        if info is not None and info.uncompressed:
            full = math.prod(info.chunk_shape) * _native(info).itemsize
            if len(data) < full:
                fill = _fill_bytes(info)
                missing = full - len(data)
                data += (fill * (missing // len(fill) + 1))[:missing]
            assert len(data) == full, f"{key}: {len(data)} bytes for a chunk of {full}"
        values[key] = cpu.Buffer.from_bytes(data)
    return zarr.open_group(MemoryStore(values, read_only=True), mode="r", zarr_format=3)


@pytest.fixture
def open_refs() -> Callable[..., zarr.Group]:
    """The product's reader: RfsStore through open_rfs (store options as keywords)."""
    from shadowzarr_store import open_rfs

    return open_rfs


@pytest.fixture
def materialize_refs() -> Callable[[ReferenceFileSystem], zarr.Group]:
    """An independent reader: fsspec-style expansion into memory (version 1 semantics)."""
    return materialize
