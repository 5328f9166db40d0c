"""A virtual array taken from a reference file system that a generator built.

Its chunks come from three places: refs listed one by one (file ranges and inline bytes), gen
entries (kept as evenly spaced pieces when their offset is affine in the dimensions, listed
otherwise) and the chunk manifest (in memory, or read from a local reference directory).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_spec.arrays import array_info
from shadowzarr_spec.attribute_conventions import decode_attributes
from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.gen_expr import Expression, render_template, split_template
from shadowzarr_spec.io import load_index_table
from shadowzarr_spec.keys import array_of_chunk_key, join
from shadowzarr_spec.model import MISSING_CHUNK, FileRef, InlineRef
from shadowzarr_spec.virtual.layout import MISSING, AffinePiece, TablePiece, VirtualChunkLayout

if TYPE_CHECKING:
    from shadowzarr_spec.gen import GenEntry
    from shadowzarr_spec.model import ReferenceFileSystem, Selection

__all__ = ["RfsArrayParts", "rfs_array_parts"]

MAX_LISTED_GEN_CHUNKS = 10_000_000


@dataclass(frozen=True, slots=True)
class RfsArrayParts:
    """What `VirtualArray.from_rfs` builds the array from (its constructor's arguments; this
    module names no VirtualArray, so the two do not import each other)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    layout: VirtualChunkLayout
    chunk_shape: tuple[int, ...]
    selection: Selection | None
    codecs: list[dict[str, Any]]
    order: list[int] | None
    fill_value: Any
    attributes: dict[str, Any] = field(default_factory=dict)


def rfs_array_parts(rfs: ReferenceFileSystem, path: str) -> RfsArrayParts:
    path = path.strip("/")
    info = array_info(rfs, path)
    if info is None:
        raise ReferenceFormatError(f"there is no array at {path!r} in these references")
    codecs = list(info.codecs)
    order = None
    if codecs and codecs[0].get("name") == "transpose":
        order = [int(o) for o in codecs[0]["configuration"]["order"]]
        codecs = codecs[1:]
    dtype, fill_value = _native(info.data_type, info.fill_value, codecs)
    grid = info.grid
    urls: dict[str, int] = {}
    inline: list[bytes] = []
    codes = np.full(grid, MISSING, dtype=np.int32)
    offsets = np.zeros(grid, dtype=np.int64)
    lengths = np.zeros(grid, dtype=np.int64)

    def put(coords: tuple[int, ...], ref: FileRef | InlineRef) -> None:
        if isinstance(ref, InlineRef):
            codes[coords] = -2 - len(inline)  # marked; renumbered after the urls are known
            inline.append(ref.data)
            return
        if ref.offset is None or ref.size is None:
            raise ReferenceFormatError(
                f"array {path!r}: chunk {coords} references a whole file, whose size the "
                "references do not say"
            )
        codes[coords] = urls.setdefault(ref.url, len(urls))
        offsets[coords] = ref.offset
        lengths[coords] = ref.size

    pieces: list[AffinePiece | TablePiece] = []
    for entry in rfs.gen:
        axes = _gen_axes(entry, path, len(grid))
        if axes is None:
            continue
        piece = _affine_gen(entry, axes)
        if piece is not None:
            pieces.append(piece)
            continue
        if entry.count > MAX_LISTED_GEN_CHUNKS:
            raise ReferenceFormatError(
                f"array {path!r}: gen entry {entry.key!r} is not evenly spaced and lists "
                f"{entry.count} chunks"
            )
        for gen_key, gen_ref in entry.items():
            parsed = array_of_chunk_key(gen_key)
            if parsed is not None and parsed[0] == path and _inside(parsed[1], grid):
                put(parsed[1], gen_ref)
    if path in rfs.indexes:
        index = rfs.indexes[path]
        table = load_index_table(rfs, path)
        written = ~np.all(table == MISSING_CHUNK, axis=-1)
        code = urls.setdefault(index.url, len(urls))
        codes[written] = code
        offsets[written] = table[written, 0].astype(np.int64)
        lengths[written] = table[written, 1].astype(np.int64)
    for key, ref in rfs.refs.items():
        parsed = array_of_chunk_key(key)
        if parsed is None or parsed[0] != path or len(parsed[1]) != len(grid):
            continue
        if not _inside(parsed[1], grid):
            continue
        put(parsed[1], ref)
    if inline:
        marked = codes <= -2
        codes[marked] = len(urls) + (-2 - codes[marked])
    if np.any(codes != MISSING):
        table_piece = TablePiece(
            (0,) * len(grid), tuple(urls), tuple(inline), codes, offsets, lengths
        )
        pieces.insert(0, table_piece)
    selection = rfs.selections.get(path)
    attributes = decode_attributes(info.document.get("attributes", {}))
    return RfsArrayParts(
        shape=info.shape,
        dtype=dtype,
        layout=VirtualChunkLayout(grid, tuple(pieces)),
        chunk_shape=info.chunk_shape,
        selection=selection,
        codecs=codecs,
        order=order,
        fill_value=fill_value,
        attributes=attributes,
    )


def _native(data_type: Any, fill_value: Any, codecs: list[dict[str, Any]]) -> tuple[np.dtype, Any]:
    """The numpy dtype (byte order from the ``bytes`` codec) and fill value of a Zarr type."""
    try:
        from zarr.core.dtype import get_data_type_from_json
    except ModuleNotFoundError as exc:
        raise ImportError(
            "VirtualArray.from_rfs reads Zarr data types with zarr-python, which is not "
            "installed: pip install 'shadowzarr-spec[zarr]'"
        ) from exc

    zdtype = get_data_type_from_json(data_type, zarr_format=3)
    dtype = np.dtype(zdtype.to_native_dtype())
    fill = zdtype.from_json_scalar(fill_value, zarr_format=3) if fill_value is not None else None
    for codec in codecs:
        if codec.get("name") == "bytes":
            endian = (codec.get("configuration") or {}).get("endian")
            if endian == "big":
                dtype = dtype.newbyteorder(">")
            elif endian == "little":
                dtype = dtype.newbyteorder("<")
    return dtype, fill


def _gen_axes(entry: GenEntry, path: str, ndim: int) -> list[str | int] | None:
    """For each chunk axis, the gen dimension naming it or a fixed coordinate; None when the
    entry belongs to another array."""
    prefix = join(path, "c") + "/"
    if not entry.key.startswith(prefix):
        return None
    parts = entry.key[len(prefix) :].split("/")
    if len(parts) != ndim:
        return None
    axes: list[str | int] = []
    for part in parts:
        if part.startswith("{{") and part.endswith("}}"):
            axes.append(part[2:-2].strip())
        elif part.isdigit():
            axes.append(int(part))
        else:
            return None
    return axes


def _affine_gen(entry: GenEntry, axes: list[str | int]) -> AffinePiece | None:
    """The entry as one evenly spaced piece: fixed url and length, each dimension a range of
    step 1 naming one axis, and an offset that is affine in the dimensions."""
    names = [a for a in axes if isinstance(a, str)]
    if len(set(names)) != len(names) or set(names) != set(entry.dimensions):
        return None
    if "{{" in entry.url or not _constant(entry.length):
        return None
    dimensions = entry.dimensions
    if any(dimensions[n].values is not None or dimensions[n].step != 1 for n in names):
        return None
    offset_parts = split_template(entry.offset)
    if len(offset_parts) != 1:
        return None
    form = (
        _linear(offset_parts[0].tree)
        if isinstance(offset_parts[0], Expression)
        else ({}, int(offset_parts[0]))
    )
    if form is None:
        return None
    coefficients, constant = form
    start = tuple(dimensions[a].start if isinstance(a, str) else a for a in axes)
    count = tuple(len(dimensions[a]) if isinstance(a, str) else 1 for a in axes)
    strides = tuple(coefficients.get(a, 0) if isinstance(a, str) else 0 for a in axes)
    if any(n == 0 for n in count):
        return None
    base = constant + sum(s * st for s, st in zip(start, strides, strict=True))
    length = int(render_template(split_template(entry.length), {}))
    return AffinePiece(entry.url, base, length, start, count, strides)


def _constant(text: str) -> bool:
    parts = split_template(text)
    return all(isinstance(p, str) or not p.names for p in parts)


def _linear(node: tuple[object, ...]) -> tuple[dict[str, int], int] | None:
    """(coefficients, constant) of an expression tree that is affine in its names, else None."""
    tag = node[0]
    if tag == "n":
        return {}, int(node[1])  # type: ignore[call-overload]
    if tag == "v":
        return {str(node[1]): 1}, 0
    if tag == "neg":
        inner = _linear(node[1])  # type: ignore[arg-type]
        return None if inner is None else ({k: -v for k, v in inner[0].items()}, -inner[1])
    left = _linear(node[1])  # type: ignore[arg-type]
    right = _linear(node[2])  # type: ignore[arg-type]
    if left is None or right is None:
        return None
    if tag in ("+", "-"):
        sign = 1 if tag == "+" else -1
        names = set(left[0]) | set(right[0])
        coefficients = {n: left[0].get(n, 0) + sign * right[0].get(n, 0) for n in names}
        return coefficients, left[1] + sign * right[1]
    if tag == "*":
        if not left[0]:
            return {n: left[1] * c for n, c in right[0].items()}, left[1] * right[1]
        if not right[0]:
            return {n: right[1] * c for n, c in left[0].items()}, left[1] * right[1]
        return None
    if not left[0] and not right[0] and right[1] != 0:
        return {}, left[1] // right[1] if tag == "//" else left[1] % right[1]
    return None


def _inside(coords: tuple[int, ...], grid: tuple[int, ...]) -> bool:
    return all(0 <= c < g for c, g in zip(coords, grid, strict=True))
