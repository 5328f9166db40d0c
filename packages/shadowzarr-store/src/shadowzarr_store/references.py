"""load_rfs: references from a local file or directory, a URL or an object store, or a dict.

The spec package reads local files only; a reference file at a URL is read here, through the
store's transport, so its request carries the same headers and obeys the same ``allowed_urls``
as the reads of its sources.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from shadowzarr_spec import ReferenceFileSystem, SourceNotFoundError, parse_json
from shadowzarr_spec import load_rfs as load_local_rfs
from shadowzarr_spec.io import refs_url_of
from shadowzarr_spec.parse import rfs_from_json

from shadowzarr_store.options import StoreOptions
from shadowzarr_store.transport import Transport, kind_of, redact, run_blocking
from shadowzarr_store.zarr_v2 import has_v2_keys, v3_document

__all__ = ["load_rfs"]


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
        return load_local_rfs(_as_v3(source))
    text = os.fspath(source)
    if kind_of(text) == "local":
        local = Path(unquote(urlsplit(text).path) if text.startswith("file://") else text)
        if local.is_file():  # a JSON file may be kerchunk's or LINDI's, with Zarr v2 keys
            try:
                document = parse_json(local.read_bytes())
            except FileNotFoundError:
                raise SourceNotFoundError(f"no reference file at {local}") from None
            return rfs_from_json(_as_v3(document), base=str(local.parent.resolve()))
        return load_local_rfs(text)
    refs_url, base = refs_url_of(text)
    transport = Transport(StoreOptions.from_kwargs(options).transport(allow_local_files=False))

    async def read() -> bytes:
        try:
            return await transport.read_whole(refs_url)
        except SourceNotFoundError as exc:
            raise SourceNotFoundError(f"no reference file at {redact(refs_url)} ({exc})") from exc
        finally:
            await transport.aclose()

    return rfs_from_json(_as_v3(parse_json(run_blocking(read()))), base=base)


def _as_v3(document: Any) -> Any:
    """A document with Zarr v2 keys (kerchunk's, LINDI's) rewritten as Zarr v3."""
    return (
        v3_document(document) if isinstance(document, dict) and has_v2_keys(document) else document
    )
