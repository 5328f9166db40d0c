"""References for one array of a Zarr v3 store (local, HTTP, an object store): its metadata
inline, each chunk a whole-file reference. One read of ``zarr.json``; chunks are read on demand."""

from __future__ import annotations

import itertools
import json
import math
from typing import TYPE_CHECKING

from shadowzarr_spec import (
    FileRef,
    InlineRef,
    ReferenceFileSystem,
    SourceNotFoundError,
    UnsupportedFeatureError,
)
from shadowzarr_spec.keys import array_of_chunk_key
from zarr.core.metadata.v3 import ArrayV3Metadata

from shadowzarr_store.rfs_store import RfsStore

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype

    from shadowzarr_store.transport import Transport

__all__ = ["MAX_ZARR_CHUNKS", "ZarrSourceStore", "zarr_references"]

MAX_ZARR_CHUNKS = 1_000_000
_ROOT = InlineRef(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}).encode())


async def zarr_references(
    transport: Transport, container: str, dataset: str
) -> ReferenceFileSystem:
    """References for the array ``dataset`` of the Zarr v3 store at ``container``."""
    base = container.rstrip("/") + (f"/{dataset}" if dataset else "")
    document = await transport.read_whole(f"{base}/zarr.json")
    metadata = json.loads(document)
    if metadata.get("zarr_format") != 3 or metadata.get("node_type") != "array":
        raise UnsupportedFeatureError(f"{base}: not a Zarr v3 array (zarr.json)")
    parsed = ArrayV3Metadata.from_dict(dict(metadata))
    grid = getattr(parsed.chunk_grid, "chunk_shape", None)
    if grid is None:
        raise UnsupportedFeatureError(f"{base}: only regular chunk grids are supported")
    counts = [math.ceil(size / chunk) for size, chunk in zip(parsed.shape, grid, strict=True)]
    if math.prod(counts) > MAX_ZARR_CHUNKS:
        raise UnsupportedFeatureError(f"{base}: more than {MAX_ZARR_CHUNKS} chunks")
    prefix = f"{dataset}/" if dataset else ""
    refs: dict[str, InlineRef | FileRef] = {"zarr.json": _ROOT}
    parts = dataset.split("/") if dataset else []
    for depth in range(1, len(parts)):
        refs["/".join(parts[:depth]) + "/zarr.json"] = _ROOT
    refs[f"{prefix}zarr.json"] = InlineRef(document)
    for coords in itertools.product(*(range(count) for count in counts)):
        chunk_key = parsed.encode_chunk_key(coords)
        refs[prefix + chunk_key] = FileRef(f"{base}/{chunk_key}")
    return ReferenceFileSystem(refs=refs)


class ZarrSourceStore(RfsStore):
    """`RfsStore` over a Zarr store's chunk files: a chunk file that does not exist was never
    written, so zarr reads it as the fill value (Zarr's own rule), instead of an error."""

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        try:
            return await super().get(key, prototype, byte_range)
        except SourceNotFoundError:
            if array_of_chunk_key(key) is None:
                raise
            return None
