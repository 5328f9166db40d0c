"""A netCDF-3 file as Zarr v3 references: one array per variable, global attributes on the root.

Values are referenced where they are, big-endian (the ``bytes`` codec says so). A non-record
variable, and the only record variable of a file (its records follow each other), is one block
cut into slabs along its first axis as HDF5 contiguous datasets are. Records of several record
variables interleave, so each record of each is one chunk, all of them one gen entry: ``begin
+ i * recsize``, exactly the record's bytes (never the padding after them). Variables of at
most ``inline_threshold`` bytes are read (in one round) and held in the references.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

from shadowzarr_spec import DatasetNotFoundError, RfsBuilder
from shadowzarr_store.transport import redact

from ..context import Options
from ..plan.storage import contiguous_chunks
from .attributes import attribute_values, variable_fill
from .header import read_header
from .layout import VariableLayout, place_variables

__all__ = ["RangeReader", "add_netcdf3"]


class RangeReader(Protocol):
    """What the references are made from: `RangeSource` or `RemoteFile`."""

    @property
    def size(self) -> int: ...

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]: ...


def add_netcdf3(
    builder: RfsBuilder,
    reader: RangeReader,
    *,
    url: str,
    options: Options,
    wanted: frozenset[str] | None,
    progress: Callable[[int], Callable[[str], None]],
) -> None:
    """Add the root group and every variable (or those ``wanted``) of the netCDF-3 file that
    ``reader`` reads and chunk references point to as ``url``; ``progress(total)`` gives the
    callback told of each variable added."""
    size = reader.size
    header = read_header(lambda offset, n: reader.fetch_many([(offset, n)])[0], size, url)
    _numrecs, layouts = place_variables(header, size, redact(url))
    chosen = _chosen(layouts, wanted, url)
    builder.add_group("", attribute_values(header.attributes))
    small = [p for p in chosen if 0 < p.nbytes <= options.inline_threshold]
    held = _read_values(reader, small)
    report = progress(len(chosen))
    for layout in chosen:
        _add_variable(builder, layout, url, options, held.get(layout.variable.name))
        report(layout.variable.name)


def _chosen(
    layouts: list[VariableLayout], wanted: frozenset[str] | None, url: str
) -> list[VariableLayout]:
    if wanted is None:
        return layouts
    names = {p.variable.name for p in layouts}
    for name in sorted(wanted):
        if name not in names:
            raise DatasetNotFoundError(f"{name!r} is not a variable of {redact(url)}")
    return [p for p in layouts if p.variable.name in wanted]


def _ranges(layout: VariableLayout) -> list[tuple[int, int]]:
    """The byte ranges of a variable's values, in C order."""
    begin = layout.variable.begin
    if layout.contiguous:
        return [(begin, layout.nbytes)]
    return [(begin + r * layout.stride, layout.slice_bytes) for r in range(layout.shape[0])]


def _read_values(reader: RangeReader, layouts: Sequence[VariableLayout]) -> dict[str, bytes]:
    """The stored bytes of each small variable, read in one round."""
    wanted = [(p, _ranges(p)) for p in layouts]
    flat = [r for _, ranges in wanted for r in ranges]
    blobs = iter(reader.fetch_many(flat) if flat else [])
    return {p.variable.name: b"".join(next(blobs) for _ in ranges) for p, ranges in wanted}


def _add_variable(
    builder: RfsBuilder, layout: VariableLayout, url: str, options: Options, held: bytes | None
) -> None:
    variable = layout.variable
    dtype = variable.type.dtype
    shape = layout.shape
    if held is not None or layout.nbytes == 0:
        chunk_shape = tuple(max(1, n) for n in shape)
    elif layout.contiguous:
        chunk_shape = contiguous_chunks(shape, dtype.itemsize, options)
    else:
        chunk_shape = (1, *shape[1:])
    fill, _stored = variable_fill(variable.attributes, variable.type)
    path = variable.name
    builder.add_array(
        path,
        shape=shape,
        data_type=dtype,
        chunk_shape=chunk_shape,
        fill_value=fill,
        attributes=attribute_values(variable.attributes, variable.type),
        dimension_names=list(layout.dimension_names) if shape else None,
    )
    if layout.nbytes == 0:
        return
    if held is not None:
        builder.add_inline_chunk(path, (0,) * len(shape), held)
    elif not shape:
        builder.add_chunk(path, (), url, variable.begin, dtype.itemsize)
    elif layout.contiguous:
        builder.add_contiguous_chunks(
            path,
            url=url,
            start=variable.begin,
            shape=shape,
            chunk_shape=chunk_shape,
            itemsize=dtype.itemsize,
        )
    else:
        builder.add_strided_chunks(
            path,
            url=url,
            start=variable.begin,
            stride=layout.stride,
            length=math.prod(shape[1:]) * dtype.itemsize,
            count=shape[0],
        )
