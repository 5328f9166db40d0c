"""Every value of a small dataset, read whole (from the header reader when it can, else h5py), and
made the values the Zarr array holds: strings, reference paths, raw records, padded to the
array's shape."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np
from shadowzarr_spec.hdf5_types import VLEN_DTYPE_ATTR

from ..context import Source
from ..header_reader.dataset import HeaderDataset
from ..object_paths import ObjectPaths
from ..region_references import region_reference
from .types import TypeKind, TypePlan

__all__ = ["as_storage", "convert_values", "padded", "read_values", "read_whole"]


def read_whole(dataset: h5py.Dataset | HeaderDataset) -> Any:
    """``dataset[()]`` through the low-level read (h5py's selection machinery costs more than
    the read itself for the small datasets that are inlined); the type and shape are h5py's
    own (a `HeaderDataset` hands its h5py dataset's ``id`` over)."""
    oid = dataset.id
    dtype, shape = oid.dtype, oid.shape
    if shape is None or dtype.subdtype is not None:
        return dataset[()]
    values = np.zeros(shape, dtype=dtype)
    oid.read(h5py.h5s.ALL, h5py.h5s.ALL, values, mtype=h5py.h5t.py_create(dtype))
    return values


def read_values(dataset: h5py.Dataset | HeaderDataset, source: Source) -> Any:
    """Every value of a small dataset: from the header reader when it can, else h5py."""
    if isinstance(dataset, HeaderDataset):
        values = dataset.read_whole(lambda address: source.paths.at_address(address) is not None)
        if values is not None:
            return values
    return read_whole(dataset)


def as_storage(values: Any, storage: np.dtype) -> np.ndarray:
    """Values read by h5py in the array's stored type (records as raw bytes: a view)."""
    array = np.asarray(values)
    if storage.kind == "V" and storage.names is None and array.dtype.names is not None:
        return np.ascontiguousarray(array).view(storage)
    return array.astype(storage, copy=False)


def padded(values: np.ndarray, shape: tuple[int, ...], fill: Any) -> np.ndarray:
    """``values`` (the HDF5 extent) padded to ``shape`` with the fill value."""
    if values.shape == shape:
        return values
    out = np.full(shape, fill if fill is not None else np.zeros((), values.dtype)[()],
                  dtype=values.dtype)  # fmt: skip
    out[tuple(slice(0, n) for n in values.shape)] = values
    return out


def _reference_paths(
    array: np.ndarray, paths: ObjectPaths, dataset: h5py.Dataset | None
) -> list[str]:
    """Target paths of object references, dereferencing each distinct target once.

    Tables of references (an NWB electrodes table's group column) point at a few objects many
    times; the stored addresses tell which references are the same.
    """
    flat = array.ravel()
    addresses = None
    if array.dtype.kind == "u":  # the header reader's stored addresses, each one reachable
        addresses = flat
    elif dataset is not None and h5py.check_ref_dtype(dataset.dtype) is h5py.Reference:
        raw = np.empty(dataset.shape, dtype="<u8")
        try:
            dataset.id.read(h5py.h5s.ALL, h5py.h5s.ALL, raw, mtype=h5py.h5t.STD_REF_OBJ)
            addresses = raw.ravel()
        except (OSError, TypeError, ValueError):
            addresses = None
    if addresses is None or len(addresses) != len(flat):
        return [paths(v) for v in flat]
    unique, first, inverse = np.unique(addresses, return_index=True, return_inverse=True)
    names = [paths.resolve(int(a), flat[i]) for a, i in zip(unique, first, strict=True)]
    return [names[i] for i in inverse.ravel()]


def _text(value: Any) -> str:
    if isinstance(value, bytes | np.bytes_):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    return str(value)


def convert_values(
    values: Any, plan: TypePlan, paths: ObjectPaths, dataset: h5py.Dataset | None = None
) -> np.ndarray:
    """Values read by h5py as the array the Zarr array holds (strings, paths, structs).

    ``dataset`` (the values' source) lets object references be resolved once per target."""
    array = np.asarray(values)
    if plan.kind is TypeKind.STRING:
        flat = [_text(v) for v in array.ravel().tolist()]
        return np.array(flat, dtype=np.dtypes.StringDType()).reshape(array.shape)
    if plan.kind is TypeKind.REFERENCE:
        flat = _reference_paths(array, paths, dataset)
        return np.array(flat, dtype=np.dtypes.StringDType()).reshape(array.shape)
    if plan.kind is TypeKind.REGION_REFERENCE:
        texts = [region_reference(v, paths.file, paths).text() for v in array.ravel()]
        return np.array(texts, dtype=np.dtypes.StringDType()).reshape(array.shape)
    if plan.kind is TypeKind.CONVERTED_COMPOUND:
        return _convert_compound(array, paths)
    if plan.kind is TypeKind.VLEN_SEQUENCE:
        base = np.dtype(dict(plan.attributes)[VLEN_DTYPE_ATTR])
        out = np.empty(array.shape, dtype=object)
        for index, item in np.ndenumerate(array):
            out[index] = np.asarray(item, dtype=base).tobytes()
        return out
    return array


def _convert_compound(array: np.ndarray, paths: ObjectPaths) -> np.ndarray:
    """A struct array whose string and reference fields become fixed-width unicode."""
    fields: list[tuple[str, Any]] = []
    columns: dict[str, np.ndarray] = {}
    for name in array.dtype.names or ():
        field_dtype = array.dtype.fields[name][0]  # type: ignore[index]
        column = array[name]
        if h5py.check_ref_dtype(field_dtype) is not None:
            texts = [paths(v) for v in column.ravel()]
            column = np.array(texts or [""], dtype=str)[: len(texts)].reshape(column.shape)
            column = column.astype(f"U{max(1, column.dtype.itemsize // 4)}")
        elif h5py.check_string_dtype(field_dtype) is not None:
            texts = [_text(v) for v in column.ravel().tolist()]
            width = max([1, *(len(t) for t in texts)])
            column = np.array(texts, dtype=f"U{width}").reshape(column.shape)
        elif field_dtype.names is not None:
            column = _convert_compound(column, paths)
        else:
            column = column.astype(np.dtype(field_dtype.str).newbyteorder("<"))
        fields.append((name, column.dtype))
        columns[name] = column
    out = np.empty(array.shape, dtype=np.dtype(fields))
    for name, column in columns.items():
        out[name] = column
    return out
