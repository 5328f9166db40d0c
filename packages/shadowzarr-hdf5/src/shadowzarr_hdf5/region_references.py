"""HDF5 region references → the spec's region references (target path and selection).

A region reference names a dataset and a dataspace selection of it; h5py dereferences the
dataset, and ``h5r.get_region`` gives the selection, read here as all, none, a regular
hyperslab, a union of blocks or a list of points (see :mod:`shadowzarr_spec.region_references`).
"""

from __future__ import annotations

from typing import Any

import h5py
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.region_references import (
    AllRegion,
    Blocks,
    Hyperslab,
    NoRegion,
    Points,
    Region,
    RegionReference,
)

from .object_paths import ObjectPaths

__all__ = ["region_reference"]


def region_reference(ref: Any, file: h5py.File, paths: ObjectPaths) -> RegionReference:
    """The target and selection of one ``h5py.RegionReference``."""
    if not ref:
        return RegionReference("", NoRegion())
    path = paths(ref)
    if not path:  # dangling: its dataset is gone, so is every element of the selection
        return RegionReference("", NoRegion())
    return RegionReference(path, _selection(h5py.h5r.get_region(ref, file.id), path))


def _selection(space: Any, path: str) -> Region:
    kind = space.get_select_type()
    if kind == h5py.h5s.SEL_ALL:
        return AllRegion()
    if kind == h5py.h5s.SEL_NONE:
        return NoRegion()
    if kind == h5py.h5s.SEL_POINTS:
        points = space.get_select_elem_pointlist()
        return Points(tuple(tuple(int(c) for c in row) for row in points.tolist()))
    if kind == h5py.h5s.SEL_HYPERSLABS:
        if space.is_regular_hyperslab():
            start, stride, count, block = space.get_regular_hyperslab()
            return Hyperslab(
                *(tuple(int(v) for v in part) for part in (start, stride, count, block))
            )
        corners = space.get_select_hyper_blocklist()  # (n, 2, rank), inclusive corners
        return Blocks(
            tuple(
                (tuple(int(c) for c in low), tuple(int(c) + 1 for c in high))
                for low, high in corners.tolist()
            )
        )
    raise UnsupportedFeatureError(f"a region reference to {path!r} with selection kind {kind}")
