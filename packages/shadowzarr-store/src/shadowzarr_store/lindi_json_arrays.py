"""LINDI's arrays of JSON values (numcodecs' ``json2`` codec) as arrays Zarr v3 can hold.

LINDI writes object references, variable-length strings and compounds as Zarr v2 object arrays
whose chunks (always inline) are JSON: a reference is ``{"_REFERENCE": {"path": ...}}``, a
compound record a list of its fields, typed by the ``_COMPOUND_DTYPE`` attribute. Zarr v3 has no
object data type, so such an array is rewritten once, when the document is loaded: references
become our unified convention's strings (``_DTYPE: "object_reference"``, each element the
target's path), strings stay strings (``vlen-utf8``), compounds become structured records. What
fits none of these is left out by name (`NotConvertible`), never read half right.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import numcodecs
import numpy as np
from shadowzarr_spec import ReferenceFormatError, ShadowzarrError
from shadowzarr_spec.blosc_frame import check_blosc_frame
from shadowzarr_spec.zstd_frame import zstd_decoded_bound

__all__ = ["NotConvertible", "is_json_array", "plain_array"]

_JSON_CODECS = ("json2", "json")
_FIELD_TYPE = re.compile(
    r"[<>|]?[biuf][0-9]{1,2}\Z|[<>|]?S[0-9]{1,6}\Z|(?:u?int(?:8|16|32|64)|float(?:16|32|64)|bool)\Z"
)
"""A field type of ``_COMPOUND_DTYPE``: numpy's type strings or names (LINDI writes names)."""
_MAX_INLINE = 64 * 2**20
"""The largest inline chunk decoded here (LINDI inlines these arrays whole)."""


class NotConvertible(ReferenceFormatError):
    """A LINDI JSON array that has no Zarr v3 form here; the array is left out."""


def is_json_array(zarray: Mapping[str, Any]) -> bool:
    """Whether a ``.zarray`` describes an object array of JSON values."""
    filters = zarray.get("filters") or []
    return zarray.get("dtype") == "|O" and any(
        isinstance(f, dict) and f.get("id") in _JSON_CODECS for f in filters
    )


def plain_array(
    path: str, zarray: dict[str, Any], zattrs: dict[str, Any], chunks: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """``(zarray, zattrs, chunks)`` of the array rewritten without JSON values: chunk keys
    map to new inline values (``base64:`` text). Raises `NotConvertible` with the reason."""
    compressor = zarray.get("compressor")
    if len(zarray.get("filters") or []) != 1 or not (
        compressor is None or (isinstance(compressor, dict) and compressor.get("id") in _SQUEEZE)
    ):
        raise NotConvertible(f"{path}: JSON values with other codecs")
    decoded = {key: _decoded(key, value, compressor) for key, value in chunks.items()}
    attributes = dict(zattrs)
    compound = attributes.pop("_COMPOUND_DTYPE", None)
    if compound is not None:
        references = _reference_fields(path, compound)
        longest = max(
            (len(row[i]) for values in decoded.values() for row in _rows(path, values)
             for i in references.values() if i < len(row) and isinstance(row[i], str)),
            default=1,
        )  # fmt: skip
        dtype = _compound_dtype(path, compound, max(1, longest))
        if references:
            attributes["_REFERENCE_FIELDS"] = list(references)
        new_chunks = {key: _records(path, values, dtype) for key, values in decoded.items()}
        descr = [[name, dtype[name].str] for name in dtype.names or ()]
        rewritten = {
            **zarray, "dtype": descr, "filters": None, "compressor": None, "fill_value": None
        }  # fmt: skip
        return rewritten, attributes, new_chunks
    elements = [item for values in decoded.values() for item in values.reshape(-1).tolist()]
    if all(_is_reference(item) for item in elements):
        paths = {key: _reference_paths(values) for key, values in decoded.items()}
        attributes["_DTYPE"] = "object_reference"
        return _strings(zarray), attributes, {k: _vlen(v) for k, v in paths.items()}
    if all(isinstance(item, str) for item in elements):
        return _strings(zarray), attributes, {k: _vlen(v) for k, v in decoded.items()}
    raise NotConvertible(f"{path}: JSON values other than references, strings or records")


def _decoded(key: str, value: Any, compressor: dict[str, Any] | None) -> np.ndarray:
    if not isinstance(value, str):
        raise NotConvertible(f"{key}: a chunk of JSON values that is not inline")
    if len(value) > _MAX_INLINE:
        raise NotConvertible(f"{key}: an inline chunk over {_MAX_INLINE} characters")
    try:
        data = (
            base64.b64decode(value[len("base64:") :], validate=True)
            if value.startswith("base64:")
            else value.encode("utf-8")
        )
        if compressor is not None:
            data = _SQUEEZE[compressor["id"]](data, compressor)
        values = numcodecs.JSON().decode(data)
    except (ValueError, TypeError, RuntimeError, UnicodeError, ShadowzarrError, zlib.error) as exc:
        raise NotConvertible(f"{key}: not a chunk of JSON values ({exc})") from exc
    return np.asarray(values, dtype=object)


def _blosc(data: bytes, config: dict[str, Any]) -> bytes:
    check_blosc_frame(data, _MAX_INLINE)  # before c-blosc trusts the frame's header
    return bytes(numcodecs.get_codec(config).decode(data))


def _zstd(data: bytes, config: dict[str, Any]) -> bytes:
    bound, _ = zstd_decoded_bound(data, _MAX_INLINE)
    if bound > _MAX_INLINE:
        raise ValueError(f"a zstd chunk decoding to {bound} bytes")
    return bytes(numcodecs.get_codec(config).decode(data))


def _inflate(data: bytes, config: dict[str, Any]) -> bytes:
    window = 31 if config.get("id") == "gzip" else 15
    inflater = zlib.decompressobj(window)
    out = inflater.decompress(data, _MAX_INLINE + 1)
    if len(out) > _MAX_INLINE or not inflater.eof:
        raise ValueError("a deflate chunk that does not end within the limit")
    return out


_SQUEEZE: dict[str, Callable[[bytes, dict[str, Any]], bytes]] = {
    "blosc": _blosc,
    "zstd": _zstd,
    "zlib": _inflate,
    "gzip": _inflate,
}
"""The compressors LINDI puts after its JSON values (blosc), and the other common ones, each
decoded within `_MAX_INLINE` bytes."""


def _reference_fields(path: str, compound: Any) -> dict[str, int]:
    """Name → position of the ``<REFERENCE>`` fields of a ``_COMPOUND_DTYPE``."""
    if not isinstance(compound, list):
        raise NotConvertible(f"{path}: _COMPOUND_DTYPE is not a list of fields")
    return {
        str(field[0]): i
        for i, field in enumerate(compound)
        if isinstance(field, list) and len(field) == 2 and field[1] == "<REFERENCE>"
    }


def _rows(path: str, values: np.ndarray) -> list[Any]:
    """The records of a chunk, each a list whose references are their targets' paths."""
    rows = values.reshape(-1).tolist()
    if not all(isinstance(row, list) for row in rows):
        raise NotConvertible(f"{path}: a compound record that is not a list of its fields")
    return [
        [item["_REFERENCE"]["path"] if _is_reference(item) else item for item in row]
        for row in rows
    ]


def _compound_dtype(path: str, compound: Any, reference_length: int = 1) -> np.dtype:
    if not isinstance(compound, list) or not compound:
        raise NotConvertible(f"{path}: _COMPOUND_DTYPE is not a list of fields")
    fields: list[tuple[str, str]] = []
    for field in compound:
        if (
            not isinstance(field, list)
            or len(field) != 2
            or not all(isinstance(part, str) for part in field)
        ):
            raise NotConvertible(f"{path}: _COMPOUND_DTYPE field {field!r:.80} is not [name, type]")
        if field[1] == "<REFERENCE>":  # the target's path, as our _REFERENCE_FIELDS hold it
            fields.append((field[0], f"<U{reference_length}"))
            continue
        if not _FIELD_TYPE.match(field[1]):
            raise NotConvertible(f"{path}: compound field {field[0]!r} of type {field[1]!r:.40}")
        fields.append((field[0], field[1]))
    try:
        little = [(name, np.dtype(text).newbyteorder("<")) for name, text in fields]
        return np.dtype(little)
    except (TypeError, ValueError) as exc:
        raise NotConvertible(f"{path}: _COMPOUND_DTYPE not understood ({exc})") from exc


def _records(path: str, values: np.ndarray, dtype: np.dtype) -> str:
    rows = _rows(path, values)
    names = dtype.names or ()
    if not all(len(row) == len(names) for row in rows):
        raise NotConvertible(f"{path}: a compound record that is not a list of its fields")
    kinds = [dtype[name].kind for name in names]
    try:
        records = np.array(
            [tuple(_field(v, kind) for v, kind in zip(row, kinds, strict=True)) for row in rows],
            dtype=dtype,
        )
    except (TypeError, ValueError, OverflowError) as exc:
        raise NotConvertible(f"{path}: a compound record of other types ({exc})") from exc
    return "base64:" + base64.b64encode(records.tobytes()).decode("ascii")


def _field(value: Any, kind: str) -> Any:
    if isinstance(value, str) and kind == "U":  # a reference's path
        return value
    if isinstance(value, str):
        words = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}
        return words[value] if value in words else value.encode("utf-8")
    return value


def _is_reference(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("_REFERENCE"), dict)
        and isinstance(item["_REFERENCE"].get("path"), str)
    )


def _reference_paths(values: np.ndarray) -> np.ndarray:
    out = np.empty(values.shape, dtype=object)
    flat_in, flat_out = values.reshape(-1), out.reshape(-1)
    for i, item in enumerate(flat_in):
        flat_out[i] = item["_REFERENCE"]["path"]
    return out


def _strings(zarray: dict[str, Any]) -> dict[str, Any]:
    return {**zarray, "filters": [{"id": "vlen-utf8"}], "compressor": None, "fill_value": None}


def _vlen(values: np.ndarray) -> str:
    encoded = numcodecs.VLenUTF8().encode(np.asarray(values, dtype=object))
    return "base64:" + base64.b64encode(bytes(encoded)).decode("ascii")
