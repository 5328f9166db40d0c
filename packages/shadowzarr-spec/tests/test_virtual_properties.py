"""Property tests: a virtual array read through the references equals the same expression on
the numpy array, for random dtypes, shapes, record layouts and index expressions.

Each example writes its bytes with numpy to a file, describes them (contiguous, records, blocks,
from_chunks, memmap views, or taken back from references), indexes, transposes and stacks the
description and the numpy array alike, and reads the description through the RfsStore.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from spec_virtual_reading import assert_same, build, read

from shadowzarr_spec import NotVirtualizable, VirtualArray, stack

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

DTYPES = [
    "<i2",
    ">i2",
    "|u1",
    "<f4",
    ">f8",
    "<i8",
    ">u4",
    ">c8",
    [("a", "<i2"), ("b", "<f4")],
    [("a", ">i4"), ("b", ">u2"), ("c", ">f8")],
]

_counter = itertools.count()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("virtual")


def _new_file(folder: Path) -> Path:
    return folder / f"f{next(_counter)}.bin"


def _values(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.zeros(shape, dtype=dtype)
    for name in dtype.names or [None]:
        target = out if name is None else out[name]
        kind = target.dtype.kind
        if kind in "iu":
            info = np.iinfo(target.dtype)
            target[...] = rng.integers(info.min, info.max, shape, endpoint=True)
        elif kind == "c":
            target[...] = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        else:
            target[...] = rng.standard_normal(shape) * 1000
    return out


# -- index expressions ------------------------------------------------------------------------


@st.composite
def any_index(draw, shape: tuple[int, ...], first_axis_moves_only: bool):
    """An index numpy and a strided virtual array both accept: on the first axis slices of step
    1 and integers (``first_axis_moves_only``), elsewhere slices, integers and one list."""
    first = 1 if first_axis_moves_only else 0
    list_axis = draw(st.sampled_from([None, *range(first, len(shape))]))
    items = []
    for axis, extent in enumerate(shape):
        bound = st.one_of(st.none(), st.integers(-extent - 2, extent + 2))
        choices = [st.just(slice(None)), st.builds(slice, bound, bound)]
        if extent:
            choices.append(st.integers(-extent, extent - 1))
        if axis or not first_axis_moves_only:
            step = st.integers(-3, 3).filter(bool)
            choices.append(st.builds(slice, bound, bound, step))
        if axis == list_axis and extent:
            choices.append(st.lists(st.integers(-extent, extent - 1), min_size=1, max_size=5))
            choices.append(st.lists(st.booleans(), min_size=extent, max_size=extent).map(np.array))
        items.append(draw(st.one_of(*choices)))
    return tuple(items)


@st.composite
def whole_chunk_index(draw, shape: tuple[int, ...], chunk_shape: tuple[int, ...]):
    """An index that takes whole chunks of an array chunked as ``chunk_shape``."""
    items = []
    list_used = False
    for extent, chunk in zip(shape, chunk_shape, strict=True):
        if chunk == 1 and extent:
            choices = [
                st.builds(
                    slice,
                    st.none() | st.integers(-extent, extent),
                    st.none() | st.integers(-extent, extent),
                    st.integers(-3, 3).filter(bool),
                ),
                st.integers(-extent, extent - 1),
            ]
            if not list_used:
                choices.append(st.lists(st.integers(0, extent - 1), min_size=1, max_size=4))
            item = draw(st.one_of(*choices))
            list_used = list_used or isinstance(item, list)
        else:
            starts = list(range(0, max(extent, 1), chunk))
            item = draw(
                st.one_of(
                    st.just(slice(None)),
                    st.builds(slice, st.sampled_from(starts), st.integers(0, extent) | st.none()),
                )
            )
        items.append(item)
    index = tuple(items)
    try:
        np.empty(shape, dtype=np.uint8)[index]
    except IndexError:
        assume(False)
    return index


def _apply(virtual: VirtualArray, expected: np.ndarray, index) -> tuple[VirtualArray, np.ndarray]:
    try:
        result = virtual[index]
    except IndexError as exc:
        assume("moves the list's axis" not in str(exc))
        raise
    return result, expected[index]


# -- strided arrays: contiguous, records ------------------------------------------------------


@st.composite
def stored_records(draw, folder: Path):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    ndim = draw(st.integers(1, 3))
    shape = (draw(st.integers(0, 40)), *(draw(st.integers(1, 5)) for _ in range(ndim - 1)))
    values = _values(dtype, shape, draw(st.integers(0, 2**32 - 1)))
    contiguous = draw(st.booleans())
    skip, tail = (0, 0) if contiguous else (draw(st.integers(0, 9)), draw(st.integers(0, 9)))
    offset = draw(st.integers(0, 64))
    chunk_rows = draw(st.none() | st.integers(1, 12))
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    rng = np.random.default_rng(shape[0] + offset)
    body = bytearray(rng.integers(0, 256, offset, dtype=np.uint8).tobytes())
    for row in values.reshape(shape[0], max(1, math.prod(shape[1:]))):  # arrays keep byte order
        body += b"\xee" * skip + row.tobytes() + b"\xdd" * tail
    if tail and draw(st.booleans()):
        del body[-tail:]  # the file ends right after the last row's values
    path = _new_file(folder)
    path.write_bytes(bytes(body))
    if contiguous:
        virtual = VirtualArray.contiguous(str(path), shape, dtype, offset, chunk_rows=chunk_rows)
    else:
        virtual = VirtualArray.records(
            str(path), shape, dtype, skip + row_bytes + tail, skip, offset, chunk_rows=chunk_rows
        )
    return virtual, values


@SETTINGS
@given(data=st.data())
def test_strided_indexing_reads_like_numpy(data, folder):
    virtual, expected = data.draw(stored_records(folder))
    # Rows one per chunk can also be stepped through and listed, as whole chunks.
    index = data.draw(any_index(expected.shape, virtual.chunk_shape[0] != 1))
    virtual, expected = _apply(virtual, expected, index)
    if data.draw(st.booleans()) and virtual.ndim and virtual.is_strided:
        # A second expression on the result (a strided array stays sliceable inside chunks).
        again = data.draw(any_index(expected.shape, virtual.chunk_shape[0] != 1))
        virtual, expected = _apply(virtual, expected, again)
    threshold = data.draw(st.sampled_from([0, 1000]))
    directory = _new_file(folder).with_suffix(".refs") if data.draw(st.booleans()) else None
    assert_same(read(virtual, directory, manifest_threshold=threshold), expected)


@SETTINGS
@given(data=st.data())
def test_transposed_and_stacked_read_like_numpy(data, folder):
    virtual, expected = data.draw(stored_records(folder))
    index = data.draw(any_index(expected.shape, first_axis_moves_only=True))
    virtual, expected = _apply(virtual, expected, index)
    operation = data.draw(st.sampled_from(["transpose", "stack", "both"]))
    if operation in ("stack", "both"):
        copies = data.draw(st.integers(1, 3))
        axis = data.draw(st.integers(0, virtual.ndim))
        virtual = stack([virtual] * copies, axis=axis)
        expected = np.stack([expected] * copies, axis=axis)
    if operation in ("transpose", "both"):
        axes = data.draw(st.permutations(range(virtual.ndim)))
        virtual = virtual.transpose(*axes) if axes else virtual.transpose()
        expected = expected.transpose(*axes) if axes else expected.transpose()
    if data.draw(st.booleans()):
        again = data.draw(whole_chunk_index(expected.shape, virtual.chunk_shape))
        virtual, expected = _apply(virtual, expected, again)
    assert_same(read(virtual), expected)


# -- chunked arrays: blocks and chunks given one by one ---------------------------------------


@st.composite
def stored_chunks(draw, folder: Path):
    """An array written chunk by chunk, evenly spaced (blocks) or in shuffled order with gaps
    and missing chunks (from_chunks)."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES[:8])))
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 9)) for _ in range(ndim))
    values = _values(dtype, shape, draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):
        axis = draw(st.integers(0, ndim - 1))
        chunk_shape = tuple(
            draw(st.integers(1, 4)) if k == axis else extent for k, extent in enumerate(shape)
        )
        return _write_blocks(draw, folder, values, chunk_shape, axis)
    chunk_shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    return _write_shuffled(draw, folder, values, chunk_shape)


def _chunk_bytes(values: np.ndarray, chunk_shape, coords) -> bytes:
    """A chunk's bytes as Zarr stores it: full chunk shape, edge padded with zeros."""
    region = tuple(
        slice(c * n, min((c + 1) * n, s))
        for c, n, s in zip(coords, chunk_shape, values.shape, strict=True)
    )
    block = np.zeros(chunk_shape, dtype=values.dtype)
    block[tuple(slice(0, r.stop - r.start) for r in region)] = values[region]
    return block.tobytes()


def _write_blocks(draw, folder, values, chunk_shape, axis):
    header, skip, tail = draw(st.integers(0, 30)), draw(st.integers(0, 8)), draw(st.integers(0, 8))
    grid = [math.ceil(s / c) for s, c in zip(values.shape, chunk_shape, strict=True)]
    body = bytearray(b"\x11" * header)
    for k in range(grid[axis]):
        coords = [0] * values.ndim
        coords[axis] = k
        body += b"\x22" * skip + _chunk_bytes(values, chunk_shape, coords) + b"\x33" * tail
    path = _new_file(folder)
    path.write_bytes(bytes(body))
    record = skip + math.prod(chunk_shape) * values.dtype.itemsize + tail
    virtual = VirtualArray.blocks(
        str(path), values.shape, chunk_shape, values.dtype, record, header, axis, skip=skip
    )
    return virtual, values


def _write_shuffled(draw, folder, values, chunk_shape):
    grid = [math.ceil(s / c) for s, c in zip(values.shape, chunk_shape, strict=True)]
    coords = list(np.ndindex(*grid))
    order = draw(st.permutations(coords))
    missing = set(draw(st.lists(st.sampled_from(coords), max_size=2)))
    fill = 7
    expected = values.copy()
    paths = [_new_file(folder), _new_file(folder)]
    bodies = [bytearray(), bytearray()]
    listed = []
    for position, chunk in enumerate(order):
        if chunk in missing:
            region = tuple(
                slice(c * n, (c + 1) * n) for c, n in zip(chunk, chunk_shape, strict=True)
            )
            expected[region] = fill
            continue
        which = position % 2 if draw(st.booleans()) else 0
        gap = draw(st.integers(0, 5))
        bodies[which] += b"\x44" * gap
        data = _chunk_bytes(values, chunk_shape, chunk)
        listed.append((chunk, str(paths[which]), len(bodies[which]), len(data)))
        bodies[which] += data
    for path, body in zip(paths, bodies, strict=True):
        path.write_bytes(bytes(body))
    virtual = VirtualArray.from_chunks(
        values.shape, chunk_shape, values.dtype, listed, fill_value=fill
    )
    return virtual, expected


@SETTINGS
@given(data=st.data())
def test_chunked_arrays_read_like_numpy(data, folder):
    virtual, expected = data.draw(stored_chunks(folder))
    for _ in range(data.draw(st.integers(0, 2))):
        operation = data.draw(st.sampled_from(["index", "transpose", "stack"]))
        if operation == "index":
            index = data.draw(whole_chunk_index(expected.shape, virtual.chunk_shape))
            virtual, expected = _apply(virtual, expected, index)
        elif operation == "transpose" and virtual.ndim:
            axes = data.draw(st.permutations(range(virtual.ndim)))
            virtual, expected = virtual.transpose(axes), expected.transpose(axes)
        elif operation == "stack":
            axis = data.draw(st.integers(0, virtual.ndim))
            virtual = stack([virtual, virtual], axis=axis)
            expected = np.stack([expected, expected], axis=axis)
    threshold = data.draw(st.sampled_from([0, 3, 1000]))
    directory = _new_file(folder).with_suffix(".refs") if data.draw(st.booleans()) else None
    assert_same(read(virtual, directory, manifest_threshold=threshold), expected)


@SETTINGS
@given(data=st.data())
def test_arrays_taken_from_references_read_like_numpy(data, folder):
    """from_rfs of what add_to wrote (gen entries, chunk manifest, refs, selection) is the same
    array, and can be indexed by whole chunks and stacked again."""
    source = data.draw(st.sampled_from(["records", "chunks"]))
    strategy = stored_records(folder) if source == "records" else stored_chunks(folder)
    virtual, expected = data.draw(strategy)
    if source == "records":
        index = data.draw(any_index(expected.shape, first_axis_moves_only=True))
        virtual, expected = _apply(virtual, expected, index)
    if data.draw(st.booleans()) and virtual.ndim > 1:
        axes = data.draw(st.permutations(range(virtual.ndim)))
        virtual, expected = virtual.transpose(axes), expected.transpose(axes)
    threshold = data.draw(st.sampled_from([0, 1000]))
    rfs = build(virtual, manifest_threshold=threshold)
    taken = VirtualArray.from_rfs(rfs, "x")
    assert (taken.shape, taken.chunk_shape, taken.codecs) == (
        virtual.shape,
        virtual.chunk_shape,
        virtual.codecs,
    )
    if data.draw(st.booleans()):
        index = data.draw(whole_chunk_index(expected.shape, taken.chunk_shape))
        taken, expected = _apply(taken, expected, index)
    if data.draw(st.booleans()):
        taken, expected = stack([taken, taken], axis=0), np.stack([expected, expected])
    assert_same(read(taken), expected)


# -- memory maps ------------------------------------------------------------------------------

FIELD_TYPES = ["<i2", ">i2", "|u1", "<f4", ">f8", "<u4"]


@st.composite
def memmap_views(draw, folder: Path):
    """A structured memmap and a view of it: a field (possibly with a subarray), several
    fields, or the records, then numpy slicing of any step along any axis."""
    n_fields = draw(st.integers(1, 4))
    byte_order = draw(st.sampled_from("<>"))
    fields = []
    for k in range(n_fields):
        kind = draw(st.sampled_from(FIELD_TYPES))
        kind = kind if kind[0] == "|" else byte_order + kind[1:]
        sub = draw(st.sampled_from([(), (), (), (3,), (2, 2)]))
        fields.append((f"f{k}", kind, sub) if sub else (f"f{k}", kind))
    dtype = np.dtype(fields)
    n = draw(st.integers(1, 30))
    offset = draw(st.integers(0, 50))
    records = np.frombuffer(
        np.random.default_rng(n * 7 + offset).integers(0, 256, n * dtype.itemsize, dtype=np.uint8),
        dtype=dtype,
    )
    path = _new_file(folder)
    path.write_bytes(b"\x55" * offset + records.tobytes() + b"\x66" * draw(st.integers(0, 5)))
    mapped = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(n,))
    choice = draw(st.sampled_from(["field", "fields", "records"]))
    if choice == "field":
        view = mapped[draw(st.sampled_from(dtype.names))]
    elif choice == "fields":
        names = draw(st.lists(st.sampled_from(dtype.names), min_size=1, max_size=3, unique=True))
        scalar = [name for name in names if dtype.fields[name][0].shape == ()]
        assume(scalar)
        view = mapped[scalar]
    else:
        scalar = all(dtype.fields[name][0].shape == () for name in dtype.names)
        assume(scalar)
        view = mapped
    steps = []
    for extent in view.shape:
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        start = draw(st.none() | st.integers(0, extent - 1))
        steps.append(slice(start, None, step))
    view = view[tuple(steps)]
    if view.ndim > 1 and draw(st.booleans()):
        view = view.T
    return view


@SETTINGS
@given(data=st.data())
def test_memmap_views_read_like_numpy(data, folder):
    view = data.draw(memmap_views(folder))
    if min(view.strides) < 0:
        # Backwards along some axis: described when rows still step forward, else refused.
        try:
            virtual = VirtualArray.from_memmap(view)
        except NotVirtualizable:
            assume(False)
    else:
        virtual = VirtualArray.from_memmap(view)
    assert_same(read(virtual), np.asarray(view))
