"""HDF5 types (as h5py reports them) → the type a Zarr array stores.

Numbers, booleans, enums (their base integers), complex, opaque, fixed-shape array types and
compounds of those are stored in the file exactly as a Zarr data type lays them out, so chunks
can point into the file. Strings, object and region references, and compounds holding either
live in heaps or hold file addresses: their values are converted (strings to UTF-8, references to
target paths) and stored inline, following the unified convention (``_DTYPE`` "str" /
"object_reference", ``_REFERENCE_FIELDS``): :func:`.values.convert_values`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import h5py
import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.hdf5_types import STRUCTURED_DTYPE_ATTR, VLEN_DTYPE_ATTR, structured_descr
from shadowzarr_spec.metadata import VLEN_BYTES
from shadowzarr_spec.nwb_convention import OBJECT_REFERENCE_DTYPE, STRING_DTYPE
from shadowzarr_spec.region_references import REGION_REFERENCE_DTYPE

__all__ = ["TypeKind", "TypePlan", "plan_type"]


class TypeKind(Enum):
    STORED = "stored"
    """The file's bytes are the Zarr array's bytes."""
    STRING = "string"
    REFERENCE = "reference"
    REGION_REFERENCE = "region_reference"
    """Stored as JSON text: target path and selection (:mod:`shadowzarr_spec.region_references`)."""
    CONVERTED_COMPOUND = "converted_compound"
    """A compound with string or reference fields (or padding): converted, stored inline."""
    VLEN_SEQUENCE = "vlen_sequence"
    """Variable-length sequences of numbers: each one's bytes, stored inline (``_VLEN_DTYPE``)."""


@dataclass(frozen=True, slots=True)
class TypePlan:
    kind: TypeKind
    storage: Any
    """numpy dtype of the Zarr array, or "string"."""
    extra_shape: tuple[int, ...]
    """Trailing axes of an HDF5 array type (``H5T_ARRAY``), appended to the dataset's shape."""
    dtype_attr: str | None
    """The ``_DTYPE`` attribute (None for compounds)."""
    reference_fields: tuple[str, ...] = ()
    enum: dict[str, int] | None = None
    attributes: tuple[tuple[str, Any], ...] = ()
    """Attributes the representation needs (``_STRUCTURED_DTYPE``, ``_VLEN_DTYPE``)."""

    @property
    def stored(self) -> bool:
        return self.kind is TypeKind.STORED


def plan_type(dtype: np.dtype, path: str) -> TypePlan:
    """How a dataset of HDF5 type ``dtype`` (h5py's numpy form) is stored."""
    if h5py.check_string_dtype(dtype) is not None:
        return TypePlan(TypeKind.STRING, "string", (), STRING_DTYPE)
    if h5py.check_ref_dtype(dtype) is h5py.RegionReference:
        return TypePlan(TypeKind.REGION_REFERENCE, "string", (), REGION_REFERENCE_DTYPE)
    if h5py.check_ref_dtype(dtype) is not None:
        return TypePlan(TypeKind.REFERENCE, "string", (), OBJECT_REFERENCE_DTYPE)
    base = h5py.check_vlen_dtype(dtype)
    if base is not None:
        number = np.dtype(base)
        if number.kind not in "biuf" or number.names is not None or number.subdtype is not None:
            raise UnsupportedFeatureError(
                f"dataset {path!r}: variable-length sequences of {base} have no Zarr data type"
            )
        # h5py hands the sequences over in native byte order, whatever the file's order
        native = number.newbyteorder("=") if number.itemsize > 1 else number
        return TypePlan(
            TypeKind.VLEN_SEQUENCE,
            VLEN_BYTES,
            (),
            None,
            attributes=((VLEN_DTYPE_ATTR, native.str),),
        )
    if dtype.subdtype is not None:
        base, extra = dtype.subdtype
        inner = plan_type(base, path)
        if not inner.stored or inner.extra_shape:
            raise UnsupportedFeatureError(
                f"dataset {path!r}: an HDF5 array type of {base} is not supported"
            )
        return TypePlan(TypeKind.STORED, inner.storage, tuple(extra), inner.dtype_attr)
    if dtype.names is not None:
        return _plan_compound(dtype, path)
    enum = h5py.check_enum_dtype(dtype)
    plain = np.dtype(dtype.str)
    if plain.kind in "iufcb":
        widths = (2, 4, 8) if plain.kind == "f" else (8, 16)
        if plain.kind in "fc" and plain.itemsize not in widths:
            what = "complex numbers" if plain.kind == "c" else "floats"
            raise UnsupportedFeatureError(
                f"dataset {path!r}: {plain.itemsize * 8}-bit {what} (long double) have no Zarr "
                "data type"
            )
        mapping = (
            None if enum is None or plain.kind == "b" else {k: int(v) for k, v in enum.items()}
        )
        return TypePlan(TypeKind.STORED, plain, (), plain.type.__name__, enum=mapping)
    if plain.kind == "V":
        return TypePlan(TypeKind.STORED, plain, (), plain.type.__name__)
    raise UnsupportedFeatureError(f"dataset {path!r}: HDF5 type {dtype} is not supported")


def _plan_compound(dtype: np.dtype, path: str) -> TypePlan:
    if not _has_array_field(dtype):
        return _plan_fields(dtype, path)
    return _raw_records(dtype, path)


def _plan_fields(dtype: np.dtype, path: str) -> TypePlan:
    """A compound whose fields Zarr structured types hold, or whose values are converted."""
    fields: list[tuple[str, Any]] = []
    references: list[str] = []
    converted = not _is_packed(dtype)
    for name in dtype.names or ():
        field_dtype = dtype.fields[name][0]  # type: ignore[index]
        if h5py.check_ref_dtype(field_dtype) is h5py.RegionReference:
            raise UnsupportedFeatureError(
                f"dataset {path!r}: compound field {name!r} holds region references, which "
                "compound arrays cannot carry without losing the region"
            )
        if _is_vlen_sequence(field_dtype):
            raise UnsupportedFeatureError(
                f"dataset {path!r}: compound field {name!r} holds variable-length sequences, "
                "which Zarr structured types cannot hold"
            )
        if h5py.check_ref_dtype(field_dtype) is not None:
            references.append(name)
            converted = True
            fields.append((name, "U"))
            continue
        inner = plan_type(field_dtype, f"{path}[{name}]")
        if inner.kind in (TypeKind.STRING, TypeKind.CONVERTED_COMPOUND):
            converted = True
        fields.append((name, "U" if inner.kind is TypeKind.STRING else inner.storage))
    if len(_byte_orders(dtype)) > 1:
        converted = True  # Zarr structs have one byte order; convert to little-endian
    if not converted:
        return TypePlan(TypeKind.STORED, np.dtype(fields), (), None)
    return TypePlan(
        TypeKind.CONVERTED_COMPOUND, np.dtype(object), (), None, reference_fields=tuple(references)
    )


def _is_vlen_sequence(dtype: np.dtype) -> bool:
    """Variable-length sequences of numbers (h5py also calls variable-length strings vlen)."""
    return h5py.check_vlen_dtype(dtype) is not None and h5py.check_string_dtype(dtype) is None


def _has_array_field(dtype: np.dtype) -> bool:
    for name in dtype.names or ():
        field_dtype = dtype.fields[name][0]  # type: ignore[index]
        if field_dtype.subdtype is not None or (
            field_dtype.names is not None and _has_array_field(field_dtype)
        ):
            return True
    return False


def _raw_records(dtype: np.dtype, path: str) -> TypePlan:
    """A compound with array fields, which Zarr structs cannot hold: raw records pointing into
    the file, their layout in ``_STRUCTURED_DTYPE`` (:mod:`shadowzarr_spec.hdf5_types`)."""
    for name in dtype.names or ():
        field_dtype = dtype.fields[name][0]  # type: ignore[index]
        base = field_dtype.subdtype[0] if field_dtype.subdtype is not None else field_dtype
        if base.hasobject or (h5py.check_string_dtype(base) is not None and base.kind != "S"):
            raise UnsupportedFeatureError(
                f"dataset {path!r}: compound field {name!r} ({base}) lives outside the record, "
                "beside array fields that Zarr structured types cannot hold"
            )
    return TypePlan(
        TypeKind.STORED,
        np.dtype(f"V{dtype.itemsize}"),
        (),
        None,
        attributes=((STRUCTURED_DTYPE_ATTR, structured_descr(dtype)),),
    )


def _byte_orders(dtype: np.dtype) -> set[str]:
    if dtype.names is None:
        base = dtype.subdtype[0] if dtype.subdtype is not None else dtype
        return {base.str[0]} - {"|"}
    orders: set[str] = set()
    for name in dtype.names:
        orders |= _byte_orders(dtype.fields[name][0])  # type: ignore[index]
    return orders


def _is_packed(dtype: np.dtype) -> bool:
    offset = 0
    for name in dtype.names or ():
        field_dtype, field_offset = dtype.fields[name][:2]  # type: ignore[index]
        if field_offset != offset:
            return False
        if field_dtype.names is not None and not _is_packed(field_dtype):
            return False
        offset += field_dtype.itemsize
    return offset == dtype.itemsize
