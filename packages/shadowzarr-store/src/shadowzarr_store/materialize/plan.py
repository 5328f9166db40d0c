"""What materialize does with each node: copy it as stored, or rewrite it in a new layout."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
from shadowzarr_spec import ReferenceFileSystem, array_info, parse_json
from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_spec.model import InlineRef

__all__ = ["ArrayPlan", "Layout", "NodePlan", "Regions", "plan_nodes", "regions"]

TARGET_CHUNK_BYTES = 4 * 2**20

type Layout = Callable[[str, Any], dict[str, Any] | None]
"""``layout(path, source_array)``: arguments for ``zarr.create_array`` (chunks, compressors, …),
``{}`` for the defaults, or None to copy the array's chunks as they are stored."""


@dataclass(frozen=True, slots=True)
class NodePlan:
    path: str
    document: dict[str, Any]


@dataclass(slots=True)
class ArrayPlan:
    path: str
    document: dict[str, Any]
    rewrite: bool
    create_arguments: dict[str, Any] = field(default_factory=dict)
    chunk_shape: tuple[int, ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.document["shape"])


def plan_nodes(
    rfs: ReferenceFileSystem,
    source_arrays: Callable[[str], Any],
    layout: Layout | None,
    target_bytes: int,
) -> tuple[list[NodePlan], list[ArrayPlan]]:
    """Groups to copy and arrays to copy or rewrite, parents before children."""
    referenced = _arrays_with_references(rfs)
    groups: list[NodePlan] = []
    arrays: list[ArrayPlan] = []
    for key in sorted(rfs.refs, key=lambda k: (k.count("/"), k)):
        if not (key == "zarr.json" or key.endswith("/zarr.json")):
            continue
        ref = rfs.refs[key]
        if not isinstance(ref, InlineRef):
            continue
        path = key[: -len("zarr.json")].rstrip("/")
        document = parse_json(ref.data)
        if document.get("node_type") != "array":
            document = {k: v for k, v in document.items() if k != "consolidated_metadata"}
            groups.append(NodePlan(path, document))
            continue
        info = array_info(rfs, path)
        assert info is not None
        if path not in referenced:
            arrays.append(ArrayPlan(path, document, rewrite=False))
            continue
        source = source_arrays(path)
        choice = layout(path, source) if layout is not None else {}
        numeric = np.dtype(source.dtype).kind in "biufc" if _is_plain_dtype(source) else False
        if choice is None or (layout is None and not numeric) or (not numeric and not choice):
            arrays.append(ArrayPlan(path, document, rewrite=False))
            continue
        arguments = dict(choice)
        chunk_shape = tuple(
            arguments.pop("chunks", None) or default_chunks(info.shape, source.dtype, target_bytes)
        )
        arrays.append(
            ArrayPlan(
                path, document, rewrite=True, create_arguments=arguments, chunk_shape=chunk_shape
            )
        )
    return groups, arrays


def default_chunks(shape: tuple[int, ...], dtype: Any, target_bytes: int) -> tuple[int, ...]:
    """About ``target_bytes`` per chunk, cut along the first axis only."""
    if not shape:
        return ()
    row_bytes = max(1, math.prod(shape[1:]) * np.dtype(dtype).itemsize)
    rows = max(1, min(shape[0], target_bytes // row_bytes))
    return (rows, *shape[1:]) if shape[0] else (1, *shape[1:])


class Regions(Sequence[tuple[slice, ...]]):
    """One region per destination chunk, in C order, computed when asked for: an array of
    millions of chunks costs no list of millions of regions."""

    def __init__(self, shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> None:
        self._shape = shape
        self._chunk_shape = chunk_shape
        self._counts = tuple(
            math.ceil(s / c) if s else 0 for s, c in zip(shape, chunk_shape, strict=True)
        )

    def __len__(self) -> int:
        return math.prod(self._counts)

    @overload
    def __getitem__(self, index: int) -> tuple[slice, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[slice, ...]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        if not self._shape:
            return ()
        coords = np.unravel_index(index % len(self), self._counts)
        return tuple(
            slice(int(i) * c, min((int(i) + 1) * c, s))
            for i, c, s in zip(coords, self._chunk_shape, self._shape, strict=True)
        )


def regions(shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> Regions:
    """One region per destination chunk, in C order (lazily)."""
    return Regions(shape, chunk_shape)


def _arrays_with_references(rfs: ReferenceFileSystem) -> set[str]:
    """Arrays with at least one chunk outside the reference file (so rewriting makes sense)."""
    paths = set(rfs.indexes)
    for key, ref in rfs.refs.items():
        if not isinstance(ref, InlineRef):
            split = array_of_chunk_key(key)
            if split is not None:
                paths.add(split[0])
    for entry in rfs.gen:
        split = array_of_chunk_key(entry.key.split("{{", 1)[0] + "0")
        if split is not None:
            paths.add(split[0])
    return paths


def _is_plain_dtype(array: Any) -> bool:
    try:
        return np.dtype(array.dtype).fields is None
    except TypeError:
        return False
