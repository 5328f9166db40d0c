"""One asset's job: pick its generator, generate, publish, and describe the outcome as a catalog
row. Never raises for the asset's own failure: that is the row's status and error."""

from __future__ import annotations

import datetime
import time
import warnings
from collections.abc import Mapping
from typing import Any

from shadowzarr_spec import (
    ChunkDecodeError,
    DatasetNotFoundError,
    ReferenceFileSystem,
    ShadowzarrError,
    SourceAccessError,
    SourceError,
    SourceInfo,
    UnsafePathError,
    UnsupportedDatasetWarning,
    node_type,
)
from shadowzarr_spec.file_refs import FileRef, InlineRef
from shadowzarr_spec.model import MISSING_CHUNK
from shadowzarr_spec.signed_urls import recorded_location
from shadowzarr_store.remote.errors import SourceFormatError
from shadowzarr_store.transport import StoreStats, counted, redact, run_blocking, transport_for

from shadowzarr_catalog.assets import Asset, host_of, is_text, shown_name
from shadowzarr_catalog.destination import Destination
from shadowzarr_catalog.formats import Access, Skipped, generate, pick_format

__all__ = ["REFUSALS", "base_row", "retryable", "run_job"]

REFUSALS = (SourceAccessError, UnsafePathError)
"""Errors that mean the source said no (credentials, ``allowed_urls``), not that it is broken."""
OF_THE_CONTENT = (SourceFormatError, DatasetNotFoundError, ChunkDecodeError)
"""Source errors that the file's own bytes cause: trying again without a change fails again."""


def retryable(exc: BaseException) -> bool:
    """Whether the next run should try an unchanged asset again: refusals (credentials may be
    given) and errors of the way to the file (timeouts, 5xx after retries, a vanished object),
    not errors of the file's content (a truncated or corrupt file, an unsupported layout)."""
    if isinstance(exc, REFUSALS):
        return True
    return isinstance(exc, SourceError) and not isinstance(exc, OF_THE_CONTENT)


def base_row(asset: Asset) -> dict[str, Any]:
    """The columns every row has, from the listing alone."""
    return {
        "asset_id": asset.asset_id,
        "path": asset.path,
        "source_url": shown_name(redact(asset.url)),
        "size": asset.size,
        "etag": asset.etag,
        "format": None,
        "status": None,
        "error_class": None,
        "error_message": None,
        "retry": False,
        "datasets": None,
        "chunks": None,
        "unsupported": [],
        "reference": None,
        "reference_bytes": None,
        "generated_at": None,
        "generation_seconds": None,
        "requests": None,
        "bytes_read": None,
    }


def run_job(
    asset: Asset,
    destination: Destination,
    reference: str,
    access: Access,
    options: Mapping[str, Any],
    manifest_threshold: int | None,
) -> dict[str, Any]:
    """Generate and publish ``asset``'s references at ``reference``; its catalog row."""
    row = base_row(asset)
    started = time.perf_counter()
    row["generated_at"] = datetime.datetime.now(datetime.UTC).isoformat()
    stats = StoreStats()
    rfs = None
    try:
        if not is_text(asset.url):
            raise Skipped(
                "its name is not UTF-8 text: a reference set, a catalog row and a URL name "
                "files in UTF-8 (rename the file)"
            )
        with counted(stats):
            row["format"] = kind = pick_format(asset.url, access, asset.path)
            with warnings.catch_warnings():
                # the row lists every dataset left out; the warning would say it again, per asset
                warnings.simplefilter("ignore", UnsupportedDatasetWarning)
                rfs = generate(asset.url, kind, access, options)
        row.update(_described(rfs))
        row["reference_bytes"] = destination.write_references(rfs, reference, manifest_threshold)
        row["reference"] = reference
        omitted = any(u["outcome"] == "omitted" for u in row["unsupported"])
        row["status"] = "partial" if omitted else "ok"
    except Skipped as exc:
        row["status"] = "skipped"
        row["error_message"] = str(exc)
    except Exception as exc:  # the asset's failure is its row; the run goes on
        row["status"] = "refused" if isinstance(exc, REFUSALS) else "failed"
        row["error_class"] = type(exc).__name__
        row["error_message"] = _one_line(exc)
        row["retry"] = retryable(exc)
    with counted(stats):
        _identify(row, asset, access, rfs)
    _count(row, asset, stats)
    row["generation_seconds"] = round(time.perf_counter() - started, 6)
    return row


def _identify(
    row: dict[str, Any], asset: Asset, access: Access, rfs: ReferenceFileSystem | None
) -> None:
    """The size and ETag of an asset no listing described (a URL of a list): those its
    generation recorded from its first answer, so it costs no request of its own; when the
    generation recorded none (it failed or was skipped first), one probe, so the next run can
    tell the asset unchanged and leave it alone."""
    if asset.size is not None or asset.etag is not None or host_of(asset.url) == "local":
        return
    info = rfs.sources.get(recorded_location(asset.url)) if rfs is not None else None
    if info is None or info.size is None:
        try:
            info = run_blocking(_probe(asset.url, access))
        except (ShadowzarrError, OSError):  # the row's error (if any) says why it cannot be read
            return
    row["size"], row["etag"] = info.size, info.etag


async def _probe(url: str, access: Access) -> SourceInfo:
    transport = transport_for(access.transport())
    try:
        return await transport.probe(url)
    finally:
        await transport.aclose()


def _count(row: dict[str, Any], asset: Asset, stats: StoreStats) -> None:
    """Requests and bytes the generation sent through the transport (the format probe, header
    and chunk-index reads, the source's size and ETag). A local file is read by h5py and the
    NEO readers directly, outside the transport, so its counts would say less than it cost:
    they stay null."""
    if host_of(asset.url) != "local":
        row["requests"] = stats.requests
        row["bytes_read"] = stats.bytes


def _described(rfs: ReferenceFileSystem) -> dict[str, Any]:
    """Arrays and chunks the references describe, and the datasets they leave out or inline."""
    arrays = 0
    chunks = 0
    for key, ref in rfs.refs.items():
        if isinstance(ref, FileRef):
            chunks += 1
        elif key.rsplit("/", 1)[-1] == "zarr.json" and isinstance(ref, InlineRef):
            arrays += node_type(ref.data) == "array"
    for index in rfs.indexes.values():
        if index.table is not None:
            chunks += int((index.table[..., 0] != MISSING_CHUNK).sum())
    unsupported = [
        {"name": path, "outcome": u.outcome, "reason": u.reason}
        for path, u in sorted(rfs.unsupported.items())
    ]
    return {"datasets": arrays, "chunks": chunks, "unsupported": unsupported}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return " ".join(redact(word) if "://" in word else word for word in text.split())[:2000]
