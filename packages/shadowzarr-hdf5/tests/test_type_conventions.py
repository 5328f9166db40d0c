"""Compounds and sequences of numbers, read through zarr as h5py reads them.

Compounds Zarr can name (numbers and nested compounds of numbers) are Zarr ``struct`` arrays
that zarr-python reads with no help; compounds with array fields (pandas' and PyTables' tables)
and variable-length sequences of numbers are stored under the documented conventions
(``_STRUCTURED_DTYPE``, ``_VLEN_DTYPE``), decoded by ``read_native``, and named at generation in
one ``ConventionTypeWarning``. Every file is written by h5py (or pandas through PyTables).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd
import pytest
from shadowzarr_spec import ConventionTypeWarning
from shadowzarr_spec.hdf5_types import convention_datasets
from shadowzarr_store import read_native
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_hdf5 import generate_rfs

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

POINT = np.dtype([("x", "<f4"), ("y", "<i2")])
NESTED = np.dtype([("id", "<i8"), ("pos", POINT)])
TABLE_ROW = np.dtype([("id", "<i4"), ("values", "<f8", (3,)), ("name", "S4"), ("flag", "u1")])
DEEP = np.dtype([("id", "<i4"), ("sub", [("grid", "<u2", (2, 2)), ("weight", ">f4")])])


def _generated(path: Path) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConventionTypeWarning)
        rfs = generate_rfs(path)
    return rfs, [w for w in caught if issubclass(w.category, ConventionTypeWarning)]


def _assert_records_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    for name in want.dtype.names or ():
        if want.dtype.fields[name][0].names is None:  # type: ignore[index]
            assert_array_equal_exact(got[name], want[name], name)


def test_compounds_zarr_can_name_read_natively(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "records.h5"
    nested = np.array([(1, (1.5, 2)), (-2, (3.5, -4)), (2**40, (-0.25, 7))], NESTED)
    flat = np.array([(1, 2.5), (3, -4.5)], [("a", "<i4"), ("b", "<f8")])
    with h5py.File(path, "w") as f:
        f["nested"] = nested
        f["flat"] = flat
    rfs, caught = _generated(path)
    assert caught == []
    assert convention_datasets(rfs) == {}
    root = open_refs(rfs)
    with h5py.File(path) as f:
        for name in ("nested", "flat"):
            array = root[name]
            assert array.metadata.to_dict()["data_type"]["name"] == "struct"
            _assert_records_equal(array[...], f[name][()])
            _assert_records_equal(read_native(array, slice(1, 2)), f[name][1:2])


def test_array_field_compounds_read_as_h5py_does(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "tables.h5"
    rows = np.zeros(50, TABLE_ROW)
    rows["id"] = np.arange(50)
    rows["values"] = np.arange(150.0).reshape(50, 3) / 7
    rows["name"] = [f"r{i}".encode() for i in range(50)]
    rows["flag"] = np.arange(50) % 3
    deep = np.array([(1, ([[1, 2], [3, 4]], 1.5)), (2, ([[5, 6], [7, 8]], -2.5))], DEEP)
    with h5py.File(path, "w") as f:
        f.create_dataset("table", data=rows, chunks=(16,), compression="gzip")
        f["deep"] = deep
    rfs, caught = _generated(path)
    assert convention_datasets(rfs) == {
        "table": "_STRUCTURED_DTYPE",
        "deep": "_STRUCTURED_DTYPE",
    }
    assert len(caught) == 1
    assert "table (_STRUCTURED_DTYPE)" in str(caught[0].message)
    assert "deep (_STRUCTURED_DTYPE)" in str(caught[0].message)
    root = open_refs(rfs)
    with h5py.File(path) as f:
        assert root["table"].dtype == np.dtype("V33")  # what a plain zarr reader sees
        _assert_records_equal(read_native(root["table"]), f["table"][()])
        _assert_records_equal(read_native(root["table"], slice(10, 40)), f["table"][10:40])
        got = read_native(root["deep"])
        _assert_records_equal(got, f["deep"][()])
        assert_array_equal_exact(got["sub"]["grid"], f["deep"]["sub"]["grid"])
        assert got["sub"]["weight"].tolist() == [1.5, -2.5]


def test_pandas_table_format_reads_as_pytables_wrote_it(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "frame.h5"
    frame = pd.DataFrame(
        {"a": np.arange(20.0), "b": np.arange(20.0) ** 2, "n": np.arange(20, dtype="i8")}
    )
    frame.to_hdf(path, key="frame", format="table")
    rfs, caught = _generated(path)
    table = "frame/table"
    assert convention_datasets(rfs)[table] == "_STRUCTURED_DTYPE"
    assert table in str(caught[0].message)
    root = open_refs(rfs)
    with h5py.File(path) as f:
        want = f[table][()]
        assert any(want.dtype.fields[n][0].subdtype for n in want.dtype.names)  # type: ignore[index]
        got = read_native(root[table])
    _assert_records_equal(got, want)
    assert_array_equal_exact(got["values_block_0"][:, 1], frame["b"].to_numpy())


def test_sequences_of_numbers_read_as_h5py_does(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "sequences.h5"
    with h5py.File(path, "w") as f:
        floats = f.create_dataset("floats", shape=(4,), dtype=h5py.vlen_dtype("<f4"))
        floats[0] = np.array([1.5, -2.0], "f4")
        floats[2] = np.array([np.pi] * 7, "f4")  # floats[1] and floats[3] stay empty
        longs = f.create_dataset("longs", shape=(2, 2), dtype=h5py.vlen_dtype("<i8"))
        longs[0, 0] = np.array([2**40, -1], "i8")
        longs[1, 1] = np.arange(1000, dtype="i8")
        scalar = f.create_dataset("scalar", shape=(), dtype=h5py.vlen_dtype("<u2"))
        scalar[()] = np.array([1, 65535], "u2")
    rfs, caught = _generated(path)
    assert convention_datasets(rfs) == {n: "_VLEN_DTYPE" for n in ("floats", "longs", "scalar")}
    assert len(caught) == 1
    root = open_refs(rfs)
    with h5py.File(path) as f:
        for name in ("floats", "longs"):
            got, want = read_native(root[name]), f[name][()]
            assert got.shape == want.shape
            for index, expected in np.ndenumerate(want):
                assert_array_equal_exact(got[index], expected, f"{name}{index}")
        part = read_native(root["longs"], (1, slice(None)))
        assert part.shape == (2,)
        assert_array_equal_exact(part[1], f["longs"][1, 1])
        assert read_native(root["floats"], 1).dtype == np.dtype("f4")
        assert read_native(root["floats"], 1).shape == (0,)
        assert_array_equal_exact(read_native(root["scalar"]), f["scalar"][()])


def test_a_sequence_not_stored_as_bytes_is_refused() -> None:
    """``bytes()`` of a numpy array is its memory: an element that is not bytes is an error,
    never values made of its buffer."""
    from shadowzarr_spec import ReferenceFormatError
    from shadowzarr_spec.hdf5_types import as_sequences

    stored = np.empty(1, dtype=object)
    stored[0] = np.arange(2)
    with pytest.raises(ReferenceFormatError, match="not bytes"):
        as_sequences(stored, {"_VLEN_DTYPE": "<f4"})
