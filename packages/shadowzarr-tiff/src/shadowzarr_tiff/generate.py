"""generate_rfs_tiff: a reference file system for a TIFF file, read with tifffile.

Series ``i`` is the array ``"i"``; a pyramid is the group ``"i"`` with its levels at ``"i/j"``
(the bioformats2raw layout) and OME-NGFF multiscales attributes.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import Dimension, GenEntry, RfsBuilder, UnsupportedFeatureError
from shadowzarr_spec.deprecation import renamed_keyword
from shadowzarr_spec.model import MISSING_CHUNK
from shadowzarr_store.transport import TransportOptions

from shadowzarr_tiff.attributes import (
    multiscales_attributes,
    root_attributes,
    series_attributes,
)
from shadowzarr_tiff.chunks import (
    MAX_PAGE_CHUNK_BYTES,
    SeriesChunks,
    block_chunks,
    block_shape,
    page_chunks,
    pages_are_contiguous,
    trusts_dataoffset,
)
from shadowzarr_tiff.codecs import codec_chain, register_tiff_codecs, stored_dtype, uses_imagecodecs
from shadowzarr_tiff.layout import SeriesLayout, plan_layout
from shadowzarr_tiff.short_strips import ReadRanges, is_short_strip_page, split_short_strips
from shadowzarr_tiff.source import open_source

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from shadowzarr_spec import ReferenceFileSystem
    from tifffile import TiffFile, TiffPageSeries

__all__ = ["generate_rfs_tiff"]


@dataclass(slots=True)
class _Target:
    """Where the arrays go, and what adding them may use."""

    builder: RfsBuilder
    url: str
    threshold: int | None
    read_ranges: ReadRanges
    inline_budget: int
    strided: list[GenEntry] = field(default_factory=list)
    """Gen entries of pages spread over several axes, which RfsBuilder does not write."""
    file_size: int | None = None


@renamed_keyword("chunk_index_threshold", "manifest_threshold")
def generate_rfs_tiff(
    url_or_path: str | os.PathLike[str],
    *,
    url: str | None = None,
    local_path: str | os.PathLike[str] | None = None,
    manifest_threshold: int | None = 1000,
    max_inline_bytes: int = 4 * 2**20,
    read_ahead: int = 2**16,
    max_concurrency: int = 16,
    headers: Mapping[str, Mapping[str, str]] | None = None,
    allowed_urls: Iterable[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    proxy: str | bool | None = None,
) -> ReferenceFileSystem:
    """References for every series (and pyramid level) of a TIFF file.

    Parameters
    ----------
    url_or_path
        A local path (or ``file://`` URL) or a URL (http(s), ``s3://``, ``gs://``, ``az://``).
        A URL is read with range requests through the store's transport (``If-Match`` with the
        ETag seen first): tifffile's reads of the IFDs go through a block cache that reads
        ahead along the chain.
    url
        Where the references point, when ``url_or_path`` is a local path (default: the path).
    local_path
        A local copy of the file at the URL ``url_or_path``, read instead of the URL, which is
        then never asked: ``sources`` records the copy's size and no ETag (unknown).
    manifest_threshold
        Arrays with more listed chunks than this get an in-memory chunk manifest (written as an
        index array by :func:`~shadowzarr_spec.write_rfs` to a directory). None lists them all.
    max_inline_bytes
        Most bytes of compressed short last strips (rows per strip not dividing the height)
        decoded, padded and kept inline; beyond it such series are refused.
    read_ahead, max_concurrency
        Bytes read after an unpredictable read of a remote file, and parallel requests.
    headers, allowed_urls, storage_options, proxy
        As for ``open_rfs``: headers bound to URL prefixes, the prefixes requests may go to
        (a URL outside them is refused before any request), object-store settings, the
        forward proxy (None: the environment's ``HTTP_PROXY``…).

    Raises
    ------
    UnsupportedFeatureError
        A series uses a feature that cannot be referenced exactly; the message names the file,
        the series and the reason.
    """
    builder = RfsBuilder()
    with open_source(
        url_or_path,
        url=url,
        local_path=local_path,
        read_ahead=read_ahead,
        max_concurrency=max_concurrency,
        transport=TransportOptions(
            headers=headers,
            allowed_urls=allowed_urls,
            storage_options=storage_options,
            proxy=proxy,
        ),
    ) as source:
        import tifffile

        try:
            tif = tifffile.TiffFile(source.handle, name=source.name)
        except tifffile.TiffFileError as exc:
            raise UnsupportedFeatureError(f"{source.ref_url}: not a TIFF file ({exc})") from exc
        with tif:
            target = _Target(
                builder,
                source.ref_url,
                manifest_threshold,
                source.read_ranges,
                max_inline_bytes,
                file_size=source.size,
            )
            _add_file(target, tif)
        info = source.info
        builder.add_source(
            source.ref_url,
            size=info.size,
            etag=info.etag,
            mtime_ns=info.mtime_ns,
            sample_hash=info.sample_hash,
        )
    rfs = builder.build()
    # RfsBuilder writes gen entries along one axis; pages spread over several axes (T, Z, C of
    # a hyperstack) get theirs here, built so that every key stays inside the chunk grid.
    rfs.gen.extend(target.strided)
    rfs.version = rfs.required_version
    return rfs


def _add_file(target: _Target, tif: TiffFile) -> None:
    """Add every series and pyramid level."""
    builder, url = target.builder, target.url
    series_list = list(tif.series)
    pyramids = [len(series.levels) > 1 for series in series_list]
    builder.add_group("", root_attributes(tif, bool(series_list) and all(pyramids)))
    imagecodecs_needed = False
    for index, series in enumerate(series_list):
        attributes = series_attributes(tif, series, index)
        if pyramids[index]:
            builder.add_group(str(index), {**attributes, **multiscales_attributes(series)})
            for level_index, level in enumerate(series.levels):
                where = f"{url}: series {index} level {level_index}"
                imagecodecs_needed |= _add_level(target, level, f"{index}/{level_index}", where, {})
        else:
            where = f"{url}: series {index}"
            imagecodecs_needed |= _add_level(target, series, str(index), where, attributes)
    if imagecodecs_needed:
        register_tiff_codecs()


def _add_level(
    target: _Target,
    series: TiffPageSeries,
    path: str,
    where: str,
    attributes: dict[str, Any],
) -> bool:
    """Add one series or pyramid level as the array ``path``; True when it needs imagecodecs."""
    builder = target.builder
    keyframe = series.keyframe
    if series.transform is not None:
        raise UnsupportedFeatureError(f"{where}: tifffile transforms its pixels after decoding")
    if series.is_multifile:
        raise UnsupportedFeatureError(f"{where}: the series spans several files")
    if keyframe.imagedepth > 1 and not keyframe.is_tiled:
        raise UnsupportedFeatureError(f"{where}: strips of volumes (image depth)")
    if keyframe.jpegtables is not None and len(series) > 1:
        raise UnsupportedFeatureError(
            f"{where}: JPEG tables in a series of {len(series)} pages (each page may hold its "
            "own, and a Zarr array has one codec configuration)"
        )
    dtype = stored_dtype_or_refuse(keyframe, where)
    page_count = len(series)
    probe = codec_chain(keyframe, _probe_shape(keyframe), where)
    if series.is_truncated:
        # One IFD describes a contiguous stack (ImageJ over 4 GB, tifffile's truncate=True).
        page_count = math.prod(series.shape) // max(1, math.prod(keyframe.shaped))
        if series.dataoffset is None or not probe.uncompressed or keyframe.is_tiled:
            raise UnsupportedFeatureError(f"{where}: a truncated series that is not contiguous")
    source_shape = (page_count, *(int(s) for s in keyframe.shaped))
    page_bytes = math.prod(keyframe.shaped) * dtype.itemsize

    block = block_shape(keyframe, where)
    table: SeriesChunks
    if (
        probe.uncompressed
        and not keyframe.is_tiled
        and (series.is_truncated or _page_chunks_fit(series, page_bytes))
    ):
        source_chunk = (1, *source_shape[1:])
        table = page_chunks(series, page_bytes, page_count)
    else:
        source_chunk = block
        table = block_chunks(series, block, where)
    inline: list[tuple[np.ndarray, bytes]] = []
    if source_chunk == block and is_short_strip_page(keyframe):
        table, inline = split_short_strips(
            keyframe,
            table,
            block,
            dtype.itemsize,
            target.read_ranges,
            target.inline_budget,
            where,
        )
    layout = plan_layout(source_shape, source_chunk, tuple(int(s) for s in series.shape), where)
    chain = codec_chain(keyframe, layout.chunk_shape, where)
    if uses_imagecodecs(chain.codecs):
        # Tell other readers what they need: these codecs are not part of Zarr itself.
        attributes = {**attributes, "codecs_from": "imagecodecs-zarr"}
    builder.add_array(
        path,
        shape=layout.shape,
        data_type=dtype,
        chunk_shape=layout.chunk_shape,
        codecs=chain.codecs,
        fill_value=0,
        attributes=attributes,
        dimension_names=list(series.axes) if len(series.axes) == len(layout.shape) else None,
    )
    _check_inside_file(table, target.file_size, where)
    entry = _add_chunks(builder, path, target.url, layout, table, target.threshold)
    if entry is not None:
        target.strided.append(entry)
    if inline:
        coords = layout.chunk_coords(np.stack([origin for origin, _ in inline]))
        for chunk, (_, data) in zip(coords.tolist(), inline, strict=True):
            builder.add_inline_chunk(path, chunk, data)
    return uses_imagecodecs(chain.codecs)


def stored_dtype_or_refuse(page: Any, where: str) -> np.dtype[Any]:
    if page.dtype is None:
        raise UnsupportedFeatureError(
            f"{where}: {page.bitspersample}-bit samples of sample format {page.sampleformat} "
            "cannot be referenced"
        )
    return stored_dtype(page)


def _probe_shape(keyframe: Any) -> tuple[int, ...]:
    _, _, length, width, contig = keyframe.shaped
    return (length, width, contig) if contig > 1 else (length, width)


def _page_chunks_fit(series: TiffPageSeries, page_bytes: int) -> bool:
    keyframe = series.keyframe
    if page_bytes > MAX_PAGE_CHUNK_BYTES and _strips_divide(keyframe):
        return False
    if trusts_dataoffset(series):
        return True
    return pages_are_contiguous(series, page_bytes)


def _strips_divide(keyframe: Any) -> bool:
    length = int(keyframe.imagelength)
    rows = int(keyframe.rowsperstrip) or length
    return keyframe.is_tiled or rows >= length or length % rows == 0


def _check_inside_file(table: SeriesChunks, file_size: int | None, where: str) -> None:
    """A strip or tile running past the end of the file (a truncated or lying file) would
    read as padding; refuse it here instead."""
    if file_size is None or len(table.offsets) == 0:
        return
    ends = table.offsets.astype(np.uint64) + table.sizes.astype(np.uint64)
    last = int(np.argmax(ends))
    if int(ends[last]) > file_size:
        raise UnsupportedFeatureError(
            f"{where}: a strip or tile at bytes {int(table.offsets[last])}-{int(ends[last]) - 1} "
            f"ends past the end of the file ({file_size} bytes): truncated or corrupt"
        )


def _add_chunks(
    builder: RfsBuilder,
    path: str,
    url: str,
    layout: SeriesLayout,
    table: SeriesChunks,
    threshold: int | None,
) -> GenEntry | None:
    """List the chunks, as gen when the pages are evenly spaced, else as refs or an index.
    Returns a gen entry the builder cannot express (pages along several axes)."""
    coords = layout.chunk_coords(table.origins)
    count = len(coords)
    if count == 0:
        return None
    grid = layout.grid
    if table.evenly_spaced is not None and count > 1:
        start, stride = table.evenly_spaced
        length = int(table.sizes[0])
        strided_axis = _single_axis(grid, count)
        if strided_axis is not None:
            builder.add_strided_chunks(
                path,
                url=url,
                start=start,
                stride=stride,
                length=length,
                count=count,
                axis=strided_axis,
            )
            return None
        entry = _pages_gen(path, url, grid, coords, start, stride, length)
        if entry is not None:
            return entry
    if threshold is not None and count > threshold:
        index = np.full((*grid, 2), MISSING_CHUNK, dtype=np.uint64)
        index[tuple(coords.T)] = np.stack([table.offsets, table.sizes], axis=1).astype(np.uint64)
        builder.add_index(path, url, index)
        return None
    for chunk, offset, size in zip(
        coords.tolist(), table.offsets.tolist(), table.sizes.tolist(), strict=True
    ):
        builder.add_chunk(path, chunk, url, offset, size)
    return None


def _pages_gen(
    path: str,
    url: str,
    grid: tuple[int, ...],
    coords: np.ndarray,
    start: int,
    stride: int,
    length: int,
) -> GenEntry | None:
    """One gen entry for pages ``i`` at ``start + i * stride`` whose chunks run in C order over
    several axes of the grid (a hyperstack's T, Z and C), or None if they do not."""
    long_axes = [axis for axis, size in enumerate(grid) if size > 1]
    sizes = [grid[axis] for axis in long_axes]
    expected = np.zeros((len(coords), len(grid)), dtype=np.int64)
    if math.prod(sizes) != len(coords):
        return None
    for axis, values in zip(
        long_axes, np.unravel_index(np.arange(len(coords)), sizes), strict=True
    ):
        expected[:, axis] = values
    if not np.array_equal(coords, expected):
        return None
    names = {axis: f"i{axis}" for axis in long_axes}
    parts = [("{{" + names[axis] + "}}") if axis in names else "0" for axis in range(len(grid))]
    linear = names[long_axes[0]]
    for axis in long_axes[1:]:
        linear = f"({linear}) * {grid[axis]} + {names[axis]}"
    return GenEntry(
        f"{path}/c/" + "/".join(parts),
        url,
        "{{" + f"{start} + ({linear}) * {stride}" + "}}",
        str(length),
        {names[axis]: Dimension(stop=grid[axis]) for axis in long_axes},
    )


def _single_axis(grid: tuple[int, ...], count: int) -> int | None:
    """The one axis along which the chunk grid runs, when all others have one chunk."""
    long_axes = [axis for axis, size in enumerate(grid) if size > 1]
    if len(long_axes) == 1 and grid[long_axes[0]] == count:
        return long_axes[0]
    if not long_axes and grid and count == 1:
        return 0
    return None
