"""Where each netCDF-3 variable's values are: shapes, record size and byte ranges, checked.

Non-record variables are one C-ordered block at ``begin``. Record variables keep one record's
slice at ``begin + r * recsize``, where ``recsize`` is the sum of every record variable's
per-record size rounded up to 4 bytes, except when there is only one record variable: its
records follow each other without padding (netCDF-C's special case). Sizes are computed from
the shapes, not taken from the header's ``vsize`` (redundant, and clipped for variables over
4 GiB). Every byte a variable claims must lie inside the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .header import NcHeader, NcVariable, NetCDF3FormatError

__all__ = ["VariableLayout", "place_variables"]

_MAX_BYTES = 2**62
"""Bytes one record (or one variable) may claim before any check against the file size: keeps
every computed size and offset well inside int64 for zarr and numpy."""


@dataclass(frozen=True, slots=True)
class VariableLayout:
    """One variable's array shape, dimension names and bytes."""

    variable: NcVariable
    shape: tuple[int, ...]
    dimension_names: tuple[str, ...]
    record: bool
    """On the record dimension (its first axis)."""
    slice_bytes: int
    """Bytes of one record of a record variable; of the whole block otherwise."""
    stride: int
    """Distance between records (0 for a non-record variable)."""

    @property
    def contiguous(self) -> bool:
        """Whether the values are one unbroken C-ordered block."""
        return not self.record or self.stride == self.slice_bytes or self.shape[0] <= 1

    @property
    def nbytes(self) -> int:
        return self.slice_bytes * self.shape[0] if self.record else self.slice_bytes


def place_variables(
    header: NcHeader, file_size: int, name: str
) -> tuple[int, list[VariableLayout]]:
    """``(numrecs, layouts)``; refuses a variable whose bytes reach past the file's end."""
    described = [_describe(header, variable, name) for variable in header.variables]
    records = [(v, shape, size) for v, shape, size, record in described if record]
    recsize = sum(_round4(size) for _, _, size in records)
    if len(records) == 1:
        recsize = records[0][2]
    numrecs = header.numrecs
    if numrecs is None:  # STREAMING: as many whole records as the file holds
        start = min((v.begin for v, _, _ in records), default=file_size)
        numrecs = max(0, file_size - start) // recsize if recsize else 0
    layouts = []
    for variable, shape, size, record in described:
        if record:
            shape = (numrecs, *shape[1:])
        layout = VariableLayout(
            variable=variable,
            shape=shape,
            dimension_names=tuple(header.dimensions[d].name for d in variable.dimids),
            record=record,
            slice_bytes=size,
            stride=recsize if record else 0,
        )
        _check_inside(layout, file_size, name)
        layouts.append(layout)
    return numrecs, layouts


def _describe(
    header: NcHeader, variable: NcVariable, name: str
) -> tuple[NcVariable, tuple[int, ...], int, bool]:
    """(variable, shape with 0 for the record axis, bytes per record or in all, is record)."""
    dimensions = [header.dimensions[d] for d in variable.dimids]
    unlimited = [axis for axis, d in enumerate(dimensions) if d.unlimited]
    if unlimited and unlimited != [0]:
        raise NetCDF3FormatError(
            f"{name}: the variable {variable.name!r} uses the record dimension other than as "
            "its first"
        )
    record = bool(unlimited)
    shape = tuple(d.length for d in dimensions)
    size = math.prod(shape[1:] if record else shape) * variable.type.dtype.itemsize
    if size > _MAX_BYTES:
        raise NetCDF3FormatError(
            f"{name}: the variable {variable.name!r} claims {size} bytes per record"
            if record
            else f"{name}: the variable {variable.name!r} claims {size} bytes"
        )
    return variable, shape, size, record


def _check_inside(layout: VariableLayout, file_size: int, name: str) -> None:
    if layout.nbytes == 0:
        return
    last = layout.shape[0] - 1 if layout.record else 0
    end = layout.variable.begin + last * layout.stride + layout.slice_bytes
    if end > file_size:
        raise NetCDF3FormatError(
            f"{name}: the variable {layout.variable.name!r} reaches byte {end}, past the end "
            f"of the file ({file_size} bytes)"
        )


def _round4(size: int) -> int:
    return size + (-size % 4)
