"""References as a LINDI document (``.lindi.json``), which neurosift and ``lindi`` open.

LINDI's format is kerchunk version 1 with Zarr v2 keys, as `kerchunk_document` writes it, plus
LINDI's own ways of saying what Zarr has no name for: a scalar dataset is an array of shape
``(1,)`` with ``_SCALAR: true``; a soft link is a group whose attributes are only
``{"_SOFT_LINK": {"path": target}}``; an object reference, in an attribute or as an element of a
dataset (an array of JSON values), is ``{"_REFERENCE": {"object_id", "path", "source",
"source_object_id"}}``; NaN and the infinities are the strings "NaN", "Infinity", "-Infinity".
Every chunk reference is ``[url, offset, size]`` (a local file by its path).

So our conventions are undone first: attributes are decoded (`decode_attributes`) and written
as LINDI's reader gives them back to h5py's users; our reserved attributes (``_DTYPE``,
``_LINKS``, ``_ATTRIBUTE_TYPES``, ...) become LINDI's forms or leave. What LINDI cannot express
(region references, variable-length sequences, raw records, complex or bytes attributes,
external links, codecs numcodecs does not name) is refused by name: `UnsupportedFeatureError`,
or with ``strict=False`` the node is left out with an `ExportWarning`.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import urllib.parse
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numcodecs
import numpy as np
from shadowzarr_spec import FileRef, InlineRef, ReferenceFileSystem, UnsupportedFeatureError
from shadowzarr_spec.attribute_conventions import decode_attributes, to_json_value
from shadowzarr_spec.keys import array_of_chunk_key

from shadowzarr_store.kerchunk_export import (
    ExportWarning,
    Inexpressible,
    absolute_location,
    export_chunk_refs,
    export_nodes,
    v2_chunk_key,
    v2_metadata,
    v2_ref,
)
from shadowzarr_store.open_rfs import open_rfs_store

__all__ = ["lindi_document"]

_RESERVED = frozenset(
    {
        "_DTYPE",
        "_LINKS",
        "_ATTRIBUTE_TYPES",
        "_ENUM",
        "_ENUM_NAME",
        "_REFERENCE_FIELDS",
        "zarr_conventions",
    }
)
"""Our attributes that LINDI has another form for, or none (an enum reads as its integers)."""
_REFUSED_ATTRIBUTES = {
    "_VLEN_DTYPE": "variable-length sequences",
    "_STRUCTURED_DTYPE": "raw records of a compound with array or nested fields",
}
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def lindi_document(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any],
    *,
    strict: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """The references of ``source`` as a LINDI document; write it with ``json.dump`` to a
    ``.lindi.json`` file. ``options`` are `RfsStore` options (they serve the reading of the
    references, their chunk manifests, and of the object-reference datasets written inline).

    Raises `UnsupportedFeatureError` naming the first dataset or attribute LINDI cannot
    express; ``strict=False`` leaves such nodes out, each with an `ExportWarning`."""
    store = open_rfs_store(source, **options)
    rfs = store.rfs
    nodes = export_nodes(rfs)
    writer = _Writer(store, nodes, strict)
    for path, document in sorted(nodes.items()):
        writer.add_node(path, document)
    for path in sorted(rfs.selections):
        writer.refuse(path, "a selection of bytes inside records has no LINDI form")
    for key, ref in export_chunk_refs(store, rfs):
        found = array_of_chunk_key(key)
        if found is None or found[0] not in writer.chunked:
            continue
        writer.refs[v2_chunk_key(*found)] = _lindi_ref(ref, rfs)
    return {
        "version": 1,
        "refs": writer.refs,
        "generationMetadata": {
            "generatedBy": "shadowzarr",
            "creationDate": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }


class _Writer:
    def __init__(self, store: Any, nodes: dict[str, dict[str, Any]], strict: bool) -> None:
        self.store = store
        self.nodes = nodes
        self.strict = strict
        self.refs: dict[str, Any] = {}
        self.chunked: set[str] = set()
        self.omitted: set[str] = set()
        root = decode_attributes(nodes.get("", {}).get("attributes") or {})
        self.file_object_id = _text_or_none(root.get("object_id"))

    def refuse(self, path: str, reason: str) -> None:
        shown = path or "/"
        if self.strict:
            raise UnsupportedFeatureError(f"{shown}: LINDI cannot express it: {reason}")
        warnings.warn(f"{shown}: left out: {reason}", ExportWarning, stacklevel=4)
        self.omitted.add(path)
        self.chunked.discard(path)
        prefix = f"{path}/" if path else ""
        for leaf in (".zgroup", ".zarray", ".zattrs", "0"):
            self.refs.pop(prefix + leaf, None)

    def add_node(self, path: str, document: dict[str, Any]) -> None:
        if any(path == o or path.startswith(o + "/") for o in self.omitted if o):
            return
        prefix = f"{path}/" if path else ""
        stored = dict(document.get("attributes") or {})
        try:
            attributes = self._attributes(path, stored)
            if document["node_type"] == "group":
                self.refs[prefix + ".zgroup"] = json.dumps({"zarr_format": 2})
                self.refs[prefix + ".zattrs"] = json.dumps(attributes)
                self._links(path, stored.get("_LINKS"))
                return
            for name, what in _REFUSED_ATTRIBUTES.items():
                if name in stored:
                    raise Inexpressible(what)
            kind = stored.get("_DTYPE")
            if kind == "region_reference":
                raise Inexpressible("region references")
            if kind == "object_reference":
                self._reference_array(path, document, attributes)
                return
            if isinstance(document.get("data_type"), dict):  # a struct: LINDI's compound form
                references = stored.get("_REFERENCE_FIELDS")
                self._compound_array(path, document, attributes, references)
                return
            metadata = v2_metadata(path, {**document, "attributes": {}})
        except Inexpressible as exc:
            self.refuse(path, str(exc))
            return
        zarray = json.loads(metadata[prefix + ".zarray"])
        if zarray["shape"] == []:
            zarray["shape"], zarray["chunks"] = [1], [1]
            attributes["_SCALAR"] = True
        zarray["chunks"] = [max(1, int(c)) for c in zarray["chunks"]]
        self.refs[prefix + ".zarray"] = json.dumps(zarray)
        self.refs[prefix + ".zattrs"] = json.dumps(attributes)
        self.chunked.add(path)

    def _attributes(self, path: str, stored: dict[str, Any]) -> dict[str, Any]:
        decoded = decode_attributes(stored)
        out: dict[str, Any] = {}
        for name, value in decoded.items():
            if name in _RESERVED or name in _REFUSED_ATTRIBUTES:
                continue
            if name == ".specloc" and isinstance(value, str):  # NWB's reference to its specs
                out[name] = self._reference("/" + value.strip("/"))
                continue
            try:
                out[name] = self._attribute_value(path, name, to_json_value(value))
            except Inexpressible as exc:
                shown = f"{path or '/'} attribute {name!r}"
                if self.strict:
                    raise UnsupportedFeatureError(f"{shown}: LINDI cannot express {exc}") from exc
                warnings.warn(f"{shown}: left out: {exc}", ExportWarning, stacklevel=5)
        return out

    def _attribute_value(self, path: str, name: str, value: Any) -> Any:
        if isinstance(value, dict):
            target = value.get("_REFERENCE")
            if len(value) == 1 and isinstance(target, dict) and target.get("source") == ".":
                return self._reference(str(target.get("path")))
            raise Inexpressible("an object other than a reference")
        if isinstance(value, list):
            return [self._attribute_value(path, name, item) for item in value]
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise Inexpressible("bytes that are not UTF-8 text") from exc
        if isinstance(value, complex):
            raise Inexpressible("a complex number")
        if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
            raise Inexpressible(f"the text {value!r} (LINDI reads it as a number)")
        if isinstance(value, float) and not math.isfinite(value):
            return "NaN" if math.isnan(value) else _NON_FINITE[value]
        return value

    def _reference(self, target: str) -> dict[str, Any]:
        """LINDI's form of an object reference to ``target`` (an absolute path)."""
        node = self.nodes.get(target.strip("/"))
        attributes = decode_attributes((node or {}).get("attributes") or {})
        return {
            "_REFERENCE": {
                "object_id": _text_or_none(attributes.get("object_id")),
                "path": target,
                "source": ".",
                "source_object_id": self.file_object_id,
            }
        }

    def _links(self, path: str, links: Any) -> None:
        for link in links if isinstance(links, list) else []:
            if not isinstance(link, dict) or not isinstance(link.get("name"), str):
                continue
            where = posixpath.join(path, link["name"]) if path else link["name"]
            if link.get("source") != ".":
                self.refuse(where, f"an external link to {str(link.get('source'))[:200]!r}")
                continue
            self.refs[where + "/.zgroup"] = json.dumps({"zarr_format": 2})
            soft = {"_SOFT_LINK": {"path": str(link.get("path"))}}
            self.refs[where + "/.zattrs"] = json.dumps(soft)

    def _values(self, path: str) -> np.ndarray:
        import zarr

        group = zarr.open_group(self.store, mode="r", zarr_format=3)
        array: Any = group[path]
        return np.asarray(array[...])

    def _reference_array(
        self, path: str, document: dict[str, Any], attributes: dict[str, Any]
    ) -> None:
        """An object-reference dataset as LINDI writes one: JSON values, inline."""
        paths = self._values(path).astype(object).reshape(-1)
        if any(not isinstance(p, str) or not p.startswith("/") for p in paths):
            raise Inexpressible("a null object reference")
        values = np.empty(paths.shape, dtype=object)
        for i, target in enumerate(paths):
            values[i] = self._reference(str(target))
        self._json_array(path, list(document["shape"]), values, attributes)

    def _compound_array(
        self, path: str, document: dict[str, Any], attributes: dict[str, Any], references: Any
    ) -> None:
        """A compound dataset as LINDI writes one: each record a JSON list of its fields,
        inline, and ``_COMPOUND_DTYPE`` naming the fields' types (numbers, strings, and object
        references: our ``_REFERENCE_FIELDS`` hold their targets' paths)."""
        records = self._values(path)
        fields: Mapping[str, Any] = records.dtype.fields or {}
        linked = {str(name) for name in references} if isinstance(references, list) else set()
        for name, (kind, *_) in fields.items():
            if kind.subdtype is not None or kind.fields is not None or kind.kind not in "biufSU":
                raise Inexpressible(f"a compound field {name!r} of type {kind} (LINDI: numbers)")
        flat = records.reshape(-1)
        values = np.empty(flat.shape, dtype=object)
        for i, record in enumerate(flat):
            values[i] = [
                self._reference_field(record[name])
                if name in linked
                else _field_value(record[name])
                for name in fields
            ]
        attributes["_COMPOUND_DTYPE"] = [
            [name, "<REFERENCE>" if name in linked else _field_type(kind, flat[name])]
            for name, (kind, *_) in fields.items()
        ]
        self._json_array(path, list(document["shape"]), values, attributes)

    def _reference_field(self, target: Any) -> dict[str, Any]:
        if not isinstance(target, str | np.str_) or not str(target).startswith("/"):
            raise Inexpressible("a null object reference in a compound")
        return self._reference(str(target))

    def _json_array(
        self, path: str, shape: list[int], values: np.ndarray, attributes: dict[str, Any]
    ) -> None:
        """An array of JSON values (numcodecs' JSON codec), its one chunk inline."""
        prefix = f"{path}/" if path else ""
        if not shape:
            shape = [1]
            attributes["_SCALAR"] = True
        codec = numcodecs.JSON()
        zarray = {
            "shape": shape,
            "chunks": [max(1, n) for n in shape],
            "dtype": "|O",
            "fill_value": 0,
            "order": "C",
            "filters": [codec.get_config()],
            "compressor": None,
            "zarr_format": 2,
        }
        self.refs[prefix + ".zarray"] = json.dumps(zarray)
        self.refs[prefix + ".zattrs"] = json.dumps(attributes)
        if math.prod(shape):
            chunk = codec.encode(values.reshape(shape))
            self.refs[prefix + ".".join("0" for _ in shape)] = "base64:" + _base64(bytes(chunk))


def _field_type(kind: np.dtype, values: np.ndarray) -> str:
    """A field's type as LINDI names it; text fields (HDF5 fixed-length strings, which h5py
    gives as bytes) as bytes long enough for their UTF-8."""
    if kind.kind != "U":
        return str(kind.str)
    longest = max((len(str(v).encode("utf-8")) for v in values.tolist()), default=0)
    return f"|S{max(1, kind.itemsize // 4, longest)}"


def _field_value(value: Any) -> Any:
    if isinstance(value, str | np.str_):
        return str(value)
    if isinstance(value, bytes | np.bytes_):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Inexpressible("a compound field of bytes that are not UTF-8 text") from exc
    number = value.item() if isinstance(value, np.generic) else value
    if isinstance(number, float) and not math.isfinite(number):
        return "NaN" if math.isnan(number) else _NON_FINITE[number]
    return number


def _lindi_ref(ref: Any, rfs: ReferenceFileSystem) -> Any:
    """A chunk reference in LINDI's form: inline text, or ``[url, offset, size]`` with a local
    file named by its path (LINDI opens anything but an http(s) URL as a local path)."""
    if isinstance(ref, InlineRef):
        return v2_ref(ref, rfs.base)
    assert isinstance(ref, FileRef)
    url = absolute_location(ref.url, rfs.base)
    if url.startswith("file://"):
        url = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
    if ref.offset is not None:
        return [url, int(ref.offset), int(ref.size or 0)]
    size = _whole_size(ref.url, rfs)
    return [url, 0, size]


def _whole_size(url: str, rfs: ReferenceFileSystem) -> int:
    """The size of a file referenced whole, as recorded in ``sources`` (LINDI needs it)."""
    for name, recorded in (rfs.sources or {}).items():
        size = getattr(recorded, "size", None)
        if name == url and isinstance(size, int):
            return size
    raise UnsupportedFeatureError(f"{url}: a whole-file reference without a recorded size")


def _text_or_none(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _base64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")
