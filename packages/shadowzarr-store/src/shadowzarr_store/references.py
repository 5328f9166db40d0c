"""load_rfs and write_rfs: references from (and to) a local file or directory, a URL or an
object store, or a dict.

The spec package reads and writes local files only; a reference file at a URL is read here,
through the store's transport, so its request carries the same headers and obeys the same
``allowed_urls`` as the reads of its sources; references bound for an object store are written
here, through obstore with the same ``storage_options``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from shadowzarr_spec import (
    ReferenceFileSystem,
    SourceError,
    SourceNotFoundError,
    parse_json,
    read_local_rfs,
)
from shadowzarr_spec import write_rfs as write_local_rfs
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.io import INLINE_INDEX_BYTES, reference_files, refs_url_of
from shadowzarr_spec.parse import rfs_from_json
from shadowzarr_spec.refs_text import rfs_from_json_text

from shadowzarr_store.options import StoreOptions
from shadowzarr_store.transport import kind_of, put_objects, redact, run_blocking, transport_for
from shadowzarr_store.zarr_v2 import has_v2_keys, v3_document

__all__ = ["load_rfs", "write_rfs"]


def load_rfs(
    source: ReferenceFileSystem | str | os.PathLike[str] | dict[str, Any], **options: Any
) -> ReferenceFileSystem:
    """Read references from a ``.json`` file or reference directory (a path, an http(s) URL or
    an ``s3://``/``gs://``/``az://`` URL of either), an rfs dict, or pass a
    `ReferenceFileSystem` through.

    ``options`` are `RfsStore` options; those of the transport apply to the reference file's
    request (``headers``, ``allowed_urls``, ``storage_options``, ``timeout``, ``retries``…).
    """
    if isinstance(source, ReferenceFileSystem):
        return source
    if isinstance(source, dict):
        return read_local_rfs(_as_v3(source))
    text = os.fspath(source)
    if kind_of(text) == "local":
        local = Path(unquote(urlsplit(text).path) if text.startswith("file://") else text)
        if local.is_file():  # a JSON file may be kerchunk's or LINDI's, with Zarr v2 keys
            return _from_text(_read_local(local), str(local.parent.resolve()))
        return read_local_rfs(text)
    refs_url, base = refs_url_of(text)
    transport = transport_for(StoreOptions.from_kwargs(options).transport(allow_local_files=False))

    async def read() -> bytes:
        try:
            return await transport.read_whole(refs_url)
        except SourceNotFoundError as exc:
            raise SourceNotFoundError(f"no reference file at {redact(refs_url)} ({exc})") from exc
        finally:
            await transport.aclose()

    return _from_text(run_blocking(read()), base)


def _read_local(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise SourceNotFoundError(f"no reference file at {path}") from None


def _from_text(data: bytes, base: str | None) -> ReferenceFileSystem:
    """References from the text of a ``.json`` file: a large one with Zarr v3 keys a slice of
    ``refs`` at a time (`rfs_from_json_text`), any other whole (Zarr v2 keys rewritten)."""
    # Zarr v2 keys (kerchunk's usual files) have no root zarr.json: parsed whole and rewritten
    sliced = rfs_from_json_text(data, base) if b'"zarr.json"' in data else None
    if sliced is not None and "zarr.json" in sliced.refs:  # v3 keys: nothing to rewrite
        return sliced
    del sliced
    document = parse_json(data)
    del data
    return rfs_from_json(_as_v3(document), base=base)


def _as_v3(document: Any) -> Any:
    """A document with Zarr v2 keys (kerchunk's, LINDI's) rewritten as Zarr v3."""
    return (
        v3_document(document) if isinstance(document, dict) and has_v2_keys(document) else document
    )


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def write_rfs(
    rfs: ReferenceFileSystem,
    destination: str | os.PathLike[str],
    *,
    storage_options: Mapping[str, Any] | None = None,
    manifest_threshold: int | None = 1000,
    inline_index_bytes: int = INLINE_INDEX_BYTES,
) -> str:
    """Write references to a local path (as `shadowzarr_spec.write_rfs`) or an ``s3://``,
    ``gs://`` or ``az://`` URL (through obstore, configured by ``storage_options``). Returns
    where they were written.

    A name ending in ``.json`` is one document, written with one PUT: readers see the old one
    or the new one. A directory's index files are written first and ``refs.json`` last, each
    with one PUT; until ``refs.json`` lands a reader sees the previous set (whose ``refs.json``
    names index files that are now being replaced in place: a reader opening it mid-write may
    get a newer index file than its refs.json names — so publish a changed directory under a
    new name, or write the JSON form, where that matters). Plain http(s) URLs are refused.
    """
    text = os.fspath(destination)
    kind = kind_of(text)
    if kind == "local":
        return str(
            write_local_rfs(
                rfs,
                text,
                manifest_threshold=manifest_threshold,
                inline_index_bytes=inline_index_bytes,
            )
        )
    if kind != "object_store":
        raise SourceError(
            f"{redact(text)}: references are written to a local path or an s3://, gs:// or "
            "az:// URL, not over http(s)"
        )
    json_file = text.endswith(".json")
    base, name = text.rsplit("/", 1) if json_file else (text.rstrip("/"), "")
    files = reference_files(
        rfs,
        json_file=json_file,
        name=name or "refs.json",
        manifest_threshold=manifest_threshold,
        inline_index_bytes=inline_index_bytes,
    )
    put_objects(base, files, storage_options)
    return text
