"""write_rfs and read_local_rfs: one JSON file (kerchunk version 1) or a directory with chunk
manifests."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from shadowzarr_spec.arrays import array_info
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.errors import ReferenceFormatError, SourceError, SourceNotFoundError
from shadowzarr_spec.gc_pause import paused_gc
from shadowzarr_spec.json_text import dumps_reference_document, parse_json
from shadowzarr_spec.keys import array_of_chunk_key, check_relative_path, join
from shadowzarr_spec.listed_refs import ChunkColumns, ListedRefs, note_dict_run
from shadowzarr_spec.manifest import (
    encode_index_chunks,
    index_array_metadata,
    new_index_table,
)
from shadowzarr_spec.manifest_layout import ManifestLayout
from shadowzarr_spec.model import FileRef, IndexRef, Ref, ReferenceFileSystem
from shadowzarr_spec.parse import rfs_from_json
from shadowzarr_spec.refs_text import rfs_from_json_text
from shadowzarr_spec.serialize import rfs_to_json

__all__ = [
    "REFS_FILE",
    "load_index_table",
    "read_local_rfs",
    "reference_files",
    "refs_url_of",
    "write_rfs",
]

REFS_FILE = "refs.json"
INDEX_DIR = "index"
INLINE_INDEX_BYTES = 64 * 1024
"""Index arrays whose files hold at most this many bytes are also carried in refs.json."""
INLINE_INDEX_TOTAL = 1024 * 1024
"""The most bytes of index files one refs.json carries (so it stays quick to fetch and parse)."""


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def write_rfs(
    rfs: ReferenceFileSystem,
    path: str | os.PathLike[str],
    *,
    manifest_threshold: int | None = 1000,
    inline_index_bytes: int = INLINE_INDEX_BYTES,
) -> Path:
    """Write ``rfs`` to ``path``.

    A path ending in ``.json`` gets one JSON file with every chunk listed (version 1, or 2 when
    selections need it). Any other path gets a directory: ``refs.json`` plus, for each array with
    more than ``manifest_threshold`` chunks in one file, an index array under ``index/``.
    An index array whose files hold at most ``inline_index_bytes`` (0: none) is carried in
    refs.json too (its entry's ``files``, up to `INLINE_INDEX_TOTAL` in all): a reader of remote
    references then reads it in the round trip that brings refs.json, not one more.
    The write is atomic: readers see the old references or the new ones, never a mix.

    This package writes local paths only: ``s3://``, ``gs://`` and ``az://`` destinations are
    written by ``shadowzarr_store.write_rfs`` (also ``shadowzarr.write_rfs``), and any other
    URL is refused rather than taken for a folder named after its scheme.
    """
    text = os.fspath(path)
    if text.lower().startswith("file://"):
        text = unquote(urlsplit(text).path)
    if "://" in text:
        raise SourceError(
            f"{text.split('://', 1)[0]}:// destinations are written by "
            "shadowzarr_store.write_rfs (or shadowzarr.write_rfs); shadowzarr_spec writes "
            "local paths only"
        )
    target = Path(text)
    if target.suffix == ".json":
        files = reference_files(rfs, json_file=True, name=target.name)
        _atomic_write_bytes(target, files[target.name])
        return target
    return _write_directory(rfs, target, manifest_threshold, inline_index_bytes)


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def reference_files(
    rfs: ReferenceFileSystem,
    *,
    json_file: bool,
    name: str = "refs.json",
    manifest_threshold: int | None = 1000,
    inline_index_bytes: int = INLINE_INDEX_BYTES,
) -> dict[str, bytes]:
    """What `write_rfs` writes, as relative path → bytes: ``{name: document}`` for the JSON
    form, else ``refs.json`` and the files of every index array under ``index/`` (``refs.json``
    last, so a writer that follows this order publishes the document only after what it names).
    """
    if json_file:
        document = rfs_to_json(_with_loaded_indexes(rfs), expand=True)
        return {name: dumps_reference_document(document)}
    rfs = _indexed(rfs, manifest_threshold)
    files: dict[str, bytes] = {}
    index_paths: dict[str, str] = {}
    carried: dict[str, dict[str, bytes]] = {}
    budget = INLINE_INDEX_TOTAL
    for array_path, index in rfs.indexes.items():
        table = index.table if index.table is not None else load_index_table(rfs, array_path)
        relative = join(INDEX_DIR, array_path) if array_path else INDEX_DIR
        written = _index_array_files(table)
        files.update({f"{relative}/{key}": data for key, data in written.items()})
        index_paths[array_path] = relative
        size = sum(map(len, written.values()))
        if size <= min(inline_index_bytes, budget):
            carried[array_path], budget = written, budget - size
        else:
            carried[array_path] = {}
    document = rfs_to_json(rfs, index_paths=index_paths, index_files=carried)
    files[REFS_FILE] = dumps_reference_document(document)
    return files


def read_local_rfs(source: str | os.PathLike[str] | dict[str, Any]) -> ReferenceFileSystem:
    """Read a reference file system from a local JSON file, a local directory, or a dict.

    Index arrays are not read here: they stay on disk until a reader needs them. This package
    makes no requests: references at a URL are read by ``shadowzarr_store.load_rfs`` (also
    ``shadowzarr.load_rfs``), through the store's transport.
    """
    if isinstance(source, dict):
        return rfs_from_json(source)
    text = os.fspath(source)
    if "://" in text and not text.lower().startswith("file://"):
        raise SourceError(
            f"{text.split('://', 1)[0]}:// references are read by shadowzarr_store.load_rfs "
            "(or shadowzarr.load_rfs); shadowzarr_spec reads local files only"
        )
    if text.startswith("file://"):
        text = unquote(urlsplit(text).path)
    local = Path(text)
    if local.is_dir():
        refs_path = local / REFS_FILE
        base = local
    else:
        refs_path = local
        base = local.parent
    try:
        data = refs_path.read_bytes()
    except FileNotFoundError:
        raise SourceNotFoundError(f"no reference file at {refs_path}") from None
    sliced = rfs_from_json_text(data, base=str(base.resolve()))  # large refs: a slice at a time
    if sliced is not None:
        return sliced
    document = parse_json(data)
    del data  # the text is freed once parsed
    return rfs_from_json(document, base=str(base.resolve()))


def load_index_table(rfs: ReferenceFileSystem, path: str) -> np.ndarray:
    """Read a whole stored index array into memory, as its own ``zarr.json`` describes it (any
    chunking, byte order and supported compressor): the files refs.json carries
    (`IndexRef.files`) from there, as the store takes them, the others from a local directory."""
    index = rfs.indexes[path]
    if index.table is not None:
        return index.table
    if index.path is None:
        raise ReferenceFormatError(f"index of {path!r} has no stored location")
    if "://" not in index.path:
        check_relative_path(index.path)
    info = array_info(rfs, path)
    if info is None:
        raise ReferenceFormatError(f"{path!r} has a chunk manifest but no array metadata")
    local = rfs.base is not None and "://" not in rfs.base and "://" not in index.path
    root = Path(rfs.base) / index.path if local and rfs.base is not None else None
    where = f"index of {path!r} ({root if root is not None else index.path})"

    def read(key: str) -> bytes:
        carried = index.files.get(key)
        if carried is not None:
            return carried
        if root is None:
            raise ReferenceFormatError(
                f"{where}: {key} is neither carried in refs.json nor in a local directory"
            )
        what = key if key == "zarr.json" else f"chunk {key}"
        try:
            return (root / key).read_bytes()
        except FileNotFoundError as exc:  # never the fill value: a lost file would read as such
            raise SourceNotFoundError(f"{where}: its {what} is missing") from exc
        except OSError as exc:
            raise SourceError(f"{where}: cannot read {what}: {exc.strerror or exc}") from exc

    layout = ManifestLayout.from_metadata(parse_json(read("zarr.json")), info.grid, where)
    extent = (*info.grid, 2)
    table = np.full(extent, layout.fill, dtype=np.uint64)
    for block in np.ndindex(*layout.counts):
        key = layout.chunk_key(block)
        values = layout.decode(read(key), f"{where}, chunk {key}")
        region = tuple(
            slice(b * c, min((b + 1) * c, e))
            for b, c, e in zip(block, layout.chunk_shape, extent, strict=True)
        )
        table[region] = values[tuple(slice(0, r.stop - r.start) for r in region)]
    return table


def _write_directory(
    rfs: ReferenceFileSystem, target: Path, threshold: int | None, inline_bytes: int
) -> Path:
    if target.exists() and not (target / REFS_FILE).exists():
        raise ReferenceFormatError(
            f"{target} exists and is not a reference directory; not overwriting"
        )
    files = reference_files(
        rfs, json_file=False, manifest_threshold=threshold, inline_index_bytes=inline_bytes
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _new_directory(target.parent, f".{target.name}.")
    try:
        for relative, data in files.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_bytes(data)
        _replace_directory(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _replace_directory(staging: Path, target: Path) -> None:
    if not target.exists():
        staging.rename(target)
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def _index_array_files(table: np.ndarray) -> dict[str, bytes]:
    """The files of an index array by key (``zarr.json``, ``c/0/0/0``, ...)."""
    files = {"zarr.json": json.dumps(index_array_metadata(table.shape[:-1])).encode()}
    for coords, data in encode_index_chunks(table):
        files["c/" + "/".join(map(str, coords))] = data
    return files


def _indexed(rfs: ReferenceFileSystem, threshold: int | None) -> ReferenceFileSystem:
    """Move the listed chunks of arrays above the threshold into index tables."""
    if threshold is None:
        return rfs
    held = rfs.refs.columns if isinstance(rfs.refs, ListedRefs) else {}
    # Per array: the keys, coordinates, offsets, sizes and URLs of its listed chunks in the dict
    # (and, for an array with chunks both there and in columns, those of its columns too).
    by_array: dict[str, tuple[list[str], list[tuple[int, ...]], list[int], list[int], set[str]]]
    by_array = {}
    with paused_gc():
        for key, ref in _dict_items(rfs.refs):
            if not isinstance(ref, FileRef) or ref.offset is None:
                continue
            split = array_of_chunk_key(key)
            if split is None:
                continue
            found = by_array.get(split[0])
            if found is None:
                found = by_array[split[0]] = ([], [], [], [], set())
            found[0].append(key)
            found[1].append(split[1])
            found[2].append(ref.offset)
            found[3].append(ref.size)  # type: ignore[arg-type]
            found[4].add(ref.url)
        for path, found in by_array.items():
            columns = held.get(path)
            if columns is not None:
                found[0].extend(columns.keys())
                found[1].extend(map(tuple, columns.coords.tolist()))
                found[2].extend(columns.offsets.tolist())
                found[3].extend(columns.sizes.tolist())
                found[4].update(columns.urls)
    moved: set[str] = set()
    moved_columns: set[str] = set()
    indexes = dict(rfs.indexes)
    for path, (keys, coords, offsets, sizes, urls) in by_array.items():
        if len(keys) <= threshold or path in indexes or len(urls) != 1:
            continue
        info = array_info(rfs, path)
        if info is None:
            continue
        table = new_index_table(info.grid)
        where: tuple[Any, ...] = tuple(np.asarray(coords, dtype=np.int64).reshape(len(keys), -1).T)
        table[(*where, 0)] = np.asarray(offsets, dtype=np.uint64)
        table[(*where, 1)] = np.asarray(sizes, dtype=np.uint64)
        moved.update(keys)
        if path in held:
            moved_columns.add(path)
        indexes[path] = IndexRef(url=urls.pop(), table=table)
    for path, columns in held.items():  # arrays whose listed chunks are all in columns
        if path in by_array or len(columns) <= threshold or path in indexes:
            continue
        if len(columns.urls) != 1 or (info := array_info(rfs, path)) is None:
            continue
        table = new_index_table(info.grid)
        where = tuple(columns.coords.T)
        table[(*where, 0)] = columns.offsets.astype(np.uint64)
        table[(*where, 1)] = columns.sizes.astype(np.uint64)
        moved_columns.add(path)
        indexes[path] = IndexRef(url=columns.urls[0], table=table)
    if not moved and not moved_columns:
        return dataclasses.replace(rfs, indexes=indexes)
    return dataclasses.replace(rfs, refs=_without(rfs.refs, moved, moved_columns), indexes=indexes)


def _dict_items(refs: Mapping[str, Ref]) -> Iterator[tuple[str, Ref]]:
    """The references of ``refs`` that are not held in columns."""
    if not isinstance(refs, ListedRefs):
        yield from refs.items()
        return
    for run in refs.runs():
        if isinstance(run, list):
            yield from run


def _without(
    refs: MutableMapping[str, Ref], keys: set[str], arrays: set[str]
) -> MutableMapping[str, Ref]:
    """``refs`` without ``keys`` and without the columns of ``arrays``, in the same order."""
    if not isinstance(refs, ListedRefs):
        return {key: ref for key, ref in refs.items() if key not in keys}
    other: dict[str, Ref] = {}
    columns: dict[str, ChunkColumns] = {}
    segments: list[tuple[str | None, int, int]] = []
    for run in refs.runs():
        if isinstance(run, list):
            kept = [(key, ref) for key, ref in run if key not in keys]
            other.update(kept)
            note_dict_run(segments, len(kept))
        elif run[0].path not in arrays:
            columns[run[0].path] = run[0]
            segments.append((run[0].path, run[1], run[2]))
    return ListedRefs(other, columns, segments) if columns else other


def _with_loaded_indexes(rfs: ReferenceFileSystem) -> ReferenceFileSystem:
    if all(index.table is not None for index in rfs.indexes.values()):
        return rfs
    indexes = {
        path: IndexRef(url=index.url, table=load_index_table(rfs, path))
        for path, index in rfs.indexes.items()
    }
    return dataclasses.replace(rfs, indexes=indexes)


def _atomic_write_bytes(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = _new_file(target.parent, f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


# References are published next to the data (nginx, S3 sync): they get the permissions any file
# or folder gets under the user's umask. tempfile.mkstemp and mkdtemp make them private (0600 and
# 0700), which a web server then refuses to serve; so the staging names are made here, created
# exclusively like theirs but with the ordinary modes, which the kernel masks with the umask.
_ATTEMPTS = 100


def _new_file(folder: Path, prefix: str) -> tuple[int, Path]:
    """A new empty file in ``folder`` (mode 0666 less the umask), opened for writing."""
    for _ in range(_ATTEMPTS):
        path = folder / f"{prefix}{secrets.token_hex(6)}"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def _new_directory(folder: Path, prefix: str) -> Path:
    """A new empty directory in ``folder`` (mode 0777 less the umask)."""
    for _ in range(_ATTEMPTS):
        path = folder / f"{prefix}{secrets.token_hex(6)}"
        try:
            path.mkdir(0o777)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free temporary name in {folder}")


def refs_url_of(url: str) -> tuple[str, str]:
    """(URL of the reference JSON, base URL of the set) for a ``.json`` URL or a directory URL."""
    if url.endswith(".json"):
        return url, url.rsplit("/", 1)[0]
    base = url.rstrip("/")
    return base + "/" + REFS_FILE, base
