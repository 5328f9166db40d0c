"""Reference file systems as VirtualiZarr ManifestStores (the way back is `virtualizarr.py`).

A ManifestStore is what VirtualiZarr's parsers return and what it writes to Icechunk or
kerchunk; building one from references lets VirtualiZarr users open what shadowzarr generated
(``ShadowzarrParser`` in the umbrella) without a second pass over the source. Each array's
chunk tables (refs, gen entries and chunk manifest alike) become one `ChunkManifest` built from
numpy arrays; inline chunks travel as VirtualiZarr's inlined chunks. An array a manifest cannot
hold (a selection of bytes inside records, a whole-file reference of unknown size) is left out
with a warning naming it, never replaced by fill.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from obspec_utils.registry import ObjectStoreRegistry
from shadowzarr_spec import InlineRef, ReferenceFileSystem, ShadowzarrError
from shadowzarr_spec.json_text import parse_json
from shadowzarr_spec.keys import chunk_key
from shadowzarr_store.transport import obstore_for

from shadowzarr_icechunk.chunk_table import INLINE, MISSING, chunk_tables
from shadowzarr_icechunk.locations import UrlFor, container_prefix, location_of
from shadowzarr_icechunk.node_metadata import clean_document

if TYPE_CHECKING:
    from virtualizarr.manifests import ManifestArray, ManifestGroup, ManifestStore

__all__ = ["OmittedArrayWarning", "rfs_to_manifest_group", "rfs_to_manifest_store"]


class OmittedArrayWarning(UserWarning):
    """An array of the references that a VirtualiZarr manifest cannot hold was left out."""


def rfs_to_manifest_store(
    rfs: ReferenceFileSystem,
    *,
    registry: ObjectStoreRegistry[Any] | None = None,
    url_for: UrlFor | None = None,
) -> ManifestStore:
    """References as a VirtualiZarr ManifestStore.

    ``registry`` maps URL prefixes to obstore stores for reading the chunks (VirtualiZarr's
    own); without one, a store is made for each location the references name (local files,
    http(s) servers, and ``s3://``/``gs://``/``az://`` buckets with credentials from the
    environment). ``url_for`` maps a source URL to the location to record (None keeps it).
    """
    from virtualizarr.manifests import ManifestStore

    group = rfs_to_manifest_group(rfs, url_for=url_for)
    if registry is None:
        registry = _default_registry(group)
    return ManifestStore(group, registry=registry)


def rfs_to_manifest_group(
    rfs: ReferenceFileSystem, *, url_for: UrlFor | None = None
) -> ManifestGroup:
    """The root ManifestGroup of `rfs_to_manifest_store` (no object stores attached)."""
    from virtualizarr.manifests import ManifestGroup

    nodes = _nodes(rfs)
    arrays = sorted(path for path, document in nodes.items() if document["node_type"] == "array")
    tables = {}
    for path in arrays:
        try:
            tables.update(chunk_tables(rfs, [path]))
        except ShadowzarrError as exc:
            _omit(path, str(exc))
    built_arrays: dict[str, ManifestArray] = {}
    for path in arrays:
        if path not in tables:
            continue
        if path in rfs.selections:
            _omit(path, "it is a selection of bytes inside records, which a manifest cannot hold")
            continue
        array = _manifest_array(rfs, path, nodes[path], tables[path], url_for)
        if array is not None:
            built_arrays[path] = array

    def build(path: str) -> ManifestGroup:
        prefix = f"{path}/" if path else ""
        children = {
            child[len(prefix) :]
            for child in nodes
            if child.startswith(prefix) and child != path and "/" not in child[len(prefix) :]
        }
        return ManifestGroup(
            arrays={
                name: built_arrays[prefix + name]
                for name in sorted(children)
                if prefix + name in built_arrays
            },
            groups={
                name: build(prefix + name)
                for name in sorted(children)
                if nodes[prefix + name]["node_type"] == "group"
            },
            attributes=dict(nodes.get(path, {}).get("attributes") or {}),
        )

    return build("")


def _nodes(rfs: ReferenceFileSystem) -> dict[str, dict[str, Any]]:
    """Every group and array of the references by path, groups left implicit added."""
    nodes: dict[str, dict[str, Any]] = {}
    for key, ref in rfs.refs.items():
        if not (key == "zarr.json" or key.endswith("/zarr.json")) or not isinstance(ref, InlineRef):
            continue
        document = parse_json(ref.data)
        if isinstance(document, dict) and document.get("node_type") in ("group", "array"):
            nodes[key[: -len("zarr.json")].rstrip("/")] = clean_document(document)
    for path in list(nodes):
        parts = path.split("/") if path else []
        for depth in range(len(parts)):
            parent = "/".join(parts[:depth])
            nodes.setdefault(parent, {"zarr_format": 3, "node_type": "group", "attributes": {}})
    nodes.setdefault("", {"zarr_format": 3, "node_type": "group", "attributes": {}})
    return nodes


def _manifest_array(
    rfs: ReferenceFileSystem,
    path: str,
    document: dict[str, Any],
    table: Any,
    url_for: UrlFor | None,
) -> ManifestArray | None:
    from virtualizarr.manifests import ChunkManifest, ManifestArray
    from virtualizarr.manifests.manifest import INLINED_CHUNK_PATH
    from zarr.core.metadata.v3 import ArrayV3Metadata

    document = dict(document)
    document.pop("consolidated_metadata", None)
    # Manifests hold grid coordinates: the keys are VirtualiZarr's to choose.
    document["chunk_key_encoding"] = {"name": "default", "configuration": {"separator": "/"}}
    metadata = ArrayV3Metadata.from_dict(document)
    codes = table.codes
    paths = np.full(codes.shape, "", dtype=np.dtypes.StringDType())
    for code, url in enumerate(table.urls):
        paths[codes == code] = location_of(url, base=rfs.base, url_for=url_for)
    lengths = table.lengths.astype(np.uint64)
    unsized = (codes >= 0) & (table.lengths <= 0)
    if unsized.any():
        _omit(path, "a chunk is a whole file of unknown size")
        return None
    inlined: dict[tuple[int, ...], bytes] = {}
    for position in map(tuple, np.argwhere(codes == INLINE).tolist()):
        ref = rfs.refs.get(chunk_key(path, position))
        if not isinstance(ref, InlineRef):
            _omit(path, f"inline chunk {position} is not held in refs")
            return None
        inlined[position] = bytes(ref.data)
        paths[position] = INLINED_CHUNK_PATH
        lengths[position] = len(ref.data)
    offsets = np.where(codes == MISSING, 0, table.offsets).astype(np.uint64)
    manifest = ChunkManifest.from_arrays(
        paths=paths, offsets=offsets, lengths=lengths, inlined=inlined or None
    )
    return ManifestArray(metadata=metadata, chunkmanifest=manifest)


def _omit(path: str, reason: str) -> None:
    warnings.warn(
        f"{path or '/'}: left out of the VirtualiZarr manifest: {reason}",
        OmittedArrayWarning,
        stacklevel=4,
    )


def _default_registry(group: ManifestGroup) -> ObjectStoreRegistry[Any]:
    """One obstore store per location prefix the manifests name (made by the transport)."""
    prefixes: set[str] = set()

    def visit(node: ManifestGroup) -> None:
        for array in node.arrays.values():
            for location in np.unique(np.asarray(array.manifest._paths)).tolist():
                if location and "://" in location:
                    prefixes.add(container_prefix(location))
        for child in node.groups.values():
            visit(child)

    visit(group)
    stores = {
        "file://" if prefix.startswith("file://") else prefix: obstore_for(prefix)
        for prefix in sorted(prefixes)
    }
    return ObjectStoreRegistry(stores)
