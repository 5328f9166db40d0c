"""What a reader needs to know about one array, read from its inline ``zarr.json``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.json_text import parse_json
from shadowzarr_spec.keys import chunk_grid_shape, metadata_key
from shadowzarr_spec.model import InlineRef, ReferenceFileSystem

__all__ = ["ArrayInfo", "array_info", "array_paths"]

UNCOMPRESSED_CODECS = frozenset({"bytes", "transpose"})


@dataclass(frozen=True, slots=True)
class ArrayInfo:
    path: str
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    data_type: Any
    fill_value: Any
    codecs: tuple[dict[str, Any], ...]
    document: dict[str, Any]

    @property
    def grid(self) -> tuple[int, ...]:
        return chunk_grid_shape(self.shape, self.chunk_shape)

    @property
    def uncompressed(self) -> bool:
        """True when a chunk's bytes are the array's bytes (so it can be padded or sliced)."""
        return all(codec.get("name") in UNCOMPRESSED_CODECS for codec in self.codecs)


def array_info(rfs: ReferenceFileSystem, path: str) -> ArrayInfo | None:
    """The array at ``path``, or None when ``path`` is not an array."""
    ref = rfs.refs.get(metadata_key(path))
    if not isinstance(ref, InlineRef):
        return None
    document = parse_json(ref.data)
    if not isinstance(document, dict) or document.get("node_type") != "array":
        return None
    try:
        grid = document["chunk_grid"]
        if not isinstance(grid, dict) or grid.get("name") != "regular":
            raise ReferenceFormatError(f"array {path!r}: only regular chunk grids are supported")
        shape = _integers(document["shape"], minimum=0)
        chunk_shape = _integers(grid["configuration"]["chunk_shape"], minimum=1)
        codecs = document.get("codecs", [])
        if len(shape) != len(chunk_shape):
            raise ValueError(f"shape {shape} and chunk shape {chunk_shape} differ in length")
        if not isinstance(codecs, list) or not all(isinstance(c, dict) for c in codecs):
            raise ValueError("codecs must be a list of objects")
        return ArrayInfo(
            path=path,
            shape=shape,
            chunk_shape=chunk_shape,
            data_type=document["data_type"],
            fill_value=document.get("fill_value"),
            codecs=tuple(codecs),
            document=document,
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, ReferenceFormatError):
            raise
        raise ReferenceFormatError(f"array {path!r} has malformed metadata: {exc}") from exc


def _integers(value: object, *, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in value
    ):
        raise ValueError(f"expected a list of integers of at least {minimum}, got {value!r}")
    return tuple(value)


def array_paths(rfs: ReferenceFileSystem) -> list[str]:
    """Paths of every node with a ``zarr.json`` whose node type is array."""
    paths = []
    for key in rfs.refs:
        if key == "zarr.json" or key.endswith("/zarr.json"):
            path = key[: -len("zarr.json")].rstrip("/")
            if array_info(rfs, path) is not None:
                paths.append(path)
    return paths
