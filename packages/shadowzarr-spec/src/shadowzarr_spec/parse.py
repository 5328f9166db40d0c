"""Turn the JSON form of a reference file system into typed entries, validating as we go."""

from __future__ import annotations

import array
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from shadowzarr_spec.base64_text import decode_base64
from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.etags import is_entity_tag
from shadowzarr_spec.gc_pause import paused_gc
from shadowzarr_spec.gen import GenEntry
from shadowzarr_spec.gen_expr import MAX_MAGNITUDE, expand_named_templates
from shadowzarr_spec.json_text import json_integer
from shadowzarr_spec.keys import (
    MAX_KEY_LENGTH,
    array_of_chunk_key,
    check_key,
    check_relative_path,
)
from shadowzarr_spec.listed_refs import ChunkColumns, ListedRefs
from shadowzarr_spec.model import (
    FileRef,
    IndexRef,
    InlineRef,
    Ref,
    ReferenceFileSystem,
    Selection,
    SourceInfo,
    UnsupportedDataset,
    checked_file_ref,
)
from shadowzarr_spec.plain_slice import PlainSlice

__all__ = ["DuplicateRefsKey", "parse_ref", "rfs_from_json", "rfs_from_parts"]

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
    return rfs_from_parts(document, base)


def rfs_from_parts(
    document: Any,
    base: str | None = None,
    refs_items: Iterable[tuple[Any, Any]] | None = None,
) -> ReferenceFileSystem:
    """`rfs_from_json`, with the entries of ``refs`` from ``refs_items`` when given (the
    document's own ``refs`` is then not read): a large file's entries arrive a slice at a time
    (`shadowzarr_spec.refs_text`). A key met twice among them is `DuplicateRefsKey`."""
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
    sliced = refs_items is not None
    if refs_items is None:
        raw_refs = document.get("refs", {})
        if not isinstance(raw_refs, dict):
            raise ReferenceFormatError("'refs' must be an object")
        refs_items = raw_refs.items()
    with paused_gc():
        refs = _parse_refs(refs_items, templates, check_unique=sliced)
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
        return InlineRef(inline_bytes(value, f"reference {key!r}"))
    if isinstance(value, list) and len(value) in (1, 3):
        url = value[0]
        if not isinstance(url, str) or not url:
            raise ReferenceFormatError(f"reference {key!r}: the URL must be a non-empty string")
        url = sys.intern(_expand(url, templates))
        if len(value) == 1:
            return FileRef(url)
        offset, size = json_integer(value[1]), json_integer(value[2])
        if offset is None or size is None:
            raise ReferenceFormatError(f"reference {key!r}: offset and size must be integers")
        if offset < 0 or size < 0 or offset + size > MAX_MAGNITUDE:
            raise ReferenceFormatError(
                f"reference {key!r}: offset {offset} and size {size} out of range"
            )
        return FileRef(url, offset, size)
    raise ReferenceFormatError(
        f"reference {key!r} must be a string, [url] or [url, offset, size], "
        f"got {type(value).__name__}"
    )


MIN_COLUMN_CHUNKS = 64
"""Arrays with fewer listed chunks keep them in the dict of `ListedRefs`."""


@dataclass(slots=True)
class _Listed:
    """The chunks of one array met so far, in growing arrays (columns at the end)."""

    rank: int
    coords: array.array[int] = field(default_factory=lambda: array.array("q"))
    """Rank 1: one coordinate per chunk; else ``rank`` per chunk, flat."""
    url_index: array.array[int] = field(default_factory=lambda: array.array("q"))
    offsets: array.array[int] = field(default_factory=lambda: array.array("q"))
    sizes: array.array[int] = field(default_factory=lambda: array.array("q"))
    urls: dict[str, int] = field(default_factory=dict)


class DuplicateRefsKey(Exception):
    """A key met twice in entries that arrive a slice at a time: the caller parses the whole
    document instead, where the last value wins in the first one's place as JSON has it."""


def _parse_refs(
    raw_refs: Iterable[tuple[Any, Any]], templates: Mapping[str, str], check_unique: bool = False
) -> dict[str, Ref] | ListedRefs:
    """Every entry of ``refs``: chunk references ``[url, offset, size]`` under canonical chunk
    keys go to columns; any other entry, or one that may be invalid, takes `parse_ref`'s path
    (with `check_key` first), so values and errors are those of parsing one entry at a time.
    ``check_unique``: the entries may repeat a key (`DuplicateRefsKey`)."""
    other: dict[str, Ref] = {}
    listed: dict[str, _Listed] = {}
    order: list[list[Any]] = []  # [path or None, count]: runs of keys in file order
    expanded: dict[str, str] = {}  # a URL as written -> expanded and interned
    run: str | None = ""  # path of the current run ("" also names the root: start with a miss)
    current: list[Any] = [None, 0]  # the last item of order
    # The previous chunk's array and URL, for the common case of runs of both.
    chunks: _Listed | None = None
    last_url: str | None = None
    last_position = 0
    for key, value in raw_refs:
        if key is PLAIN_SLICE:
            head = value.path
            chunks = listed.get(head)
            if chunks is None:
                check_key(value.first_key)
                chunks = listed[head] = _Listed(value.coords.shape[1])
            if chunks.rank != value.coords.shape[1]:  # as the loop would: kept in the dict
                for other_key, ref in _plain_pairs(value):
                    if other_key in other:
                        raise DuplicateRefsKey(other_key)
                    other[other_key] = parse_ref(other_key, ref, templates)
                if run is None and order:
                    current[1] += len(value.offsets)
                else:
                    current = [None, len(value.offsets)]
                    order.append(current)
                    run = None
                chunks = None
                continue
            _add_plain(chunks, value, templates, expanded)
            if run == head and order:
                current[1] += len(value.offsets)
            else:
                current = [head, len(value.offsets)]
                order.append(current)
                run = head
            last_url = None
            continue
        if type(value) is list and len(value) == 3 and type(key) is str:
            url, offset, size = value
            if type(offset) is not int or type(size) is not int:
                # JSON has one number type: 64.0 is the integer 64 (`json_integer`), in columns
                # too, so no spelling of a number changes which arrays are one listed table
                offset, size = json_integer(offset), json_integer(size)
            if (
                type(offset) is int
                and type(size) is int
                and type(url) is str
                and url
                and offset >= 0
                and size >= 0
                and offset + size <= MAX_MAGNITUDE
                and len(key) <= MAX_KEY_LENGTH
            ):
                head, found, tail = key.rpartition("/c/")
                if not found and key.startswith("c/"):
                    head, found, tail = "", "c/", key[2:]
                coords: int | tuple[int, ...] | None = None
                if not found:
                    pass
                elif (
                    tail.isdigit()
                    and tail.isascii()
                    and len(tail) <= 18
                    and (tail[0] != "0" or len(tail) == 1)
                ):
                    coords = int(tail)
                else:
                    coords = _coords(tail)
                if coords is not None:
                    rank = 1 if type(coords) is int else len(coords)  # type: ignore[arg-type]
                    if head != run or chunks is None:
                        chunks = listed.get(head)
                        if chunks is None:
                            check_key(key)  # the array path, checked once: the rest is digits
                            chunks = listed[head] = _Listed(rank)
                        last_url = None
                    if chunks.rank == rank:
                        if url != last_url:
                            full = expanded.get(url)
                            if full is None:
                                full = expanded[url] = sys.intern(_expand(url, templates))
                            position = chunks.urls.get(full)
                            if position is None:
                                position = chunks.urls[full] = len(chunks.urls)
                            last_url, last_position = url, position
                        if rank == 1:
                            chunks.coords.append(coords)  # type: ignore[arg-type]
                        else:
                            chunks.coords.extend(coords)  # type: ignore[arg-type]
                        chunks.url_index.append(last_position)
                        chunks.offsets.append(offset)
                        chunks.sizes.append(size)
                        if run == head and order:
                            current[1] += 1
                        else:
                            current = [head, 1]
                            order.append(current)
                            run = head
                        continue
        check_key(key)
        if key in other:
            raise DuplicateRefsKey(key)  # (entries of one dict never repeat a key)
        other[key] = parse_ref(key, value, templates)
        if run is None and order:
            current[1] += 1
        else:
            current = [None, 1]
            order.append(current)
            run = None
            chunks = None
    if not listed:
        return other
    if check_unique:
        _refuse_repeats(other, listed)
    return _listed_refs(other, listed, order)


PLAIN_SLICE = object()
"""The key of an item of ``refs`` entries whose value is a `PlainSlice` (many chunks at once)."""


def _add_plain(
    chunks: _Listed, plain: PlainSlice, templates: Mapping[str, str], expanded: dict[str, str]
) -> None:
    """The chunks of ``plain`` appended to ``chunks`` (entries the loop would have added one by
    one; anything it would refuse makes the caller parse the whole document)."""
    offsets, sizes = plain.offsets, plain.sizes
    if int((offsets + sizes).max()) > MAX_MAGNITUDE:
        raise DuplicateRefsKey(plain.path)  # (out of range: the whole parse words it)
    full = expanded.get(plain.url)
    if full is None:
        full = expanded[plain.url] = sys.intern(_expand(plain.url, templates))
    position = chunks.urls.get(full)
    if position is None:
        position = chunks.urls[full] = len(chunks.urls)
    count = len(offsets)
    chunks.coords.frombytes(np.ascontiguousarray(plain.coords, dtype=np.int64).tobytes())
    chunks.url_index.frombytes(np.full(count, position, dtype=np.int64).tobytes())
    chunks.offsets.frombytes(offsets.astype(np.int64).tobytes())
    chunks.sizes.frombytes(sizes.astype(np.int64).tobytes())


def _plain_pairs(plain: PlainSlice) -> Iterator[tuple[str, list[Any]]]:
    """The entries of ``plain`` as the text wrote them (key, [url, offset, size])."""
    prefix = f"{plain.path}/c/" if plain.path else "c/"
    for coords, offset, size in zip(
        plain.coords.tolist(), plain.offsets.tolist(), plain.sizes.tolist(), strict=True
    ):
        yield prefix + "/".join(map(str, coords)), [plain.url, offset, size]


_MOST_CHECKED_OTHERS = 64
"""Most keys outside the columns that look like their chunks checked one by one for repeats;
more make the caller parse the whole document."""


def _refuse_repeats(other: dict[str, Ref], listed: dict[str, _Listed]) -> None:
    """`DuplicateRefsKey` if a chunk was listed twice (entries that arrived a slice at a time):
    its coordinates twice in its array's columns, or both there and among the other keys."""
    found: dict[str, list[tuple[int, ...]]] = {}
    for key in other:
        split = array_of_chunk_key(key)
        if split is not None and split[0] in listed:
            found.setdefault(split[0], []).append(split[1])
    if sum(len(v) for v in found.values()) > _MOST_CHECKED_OTHERS:
        raise DuplicateRefsKey("many keys beside the columns")
    for path, chunks in listed.items():
        n = len(chunks.offsets)
        coords = np.frombuffer(chunks.coords, dtype=np.int64).reshape(n, chunks.rank)
        ordered = np.sort(coords, axis=0) if chunks.rank == 1 else coords[np.lexsort(coords.T)]
        if n > 1 and bool((ordered[1:] == ordered[:-1]).all(axis=1).any()):
            raise DuplicateRefsKey(path)
        for point in found.get(path, ()):
            if len(point) == chunks.rank and bool((coords == point).all(axis=1).any()):
                raise DuplicateRefsKey(path)


def _coords(tail: str) -> int | tuple[int, ...] | None:
    """The coordinates of a chunk key's tail (``"12"``, ``"0/3"``) if zarr would write it so."""
    if tail.isdigit():
        if tail.isascii() and len(tail) <= 18 and (tail[0] != "0" or len(tail) == 1):
            return int(tail)
        return None
    parts = tail.split("/")
    for part in parts:
        if not (
            part.isdigit()
            and part.isascii()
            and len(part) <= 18
            and (part[0] != "0" or len(part) == 1)
        ):
            return None
    return tuple(int(part) for part in parts)


def _listed_refs(
    other: dict[str, Ref], listed: dict[str, _Listed], order: list[list[Any]]
) -> dict[str, Ref] | ListedRefs:
    """Columns of the arrays with many listed chunks; the chunks of the others join ``other``
    in file order. A plain dict when no array has many."""
    columns: dict[str, ChunkColumns] = {}
    for path, chunks in listed.items():
        if len(chunks.offsets) >= MIN_COLUMN_CHUNKS:
            columns[path] = _columns(path, chunks)
    if len(columns) == len(listed):
        segments: list[tuple[str | None, int, int]] = []
        starts = dict.fromkeys(listed, 0)
        for path, count in order:
            if path is None:
                segments.append((None, count, 0))
            else:
                segments.append((path, starts[path], starts[path] + count))
                starts[path] += count
        return ListedRefs(other, columns, segments)
    # Some arrays stay in the dict: rebuild it in file order, their chunks as references.
    merged: dict[str, Ref] = {}
    others = iter(other.items())
    segments = []
    rows = dict.fromkeys(listed, 0)
    for path, count in order:
        if path is not None and path in columns:
            segments.append((path, rows[path], rows[path] + count))
            rows[path] += count
            continue
        if path is None:
            merged.update(islice(others, count))
        else:
            merged.update(_listed_items(path, listed[path], rows[path], rows[path] + count))
            rows[path] += count
        if segments and segments[-1][0] is None:
            segments[-1] = (None, segments[-1][1] + count, 0)
        else:
            segments.append((None, count, 0))
    if not columns:
        return merged
    return ListedRefs(merged, columns, segments)


def _listed_items(path: str, chunks: _Listed, start: int, stop: int) -> Iterator[tuple[str, Ref]]:
    prefix = f"{path}/c/" if path else "c/"
    urls = list(chunks.urls)
    rank = chunks.rank
    for i in range(start, stop):
        tail = "/".join(map(str, chunks.coords[i * rank : (i + 1) * rank]))
        yield (
            prefix + tail,
            checked_file_ref(urls[chunks.url_index[i]], chunks.offsets[i], chunks.sizes[i]),
        )


def _columns(path: str, chunks: _Listed) -> ChunkColumns:
    n = len(chunks.offsets)
    coords = np.frombuffer(chunks.coords, dtype=np.int64).reshape(n, chunks.rank)
    sizes = np.frombuffer(chunks.sizes, dtype=np.int64)
    if int(sizes.max()) < 2**32:
        sizes = sizes.astype(np.uint32)
    index_type = np.uint8 if len(chunks.urls) <= 256 else np.uint32
    return ChunkColumns(
        path=path,
        coords=coords,
        urls=list(chunks.urls),
        url_index=np.frombuffer(chunks.url_index, dtype=np.int64).astype(index_type),
        offsets=np.frombuffer(chunks.offsets, dtype=np.int64),
        sizes=sizes,
    )


def _shown_value(value: object) -> str:
    """A value of a reference file in a message: quoted, control bytes escaped, cut short."""
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:120]}..."


def _is_int(value: object) -> bool:
    return json_integer(value) is not None


def _expand(url: str, templates: Mapping[str, str]) -> str:
    return expand_named_templates(url, templates, strict=True)


def _parse_templates(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and "{{" not in v for k, v in raw.items()
    ):
        raise ReferenceFormatError("'templates' must map names to strings without '{{'")
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
        files = _index_files(path, entry.get("files", {}))
        url = sys.intern(_expand(entry["url"], templates))
        indexes[path] = IndexRef(url=url, path=index_path, files=files)
    return indexes


def inline_bytes(value: str, what: str) -> bytes:
    """The bytes of an inline string value (``refs``, an index's ``files``): ``base64:`` and
    base64, or UTF-8 text; ``what`` names it in errors."""
    if value.startswith("base64:"):
        return decode_base64(value[7:], what)
    return value.encode("utf-8")


def _index_files(path: str, raw: object) -> dict[str, bytes]:
    """An index entry's ``files``: the index array's own files by their key in it (text, or
    ``base64:`` as in ``refs``)."""
    if not isinstance(raw, dict):
        raise ReferenceFormatError(f"'files' of the index of {path!r} must be an object")
    files: dict[str, bytes] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ReferenceFormatError(f"'files' of the index of {path!r} must map keys to strings")
        check_relative_path(key)
        files[key] = inline_bytes(value, f"file {key!r} of the index of {path!r}")
    return files


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
            ranges.append((int(item[0]), int(item[1])))
        selections[path] = Selection(int(record_size), tuple(ranges))  # type: ignore[arg-type]
    return selections


def _parse_sources(raw: object) -> dict[str, SourceInfo]:
    if not isinstance(raw, dict):
        raise ReferenceFormatError("'sources' must be an object")
    sources: dict[str, SourceInfo] = {}
    for url, entry in raw.items():
        if not isinstance(entry, dict):
            raise ReferenceFormatError(f"source {url!r} must be an object")
        size, etag = entry.get("size"), entry.get("etag")
        if size is not None and (not _is_int(size) or not 0 <= size <= MAX_MAGNITUDE):
            raise ReferenceFormatError(f"source {url!r}: size must be a non-negative integer")
        if etag is not None and not (isinstance(etag, str) and is_entity_tag(etag)):
            raise ReferenceFormatError(
                f"source {url!r}: etag must be an ETag such as '\"abc\"' or 'W/\"abc\"' "
                f"(visible ASCII, no whitespace or control byte), not {_shown_value(etag)}"
            )
        mtime_ns, sample_hash = entry.get("mtime_ns"), entry.get("sample_hash")
        if mtime_ns is not None and not _is_int(mtime_ns):
            raise ReferenceFormatError(f"source {url!r}: mtime_ns must be an integer")
        if sample_hash is not None and not isinstance(sample_hash, str):
            raise ReferenceFormatError(f"source {url!r}: sample_hash must be a string")
        sources[url] = SourceInfo(
            None if size is None else int(size),
            etag,
            None if mtime_ns is None else int(mtime_ns),
            sample_hash,
        )
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
