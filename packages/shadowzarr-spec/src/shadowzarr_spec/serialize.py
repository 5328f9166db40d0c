"""Typed reference file system → its JSON document (the inverse of :mod:`shadowzarr_spec.parse`)."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import numpy as np

from shadowzarr_spec.errors import ReferenceFormatError
from shadowzarr_spec.gc_pause import paused_gc
from shadowzarr_spec.listed_refs import ListedRefs
from shadowzarr_spec.model import (
    MISSING_CHUNK,
    FileRef,
    InlineRef,
    Ref,
    ReferenceFileSystem,
    checked_file_ref,
)

__all__ = ["encode_ref", "index_items", "rfs_to_json"]


def rfs_to_json(
    rfs: ReferenceFileSystem,
    *,
    expand: bool = False,
    index_paths: dict[str, str] | None = None,
    max_expanded: int = 50_000_000,
    index_files: dict[str, dict[str, bytes]] | None = None,
) -> dict[str, Any]:
    """The JSON document of ``rfs``.

    ``expand`` lists every chunk of gen entries and chunk manifests in ``refs`` (a version 1 file
    any kerchunk reader opens); otherwise indexes are written as ``index_paths`` gives them,
    each with the files of its index array that ``index_files`` gives (`IndexRef.files`).
    """
    refs: MutableMapping[str, Ref] = rfs.refs
    gen = list(rfs.gen)
    if expand and (gen or rfs.indexes):
        total = sum(entry.count for entry in gen)
        if total > max_expanded:
            raise ReferenceFormatError(f"refusing to list {total} gen chunks in one JSON file")
        refs = dict(refs.items())
        for entry in gen:
            refs.update(entry.items())
        gen = []
        for path, index in rfs.indexes.items():
            if index.table is None:
                raise ReferenceFormatError(
                    f"index of {path!r} is not loaded; load it before expanding"
                )
            refs.update(index_items(path, index.url, index.table))
    templates = _templates(
        refs, [entry.url for entry in gen], [i.url for i in rfs.indexes.values()]
    )
    by_url = {url: "{{" + name + "}}" for name, url in templates.items()}
    document: dict[str, Any] = {"version": 1}
    if templates:
        document["templates"] = templates
    with paused_gc():
        document["refs"] = _encoded_refs(refs, by_url)
    if gen:
        document["gen"] = [entry.to_json(by_url.get(entry.url)) for entry in gen]
    if not expand and rfs.indexes:
        paths = index_paths or {}
        document["indexes"] = {}
        for path, index in rfs.indexes.items():
            location = paths.get(path, index.path)
            if location is None:
                raise ReferenceFormatError(f"index of {path!r} has no stored location")
            written: dict[str, Any] = {"url": by_url.get(index.url, index.url), "index": location}
            files = (index_files or {}).get(path, index.files if location == index.path else {})
            if files:
                written["files"] = {key: encode_ref(InlineRef(data)) for key, data in files.items()}
            document["indexes"][path] = written
    if rfs.selections:
        document["selections"] = {p: s.to_json() for p, s in rfs.selections.items()}
    if rfs.sources:
        document["sources"] = {u: s.to_json() for u, s in rfs.sources.items()}
    if rfs.unsupported:
        document["unsupported"] = {p: u.to_json() for p, u in rfs.unsupported.items()}
    uses_v2 = (
        bool(document.get("gen") and not expand)
        or "indexes" in document
        or "selections" in document
    )
    document["version"] = 2 if uses_v2 else 1
    return document


def encode_ref(ref: Ref, by_url: dict[str, str] | None = None) -> Any:
    """One ``refs`` value: text when the bytes are UTF-8 that cannot be mistaken, else base64."""
    if isinstance(ref, InlineRef):
        try:
            text = ref.data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or text.startswith("base64:"):
            return "base64:" + base64.b64encode(ref.data).decode("ascii")
        return text
    url = (by_url or {}).get(ref.url, ref.url)
    if ref.offset is None:
        return [url]
    return [url, ref.offset, ref.size]


def index_items(path: str, url: str, table: np.ndarray) -> Iterator[tuple[str, FileRef]]:
    """The (key, reference) of every written chunk in an index table, in C order."""
    grid = table.shape[:-1]
    flat = table.reshape(-1, 2)
    written = np.nonzero(flat[:, 0] != MISSING_CHUNK)[0]
    if not grid:
        names = ["c"] * len(written)
    else:
        coords = np.stack(np.unravel_index(written, grid), axis=1)
        if len(grid) == 1:
            names = [f"c/{c}" for c in coords[:, 0].tolist()]
        else:
            names = ["c/" + "/".join(map(str, row)) for row in coords.tolist()]
    prefix = path.strip("/") + "/" if path.strip("/") else ""
    pairs = flat[written]
    offsets, sizes = pairs[:, 0].tolist(), pairs[:, 1].tolist()
    for name, offset, size in zip(names, offsets, sizes, strict=True):
        yield prefix + name, checked_file_ref(url, offset, size)


def _encoded_refs(refs: Mapping[str, Ref], by_url: dict[str, str]) -> dict[str, Any]:
    """The ``refs`` object; chunks held as columns are encoded a column at a time."""
    if not isinstance(refs, ListedRefs):
        return {key: encode_ref(ref, by_url) for key, ref in refs.items()}
    encoded: dict[str, Any] = {}
    for run in refs.runs():
        if isinstance(run, list):
            encoded.update((key, encode_ref(ref, by_url)) for key, ref in run)
            continue
        columns, start, stop = run
        urls = [by_url.get(url, url) for url in columns.urls]
        values = [
            [urls[u], offset, size]
            for u, offset, size in zip(
                columns.url_index[start:stop].tolist(),
                columns.offsets[start:stop].tolist(),
                columns.sizes[start:stop].tolist(),
                strict=True,
            )
        ]
        encoded.update(zip(columns.keys(start, stop), values, strict=True))
    return encoded


def _url_counts(refs: Mapping[str, Ref]) -> Counter[str]:
    """How many references name each URL."""
    if not isinstance(refs, ListedRefs):
        return Counter(ref.url for ref in refs.values() if isinstance(ref, FileRef))
    counts: Counter[str] = Counter()
    for run in refs.runs():
        if isinstance(run, list):
            counts.update(ref.url for _, ref in run if isinstance(ref, FileRef))
            continue
        columns, start, stop = run
        # In order of first use, as counting one reference at a time would meet them: the
        # order breaks ties between template names.
        found, first, n = np.unique(
            columns.url_index[start:stop], return_index=True, return_counts=True
        )
        for i in np.argsort(first, kind="stable").tolist():
            counts[columns.urls[int(found[i])]] += int(n[i])
    return counts


def _templates(refs: Mapping[str, Ref], *url_lists: list[str]) -> dict[str, str]:
    """Name every URL used more than once (or by gen/indexes) ``u0``, ``u1``, … by frequency."""
    counts = _url_counts(refs)
    for urls in url_lists:
        for url in urls:
            if "{{" not in url:
                counts[url] += 2
    ordered = [url for url, n in counts.most_common() if n > 1]
    return {f"u{i}": url for i, url in enumerate(ordered)}
