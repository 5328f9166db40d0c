"""Turn the JSON form of a reference file system into typed entries, validating as we go."""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Mapping
from typing import Any

from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.gen import GenEntry
from shadowzarr_spec.keys import check_key, check_relative_path
from shadowzarr_spec.model import (
    FileRef,
    IndexRef,
    InlineRef,
    Ref,
    ReferenceFileSystem,
    Selection,
    SourceInfo,
    UnsupportedDataset,
)

__all__ = ["parse_ref", "rfs_from_json"]

_KNOWN_KEYS = {
    "version",
    "templates",
    "refs",
    "gen",
    "indexes",
    "selections",
    "sources",
    "unsupported",
}


def rfs_from_json(document: Any, base: str | None = None) -> ReferenceFileSystem:
    """Parse a loaded reference document (kerchunk version 0, 1 or our version 2)."""
    if not isinstance(document, dict):
        raise ReferenceFormatError("a reference file must hold a JSON object")
    if "refs" not in document and "version" not in document:
        document = {"version": 0, "refs": document}  # kerchunk version 0: the refs alone
    version = document.get("version", 1)
    if version not in (0, 1, 2) or isinstance(version, bool):
        raise ReferenceFormatError(f"unsupported reference file version {version!r}")
    unknown = set(document) - _KNOWN_KEYS
    if unknown:
        raise ReferenceFormatError(f"unknown top-level keys in reference file: {sorted(unknown)}")
    templates = _parse_templates(document.get("templates", {}))
    raw_refs = document.get("refs", {})
    if not isinstance(raw_refs, dict):
        raise ReferenceFormatError("'refs' must be an object")
    refs: dict[str, Ref] = {}
    for key, value in raw_refs.items():
        check_key(key)
        refs[key] = parse_ref(key, value, templates)
    raw_gen = document.get("gen", [])
    if not isinstance(raw_gen, list):
        raise ReferenceFormatError("'gen' must be a list")
    gen = [GenEntry.from_json(entry, templates) for entry in raw_gen]
    rfs = ReferenceFileSystem(
        refs=refs,
        gen=gen,
        indexes=_parse_indexes(document.get("indexes", {}), templates),
        selections=_parse_selections(document.get("selections", {})),
        sources=_parse_sources(document.get("sources", {})),
        version=max(int(version), 1),
        base=base,
        unsupported=_parse_unsupported(document.get("unsupported", {})),
    )
    if rfs.version < rfs.required_version and (rfs.indexes or rfs.selections):
        raise ReferenceFormatError("a reference file with indexes or selections must be version 2")
    return rfs


def parse_ref(key: str, value: object, templates: Mapping[str, str]) -> Ref:
    """Parse one value of ``refs``."""
    if isinstance(value, str):
        if value.startswith("base64:"):
            try:
                return InlineRef(base64.b64decode(value[7:], validate=True))
            except binascii.Error as exc:
                raise ReferenceFormatError(f"reference {key!r}: invalid base64") from exc
        return InlineRef(value.encode("utf-8"))
    if isinstance(value, list) and len(value) in (1, 3):
        url = value[0]
        if not isinstance(url, str) or not url:
            raise ReferenceFormatError(f"reference {key!r}: the URL must be a non-empty string")
        url = sys.intern(_expand(url, templates))
        if len(value) == 1:
            return FileRef(url)
        offset, size = value[1], value[2]
        if not _is_int(offset) or not _is_int(size):
            raise ReferenceFormatError(f"reference {key!r}: offset and size must be integers")
        if offset < 0 or size < 0 or offset + size > 2**63:
            raise ReferenceFormatError(
                f"reference {key!r}: offset {offset} and size {size} out of range"
            )
        return FileRef(url, offset, size)
    raise ReferenceFormatError(
        f"reference {key!r} must be a string, [url] or [url, offset, size], got {type(value).__name__}"
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _expand(url: str, templates: Mapping[str, str]) -> str:
    if "{{" not in url:
        return url
    for name, value in templates.items():
        url = url.replace("{{" + name + "}}", value)
    if "{{" in url:
        raise ReferenceFormatError(f"reference URL {url!r} uses an undefined template")
    return url


def _parse_templates(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise ReferenceFormatError("'templates' must map names to strings")
    return dict(raw)


def _parse_indexes(raw: object, templates: Mapping[str, str]) -> dict[str, IndexRef]:
    if not isinstance(raw, dict):
        raise ReferenceFormatError("'indexes' must be an object")
    indexes: dict[str, IndexRef] = {}
    for path, entry in raw.items():
        check_key(path)
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("url"), str)
            or not isinstance(entry.get("index"), str)
        ):
            raise ReferenceFormatError(f"index of {path!r} must hold string 'url' and 'index'")
        index_path = entry["index"]
        if "://" not in index_path:
            check_relative_path(index_path)
        indexes[path] = IndexRef(url=sys.intern(_expand(entry["url"], templates)), path=index_path)
    return indexes


def _parse_selections(raw: object) -> dict[str, Selection]:
    if not isinstance(raw, dict):
        raise ReferenceFormatError("'selections' must be an object")
    selections: dict[str, Selection] = {}
    for path, entry in raw.items():
        check_key(path)
        if not isinstance(entry, dict):
            raise ReferenceFormatError(f"selection of {path!r} must be an object")
        record_size, keep = entry.get("record_size"), entry.get("keep")
        if not _is_int(record_size) or not isinstance(keep, list):
            raise ReferenceFormatError(
                f"selection of {path!r} needs integer record_size and a keep list"
            )
        ranges: list[tuple[int, int]] = []
        for item in keep:
            if not (isinstance(item, list) and len(item) == 2 and all(_is_int(v) for v in item)):
                raise ReferenceFormatError(f"selection of {path!r}: keep holds [start, stop] pairs")
            ranges.append((item[0], item[1]))
        selections[path] = Selection(record_size, tuple(ranges))  # type: ignore[arg-type]
    return selections


def _parse_sources(raw: object) -> dict[str, SourceInfo]:
    if not isinstance(raw, dict):
        raise ReferenceFormatError("'sources' must be an object")
    sources: dict[str, SourceInfo] = {}
    for url, entry in raw.items():
        if not isinstance(entry, dict):
            raise ReferenceFormatError(f"source {url!r} must be an object")
        size, etag = entry.get("size"), entry.get("etag")
        if size is not None and (not _is_int(size) or size < 0):
            raise ReferenceFormatError(f"source {url!r}: size must be a non-negative integer")
        if etag is not None and not isinstance(etag, str):
            raise ReferenceFormatError(f"source {url!r}: etag must be a string")
        sources[url] = SourceInfo(size, etag)
    return sources


def _parse_unsupported(raw: object) -> dict[str, UnsupportedDataset]:
    if not isinstance(raw, dict):
        raise ReferenceFormatError("'unsupported' must be an object")
    found: dict[str, UnsupportedDataset] = {}
    for path, entry in raw.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("outcome"), str)
            and isinstance(entry.get("reason"), str)
        ):
            raise ReferenceFormatError(f"unsupported dataset {path!r}: needs outcome and reason")
        found[path] = UnsupportedDataset(entry["outcome"], entry["reason"])
    return found
