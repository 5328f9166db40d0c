"""The direct inline encoder gives exactly the bytes zarr-python writes for the same array."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from shadowzarr_spec.metadata import VLEN_BYTES, bytes_codec

from shadowzarr_hdf5.plan.encode import (
    ZSTD_CODEC,
    MemoryArray,
    _all_chunks,
    encode_directly,
    encode_with_zarr,
    memory_array_store,
)

NUMERIC = st.sampled_from(
    ["<i1", "|u1", "<i2", ">i2", "<u4", ">u4", "<i8", ">u8", "<f2", ">f4", "<f8", ">f8", "|b1"]
)


@st.composite
def shapes_and_chunks(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=7))
    chunks = tuple(draw(st.integers(1, s + 2)) for s in shape)
    return shape, chunks


def _both(values: np.ndarray, data_type, chunks, codecs, fill):  # type: ignore[no-untyped-def]
    regions = _all_chunks(values.shape, chunks)
    direct = encode_directly(
        values, data_type=data_type, chunk_shape=chunks, codecs=codecs, fill_value=fill,
        regions=regions,
    )  # fmt: skip
    reference = encode_with_zarr(
        values, shape=values.shape, data_type=data_type, chunk_shape=chunks, codecs=codecs,
        fill_value=fill,
    )  # fmt: skip
    return direct, reference


def decode_with_zarr(
    chunks: dict[tuple[int, ...], bytes], data_type: str, shape: tuple[int, ...], codecs: list
) -> np.ndarray:
    """The array zarr-python reads from ``chunks`` (a 0-d array's one chunk is key ``c``)."""
    stored = {"/".join(["c", *map(str, coords)]): data for coords, data in chunks.items()}
    store = memory_array_store(MemoryArray(shape, data_type, shape, codecs, None), stored)
    return np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[...])


@settings(max_examples=150, deadline=None)
@given(dtype=NUMERIC, layout=shapes_and_chunks(), data=st.data())
def test_numbers_encode_as_zarr_does(dtype: str, layout, data) -> None:  # type: ignore[no-untyped-def]
    shape, chunks = layout
    values = data.draw(hnp.arrays(np.dtype(dtype), shape))
    fill = data.draw(st.sampled_from([None, 0, 1]))
    direct, reference = _both(values, np.dtype(dtype), chunks, [bytes_codec(np.dtype(dtype))], fill)
    assert direct is not None
    assert direct == reference


@settings(max_examples=100, deadline=None)
@given(layout=shapes_and_chunks(), compress=st.booleans(), data=st.data())
def test_strings_encode_as_zarr_does(layout, compress: bool, data) -> None:  # type: ignore[no-untyped-def]
    shape, chunks = layout
    texts = data.draw(st.lists(st.text(max_size=12), min_size=1, max_size=1))[0]
    count = int(np.prod(shape))
    items = data.draw(st.lists(st.text(max_size=12), min_size=count, max_size=count))
    values = np.array(items or [texts], dtype=np.dtypes.StringDType()).reshape(shape)
    codecs = [{"name": "vlen-utf8", "configuration": {}}]
    if compress:
        codecs.append(ZSTD_CODEC)
    direct, reference = _both(values, "string", chunks, codecs, "")
    assert direct is not None
    assert direct == reference


@settings(max_examples=100, deadline=None)
@given(layout=shapes_and_chunks(), compress=st.booleans(), data=st.data())
def test_variable_length_bytes_encode_as_zarr_does(layout, compress: bool, data) -> None:  # type: ignore[no-untyped-def]
    shape, chunks = layout
    count = int(np.prod(shape))
    items = data.draw(st.lists(st.binary(max_size=40), min_size=count, max_size=count))
    values = np.empty(count, dtype=object)
    values[:] = items
    values = values.reshape(shape)
    codecs = [{"name": "vlen-bytes", "configuration": {}}]
    if compress:
        codecs.append(ZSTD_CODEC)
    if not shape:  # zarr-python cannot write a 0-d vlen-bytes array: it must read ours back
        direct = encode_directly(
            values, data_type=VLEN_BYTES, chunk_shape=(), codecs=codecs, fill_value=None,
            regions=[()],
        )  # fmt: skip
        assert direct is not None
        assert decode_with_zarr(direct, VLEN_BYTES, (), codecs)[()] == items[0]
        return
    direct, reference = _both(values, VLEN_BYTES, chunks, codecs, None)
    assert direct is not None
    assert direct == reference


@pytest.mark.parametrize(
    ("data_type", "codecs"),
    [
        (np.dtype([("a", "<i4"), ("b", "<f8")]), [{"name": "bytes"}]),
        (np.dtype("<c8"), [{"name": "bytes", "configuration": {"endian": "little"}}]),
        (np.dtype("<i4"), [{"name": "bytes", "configuration": {"endian": "little"}}, ZSTD_CODEC]),
    ],
)
def test_other_chains_are_left_to_zarr(data_type, codecs) -> None:  # type: ignore[no-untyped-def]
    values = np.zeros((4,), dtype=data_type)
    direct = encode_directly(
        values, data_type=data_type, chunk_shape=(4,), codecs=codecs, fill_value=None,
        regions=[(0,)],
    )  # fmt: skip
    assert direct is None
