"""A dataset described from its object header, standing in for ``h5py.Dataset``.

The generator asks a dataset for its type, shape, chunking, layout, filters, fill value and (for
small ones) its values. :class:`HeaderDataset` answers those from the parsed header; for
anything else (``id``, slicing, chunk reads) it opens the h5py dataset once and delegates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import h5py
import numpy as np

from ..format.data_layout import Layout
from ..format.datatypes import Datatype, DatatypeKind
from ..format.errors import MALFORMED, NotNative
from ..format.heaps import GlobalHeap
from ..format.messages import FilterSpec
from ..format.values import decode_elements
from ..h5py_glue import h5py_dtype

__all__ = ["HeaderDataset"]


class HeaderDataset:
    """The parts of ``h5py.Dataset`` the generator uses, read from the header."""

    def __init__(
        self,
        *,
        name: str,
        address: int,
        datatype: Datatype,
        shape: tuple[int, ...] | None,
        maxshape: tuple[int | None, ...] | None,
        layout: Layout,
        filters: tuple[FilterSpec, ...],
        fill: bytes | None,
        attributes: dict[str, Any],
        attribute_names: list[bytes],
        read_at: Callable[[int, int], bytes],
        heap: GlobalHeap,
        offset_size: int,
        open_h5py: Callable[[], h5py.Dataset],
    ) -> None:
        self.name = name
        self.address = address
        self.datatype = datatype
        self.dtype = h5py_dtype(datatype)
        self.shape = shape
        self.maxshape = maxshape
        self.layout = layout
        self.filters = filters
        self._fill = fill
        self.attributes = attributes
        """JSON values, as ``read_attributes`` gives them."""
        self.attribute_names = attribute_names
        """Stored names, as ``attribute_names`` gives them."""
        self._read_at = read_at
        self._heap = heap
        self._offset_size = offset_size
        self._open_h5py = open_h5py
        self._h5py: h5py.Dataset | None = None
        if fill is not None and len(fill) != datatype.size:
            raise NotNative(f"fill value of {len(fill)} bytes for {datatype.size}-byte elements")

    @property
    def ndim(self) -> int:
        return len(self.shape or ())

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return self.layout.chunks

    @property
    def fillvalue(self) -> Any:
        """``h5py.Dataset.fillvalue``: the stored fill, or zero of the type."""
        if (
            self.datatype.kind is not DatatypeKind.NUMBER
            and self.datatype.kind is not DatatypeKind.FIXED_STRING
        ):
            return self.h5py().fillvalue
        if self._fill is None:
            return np.zeros((), self.dtype)[()]
        try:
            array = decode_elements(self._fill, self.datatype, (), self._heap, self._offset_size)
        except (NotNative, *MALFORMED):
            return self.h5py().fillvalue
        return array[()]

    def read_whole(self, resolvable: Callable[[int], bool]) -> np.ndarray | None:
        """Every element as h5py's low-level read gives it (references: addresses), from
        compact or written contiguous storage; None when h5py must read (chunked, unwritten,
        references that no hard link reaches)."""
        shape = self.shape
        if shape is None:
            return None
        if self.layout.kind == "compact":
            data = self.layout.compact_data
        elif self.layout.kind == "contiguous" and self.layout.address is not None:
            data = self._read_at(self.layout.address, self.layout.size)
        else:
            return None
        try:
            values = decode_elements(data, self.datatype, shape, self._heap, self._offset_size)
        except (NotNative, *MALFORMED):
            return None
        if self.datatype.kind is DatatypeKind.REFERENCE and not all(
            resolvable(int(a)) for a in values.ravel()
        ):
            return None
        return values

    def h5py(self) -> h5py.Dataset:
        """The h5py dataset, opened on first need."""
        if self._h5py is None:
            self._h5py = self._open_h5py()
        return self._h5py

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.h5py(), name)

    def __getitem__(self, selection: Any) -> Any:
        return self.h5py()[selection]

    def __len__(self) -> int:
        return len(self.h5py())
