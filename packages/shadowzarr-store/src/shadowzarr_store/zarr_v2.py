"""Reference documents with Zarr v2 keys (kerchunk's JSON, LINDI's ``.lindi.json``) as Zarr v3.

kerchunk writes ``.zgroup``/``.zarray``/``.zattrs`` and chunk keys such as ``a/0.0``; LINDI
writes the same with a ``generationMetadata`` entry beside ``refs``. The store serves Zarr v3,
so such a document is rewritten once, when it is loaded: every ``.zarray`` (with its
``.zattrs``) becomes a ``zarr.json`` whose codecs do what the v2 filters and compressor did, in
the same order; every chunk key takes the v3 default encoding (``a/c/0/0``); the references
themselves are untouched, so the bytes read are the bytes kerchunk pointed at. zarr-python's own
parser reads the v2 metadata (data type, fill value, codecs), so what it accepts is what we accept;
an array whose codecs Zarr v3 cannot express is refused when the document is loaded, naming it.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from typing import Any

from shadowzarr_spec import ReferenceFormatError
from shadowzarr_spec.attribute_conventions import NON_FINITE_CONVENTION
from zarr.abc.codec import ArrayArrayCodec, BytesBytesCodec
from zarr.core.dtype.npy.bytes import NullTerminatedBytes
from zarr.core.metadata.v2 import ArrayV2Metadata
from zarr.errors import UnstableSpecificationWarning, ZarrUserWarning
from zarr.registry import get_codec_class

from shadowzarr_store.lindi_json_arrays import NotConvertible, is_json_array, plain_array

__all__ = ["has_v2_keys", "v3_document"]

_META = (".zgroup", ".zarray", ".zattrs", ".zmetadata")
_CHUNK_COORDS = re.compile(r"^\d+(?:\.\d+)*$")
_DROPPED_TOP_LEVEL = ("generationMetadata",)
"""LINDI's record of how the file was made: nothing a reader needs."""
_VLEN = {"vlen-utf8": "vlen-utf8", "vlen-bytes": "vlen-bytes"}


def has_v2_keys(document: Mapping[str, Any]) -> bool:
    """Whether a loaded reference document describes Zarr v2 (``.zgroup``/``.zarray`` keys and
    no ``zarr.json`` at its root)."""
    refs = document.get("refs", document) if "version" in document or "refs" in document else {}
    if not isinstance(refs, Mapping) or "zarr.json" in refs:
        return False
    return (
        ".zgroup" in refs
        or ".zarray" in refs
        or any(isinstance(key, str) and key.endswith(("/.zarray", "/.zgroup")) for key in refs)
    )


def v3_document(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (a loaded kerchunk version 0/1 or LINDI document with v2 keys) with Zarr v3
    metadata and chunk keys. Raises `ReferenceFormatError` naming the array it cannot express."""
    if "refs" not in document and "version" not in document:
        document = {"version": 0, "refs": document}
    refs = document.get("refs")
    if not isinstance(refs, Mapping):
        raise ReferenceFormatError("'refs' must be an object")
    arrays = {_node(key): key for key in refs if _leaf(key) == ".zarray"}
    groups = {_node(key) for key in refs if _leaf(key) == ".zgroup"}
    lindi = "generationMetadata" in document  # LINDI writes NaN as "NaN" and no such text
    converted: dict[str, Any] = {}
    layouts: dict[str, tuple[int, str]] = {}
    unsupported = dict(document.get("unsupported") or {})
    replaced: dict[str, str] = {}  # chunks of LINDI's JSON arrays, rewritten
    left_out: set[str] = set()
    for path, key in list(arrays.items()):
        zarray = _json_of(refs[key], key)
        attrs_key = _join(path, ".zattrs")
        zattrs = _json_of(refs[attrs_key], attrs_key) if attrs_key in refs else {}
        link = zattrs.get("_EXTERNAL_ARRAY_LINK") if isinstance(zattrs, dict) else None
        if link is not None:  # LINDI leaves the chunks of such an array in the HDF5 file
            del arrays[path]
            unsupported[path or "/"] = {"outcome": "omitted", "reason": _external(link)}
            continue
        if isinstance(zarray, dict) and isinstance(zattrs, dict) and is_json_array(zarray):
            chunks = {k: v for k, v in refs.items() if _is_chunk_of(k, path)}
            try:
                zarray, zattrs, json_chunks = plain_array(path, zarray, zattrs, chunks)
            except NotConvertible as exc:  # that array alone is left out
                del arrays[path]
                left_out.add(path)
                unsupported[path or "/"] = {"outcome": "omitted", "reason": str(exc)[:500]}
                continue
            replaced.update(json_chunks)
        if lindi and isinstance(zattrs, dict):
            zattrs = _lindi_non_finite(zattrs)
        metadata = _array_metadata(path, zarray, zattrs)
        layouts[path] = (len(metadata["shape"]), str(zarray.get("dimension_separator") or "."))
        converted[_join(path, "zarr.json")] = json.dumps(metadata)
    group_attributes: dict[str, dict[str, Any]] = {}
    for path in groups:
        attrs_key = _join(path, ".zattrs")
        attributes = _json_of(refs[attrs_key], attrs_key) if attrs_key in refs else {}
        if not isinstance(attributes, dict):
            raise ReferenceFormatError(f"{attrs_key}: attributes must be a JSON object")
        group_attributes[path] = _lindi_non_finite(attributes) if lindi else attributes
    for path, attributes in sorted(group_attributes.items()):
        parent = _node(path)
        if path and parent in group_attributes and _soft_link(attributes) is not None:
            # LINDI's soft link: a group holding only the target; ours: _LINKS on the parent
            entry = {"name": _leaf(path), "source": ".", "path": _soft_link(attributes)}
            group_attributes[parent].setdefault("_LINKS", []).append(entry)
    for path, attributes in group_attributes.items():
        if path and _node(path) in group_attributes and _soft_link(attributes) is not None:
            continue
        converted[_join(path, "zarr.json")] = json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": attributes}
        )
    if "" not in groups and "" not in arrays:
        converted["zarr.json"] = json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": {}}
        )
    for key, value in refs.items():
        if not isinstance(key, str):
            raise ReferenceFormatError("reference keys must be strings")
        if _leaf(key) in _META or (_node(key) in left_out and _is_chunk_of(key, _node(key))):
            continue
        converted[_chunk_key(key, layouts)] = replaced.get(key, value)
    rewritten = {k: v for k, v in document.items() if k not in _DROPPED_TOP_LEVEL}
    rewritten["refs"] = converted
    if unsupported:
        rewritten["unsupported"] = unsupported
    return rewritten


def _array_metadata(path: str, zarray: Any, zattrs: Any) -> dict[str, Any]:
    shown = path or "/"
    if not isinstance(zarray, dict) or not isinstance(zattrs, dict):
        raise ReferenceFormatError(f"{shown}: .zarray and .zattrs must be JSON objects")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (UnstableSpecificationWarning, ZarrUserWarning))
            v2 = ArrayV2Metadata.from_dict({**zarray, "attributes": {}})
            data_type = v2.dtype.to_json(zarr_format=3)
            fill = v2.dtype.default_scalar() if v2.fill_value is None else v2.fill_value
            fill_value = v2.dtype.to_json_scalar(fill, zarr_format=3)
    except (ValueError, TypeError, KeyError) as exc:
        raise ReferenceFormatError(f"{shown}: Zarr v2 metadata not understood ({exc})") from exc
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    serializer = _serializer(v2)
    if v2.order == "F" and len(v2.shape) > 1:
        order = list(range(len(v2.shape)))[::-1]
        before.append({"name": "transpose", "configuration": {"order": order}})
    codecs = [*(v2.filters or ()), *([v2.compressor] if v2.compressor is not None else [])]
    for codec in codecs:
        config = dict(codec.get_config())
        name = str(config.pop("id"))
        if name in _VLEN:
            serializer = {"name": _VLEN[name], "configuration": {}}
            continue
        entry: dict[str, Any] = {"name": f"numcodecs.{name}", "configuration": config}
        try:
            kind = get_codec_class(f"numcodecs.{name}")
        except Exception as exc:  # zarr raises its own KeyError-like errors
            raise ReferenceFormatError(f"{shown}: codec {name!r} has no Zarr v3 form") from exc
        if issubclass(kind, ArrayArrayCodec):
            if after:
                raise ReferenceFormatError(
                    f"{shown}: filter {name!r} acts on values after a byte codec"
                )
            before.append(entry)
        elif issubclass(kind, BytesBytesCodec):
            after.append(entry)
        else:
            raise ReferenceFormatError(f"{shown}: codec {name!r} has no Zarr v3 form")
    attributes = dict(zattrs)
    dimensions = attributes.pop("_ARRAY_DIMENSIONS", None)
    shape, chunks = list(v2.shape), list(v2.chunks)
    if attributes.get("_SCALAR") is True and shape == [1]:  # LINDI's scalar dataset
        del attributes["_SCALAR"]
        shape, chunks, dimensions = [], [], None
    metadata: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": [*before, serializer, *after],
        "attributes": attributes,
    }
    if isinstance(dimensions, list) and len(dimensions) == len(shape):
        metadata["dimension_names"] = [str(d) for d in dimensions]
    elif dimensions is not None:
        attributes["_ARRAY_DIMENSIONS"] = dimensions
    return metadata


def _external(link: Any) -> str:
    """Why an array LINDI links to in its HDF5 file is left out, and what reads it."""
    name = link.get("name") if isinstance(link, dict) else None
    url = link.get("url") if isinstance(link, dict) else None
    where = f" {name!r} of {url!r}" if isinstance(name, str) and isinstance(url, str) else ""
    return (
        f"LINDI external array link{where[:300]}: its chunks are not listed in the references "
        "(generate references for that HDF5 file with shadowzarr to read it)"
    )


def _serializer(v2: ArrayV2Metadata) -> dict[str, Any]:
    native = v2.dtype.to_native_dtype()
    if native.fields is not None:  # records: the byte order of their multi-byte fields
        orders = {
            "big" if kind.byteorder == ">" else "little"
            for kind, *_ in native.fields.values()
            if kind.itemsize > 1 and kind.byteorder != "|"
        }
        if len(orders) > 1:
            raise ReferenceFormatError(f"records with fields of both byte orders ({native})")
        return {"name": "bytes", "configuration": {"endian": orders.pop() if orders else "little"}}
    endian = getattr(v2.dtype, "endianness", None)
    if endian is None or isinstance(v2.dtype, NullTerminatedBytes):
        return {"name": "bytes"}
    return {"name": "bytes", "configuration": {"endian": endian}}


def _chunk_key(key: str, layouts: Mapping[str, tuple[int, str]]) -> str:
    """The v3 default-encoding key of a v2 chunk key (``a/1.2`` or ``a/1/2`` -> ``a/c/1/2``; a
    0-d array's ``a/0`` -> ``a/c``); other keys are kept as they are."""
    path, _, tail = key.rpartition("/")
    layout = layouts.get(path)
    if layout is not None and (layout[1] == "." or layout[0] <= 1) and _CHUNK_COORDS.match(tail):
        parts = tail.split(".")
        if layout[0] == 0:
            return _join(path, "c") if parts == ["0"] else key
        return _join(path, "c/" + "/".join(parts)) if len(parts) == layout[0] else key
    segments = key.split("/")
    for ndim in range(2, len(segments) + 1):  # "/"-separated coordinates: the array is above them
        path = "/".join(segments[:-ndim])
        layout = layouts.get(path)
        if layout is not None and layout == (ndim, "/"):
            coords = segments[-ndim:]
            if all(part.isdigit() for part in coords):
                return _join(path, "c/" + "/".join(coords))
    return key


def _json_of(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise ReferenceFormatError(f"{key}: metadata must be inline JSON text")
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ReferenceFormatError(f"{key}: not valid JSON ({exc})") from exc


def _lindi_non_finite(attributes: dict[str, Any]) -> dict[str, Any]:
    """LINDI's attributes with the Non-Finite convention registered where they hold its words:
    LINDI writes NaN and the infinities as "NaN", "Infinity", "-Infinity" and refuses those
    texts as strings, so they are numbers."""
    if not any(_has_non_finite_word(v) for v in attributes.values()):
        return attributes
    listed = attributes.get("zarr_conventions")
    conventions = list(listed) if isinstance(listed, list) else []
    return {**attributes, "zarr_conventions": [*conventions, dict(NON_FINITE_CONVENTION)]}


def _has_non_finite_word(value: Any) -> bool:
    if isinstance(value, str):
        return value in ("NaN", "Infinity", "-Infinity")
    if isinstance(value, list):
        return any(_has_non_finite_word(v) for v in value)
    if isinstance(value, dict):
        return any(_has_non_finite_word(v) for v in value.values())
    return False


def _soft_link(attributes: dict[str, Any]) -> str | None:
    """The target of a LINDI soft link (a group whose only attribute is ``_SOFT_LINK``)."""
    link = attributes.get("_SOFT_LINK")
    if len(attributes) != 1 or not isinstance(link, dict):
        return None
    target = link.get("path")
    return target if isinstance(target, str) and target.startswith("/") else None


def _is_chunk_of(key: str, path: str) -> bool:
    """Whether ``key`` is a "."-separated chunk key of the array at ``path``."""
    return _node(key) == path and bool(_CHUNK_COORDS.match(_leaf(key)))


def _node(key: str) -> str:
    return key.rpartition("/")[0]


def _leaf(key: str) -> str:
    return key.rpartition("/")[2]


def _join(path: str, leaf: str) -> str:
    return f"{path}/{leaf}" if path else leaf
