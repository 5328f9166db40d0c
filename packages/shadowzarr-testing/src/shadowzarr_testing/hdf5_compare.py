"""Compare an HDF5 file, as its native reader sees it, with the references made for it.

Every dataset is read by h5py (hdf5plugin's filters loaded) and by zarr through the references,
and compared in the representation the unified convention gives it (strings, object and region
references, variable-length sequences, raw records, compounds, numbers bit for bit). Every
attribute is compared too, as h5py gives it, or, for netCDF-4 files, as h5netcdf gives it (one-
element arrays as scalars, bookkeeping left out). A dataset the references record as
unsupported is checked against its outcome: inlined values must equal, an omitted one must be
absent. Imported by tests only (h5py, hdf5plugin and shadowzarr-spec are in the dev group).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shadowzarr_testing.compare import assert_array_equal_exact

__all__ = [
    "Hdf5Comparison",
    "check_number_type",
    "compare_attributes",
    "compare_hdf5",
    "compare_values",
    "is_netcdf_placeholder",
]

RESERVED = frozenset(
    {
        "_DTYPE", "_REFERENCE_FIELDS", "_LINKS", "_ENUM", "_ENUM_NAME", "_VLEN_DTYPE",
        "_STRUCTURED_DTYPE",
        "_ATTRIBUTE_TYPES", "zarr_conventions",
    }
)  # fmt: skip
NETCDF_BOOKKEEPING = frozenset(
    {"_Netcdf4Dimid", "_Netcdf4Coordinates", "_NCProperties", "_nc3_strict", "CLASS", "NAME",
     "DIMENSION_LIST", "REFERENCE_LIST", "_FillValue"}
)  # fmt: skip
_PLACEHOLDER = "This is a netCDF dimension but not a netCDF variable"


@dataclass
class Hdf5Comparison:
    """What a comparison looked at."""

    datasets: list[str] = field(default_factory=list)
    """Datasets compared value by value (referenced, or inlined by the policy)."""
    outcomes: dict[str, str] = field(default_factory=dict)
    """Path → "omitted" or "inlined", for the datasets the references call unsupported."""
    attributes: int = 0


def compare_hdf5(path: Any, root: Any, rfs: Any) -> Hdf5Comparison:
    """Assert that every dataset and attribute of the file at ``path`` reads the same through
    the zarr group ``root`` opened on ``rfs`` (or is recorded unsupported, as checked)."""
    import h5py
    import hdf5plugin  # noqa: F401 - registers the filters h5py needs to read the file

    result = Hdf5Comparison()
    with h5py.File(path, "r") as f:
        netcdf = "_NCProperties" in f.attrs
        names: list[str] = []
        f.visit(names.append)  # names only: HDF5 may fail to open some of the objects
        compare_attributes(f, root, netcdf, result)
        for name in names:
            try:
                obj = f[name]
            except (KeyError, OSError):  # an object HDF5 cannot open: left out, and why
                unopened = rfs.unsupported.get(name)
                assert unopened is not None, f"{name}: HDF5 cannot open it, yet not recorded"
                assert unopened.outcome == "omitted", name
                assert name not in root, name
                result.outcomes[name] = unopened.outcome
                continue
            if isinstance(obj, h5py.Group):
                compare_attributes(obj, root[name], netcdf, result)
                continue
            if not isinstance(obj, h5py.Dataset):
                continue
            if netcdf and is_netcdf_placeholder(obj):
                assert name not in root, f"{name}: a netCDF placeholder dimension"
                continue
            unsupported = rfs.unsupported.get(name)
            if unsupported is not None:
                result.outcomes[name] = unsupported.outcome
                assert unsupported.reason, name
                if unsupported.outcome == "omitted":
                    assert name not in root, f"{name} is omitted but in the references"
                    continue
            array = root[name]
            compare_values(f, obj, array, root, name)
            compare_attributes(obj, array, netcdf, result)
            result.datasets.append(name)
    return result


def is_netcdf_placeholder(dataset: Any) -> bool:
    """A netCDF dimension without a variable: a dataset in HDF5, no variable in netCDF."""
    label = dataset.attrs.get("NAME")
    if isinstance(label, bytes | np.bytes_):
        label = bytes(label).decode("utf-8", "replace")
    return isinstance(label, str) and label.startswith(_PLACEHOLDER)


def compare_values(
    f: Any, dataset: Any, array: Any, root: Any, name: str, *, netcdf: bool | None = None
) -> None:
    """Assert that the zarr ``array`` reads as h5py reads ``dataset`` of the open file ``f``
    (``netcdf``: a netCDF-4 file; None: one with ``_NCProperties``)."""
    if netcdf is None:
        netcdf = "_NCProperties" in f.attrs
    import h5py

    dtype = dataset.dtype
    if dataset.shape is None:
        assert array.shape == (0,), name
        return
    expected = dataset[()]
    actual = array[...] if array.ndim else array[()]
    if array.shape != dataset.shape and array.ndim == dataset.ndim:
        # a netCDF variable on a longer unlimited dimension: the rest reads as its fill value
        assert netcdf, f"{name}: shape {array.shape} != {dataset.shape}"
        fill = "" if h5py.check_string_dtype(dtype) is not None else dataset.fillvalue
        grown = np.full(array.shape, fill, dtype=object if isinstance(fill, str) else dtype)
        grown[tuple(slice(0, n) for n in dataset.shape)] = expected
        expected = grown
    if np.asarray(actual).dtype.kind == "S":  # netCDF char arrays stay bytes
        assert np.asarray(actual).tobytes() == np.asarray(expected).tobytes(), name
        return
    if h5py.check_string_dtype(dtype) is not None:
        want = [_text(v) for v in np.asarray(expected, dtype=object).ravel()]
        assert [str(v) for v in np.asarray(actual, dtype=object).ravel()] == want, name
        return
    if h5py.check_ref_dtype(dtype) is h5py.RegionReference:
        from shadowzarr_spec.region_references import region_references

        for ours, ref in zip(region_references(actual).ravel(), np.ravel(expected), strict=True):
            assert ours.path == _target(f, ref), name
            if ours.path:
                region = np.asarray(f[ref][ref])
                if region.dtype.kind in "biufc" and region.dtype.itemsize > 1:  # zarr gives native
                    region = region.astype(region.dtype.newbyteorder("="))
                assert_array_equal_exact(ours.apply(root[ours.path.lstrip("/")]), region, name)
        return
    if h5py.check_ref_dtype(dtype) is not None:
        want = [_target(f, r) for r in np.ravel(expected)]
        assert [str(v) for v in np.asarray(actual, dtype=object).ravel()] == want, name
        return
    if h5py.check_vlen_dtype(dtype) is not None:
        from shadowzarr_spec.hdf5_types import as_sequences

        got = as_sequences(actual, array.attrs)
        if dataset.shape == ():  # h5py reads a scalar's one sequence, not an object array
            assert_array_equal_exact(got[()], np.asarray(expected), name)
            return
        for index, want in np.ndenumerate(np.asarray(expected, dtype=object)):
            assert_array_equal_exact(got[index], np.asarray(want), f"{name}{index}")
        return
    if "_STRUCTURED_DTYPE" in array.attrs:
        from shadowzarr_spec.hdf5_types import as_structured

        records = as_structured(actual, array.attrs)
        assert records.dtype == dtype, name
        _same_field_bytes(records, np.asarray(expected), name)
        return
    if dtype.names is not None:
        _compare_records(f, np.asarray(actual), np.asarray(expected), name)
        return
    expected = np.asarray(expected)
    native = expected.dtype.newbyteorder("=") if expected.dtype.itemsize > 1 else expected.dtype
    if expected.dtype.kind in "biufc":
        expected = expected.astype(native)
    assert_array_equal_exact(np.asarray(actual).reshape(expected.shape), expected, name)


def _target(f: Any, reference: Any) -> str:
    """The path h5py names for a reference; "" for a null one or one whose target is gone
    (an anonymous dataset HDF5 deleted at close): the references read both as null."""
    if not reference:
        return ""
    try:
        return str(f[reference].name)
    except KeyError:
        return ""


def _same_field_bytes(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Records equal field by field, bit for bit; the padding between fields is no data (h5py
    zeroes it, the file may hold whatever its writer's memory had)."""
    names = expected.dtype.names
    if names is None:
        assert actual.dtype == expected.dtype, f"{what}: {actual.dtype} != {expected.dtype}"
        same = np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()
        assert same, f"{what}: values differ"
        return
    for field_name in names:
        _same_field_bytes(actual[field_name], expected[field_name], f"{what}[{field_name}]")


def _compare_records(f: Any, actual: np.ndarray, expected: np.ndarray, name: str) -> None:
    import h5py

    for field_name in expected.dtype.names or ():
        field_dtype = expected.dtype.fields[field_name][0]  # type: ignore[index]
        got, want = actual[field_name], expected[field_name]
        what = f"{name}[{field_name}]"
        if h5py.check_ref_dtype(field_dtype) is not None:
            assert [str(v) for v in got.ravel()] == [_target(f, r) for r in want.ravel()]
        elif h5py.check_string_dtype(field_dtype) is not None:
            assert [str(v) for v in got.ravel()] == [_text(v) for v in want.ravel()], what
        elif field_dtype.names is not None:
            _compare_records(f, got, want, what)
        else:
            assert_array_equal_exact(got, want.astype(got.dtype), what)


def compare_attributes(
    obj: Any, node: Any, netcdf: bool, result: Hdf5Comparison | None = None
) -> None:
    """Assert that the zarr ``node`` has the attributes of the h5py object ``obj`` (as
    h5netcdf gives them when ``netcdf``), numbers of the same type and shape."""
    from shadowzarr_spec import decode_attributes

    actual = {k: v for k, v in decode_attributes(dict(node.attrs)).items() if k not in RESERVED}
    if netcdf:
        actual.pop("_FillValue", None)  # stored as xarray's Zarr backend reads it: checked there
        raw = _netcdf_attributes(obj)
        actual = {k: _netcdf_view(v) for k, v in actual.items()}
        expected = {k: _plain(v) for k, v in raw.items()}
    else:
        raw = _readable_attributes(obj)
        for key in set(obj.attrs) - set(raw):  # h5py cannot read it: nothing to compare with
            actual.pop(key, None)
        expected = {key: _expected_attribute(value, obj.file) for key, value in raw.items()}
        specloc = expected.get(".specloc")
        if obj.name == "/" and isinstance(specloc, dict) and "_REFERENCE" in specloc:
            # NWB's convention (what NWBZarrIO reads): the specifications' path, relative
            expected[".specloc"] = specloc["_REFERENCE"]["path"].strip("/")
    plain_actual = {k: _plain(v) if isinstance(v, np.ndarray | np.generic) else v
                    for k, v in actual.items()}  # fmt: skip
    assert _same(plain_actual, expected), f"{obj.name}: {actual} != {expected}"
    for key, value in raw.items():
        check_number_type(actual.get(key), value, f"{obj.name} attribute {key!r}")
    if result is not None:
        result.attributes += len(expected)


def _readable_attributes(obj: Any) -> dict[str, Any]:
    """The attributes h5py reads (one of a type numpy lacks, such as ``>u16``, raises)."""
    raw = {}
    for key in obj.attrs:
        if key in ("DIMENSION_LIST", "REFERENCE_LIST"):
            continue
        try:
            raw[key] = obj.attrs[key]
        except (TypeError, ValueError, OSError):
            continue
    return raw


def _netcdf_view(value: Any) -> Any:
    """A one-element array as its element, as netCDF readers (h5netcdf, netCDF4) give it."""
    if isinstance(value, np.ndarray) and value.shape == (1,):
        return value[0]
    return value


def check_number_type(actual: Any, native: Any, what: str) -> None:
    """A number (or array of numbers) keeps the type and shape its native reader gives."""
    if not isinstance(native, np.ndarray | np.generic) or native.dtype.kind not in "biufc":
        return
    if native.dtype.names is not None:
        return
    got = np.asarray(actual)
    assert got.shape == np.shape(native), f"{what}: shape {got.shape} != {np.shape(native)}"
    assert got.dtype.kind == native.dtype.kind, f"{what}: {got.dtype} != {native.dtype}"
    assert got.dtype.itemsize == native.dtype.itemsize, f"{what}: {got.dtype} != {native.dtype}"


def _netcdf_attributes(obj: Any) -> dict[str, Any]:
    """The attributes as h5netcdf gives them (the netCDF reader xarray uses)."""
    import h5netcdf

    with h5netcdf.File(obj.file.filename, "r") as nc:
        target = nc if obj.name == "/" else nc[obj.name]
        return {key: value for key, value in target.attrs.items() if key not in NETCDF_BOOKKEEPING}


def _expected_attribute(value: Any, f: Any) -> Any:
    import h5py

    if isinstance(value, h5py.Empty):
        return None
    if isinstance(value, h5py.RegionReference):
        return {"_REGION_REFERENCE": {"source": ".", "path": _target(f, value)}}
    if isinstance(value, h5py.Reference):
        return {"_REFERENCE": {"source": ".", "path": _target(f, value)}}
    if isinstance(value, np.ndarray | np.void) and value.dtype.names is not None:
        array = np.asarray(value)
        names = array.dtype.names or ()
        rows = [{n: _expected_attribute(r[n], f) for n in names} for r in array.ravel()]
        return rows[0] if array.ndim == 0 else rows
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OSc":
            flat = [_expected_attribute(v, f) for v in value.ravel()]
            return _nested(flat, value.shape)
        if value.dtype.kind == "V":
            return _nested([bytes(v) for v in value.ravel()], value.shape)
        return value.tolist()
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | np.bytes_):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value)
    if isinstance(value, np.void):
        return bytes(value)
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.ndim else _plain(value[()])
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, np.complexfloating | complex):
        return complex(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _nested(flat: list[Any], shape: tuple[int, ...]) -> Any:
    if len(shape) <= 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            return False
        if "_REGION_REFERENCE" in expected:  # the selection is checked where it is read
            return bool(
                actual["_REGION_REFERENCE"]["path"] == expected["_REGION_REFERENCE"]["path"]
            )
        return all(_same(actual[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_same(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if isinstance(expected, complex) and (math.isnan(expected.real) or math.isnan(expected.imag)):
        return isinstance(actual, complex) and str(actual) == str(expected)
    if isinstance(actual, int | float) and not isinstance(actual, bool):
        return isinstance(expected, int | float) and actual == expected  # 1 == 1.0: numbers
    return type(actual) is type(expected) and actual == expected


def _text(value: Any) -> str:
    if isinstance(value, bytes | np.bytes_):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    return str(value)
