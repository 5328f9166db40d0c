"""Reading every dataset of an NWB HDF5 file or an NWB Zarr store into comparable values."""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

# Datasets that differ between two conversions of the same data by design.
DIFFERS_BY_DESIGN = {"file_create_date"}


def hdf5_datasets(path: Any) -> dict[str, Any]:
    """Path → values of every dataset, references as target paths and strings as str."""
    values: dict[str, Any] = {}
    with h5py.File(path, "r") as file:

        def visit(name: str, node: Any) -> None:
            if isinstance(node, h5py.Dataset):
                values[name] = _plain(file, node)

        file.visititems(visit)
    return values


def _plain(file: h5py.File, dataset: h5py.Dataset) -> Any:
    data = dataset[()]
    check = h5py.check_dtype(ref=dataset.dtype)
    if check is not None:
        return np.vectorize(lambda r: file[r].name, otypes=[object])(data).tolist()
    if dataset.dtype.kind == "O" or h5py.check_string_dtype(dataset.dtype) is not None:
        return np.vectorize(_text, otypes=[object])(data).tolist()
    if dataset.dtype.names is not None:
        return [tuple(_field(file, v) for v in row) for row in np.atleast_1d(data)]
    return np.asarray(data)


def _field(file: h5py.File, value: Any) -> Any:
    if isinstance(value, h5py.Reference):
        return file[value].name
    return _text(value)


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def assert_same_datasets(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """Every dataset present in both, with equal values (except those that differ by design)."""
    assert sorted(actual) == sorted(expected)
    for name, value in expected.items():
        if name.rsplit("/", 1)[-1] in DIFFERS_BY_DESIGN or name.startswith("specifications/"):
            continue
        other = actual[name]
        if isinstance(value, np.ndarray):
            assert isinstance(other, np.ndarray), name
            assert other.dtype == value.dtype, (name, other.dtype, value.dtype)
            np.testing.assert_array_equal(other, value, err_msg=name)
        else:
            assert other == value, name
