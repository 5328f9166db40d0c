"""write_virtual_nwb: an NWB file whose large datasets are references to the acquisition files.

The structure comes from hdmf-zarr (:mod:`.structure`), each file of its store becoming an inline
reference; the chunk locations of each placeholder dataset come from its VirtualArray, emitted by
:meth:`VirtualArray.add_to` into a scratch RfsBuilder and grafted onto hdmf-zarr's metadata
(:mod:`.virtual_metadata`). Nothing of the source files is read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowzarr_spec import (
    FileRef,
    InlineRef,
    ReferenceFileSystem,
    RfsBuilder,
    SourceInfo,
    write_rfs,
)
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.keys import array_of_chunk_key, metadata_key
from shadowzarr_store.transport import local_path

from shadowzarr_nwb.structure import write_structure
from shadowzarr_nwb.virtual_metadata import merge_array_metadata

if TYPE_CHECKING:
    from pynwb import NWBFile
    from shadowzarr_spec import VirtualArray

__all__ = ["virtual_nwb_rfs", "write_virtual_nwb"]

_ROOT_METADATA = "zarr.json"


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def write_virtual_nwb(
    nwbfile: NWBFile,
    path: str | os.PathLike[str],
    *,
    manifest_threshold: int = 1000,
) -> Path:
    """Write ``nwbfile`` as a reference file system whose placeholders point at their sources.

    Parameters
    ----------
    nwbfile
        An NWBFile built with pynwb, whose large datasets have a VirtualArray's
        ``placeholder()`` as their data (bare or wrapped in a DataIO). It must not have been
        written before (hdmf ties a container to the first file it is written to).
    path
        ``*.json`` for one JSON file, anything else for a directory (``refs.json`` plus chunk
        manifests), as :func:`~shadowzarr_spec.write_rfs` writes.
    manifest_threshold
        Arrays with more chunks listed one by one than this get a chunk manifest.

    Returns
    -------
    Path
        Where the references were written. They read with
        ``NWBZarrIO(RfsStore(load_rfs(path)), mode="r")``.

    Raises
    ------
    VirtualDatasetMismatch
        When pynwb gave a placeholder's dataset another shape or data type than its array's.
    """
    rfs = virtual_nwb_rfs(nwbfile, manifest_threshold=manifest_threshold)
    return write_rfs(rfs, path, manifest_threshold=manifest_threshold)


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def virtual_nwb_rfs(nwbfile: NWBFile, *, manifest_threshold: int = 1000) -> ReferenceFileSystem:
    """The reference file system :func:`write_virtual_nwb` writes, in memory."""
    structure = write_structure(nwbfile)
    refs: dict[str, Any] = {key: InlineRef(data) for key, data in structure.files.items()}
    if not structure.virtual:
        rfs = ReferenceFileSystem(refs=refs)
        rfs.version = rfs.required_version
        return rfs
    chunks = _virtual_chunks(structure.virtual, manifest_threshold)
    root = json.loads(structure.files[_ROOT_METADATA])
    consolidated = root.get("consolidated_metadata") or {}
    listed = consolidated.get("metadata") if isinstance(consolidated, dict) else None
    for array_path in structure.virtual:
        key = metadata_key(array_path)
        written = json.loads(structure.files[key])
        merged = merge_array_metadata(array_path, written, _document(chunks, array_path))
        refs[key] = InlineRef(_dumps(merged))
        if isinstance(listed, dict) and array_path in listed:
            listed[array_path] = merged
        for stale in [k for k in refs if _chunk_of(k) == array_path]:
            del refs[stale]
    if isinstance(listed, dict):
        refs[_ROOT_METADATA] = InlineRef(_dumps(root))
    for key, ref in chunks.refs.items():
        if _chunk_of(key) in structure.virtual:
            refs[key] = ref
    rfs = ReferenceFileSystem(
        refs=refs,
        gen=list(chunks.gen),
        indexes=dict(chunks.indexes),
        selections=dict(chunks.selections),
        sources=_local_sources(chunks),
    )
    rfs.version = rfs.required_version
    return rfs


def _virtual_chunks(
    virtual: dict[str, VirtualArray], manifest_threshold: int
) -> ReferenceFileSystem:
    """Every virtual array's metadata and chunk locations, as :meth:`VirtualArray.add_to`
    writes them."""
    builder = RfsBuilder()
    for array_path, array in virtual.items():
        array.add_to(builder, array_path, manifest_threshold=manifest_threshold)
    return builder.build(consolidate=False)


def _document(rfs: ReferenceFileSystem, array_path: str) -> dict[str, Any]:
    ref = rfs.refs[metadata_key(array_path)]
    assert isinstance(ref, InlineRef)
    document: dict[str, Any] = json.loads(ref.data)
    return document


def _chunk_of(key: str) -> str | None:
    parsed = array_of_chunk_key(key)
    return None if parsed is None else parsed[0]


def _dumps(document: dict[str, Any]) -> bytes:
    # hdmf-zarr writes non-finite attributes as bare tokens, which Python readers accept; keep
    # its documents as they are rather than re-encoding them.
    return json.dumps(document, indent=2, allow_nan=True).encode("utf-8")


def _local_sources(chunks: ReferenceFileSystem) -> dict[str, SourceInfo]:
    """Sizes of the local source files, so readers notice when one changes."""
    urls = {ref.url for ref in chunks.refs.values() if isinstance(ref, FileRef)}
    urls.update(entry.url for entry in chunks.gen)
    urls.update(index.url for index in chunks.indexes.values())
    sources = {}
    for url in sorted(urls):
        local = _local_path(url)
        if local is not None and local.is_file():
            sources[url] = SourceInfo(size=local.stat().st_size)
    return sources


def _local_path(url: str) -> Path | None:
    if url.startswith("file://"):
        return Path(local_path(url))
    if "://" in url or "{{" in url:
        return None
    return Path(url)
