"""Joining virtual arrays along a new axis; joining end to end is refused, with the reason."""

from __future__ import annotations

from collections.abc import Sequence

from shadowzarr_spec.errors import NotVirtualizable
from shadowzarr_spec.virtual.array import VirtualArray
from shadowzarr_spec.virtual.layout import stack_layouts

__all__ = ["concatenate", "stack"]


def stack(arrays: Sequence[VirtualArray], axis: int = 0) -> VirtualArray:
    """Arrays of one shape, dtype and chunking side by side along a new ``axis``.

    Each keeps its chunks, which get one more coordinate (the array's position); the new axis
    has chunks of one element. Arrays stored one after another in one file with even spacing
    become a single gen entry.
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack needs at least one array")
    ndim = arrays[0].ndim
    if not -ndim - 1 <= axis <= ndim:
        raise IndexError(f"axis {axis} is out of bounds for stacking {ndim}-d arrays")
    axis %= ndim + 1
    signature = arrays[0]._stack_signature()
    for position, array in enumerate(arrays[1:], start=1):
        other = array._stack_signature()
        if other != signature:
            names = ("shape", "dtype", "chunk shape", "codecs", "selection", "fill value")
            differing = [n for n, a, b in zip(names, signature, other, strict=True) if a != b]
            raise ValueError(
                f"array {position} differs from array 0 in its {', '.join(differing)}: stacked "
                "arrays must share shape, dtype, chunking, codecs, selection and fill value"
            )
    chunked = [array._chunked() for array in arrays]
    first = chunked[0]
    layout = stack_layouts([c._layout for c in chunked], axis)  # type: ignore[misc]
    chunk_shape = list(first.chunk_shape)
    chunk_shape.insert(axis, 1)
    shape = list(first.shape)
    shape.insert(axis, len(arrays))
    order = None
    if first._order is not None:
        order = [axis, *(o + (o >= axis) for o in first._order)]
    return VirtualArray(
        shape=shape,
        dtype=first.dtype,
        layout=layout,
        chunk_shape=chunk_shape,
        selection=first.selection,
        codecs=first._codecs,
        order=order,
        fill_value=first.fill_value,
    )


def concatenate(arrays: Sequence[VirtualArray], axis: int = 0) -> VirtualArray:
    """Refused: joining end to end would put chunks of different arrays in one chunk or
    leave a partial chunk in the middle, which references cannot express in general."""
    raise NotVirtualizable(
        f"joining {len(arrays)} arrays end to end along existing axis {axis} is not supported: "
        "the last chunk of one array and the first of the next would share a chunk; stack them "
        "along a new axis instead"
    )
