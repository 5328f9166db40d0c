"""generate_rfs: walk an HDF5 file's links and describe it as a reference file system.

Only headers and chunk indexes are read (plus the values of strings and references, which live
in heaps a byte range cannot address, and small datasets that are inlined). The header reader
(:mod:`shadowzarr_hdf5.header_reader`, over :mod:`shadowzarr_hdf5.format`) answers for the
groups, attributes and datasets it fully parses; h5py answers for the rest. Remote files are
read through :class:`shadowzarr_hdf5.remote.RemoteFile` over the store's transport (the user's
headers, ``allowed_urls`` and ``storage_options``; ``If-Match`` with the ETag seen first, so a
file replaced during generation raises `SourceChangedError`), which reads chunk indexes ahead a
level at a time; all chunk indexes are parsed in one lockstep pass before the walk.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import h5py
from shadowzarr_spec import (
    DatasetNotFoundError,
    ReferenceFileSystem,
    RfsBuilder,
    SourceError,
    SourceInfo,
    SourceNotFoundError,
    UnsupportedFeatureError,
)
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_store.progress_display import progress_display
from shadowzarr_store.remote.errors import SourceFormatError
from shadowzarr_store.transport import (
    RangeNotSatisfiable,
    RangeSource,
    TransportOptions,
    is_local,
    local_path,
    redact,
)

from .context import Options, Source, object_address
from .format.chunk_index import ChunkTable, read_chunk_tables_at
from .format.errors import Hdf5FormatError, NotNative
from .header_reader import HeaderFile
from .header_reader.dataset import HeaderDataset
from .matlab import userblock_offset_shift
from .netcdf import is_netcdf4, netcdf_dimension_names, unlimited_lengths
from .netcdf3 import add_netcdf3, is_netcdf3
from .nwb import bare_non_finite_attributes, is_nwb
from .object_paths import ObjectPaths
from .plan.storage import storage_layout
from .unsupported import (
    warn_conventions,
    warn_omitted,
)
from .walker import Walker, open_or_refuse

__all__ = ["ProgressCallback", "generate_rfs"]

logger = logging.getLogger(__name__)

GENERATION_CONNECTIONS = 256
"""Requests in flight while an index level is read (fewer where the process may open fewer
files: `generation_connections`). A server answering one range per request (S3) is asked once
per B-tree node: the 2,700 leaves of the benchmark's fragmented file are about 11 waves of 256
requests. 1,024 cut the waves the proxy counts (17-19 in all at 100 ms against 29-37) but not
the time: the benchmark's proxy answers a few thousand requests a second whatever the
connections, and over TLS each connection costs a handshake of CPU. On the single-range server,
512 took the fragmented file at 100 ms in 1.33 s against 1.8 s (the same at 20 and 50 ms), but
the narrow round before the leaves then opened only about 450 connections ahead (its warm-up
reads reuse the round's own), so the leaves' round paid a set-up for the rest."""


def generation_connections() -> int:
    """`GENERATION_CONNECTIONS`, or a quarter of the process's soft limit of open files when
    that is lower (each connection holds a descriptor: macOS allows 256 by default)."""
    try:
        import resource
    except ImportError:  # Windows: no descriptor limit of that kind
        return GENERATION_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return GENERATION_CONNECTIONS
    return max(16, min(GENERATION_CONNECTIONS, soft // 4))


ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, path)`` after each dataset."""


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def generate_rfs(
    url_or_path: str | os.PathLike[str],
    *,
    local_hdf5_path: str | os.PathLike[str] | None = None,
    manifest_threshold: int | None = 1000,
    contiguous_chunk_bytes: int = 4 * 2**20,
    inline_threshold: int = 1024,
    inline_unsupported_below: int | None = 2**20,
    strict: bool | None = None,
    progress: ProgressCallback | bool | None = None,
    record_source: bool = True,
    parse_indexes: bool = True,
    bare_non_finite: bool | None = None,
    datasets: Iterable[str] | None = None,
    headers: Mapping[str, Mapping[str, str]] | None = None,
    allowed_urls: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    proxy: str | bool | None = None,
) -> ReferenceFileSystem:
    """References for every group, dataset and attribute of an HDF5 (or NWB, MATLAB) file, or
    every variable of a netCDF-3 file (classic, 64-bit offset or CDF-5).

    Parameters
    ----------
    url_or_path
        Where chunk references point: a local path, an http(s) URL or an ``s3://``,
        ``gs://`` or ``az://`` URL.
    local_hdf5_path
        A local copy to read the headers from instead of ``url_or_path``. The URL is then
        never asked: ``sources`` records the copy's size and no ETag (unknown), so reads check
        the size only.
    manifest_threshold
        Arrays with more chunks than this get a chunk manifest instead of one reference
        per chunk; None lists every chunk.
    contiguous_chunk_bytes
        Target size of the slabs a contiguous dataset is cut into.
    inline_threshold
        Datasets of at most this many bytes are stored in the references themselves.
    inline_unsupported_below
        A dataset no reference can describe (a filter without a Zarr codec, an unsupported type
        or layout) of at most this many bytes (1 MiB) is decoded by HDF5, with hdf5plugin's
        filters when installed, and held inline; None or 0: never.
    strict
        Raise `UnsupportedFeatureError` for the first dataset no reference can describe. False:
        such datasets are inlined (see ``inline_unsupported_below``) or left out, recorded in
        the result's ``unsupported`` (and ``omitted``) and named in one
        `UnsupportedDatasetWarning`. None (default): strict only when ``datasets`` names them.
    progress
        ``progress(done, total, path)`` after each dataset; True shows a bar on a terminal or
        in a notebook and plain lines in a log (stderr a file or a pipe); None (default) shows
        the bar when a person watches and nothing in a log; False shows nothing.
    record_source
        Record the source's size and ETag under ``sources``.
    parse_indexes
        Parse chunk indexes from the file bytes (fast, and right for extensible arrays whose
        unlimited axis is not the first); False uses h5py's ``chunk_iter``.
    bare_non_finite
        Write NaN and infinite attributes as bare JSON tokens instead of the Non-Finite
        convention's strings; None (default) does so for NWB files, which hdmf-zarr 0.14.0
        would otherwise hand to pynwb as strings.
    datasets
        Only these dataset paths (and the groups above them): the headers of everything else
        are never read, so one dataset of a large remote file costs a few requests.
    headers, allowed_urls, storage_options
        As for ``open_rfs``: headers bound to URL prefixes, the prefixes requests may go to
        (a URL outside them is refused before any request), object-store settings.
    proxy
        As for ``open_rfs``: the forward proxy of every request (False: none); None follows
        ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``.
    """
    url = os.fspath(url_or_path)
    if is_local(url):  # a file:// URL is the file it names
        url = local_path(url)
    wanted = None if datasets is None else _wanted_paths(datasets)
    options = Options(
        manifest_threshold=manifest_threshold,
        contiguous_chunk_bytes=contiguous_chunk_bytes,
        inline_threshold=inline_threshold,
        inline_unsupported_below=inline_unsupported_below,
        strict=datasets is not None if strict is None else strict,
    )
    transport = TransportOptions(
        headers=headers,
        allowed_urls=allowed_urls,
        storage_options=storage_options,
        proxy=proxy,
        max_connections=generation_connections(),
    )
    reference_url = os.path.abspath(url) if is_local(url) else url
    read_from = os.fspath(local_hdf5_path) if local_hdf5_path is not None else url
    with ExitStack() as stack:
        try:
            raw = _open_raw(read_from, stack, transport, whole=wanted is None)
        except RangeNotSatisfiable as exc:  # its first byte is past its end
            raise SourceFormatError(f"{redact(read_from)}: an empty file, not HDF5") from exc
        if is_netcdf3(_head(raw)):
            return _generate_netcdf3(
                raw, stack, reference_url, options, wanted, progress, transport,
                record_source=record_source, local_copy=local_hdf5_path,
                bare_non_finite=bool(bare_non_finite),
            )  # fmt: skip
        file = stack.enter_context(_open_hdf5(raw, read_from))
        read_bytes = _reader(raw)
        netcdf = is_netcdf4(file)
        offset_shift = 0 if read_bytes is None else userblock_offset_shift(file, read_bytes)
        builder = RfsBuilder()
        header_file = None
        if wanted is None and not netcdf and not offset_shift:
            header_file = HeaderFile.open(raw)
        paths = ObjectPaths(file, header_file)
        found = list(
            _walk_datasets(file, paths, header_file)
            if wanted is None
            else _named_datasets(file, wanted, reference_url)
        )
        source = Source(
            file=file,
            url=reference_url,
            base=_base(reference_url),
            paths=paths,
            read_bytes=read_bytes,
            offset_shift=offset_shift,
            netcdf=netcdf,
            netcdf_lengths=unlimited_lengths(found) if netcdf else {},
            netcdf_dimensions=netcdf_dimension_names(file, found) if netcdf else {},
            opened={_address(d): d for d in found},
            headers=header_file,
            tables=_chunk_tables(raw, found) if parse_indexes else {},
        )
        report = _progress(progress, len(found), reference_url, stack)
        Walker(builder, source, options, report, wanted).run()
        if record_source:
            _record_source(builder, reference_url, raw, local_hdf5_path)
        bare = is_nwb(file) if bare_non_finite is None else bare_non_finite
    rfs = builder.build()
    warn_omitted(rfs.omitted, url)
    warn_conventions(rfs, url)
    return bare_non_finite_attributes(rfs) if bare else rfs


def _head(raw: Any) -> bytes:
    """The first bytes of the file (a remote file's first block is read already)."""
    if isinstance(raw, str):
        try:
            with open(raw, "rb") as handle:
                return handle.read(4)
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"{raw}: no such file") from exc
        except OSError as exc:
            raise SourceError(f"{raw}: cannot be read ({exc.strerror or exc})") from exc
    return bytes(raw.read_at(0, 4))


def _generate_netcdf3(
    raw: Any,
    stack: ExitStack,
    url: str,
    options: Options,
    wanted: frozenset[str] | None,
    progress: ProgressCallback | bool | None,
    transport: TransportOptions,
    *,
    record_source: bool,
    local_copy: str | os.PathLike[str] | None,
    bare_non_finite: bool,
) -> ReferenceFileSystem:
    """References of a netCDF-3 file, read through the same local path or `RemoteFile`."""
    reader = stack.enter_context(RangeSource(raw)) if isinstance(raw, str) else raw
    builder = RfsBuilder()
    add_netcdf3(
        builder,
        reader,
        url=url,
        options=options,
        wanted=wanted,
        progress=lambda total: _progress(progress, total, url, stack),
    )
    if record_source:
        _record_source(builder, url, raw, local_copy)
    rfs = builder.build()
    return bare_non_finite_attributes(rfs) if bare_non_finite else rfs


def _open_hdf5(raw: Any, location: str) -> h5py.File:
    """h5py's file, or a typed error for a file HDF5 cannot open: the read's own error when a
    read failed on the way (refused, timed out), else `SourceFormatError` (a truncated or
    damaged file, whose bytes fail again until they change). h5py says either as OSError."""
    try:
        return h5py.File(raw, "r")
    except SourceError:
        raise
    except OSError as exc:
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, SourceError):
                raise cause from exc
            cause = cause.__cause__ or cause.__context__
        if is_local(location) and not os.access(local_path(location), os.R_OK):
            raise
        message = " ".join(str(exc).split())
        what = (
            "not an HDF5 file, no HDF5 signature where one belongs (a text or HTML page?)"
            if "signature not found" in message
            else "HDF5 cannot open it, it is truncated or damaged"
        )
        raise SourceFormatError(f"{redact(location)}: {what} ({message})") from exc


def _base(url: str) -> str:
    if not is_local(url):
        return url.rsplit("/", 1)[0] + "/"
    return str(Path(url).parent)


def _open_raw(location: str, stack: ExitStack, transport: TransportOptions, *, whole: bool) -> Any:
    """A file object h5py reads: RemoteFile (any URL, prefetching) or a plain local path.

    A small file is read whole when every object will be visited; when only some datasets are
    wanted, only their headers are."""
    if is_local(location):
        return location
    from .remote import RemoteFile

    if whole:
        return stack.enter_context(RemoteFile(location, transport=transport))
    return stack.enter_context(RemoteFile(location, transport=transport, whole_file_below=0))


def _reader(raw: Any) -> Callable[[int, int], bytes] | None:
    if isinstance(raw, str):

        def read(offset: int, size: int) -> bytes:
            with open(raw, "rb") as handle:
                handle.seek(offset)
                return handle.read(size)

        return read
    fetch = getattr(raw, "fetch_many", None)
    if fetch is None:
        return None
    return lambda offset, size: fetch([(offset, size)])[0]


def _walk_datasets(
    file: h5py.File, paths: ObjectPaths, headers: HeaderFile | None
) -> Iterator[h5py.Dataset | HeaderDataset]:
    """Each dataset once (by object address), following hard links only.

    Not ``visititems``: HDF5's object visit asks for each object's full info, which walks every
    chunk index (one read per v1 B-tree node, before any prefetch could help). The one visit of
    the links that gives reference paths also gives each object's address without opening it;
    a dataset whose header the header reader reads whole is not opened in h5py at all."""
    for address, path in paths.by_address().items():
        name = path[1:].encode("utf-8", "surrogateescape")
        if not name:
            continue

        def open_dataset(name: bytes = name, path: str = path) -> h5py.Dataset:
            return open_or_refuse(
                lambda: h5py.Dataset(h5py.h5o.open(file.id, name), readonly=True), path[1:]
            )

        try:
            found = _found_dataset(file, address, path, name, open_dataset, paths, headers)
        except UnsupportedFeatureError as exc:  # the walk meets it again and records it
            logger.debug("%s: skipped in the first pass (%s)", path, exc)
            continue
        if found is not None:
            yield found


def _found_dataset(
    file: h5py.File,
    address: int,
    path: str,
    name: bytes,
    open_dataset: Callable[[], h5py.Dataset],
    paths: ObjectPaths,
    headers: HeaderFile | None,
) -> h5py.Dataset | HeaderDataset | None:
    """The dataset at ``address`` (None: not a dataset), from its header when the header reader
    reads it whole, else opened in h5py."""
    if headers is not None:
        try:
            is_dataset = headers.kind(address) == "dataset"
            return headers.dataset(address, path, open_dataset, paths) if is_dataset else None
        except NotNative as exc:
            logger.debug("%s: read through h5py (%s)", path, exc)
    kind = open_or_refuse(lambda: h5py.h5g.get_objinfo(file.id, name).type, path[1:])
    return open_dataset() if kind == h5py.h5g.DATASET else None


def _address(dataset: h5py.Dataset | HeaderDataset) -> int:
    if isinstance(dataset, HeaderDataset):
        return dataset.address
    return object_address(dataset)


def _wanted_paths(datasets: Iterable[str]) -> frozenset[str]:
    """The requested dataset paths and every group above them, without leading slashes."""
    wanted: set[str] = set()
    for name in datasets:
        parts = [part for part in name.split("/") if part]
        if not parts:
            raise ValueError(f"not a dataset path: {name!r}")
        wanted.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return frozenset(wanted)


def _named_datasets(file: h5py.File, wanted: frozenset[str], url: str) -> Iterator[h5py.Dataset]:
    """The requested datasets (leaves of ``wanted``), each opened directly by path (``url``
    names the file in errors: ``file.filename`` of a remote file is a Python object's repr)."""
    for path in sorted(wanted):
        if any(other.startswith(path + "/") for other in wanted):
            continue
        obj = file.get(path)
        if not isinstance(obj, h5py.Dataset):
            what = "a group" if isinstance(obj, h5py.Group) else "not there"
            raise DatasetNotFoundError(f"{path!r} is not a dataset of {redact(url)} ({what})")
        yield obj


def _chunk_tables(raw: Any, datasets: list[h5py.Dataset | HeaderDataset]) -> dict[str, ChunkTable]:
    """Chunk tables of every chunked dataset by its name, parsed from the index bytes in one
    pass."""
    chunked = [d for d in datasets if storage_layout(d) == "chunked" and d.shape is not None]
    addresses = [_address(d) for d in chunked]
    if not chunked:
        return {}
    try:
        if isinstance(raw, str):
            with RangeSource(raw) as fetcher:
                tables = read_chunk_tables_at(fetcher, addresses)
        else:
            tables = raw.prefetch_dataset_indexes(addresses)
    except Hdf5FormatError as exc:
        # A structure the parser does not know: h5py's chunk_iter (checked) takes over.
        logger.warning("chunk indexes not parsed (%s); using h5py's chunk_iter", exc)
        return {}
    return {d.name: table for d, table in zip(chunked, tables, strict=True)}


def _progress(
    progress: ProgressCallback | bool | None, total: int, url: str, stack: ExitStack
) -> Callable[[str], None]:
    """The per-dataset callback: the caller's, or the shared display (closed with ``stack``)."""
    done = 0
    if callable(progress):
        callback = progress

        def report(path: str) -> None:
            nonlocal done
            done += 1
            callback(done, total, path)

        return report
    name = redact(url).rstrip("/").rsplit("/", 1)[-1]
    display = stack.enter_context(
        progress_display(f"generate {name}", total=total, unit="datasets", show=progress)
    )
    return lambda path: display.update(detail=path)


def _record_source(
    builder: RfsBuilder,
    url: str,
    raw: Any,
    local_copy: str | os.PathLike[str] | None,
) -> None:
    """What identifies where the references point: the remote file's size and ETag as the
    reads saw them, or a local file's size, mtime and sampled hash. Headers read from a local
    copy of a remote file record the copy's size only: the remote is never asked (it may be
    gone, and a dead URL costs minutes of retries per file), so its ETag stays unknown."""
    if local_copy is None and not isinstance(raw, str):
        info = raw.fetcher.info
    elif is_local(url):
        info = RangeSource(url).info
    else:
        info = SourceInfo(size=RangeSource(os.fspath(local_copy or url)).size)
    builder.add_source(
        url,
        size=info.size,
        etag=info.etag,
        mtime_ns=info.mtime_ns,
        sample_hash=info.sample_hash,
    )
