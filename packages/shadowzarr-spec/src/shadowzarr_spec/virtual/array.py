"""VirtualArray: an array stored in other files, described without reading it.

A virtual array is in one of two forms. A *strided* array (:class:`StridedBytes`: contiguous
blocks, records, memory-mapped views) knows the byte of every element, so it can be sliced
anywhere along its first axis (the byte range moves) and along later axes (a selection keeps
the elements' bytes from each record). A *chunked* array (:class:`VirtualChunkLayout`) knows only
where each chunk is, so it is indexed by whole chunks. Stacking and transposing turn a strided
array into a chunked one. Nothing here reads data: a refused index says why it would need it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.metadata import bytes_codec
from shadowzarr_spec.virtual.file_layouts import (
    block_layout,
    check_offset,
    listed_chunk_layout,
    normal_shape,
    record_bytes,
)
from shadowzarr_spec.virtual.indexing import NeedsDataError, Pick, Take, normalize_index
from shadowzarr_spec.virtual.layout import VirtualChunkLayout
from shadowzarr_spec.virtual.strided import StridedBytes

if TYPE_CHECKING:
    from shadowzarr_spec.builder import RfsBuilder
    from shadowzarr_spec.model import ReferenceFileSystem, Selection
    from shadowzarr_spec.virtual.placeholder import Placeholder

__all__ = ["VirtualArray"]


class VirtualArray:
    """An array whose chunks are byte ranges of other files. Holds no data.

    Build one with :meth:`contiguous`, :meth:`records`, :meth:`blocks`, :meth:`from_chunks`,
    :meth:`from_memmap` or :meth:`from_rfs`; index it, :meth:`transpose` it or
    :func:`~shadowzarr_spec.virtual.stack` several, and write it with :meth:`add_to`.
    """

    __slots__ = (
        "_chunk_shape",
        "_codecs",
        "_dtype",
        "_fill_value",
        "_layout",
        "_order",
        "_selection",
        "_shape",
        "_strided",
        "attributes",
    )

    def __init__(
        self,
        *,
        shape: Sequence[int],
        dtype: np.dtype,
        strided: StridedBytes | None = None,
        layout: VirtualChunkLayout | None = None,
        chunk_shape: Sequence[int] | None = None,
        selection: Selection | None = None,
        codecs: Sequence[dict[str, Any]] | None = None,
        order: Sequence[int] | None = None,
        fill_value: Any = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        """Internal: use the ``contiguous``/``records``/``blocks``/``from_*`` constructors."""
        if (strided is None) == (layout is None):
            raise TypeError("a VirtualArray needs exactly one of a strided source or a layout")
        self._shape = tuple(int(s) for s in shape)
        self._dtype = dtype
        self._strided = strided
        self._layout = layout
        self._chunk_shape = tuple(int(c) for c in chunk_shape) if chunk_shape is not None else None
        self._selection = selection
        self._codecs = tuple(codecs) if codecs is not None else (bytes_codec(dtype),)
        self._order = _normal_order(order, self._chunk_shape)
        self._fill_value = fill_value
        self.attributes: dict[str, Any] = dict(attributes or {})

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def contiguous(
        cls,
        url: str,
        shape: Sequence[int],
        dtype: Any,
        offset: int = 0,
        *,
        chunk_rows: int | None = None,
    ) -> VirtualArray:
        """A C-ordered array of ``shape`` stored in one piece at ``offset`` of ``url``.

        ``chunk_rows`` sets how many first-axis rows each chunk holds (default: about 4 MiB).
        """
        dtype = np.dtype(dtype)
        shape = normal_shape(shape)
        row_bytes = math.prod(shape[1:]) * dtype.itemsize
        return cls.records(
            url, shape, dtype, record_size=max(row_bytes, 1), offset=offset, chunk_rows=chunk_rows
        )

    @classmethod
    def records(
        cls,
        url: str,
        shape: Sequence[int],
        dtype: Any,
        record_size: int,
        skip: int = 0,
        offset: int = 0,
        *,
        chunk_rows: int | None = None,
    ) -> VirtualArray:
        """Each row (first-axis index) in a record of ``record_size`` bytes, after ``skip``
        bytes of header; the first record at ``offset``."""
        dtype = np.dtype(dtype)
        shape = normal_shape(shape)
        check_offset(offset, skip)
        if not shape:
            return cls.from_chunks((), (), dtype, [((), url, offset + skip, dtype.itemsize)])
        strided = record_bytes(url, shape, dtype, record_size, skip, offset, chunk_rows)
        return cls(shape=shape, dtype=dtype, strided=strided)

    @classmethod
    def blocks(
        cls,
        url: str,
        shape: Sequence[int],
        chunk_shape: Sequence[int],
        dtype: Any,
        record_size: int,
        offset: int = 0,
        axis: int = 0,
        *,
        skip: int = 0,
    ) -> VirtualArray:
        """Records of ``record_size`` bytes from ``offset``, each holding one C-ordered chunk of
        ``chunk_shape`` after ``skip`` bytes of header, one after another along ``axis``."""
        dtype = np.dtype(dtype)
        shape, chunk_shape = normal_shape(shape), normal_shape(chunk_shape)
        check_offset(offset, skip)
        layout = block_layout(url, shape, chunk_shape, dtype, record_size, offset, axis, skip)
        return cls(
            shape=shape,
            dtype=dtype,
            layout=layout,
            chunk_shape=chunk_shape,
        )

    @classmethod
    def from_chunks(
        cls,
        shape: Sequence[int],
        chunk_shape: Sequence[int],
        dtype: Any,
        chunks: Sequence[tuple[Sequence[int], str, int, int]],
        *,
        fill_value: Any = None,
    ) -> VirtualArray:
        """An uncompressed array from chunks given one by one as (coords, url, offset, length);
        chunks not given read as ``fill_value``."""
        dtype = np.dtype(dtype)
        shape, chunk_shape = normal_shape(shape), normal_shape(chunk_shape)
        return cls(
            shape=shape,
            dtype=dtype,
            layout=listed_chunk_layout(shape, chunk_shape, chunks),
            chunk_shape=chunk_shape,
            fill_value=fill_value,
        )

    @classmethod
    def from_memmap(cls, array: np.ndarray, *, url: str | None = None) -> VirtualArray:
        """The part of a file that a ``numpy.memmap`` (or any view of one) shows.

        Field views of structured records become records with a selection; ``url`` replaces
        the memmap's file name (for example with where the file is hosted).
        """
        from shadowzarr_spec.virtual.memmap import memmap_view

        view = memmap_view(array, url)
        if view.strided is None:
            return cls.contiguous(view.url, view.shape, view.dtype, offset=view.offset)
        built = cls(shape=view.shape, dtype=view.dtype, strided=view.strided)
        if view.first_only:
            return built[0]
        return built if view.axes is None else built.transpose(list(view.axes))

    @classmethod
    def from_rfs(cls, rfs: ReferenceFileSystem, path: str) -> VirtualArray:
        """The array at ``path`` of a reference file system: its chunks (refs, gen entries,
        chunk manifest), codecs, fill value, selection and attributes."""
        from shadowzarr_spec.virtual.rfs_source import rfs_array_parts

        parts = rfs_array_parts(rfs, path)
        return cls(
            shape=parts.shape,
            dtype=parts.dtype,
            layout=parts.layout,
            chunk_shape=parts.chunk_shape,
            selection=parts.selection,
            codecs=parts.codecs,
            order=parts.order,
            fill_value=parts.fill_value,
            attributes=parts.attributes,
        )

    # -- properties --------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        if self._strided is not None:
            return self._strided.to_layout()[2]
        assert self._chunk_shape is not None
        return self._chunk_shape

    @property
    def fill_value(self) -> Any:
        return self._fill_value

    @property
    def selection(self) -> Selection | None:
        """Which bytes of each record the array keeps, or None when references hold only its
        own bytes."""
        if self._strided is not None:
            return self._strided.records().selection
        return self._selection

    @property
    def codecs(self) -> list[dict[str, Any]]:
        """The Zarr v3 codecs of the array (a ``transpose`` first when chunks need it)."""
        head = []
        if self._order is not None:
            head = [{"name": "transpose", "configuration": {"order": list(self._order)}}]
        return [*head, *(dict(c) for c in self._codecs)]

    @property
    def chunk_layout(self) -> VirtualChunkLayout:
        """Where each chunk's bytes are, by chunk grid position (a strided array is cut into
        its chunks first): for bridges that hand the chunks to another format."""
        layout = self._chunked()._layout
        assert layout is not None
        return layout

    @property
    def is_strided(self) -> bool:
        """True while every element's byte is known, so indexing inside chunks works."""
        return self._strided is not None

    @property
    def T(self) -> VirtualArray:
        return self.transpose()

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d virtual array")
        return self._shape[0]

    def __repr__(self) -> str:
        form = "strided" if self._strided is not None else "chunked"
        return (
            f"VirtualArray(shape={self._shape}, dtype={self._dtype}, "
            f"chunk_shape={self.chunk_shape}, {form})"
        )

    # -- indexing ----------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> VirtualArray:
        operations = normalize_index(key, self._shape)
        result = self
        # Later axes first, picks from the last axis back (so axis numbers hold): on a strided
        # array they become a selection, which must happen before a first-axis step turns it
        # into whole chunks of one row.
        later = operations[1:]
        for operation in later:
            if isinstance(operation, Take) and not operation.full(self._shape[operation.axis]):
                result = result._take(operation)
        for operation in reversed(later):
            if isinstance(operation, Pick):
                result = result._pick(operation.axis, operation.index)
        if operations:
            first = operations[0]
            if isinstance(first, Pick):
                result = result._pick(0, first.index)
            elif not first.full(self._shape[0]):
                result = result._take(first)
        if result is self:
            result = self._copy()
        result.attributes = dict(self.attributes)
        return result

    def _take(self, operation: Take) -> VirtualArray:
        axis, indices = operation.axis, operation.indices
        strided = self._strided
        if strided is not None and axis > 0:
            positions = (
                np.arange(indices.start, indices.stop, indices.step, dtype=np.int64)
                if (isinstance(indices, range))
                else indices
            )
            return self._with_strided(strided.take_later(axis, positions))
        if strided is not None:
            steps_by_one = isinstance(indices, range) and (indices.step == 1 or len(indices) <= 1)
            if steps_by_one:
                assert isinstance(indices, range)
                start = indices.start if len(indices) else 0
                return self._with_strided(strided.slice_rows(start, start + len(indices)))
            if math.prod(self.shape[1:]) == 0 and len(indices) <= self._shape[0]:
                # rows of no elements: any choice of them is as many empty rows
                return self._with_strided(strided.slice_rows(0, len(indices)))
            if strided.records().chunk_rows != 1:
                raise NeedsDataError(
                    f"{_describe(indices)} along the first axis of a contiguous array would "
                    "need its rows copied: only steps of 1 move the byte range (or make "
                    "chunks of one row with chunk_rows=1 to take rows as whole chunks)"
                )
        return self._chunked()._take_chunks(axis, indices)

    def _take_chunks(self, axis: int, indices: range | np.ndarray) -> VirtualArray:
        assert self._layout is not None
        assert self._chunk_shape is not None
        extent = self._chunk_shape[axis]
        if extent == 1:
            chunk_indices = indices
            new_extent = len(indices)
        elif (
            isinstance(indices, range)
            and (indices.step == 1 or len(indices) <= 1)
            and (len(indices) == 0 or indices.start % extent == 0)
        ):
            start = indices.start if len(indices) else 0
            chunk_indices = range(start // extent, math.ceil((start + len(indices)) / extent))
            new_extent = len(indices)
        else:
            raise NeedsDataError(
                f"{_describe(indices)} along axis {axis} falls inside chunks of {extent} "
                "elements; only contiguous arrays, before they are stacked or transposed, can be "
                "sliced inside their chunks: any other would need the data"
            )
        layout = self._layout.take(axis, chunk_indices)
        shape = (*self._shape[:axis], new_extent, *self._shape[axis + 1 :])
        return self._with_layout(layout, shape=shape)

    def _pick(self, axis: int, index: int) -> VirtualArray:
        strided = self._strided
        if strided is not None and axis > 0:
            return self._with_strided(strided.pick_later(axis, index))
        if strided is not None:
            rerooted = strided.pick_row(index)
            if rerooted is not None:
                return VirtualArray(shape=self._shape[1:], dtype=self._dtype, strided=rerooted)
            one_row = VirtualArray(
                shape=(1, *self._shape[1:]),
                dtype=self._dtype,
                strided=strided.slice_rows(index, index + 1),
            )
            return one_row._chunked()._pick(0, 0)
        assert self._layout is not None
        assert self._chunk_shape is not None
        extent = self._chunk_shape[axis]
        if extent != 1:
            raise NeedsDataError(
                f"index {index} along axis {axis} falls inside chunks of {extent} elements; "
                "only contiguous arrays, before they are stacked or transposed, can be indexed "
                "inside their chunks: any other would need the data"
            )
        order = None
        if self._order is not None:
            order = [o - (o > axis) for o in self._order if o != axis]
        return VirtualArray(
            shape=self._shape[:axis] + self._shape[axis + 1 :],
            dtype=self._dtype,
            layout=self._layout.drop(axis, index),
            chunk_shape=self._chunk_shape[:axis] + self._chunk_shape[axis + 1 :],
            selection=self._selection,
            codecs=self._codecs,
            order=order,
            fill_value=self._fill_value,
        )

    # -- transposing -------------------------------------------------------------------------
    def transpose(self, *axes: int | Sequence[int]) -> VirtualArray:
        """Axes in another order; the chunks stay as stored and get the Zarr ``transpose``
        codec when their bytes depend on the order."""
        flat: list[int] = []
        for item in axes:
            flat.extend([int(item)] if isinstance(item, int | np.integer) else map(int, item))
        order = flat or list(range(self.ndim))[::-1]
        order = [a + self.ndim if a < 0 else a for a in order]
        if sorted(order) != list(range(self.ndim)):
            raise ValueError(f"axes {tuple(axes)} are not a permutation of {self.ndim} axes")
        if order == list(range(self.ndim)):
            copy = self._copy()
            copy.attributes = dict(self.attributes)
            return copy
        chunked = self._chunked()
        assert chunked._layout is not None
        assert chunked._chunk_shape is not None
        inverse = list(np.argsort(order))
        previous = chunked._order if chunked._order is not None else range(self.ndim)
        result = VirtualArray(
            shape=[self._shape[a] for a in order],
            dtype=self._dtype,
            layout=chunked._layout.transpose(order),
            chunk_shape=[chunked._chunk_shape[a] for a in order],
            selection=chunked._selection,
            codecs=chunked._codecs,
            order=[int(inverse[o]) for o in previous],
            fill_value=self._fill_value,
            attributes=self.attributes,
        )
        return result

    # -- output ------------------------------------------------------------------------------
    def placeholder(self) -> Placeholder[VirtualArray]:
        """A stand-in to give pynwb as a dataset's data: it has this array's shape, dtype and
        chunking, holds no data, and links back here (``.virtual``)."""
        from shadowzarr_spec.virtual.placeholder import Placeholder

        return Placeholder(self)

    @renamed_keyword("chunk_index_threshold", "manifest_threshold")
    def add_to(
        self,
        builder: RfsBuilder,
        path: str,
        *,
        dimension_names: Sequence[str | None] | None = None,
        attributes: Mapping[str, Any] | None = None,
        manifest_threshold: int = 1000,
    ) -> None:
        """Add this array at ``path`` of ``builder``: its metadata, its chunks (a gen entry
        for each evenly spaced run, a chunk manifest when many are listed, refs otherwise) and
        its selection."""
        from shadowzarr_spec.virtual.emit import add_chunks, record_local_sizes

        chunked = self._chunked()
        assert chunked._layout is not None
        assert chunked._chunk_shape is not None
        builder.add_array(
            path,
            shape=self._shape,
            data_type="string" if self._dtype.kind == "T" else self._dtype,
            chunk_shape=chunked._chunk_shape,
            codecs=self.codecs,
            fill_value=self._fill_value,
            attributes={**self.attributes, **(attributes or {})},
            dimension_names=dimension_names,
        )
        add_chunks(builder, path, chunked._layout, manifest_threshold)
        record_local_sizes(builder, chunked._layout)
        if chunked._selection is not None:
            builder.add_selection(path, chunked._selection.record_size, chunked._selection.keep)

    # -- internals ---------------------------------------------------------------------------
    def _copy(self) -> VirtualArray:
        return VirtualArray(
            shape=self._shape,
            dtype=self._dtype,
            strided=self._strided,
            layout=self._layout,
            chunk_shape=self._chunk_shape,
            selection=self._selection,
            codecs=self._codecs,
            order=self._order,
            fill_value=self._fill_value,
        )

    def _with_strided(self, strided: StridedBytes) -> VirtualArray:
        return VirtualArray(shape=strided.shape, dtype=self._dtype, strided=strided)

    def _with_layout(self, layout: VirtualChunkLayout, *, shape: Sequence[int]) -> VirtualArray:
        return VirtualArray(
            shape=shape,
            dtype=self._dtype,
            layout=layout,
            chunk_shape=self._chunk_shape,
            selection=self._selection,
            codecs=self._codecs,
            order=self._order,
            fill_value=self._fill_value,
        )

    def _chunked(self) -> VirtualArray:
        """This array in chunked form (itself when it is already)."""
        if self._strided is None:
            return self
        layout, selection, chunk_shape = self._strided.to_layout()
        return VirtualArray(
            shape=self._shape,
            dtype=self._dtype,
            layout=layout,
            chunk_shape=chunk_shape,
            selection=selection,
        )

    def _stack_signature(self) -> tuple[Any, ...]:
        chunked = self._chunked()
        selection = chunked._selection
        return (
            self._shape,
            self._dtype,
            chunked._chunk_shape,
            chunked.codecs,
            None if selection is None else (selection.record_size, selection.keep),
            _fill_bytes(self._fill_value, self._dtype),
        )


def _normal_order(
    order: Sequence[int] | None, chunk_shape: tuple[int, ...] | None
) -> tuple[int, ...] | None:
    """None when the transpose leaves a chunk's bytes as they are: the axes along which a
    chunk holds more than one element keep their relative order."""
    if order is None:
        return None
    order = tuple(int(o) for o in order)
    if chunk_shape is None:
        return order
    long_axes = [o for o in order if chunk_shape[o] > 1]
    if long_axes == sorted(long_axes):
        return None
    return order


def _fill_bytes(fill_value: Any, dtype: np.dtype) -> bytes:
    """The fill value as stored, so None (zero) and an explicit zero compare equal."""
    if fill_value is None:
        return bytes(dtype.itemsize)
    try:
        return np.asarray(fill_value, dtype=dtype).tobytes()
    except (TypeError, ValueError):
        return repr(fill_value).encode()


def _describe(indices: range | np.ndarray) -> str:
    if isinstance(indices, range):
        return f"the slice {indices.start}:{indices.stop}:{indices.step}"
    shown = ", ".join(str(int(i)) for i in indices[:6])
    return f"the indices [{shown}{', …' if len(indices) > 6 else ''}]"
