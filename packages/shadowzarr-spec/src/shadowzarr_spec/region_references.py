"""Region references: an HDF5 reference to a dataset *and* a selection of its elements.

h5py's ``regionref_dtype`` datasets (NWB 2.0's region-typed links, as MatNWB writes them) are
stored as arrays of strings with ``_DTYPE: "region_reference"``; each element is a JSON object

``{"path": "/target", "selection": {...}}``

whose ``selection`` is one of (coordinates are zero-based, one entry per axis of the target):

- ``{"kind": "all"}`` every element; ``{"kind": "none"}`` no element (also a null reference,
  whose path is ``""``);
- ``{"kind": "hyperslab", "start": [..], "stride": [..], "count": [..], "block": [..]}`` a
  regular hyperslab, as ``H5Sselect_hyperslab`` takes it;
- ``{"kind": "blocks", "blocks": [{"start": [..], "stop": [..]}, ...]}`` a union of boxes
  (``stop`` exclusive), for hyperslabs that are not regular;
- ``{"kind": "points", "points": [[..], ...]}`` elements in the listed order.

An attribute holding a region reference is ``{"_REGION_REFERENCE": {"source": ".", "path": ..,
"selection": ..}}``. The kind of key differs from ``_REFERENCE`` on purpose: a reader that knows
only object references must not take one for a reference to the whole dataset.
:meth:`RegionReference.apply` reads a selection the way h5py's ``dataset[ref]`` does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from shadowzarr_spec.errors import ReferenceFormatError

__all__ = [
    "REGION_REFERENCE_DTYPE",
    "REGION_REFERENCE_KEY",
    "AllRegion",
    "Blocks",
    "Hyperslab",
    "NoRegion",
    "Points",
    "Region",
    "RegionReference",
    "region_references",
]

REGION_REFERENCE_DTYPE: Final = "region_reference"
"""The ``_DTYPE`` of an array of region references."""
REGION_REFERENCE_KEY: Final = "_REGION_REFERENCE"
"""The key of an attribute value holding a region reference."""


@dataclass(frozen=True, slots=True)
class AllRegion:
    """Every element of the target."""


@dataclass(frozen=True, slots=True)
class NoRegion:
    """No element (a null reference, or an empty selection)."""


@dataclass(frozen=True, slots=True)
class Hyperslab:
    """A regular hyperslab: ``count`` blocks of ``block`` elements, ``stride`` apart, per axis."""

    start: tuple[int, ...]
    stride: tuple[int, ...]
    count: tuple[int, ...]
    block: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Blocks:
    """A union of boxes, each ``[start, stop)`` on every axis."""

    boxes: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Points:
    """Single elements, in order (an ``(n, rank)`` list of coordinates)."""

    points: tuple[tuple[int, ...], ...]


type Region = AllRegion | NoRegion | Hyperslab | Blocks | Points


@dataclass(frozen=True, slots=True)
class RegionReference:
    """A target dataset path ("" for a null reference) and a selection of its elements."""

    path: str
    selection: Region

    @classmethod
    def from_json(cls, value: str | dict[str, Any]) -> RegionReference:
        """Parse one stored element (its JSON text, or the object itself)."""
        try:
            document = json.loads(value) if isinstance(value, str) else value
            path, selection = document["path"], document["selection"]
            if not isinstance(path, str):
                raise TypeError("path is not a string")
            return cls(path, _region(selection))
        except (ValueError, KeyError, TypeError) as exc:
            raise ReferenceFormatError(f"not a region reference: {str(value)[:80]!r}") from exc

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "selection": _region_json(self.selection)}

    def text(self) -> str:
        """The element as stored in an array of region references."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    def apply(self, target: Any) -> np.ndarray:
        """The selected elements of ``target`` (an array of the referenced dataset's shape),
        shaped as h5py's ``dataset[ref]`` shapes them: the selection's shape when it is one
        box-like hyperslab, else one axis (points in their order, other selections in C order).
        """
        shape = tuple(int(n) for n in target.shape)
        match self.selection:
            case AllRegion():
                return np.asarray(target[...])
            case NoRegion():
                return np.zeros((0,) * len(shape), dtype=target.dtype)
            case Points(points=points):
                if not points:
                    return np.zeros((0,), dtype=target.dtype)
                index = np.asarray(points, dtype=np.int64)
                low, high = index.min(axis=0), index.max(axis=0) + 1
                box = np.asarray(target[tuple(slice(a, b) for a, b in zip(low, high, strict=True))])
                picked: np.ndarray = box[tuple((index - low).T)]
                return picked
            case Hyperslab() | Blocks():
                return _masked(target, shape, self.selection)
        raise TypeError(f"unknown selection {self.selection!r}")


def region_references(values: Any) -> np.ndarray:
    """An object array of :class:`RegionReference`, shaped like ``values`` (a stored array)."""
    array = np.asarray(values)
    out = np.empty(array.shape, dtype=object)
    for index, value in np.ndenumerate(array):
        out[index] = RegionReference.from_json(str(value))
    return out


def _masked(target: Any, shape: tuple[int, ...], region: Hyperslab | Blocks) -> np.ndarray:
    boxes = _boxes(region, shape)
    if not boxes:
        return np.zeros((0,) * len(shape), dtype=target.dtype)
    low = np.min([b[0] for b in boxes], axis=0)
    high = np.max([b[1] for b in boxes], axis=0)
    mask = np.zeros(tuple(int(n) for n in high - low), dtype=bool)
    if isinstance(region, Hyperslab):
        mask[np.ix_(*_axis_masks(region, low, high))] = True
    else:
        for start, stop in boxes:
            mask[
                tuple(slice(a - lo, b - lo) for a, b, lo in zip(start, stop, low, strict=True))
            ] = True
    box = np.asarray(target[tuple(slice(int(a), int(b)) for a, b in zip(low, high, strict=True))])
    selected = box[mask]
    total = selected.size
    # h5py's guess_shape: per axis, the selected count divided by the count left in the first
    # plane along that axis; a product that differs from the total means "one axis".
    axes = []
    for axis in range(len(shape)):
        first = np.take(mask, 0, axis=axis)
        axes.append(total // max(1, int(first.sum())) if mask.shape[axis] > 1 else 1)
    return selected.reshape(tuple(axes) if math.prod(axes) == total else (total,))


def _axis_masks(region: Hyperslab, low: np.ndarray, high: np.ndarray) -> list[np.ndarray]:
    """For each axis, which coordinates in ``[low, high)`` a regular hyperslab covers."""
    masks = []
    for axis, (start, stride, count, block) in enumerate(
        zip(region.start, region.stride, region.count, region.block, strict=True)
    ):
        covered = np.zeros(int(high[axis] - low[axis]), dtype=bool)
        for k in range(count):
            first = start + k * stride - int(low[axis])
            covered[first : first + block] = True
        masks.append(np.flatnonzero(covered))
    return masks


def _boxes(
    region: Hyperslab | Blocks, shape: tuple[int, ...]
) -> list[tuple[np.ndarray, np.ndarray]]:
    if isinstance(region, Blocks):
        boxes = [(np.asarray(a), np.asarray(b)) for a, b in region.boxes]
    elif any(c == 0 or b == 0 for c, b in zip(region.count, region.block, strict=True)):
        boxes = []
    else:
        start = np.asarray(region.start)
        last = start + (np.asarray(region.count) - 1) * np.asarray(region.stride)
        boxes = [(start, last + np.asarray(region.block))]
    for low, high in boxes:
        if len(low) != len(shape) or np.any(low < 0) or np.any(high > np.asarray(shape)):
            raise ReferenceFormatError(f"a region selection outside a dataset of shape {shape}")
    return boxes


def _region(document: Any) -> Region:
    kind = document["kind"]
    if kind == "all":
        return AllRegion()
    if kind == "none":
        return NoRegion()
    if kind == "hyperslab":
        fields = [tuple(int(v) for v in document[k]) for k in ("start", "stride", "count", "block")]
        return Hyperslab(*fields)
    if kind == "blocks":
        return Blocks(
            tuple(
                (tuple(int(v) for v in b["start"]), tuple(int(v) for v in b["stop"]))
                for b in document["blocks"]
            )
        )
    if kind == "points":
        return Points(tuple(tuple(int(v) for v in p) for p in document["points"]))
    raise ValueError(f"unknown selection kind {kind!r}")


def _region_json(region: Region) -> dict[str, Any]:
    match region:
        case AllRegion():
            return {"kind": "all"}
        case NoRegion():
            return {"kind": "none"}
        case Hyperslab(start=start, stride=stride, count=count, block=block):
            return {
                "kind": "hyperslab",
                "start": list(start),
                "stride": list(stride),
                "count": list(count),
                "block": list(block),
            }
        case Blocks(boxes=boxes):
            return {
                "kind": "blocks",
                "blocks": [{"start": list(a), "stop": list(b)} for a, b in boxes],
            }
        case Points(points=points):
            return {"kind": "points", "points": [list(p) for p in points]}
    raise TypeError(f"unknown selection {region!r}")
