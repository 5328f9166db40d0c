"""References as a kerchunk version-1 document with Zarr v2 keys, for readers that know only that.

fsspec's ``reference://`` file system, kerchunk's tools and VirtualiZarr's ``KerchunkJSONParser``
read kerchunk JSON whose keys are Zarr v2 (``.zarray``, ``a/0.1``) and whose chunk locations
are absolute. Our own files use Zarr v3 keys, templates, chunk manifests and gen entries; this
writes every chunk out as one ``[url, offset, size]`` entry, every ``zarr.json`` as
``.zgroup``/``.zarray``/``.zattrs``. Chunk manifests and the references themselves are read through
the store (its transport, headers and access rules). An array that Zarr v2 cannot describe
(a codec numcodecs does not name, a sharded layout, bytes inside records) is left out with an
`ExportWarning` naming it and the reason, never written half right.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from shadowzarr_spec import FileRef, InlineRef, ReferenceFileSystem, ShadowzarrError
from shadowzarr_spec.json_text import parse_json
from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_spec.serialize import index_items
from zarr.core.dtype import get_data_type_from_json
from zarr.errors import UnstableSpecificationWarning, ZarrUserWarning

from shadowzarr_store.open_rfs import open_rfs_store

__all__ = ["ExportWarning", "kerchunk_document"]

_BLOSC_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


class ExportWarning(UserWarning):
    """An array of the references was left out of a kerchunk document."""


def kerchunk_document(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any], **options: Any
) -> dict[str, Any]:
    """The references of ``source`` as a kerchunk version-1 document with Zarr v2 keys.

    ``options`` are `RfsStore` options (``headers``, ``storage_options``, ...): they serve the
    reading of the references and of their chunk manifests. Local sources are written as
    absolute ``file://`` URLs. Every array gets xarray's ``_ARRAY_DIMENSIONS`` attribute (its
    dimension names, or kerchunk's ``phony_dim_<axis>``). Write the result with ``json.dump``.
    """
    store = open_rfs_store(source, **options)
    rfs = store.rfs
    nodes = export_nodes(rfs)
    refs: dict[str, Any] = {}
    omitted: set[str] = set()
    for path, document in sorted(nodes.items()):
        try:
            refs.update(v2_metadata(path, document))
        except Inexpressible as exc:
            omitted.add(path)
            warnings.warn(f"{path or '/'}: left out: {exc}", ExportWarning, stacklevel=2)
    for path in sorted(rfs.selections):
        if path not in omitted:
            omitted.add(path)
            _drop(refs, path)
            warnings.warn(
                f"{path}: left out: a selection of bytes inside records has no kerchunk form",
                ExportWarning,
                stacklevel=2,
            )
    for key, ref in export_chunk_refs(store, rfs):
        found = array_of_chunk_key(key)
        if found is None or found[0] in omitted or found[0] not in nodes:
            continue
        refs[v2_chunk_key(*found)] = v2_ref(ref, rfs.base)
    return {"version": 1, "refs": refs}


class Inexpressible(ShadowzarrError):
    """Zarr v2 has no form for this array."""


def export_nodes(rfs: ReferenceFileSystem) -> dict[str, dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    for key, ref in rfs.refs.items():
        if (key == "zarr.json" or key.endswith("/zarr.json")) and isinstance(ref, InlineRef):
            document = parse_json(ref.data)
            if isinstance(document, dict) and document.get("node_type") in ("group", "array"):
                nodes[key[: -len("zarr.json")].rstrip("/")] = document
    return nodes


def export_chunk_refs(store: Any, rfs: ReferenceFileSystem) -> Iterator[tuple[str, Any]]:
    """Every chunk reference: listed ones, gen entries, and chunk manifests read in full."""
    for key, ref in rfs.refs.items():
        if not key.endswith("zarr.json"):
            yield key, ref
    for entry in rfs.gen:
        yield from entry.items()
    for path, index in rfs.indexes.items():
        table = index.table if index.table is not None else store.index_table(path)
        yield from index_items(path, index.url, np.asarray(table))


def v2_chunk_key(path: str, coords: tuple[int, ...]) -> str:
    name = ".".join(str(c) for c in coords) if coords else "0"
    return f"{path}/{name}" if path else name


def v2_ref(ref: Any, base: str | None) -> Any:
    if isinstance(ref, InlineRef):
        data = bytes(ref.data)
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            return "base64:" + _base64(data)
        return (
            text
            if text.isprintable() and not text.startswith("base64:")
            else ("base64:" + _base64(data))
        )
    assert isinstance(ref, FileRef)
    url = absolute_location(ref.url, base)
    return [url] if ref.offset is None else [url, int(ref.offset), int(ref.size or 0)]


def absolute_location(url: str, base: str | None) -> str:
    if "://" in url:
        return url
    if base is not None and "://" in base and not base.startswith("file://"):
        return urllib.parse.urljoin(base.rstrip("/") + "/", url)
    path = Path(url)
    if not path.is_absolute():
        path = Path(base or os.getcwd()) / path
    return Path(os.path.abspath(path)).as_uri()


def _drop(refs: dict[str, Any], path: str) -> None:
    for leaf in (".zarray", ".zattrs"):
        refs.pop(f"{path}/{leaf}" if path else leaf, None)


def v2_metadata(path: str, document: dict[str, Any]) -> dict[str, str]:
    prefix = f"{path}/" if path else ""
    attributes = dict(document.get("attributes") or {})
    if document["node_type"] == "group":
        return {
            prefix + ".zgroup": json.dumps({"zarr_format": 2}),
            prefix + ".zattrs": json.dumps(attributes),
        }
    grid = document.get("chunk_grid") or {}
    if grid.get("name") != "regular":
        raise Inexpressible(f"chunk grid {grid.get('name')!r}")
    shape = list(document["shape"])
    chunks = list(grid["configuration"]["chunk_shape"])
    before, serializer, after = _split_codecs(document.get("codecs") or [])
    order = "C"
    filters: list[dict[str, Any]] = []
    for codec in before:
        if codec["name"] == "transpose":
            if list(codec["configuration"]["order"]) != list(range(len(shape)))[::-1]:
                raise Inexpressible("a transpose other than Fortran order")
            order = "F" if len(shape) > 1 else "C"
        else:
            filters.append(_numcodecs_config(codec))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (UnstableSpecificationWarning, ZarrUserWarning))
        try:
            data_type = get_data_type_from_json(document["data_type"], zarr_format=3)
            fill = data_type.from_json_scalar(document.get("fill_value"), zarr_format=3)
        except (ValueError, TypeError, KeyError) as exc:
            raise Inexpressible(f"data type not understood ({exc})") from exc
        native = data_type.to_native_dtype()
        if serializer["name"] in ("vlen-utf8", "vlen-bytes"):
            dtype: Any = "|O"
            filters.insert(0, {"id": serializer["name"]})
            fill_json: Any = None
        elif serializer["name"] == "bytes":
            endian = (serializer.get("configuration") or {}).get("endian")
            if endian is not None and native.byteorder not in ("|",):
                native = native.newbyteorder(">" if endian == "big" else "<")
            dtype = native.descr if native.fields else native.str
            fill_json = _v2_fill(fill, native)
        else:
            raise Inexpressible(f"serializer {serializer['name']!r}")
    filters.extend(_numcodecs_config(codec) for codec in after)
    # xarray's convention, which VirtualiZarr's parser needs on every array: the array's own
    # dimension names, or kerchunk's ``phony_dim_<axis>`` where it has none
    names = document.get("dimension_names") or [None] * len(shape)
    dimensions = [str(n) if n is not None else f"phony_dim_{i}" for i, n in enumerate(names)]
    zattrs = {**attributes, "_ARRAY_DIMENSIONS": dimensions}
    zarray = {
        "shape": shape,
        "chunks": chunks,
        "dtype": dtype,
        "fill_value": fill_json,
        "order": order,
        "filters": filters or None,
        "compressor": None,
        "dimension_separator": ".",
        "zarr_format": 2,
    }
    return {prefix + ".zarray": json.dumps(zarray), prefix + ".zattrs": json.dumps(zattrs)}


def _split_codecs(
    codecs: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    serializers = [
        i for i, c in enumerate(codecs) if c.get("name") in ("bytes", "vlen-utf8", "vlen-bytes")
    ]
    if len(serializers) != 1:
        names = [c.get("name") for c in codecs]
        raise Inexpressible(f"codecs {names} (no serializer Zarr v2 knows)")
    at = serializers[0]
    return codecs[:at], codecs[at], codecs[at + 1 :]


def _numcodecs_config(codec: dict[str, Any]) -> dict[str, Any]:
    name = str(codec.get("name"))
    configuration = dict(codec.get("configuration") or {})
    if name.startswith("numcodecs."):
        return {"id": name[len("numcodecs.") :], **configuration}
    if name == "gzip":
        return {"id": "gzip", "level": configuration.get("level", 5)}
    if name == "zstd":
        return {"id": "zstd", "level": configuration.get("level", 0)}
    if name == "crc32c":
        return {"id": "crc32c"}
    if name == "blosc":
        shuffle = configuration.get("shuffle", "noshuffle")
        return {
            "id": "blosc",
            "cname": configuration.get("cname", "lz4"),
            "clevel": configuration.get("clevel", 5),
            "shuffle": _BLOSC_SHUFFLE.get(shuffle, shuffle),
            "blocksize": configuration.get("blocksize", 0),
        }
    raise Inexpressible(f"codec {name!r} has no numcodecs name")


def _v2_fill(fill: Any, native: np.dtype[Any]) -> Any:
    if native.fields or native.kind in "SVUM m":
        value = np.array(fill, dtype=native)
        if native.kind in "SV" or native.fields:
            return _base64(value.tobytes())
        return value.item() if native.kind != "U" else str(value)
    value = np.asarray(fill, dtype=native).item()
    if isinstance(value, float):
        if np.isnan(value):
            return "NaN"
        if np.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, complex):
        return [value.real, value.imag]
    return value


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
