"""The assets of a source: a local folder (walked), a text or CSV file of URLs, an iterable of
URLs and paths, an object-store prefix (listed through obstore) or a DANDI dandiset version."""

from __future__ import annotations

import csv
import fnmatch
import io
import os
import warnings
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from shadowzarr_store.transport import (
    Transport,
    TransportOptions,
    is_local,
    list_objects,
    redact,
    run_blocking,
    transport_for,
)

from shadowzarr_catalog.assets import Asset, AssetLeftOutWarning, shown_name
from shadowzarr_catalog.dandi import dandiset_assets, is_dandiset

__all__ = ["list_assets", "with_identities"]

LIST_SUFFIXES = frozenset({".txt", ".csv", ".tsv", ".list"})
"""A local file with one of these suffixes is a list of sources, not an asset."""
OBJECT_SCHEMES = ("s3://", "gs://", "az://")


def list_assets(
    source: str | os.PathLike[str] | Iterable[str],
    options: TransportOptions,
    *,
    include: str | None = None,
    dandi_api_key: str | None = None,
    exclude_folder: Path | None = None,
) -> list[Asset]:
    """Every asset of ``source`` whose path matches the glob ``include`` (all when None), in a
    stable order. ``exclude_folder`` (the destination, when it lies inside a walked folder) is
    not walked."""
    if isinstance(source, str | os.PathLike):
        text = os.fspath(source)
        if is_dandiset(text):
            found = dandiset_assets(text, options, dandi_api_key)
        elif text.lower().startswith(OBJECT_SCHEMES):
            found = _prefix_assets(text, options)
        elif is_local(text) and Path(text).is_dir():
            found = _folder_assets(Path(text), exclude_folder)
        elif is_local(text) and Path(text).suffix.lower() in LIST_SUFFIXES:
            found = _entries_assets(_list_file_entries(Path(text)))
        else:
            raise ValueError(
                f"{redact(text)}: a catalog source is a folder, a .txt/.csv list of URLs, an "
                "s3://, gs:// or az:// prefix, a dandiset (dandi://000123/draft or its URL), "
                "or a list of URLs and paths"
            )
    else:
        found = _entries_assets(list(source))
    chosen = [a for a in found if include is None or fnmatch.fnmatchcase(a.path, include)]
    return _one_each(chosen)


def _one_each(assets: list[Asset]) -> list[Asset]:
    """``assets`` by id, each id and each path once. A row and a reference set belong to one
    asset: two assets sharing an id (a file whose name is not UTF-8 shown with ``\\x`` escapes
    beside one named with those characters) or a path (a listing that names one path twice)
    would take turns over one row and one reference set, each run regenerating the other. The
    first by id and URL keeps them; a later one is left out with an `AssetLeftOutWarning`,
    and one listed twice (a page of a listing that shifted while it was read) silently."""
    kept: list[Asset] = []
    ids: dict[str, Asset] = {}
    paths: dict[str, Asset] = {}
    for asset in sorted(assets, key=lambda a: (a.asset_id, a.url)):
        first = ids.get(asset.asset_id) or paths.get(asset.path)
        if first is None:
            kept.append(asset)
            ids[asset.asset_id] = paths[asset.path] = asset
        elif first.url != asset.url or first.asset_id != asset.asset_id:
            warnings.warn(
                f"{_named(asset)} left out: it would share a row or reference set with "
                f"{_named(first)}",
                AssetLeftOutWarning,
                stacklevel=3,
            )
    return kept


def _named(asset: Asset) -> str:
    return (
        f"{shown_name(redact(asset.url))} (id {asset.asset_id[:200]!r}, path {asset.path[:200]!r})"
    )


def _folder_assets(root: Path, exclude: Path | None) -> list[Asset]:
    """Every regular file under ``root`` (hidden files and folders skipped), keyed by its path
    relative to ``root``; size and modification time tell changes (no file is opened)."""
    found = []
    root = root.resolve()
    excluded = exclude.resolve() if exclude is not None else None
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        subfolders[:] = sorted(
            d for d in subfolders if not d.startswith(".") and (here / d).resolve() != excluded
        )
        for name in sorted(files):
            path = here / name
            if name.startswith(".") or not path.is_file():
                continue
            stat = path.stat()
            relative = shown_name(path.relative_to(root).as_posix())
            found.append(
                Asset(relative, relative, str(path), stat.st_size, f"mtime_ns:{stat.st_mtime_ns}")
            )
    return found


def _prefix_assets(url: str, options: TransportOptions) -> list[Asset]:
    """Every object under the prefix, keyed by its key relative to the prefix; the listing's
    size and ETag tell changes."""
    parts = urlsplit(url)
    root = f"{parts.scheme.lower()}://{parts.netloc}"
    prefix = parts.path.lstrip("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    found = []
    for listed in list_objects(f"{root}/{prefix}", options.storage_options):
        relative = listed.key[len(prefix) :] if listed.key.startswith(prefix) else listed.key
        if not relative or relative.endswith("/"):
            continue
        found.append(Asset(relative, relative, f"{root}/{listed.key}", listed.size, listed.etag))
    return found


def _list_file_entries(path: Path) -> list[str]:
    """The sources a list file names: one a line (``#`` comments), or for CSV/TSV the ``url``
    column when the header names one, else the first column."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{shown_name(str(path))}: a list of sources is UTF-8 text (byte {exc.start} is not)"
        ) from None
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv"):
        return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ","))
    except csv.Error as exc:
        raise ValueError(
            f"{shown_name(str(path))}: not a readable {suffix[1:]} file ({exc})"
        ) from None
    rows = [r for r in rows if r and r[0].strip() and not r[0].startswith("#")]
    if not rows:
        return []
    header = [cell.strip().lower() for cell in rows[0]]
    column = header.index("url") if "url" in header else 0
    body = rows[1:] if "url" in header else rows
    return [r[column].strip() for r in body if len(r) > column and r[column].strip()]


def _entries_assets(entries: list[str]) -> list[Asset]:
    """URLs and paths given one by one: a local file's identity is its stat; a URL's is not
    known yet (no listing gives it): its generation learns it from its first answer, and a later
    run probes it (`with_identities`) only to tell whether it changed."""
    found: dict[str, Asset] = {}
    for entry in entries:
        entry = os.fspath(entry).strip()
        if not entry:
            continue
        if "\x00" in entry:
            raise ValueError(f"{shown_name(redact(entry))[:200]}: a source holds a NUL byte")
        if is_local(entry):
            path = Path(entry).resolve()
            if not path.is_file():
                raise ValueError(f"{entry}: not a file (a list names files and URLs)")
            stat = path.stat()
            name = shown_name(str(path))
            found[name] = Asset(name, name, str(path), stat.st_size, f"mtime_ns:{stat.st_mtime_ns}")
        else:
            shown = redact(entry)
            try:
                parts = urlsplit(entry)
            except ValueError as exc:  # http://[abc
                raise ValueError(f"{shown_name(shown)[:200]}: not a URL ({exc})") from None
            found[shown] = Asset(shown, f"{parts.netloc}/{parts.path}", entry)
    return list(found.values())


def with_identities(
    assets: list[Asset], unknown: set[str], options: TransportOptions
) -> list[Asset]:
    """``assets`` with the size and ETag of those whose id is in ``unknown`` probed (one
    request each, sent together); one that fails to answer keeps none (its error is then the
    generation's, recorded in its row)."""
    chosen = [a for a in assets if a.asset_id in unknown]
    if not chosen:
        return assets
    answers = _probe_all([a.url for a in chosen], options)
    probed = dict(zip([a.asset_id for a in chosen], answers, strict=True))
    found = []
    for asset in assets:
        info = probed.get(asset.asset_id)
        if isinstance(info, tuple):
            asset = replace(asset, size=info[0], etag=info[1])
        found.append(asset)
    return found


def _probe_all(
    urls: list[str], options: TransportOptions
) -> list[tuple[int | None, str | None] | BaseException]:
    """Size and ETag of each URL, or the error it answered with."""
    import asyncio

    async def probe(transport: Transport, url: str) -> tuple[int | None, str | None]:
        info = await transport.probe(url)
        return info.size, info.etag

    async def run() -> list[tuple[int | None, str | None] | BaseException]:
        transport = transport_for(options)
        try:
            return await asyncio.gather(
                *(probe(transport, u) for u in urls), return_exceptions=True
            )
        finally:
            await transport.aclose()

    return run_blocking(run())
