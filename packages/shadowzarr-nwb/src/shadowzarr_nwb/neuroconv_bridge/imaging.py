"""A roiextractors imaging extractor as a VirtualArray of the frames NeuroConv writes.

roiextractors' TIFF extractors say which file and page (IFD) holds each frame: a table of
(file, IFD) rows (plain TIFF stacks, ScanImage, Thor and OME-TIFF, Bruker), or readers of one
file each whose frames are its pages in order (Micro-Manager, Bruker's older extractors: one
after another in time, or one per plane), or the first samples of any of these (NeuroConv's
stub conversions). Each such page becomes one chunk of the frames, located from its TIFF tags
and checked with :mod:`shadowzarr_tiff`'s codec rules; the frames are transposed to the (frame,
width, height) order NeuroConv writes, with the planes of a volume last. Compressed, tiled or
multi-sample pages, pages cut short and cropped frames are refused. A stack tifffile memory-maps
(TiffImagingExtractor) is referenced as the map shows it, and the HDF5 extractor's movie as
:func:`generate_rfs` references the dataset."""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from shadowzarr_spec import VirtualArray
from shadowzarr_spec.errors import NotVirtualizable, UnsupportedFeatureError

from shadowzarr_nwb.neuroconv_bridge.extra import missing_extra

__all__ = ["imaging_array"]

# roiextractors' per-file readers whose frame ``i`` is page ``i`` of their ``file_path``.
_PAGE_READERS = frozenset(
    {"_MicroManagerTiffImagingExtractor", "_BrukerTiffSinglePlaneImagingExtractor"}
)


@dataclass(frozen=True, slots=True)
class PageLocation:
    """One page of one TIFF file: the frame roiextractors reads there."""

    path: Path
    ifd: int


@dataclass(frozen=True, slots=True)
class PageBytes:
    """Where an uncompressed page's pixels are, and how they are stored."""

    url: str
    offset: int
    nbytes: int
    shape: tuple[int, int]
    dtype: np.dtype


def imaging_array(extractor: Any) -> VirtualArray:
    """The frames of a TIFF or HDF5 imaging extractor: (frame, width, height), or
    (frame, width, height, plane) for a volume."""
    if _is_hdf5(extractor):
        return _hdf5_frames(extractor)
    video = _memmap(extractor)
    if video is not None:
        # roiextractors' TiffImagingExtractor: tifffile's memory map of a contiguous stack.
        return VirtualArray.from_memmap(video).transpose(0, 2, 1)
    if type(extractor).__name__ == "SampleSlicedImagingExtractor":
        parent = extractor._parent_imaging
        if _is_hdf5(parent) or _memmap(parent) is not None:
            start, stop = int(extractor._start_sample), int(extractor._end_sample)
            return imaging_array(parent)[start:stop]
    planes = _planes(extractor)
    samples = int(extractor.get_num_samples())
    locations = _page_locations(extractor)
    if len(locations) < samples * planes:
        raise NotVirtualizable(
            f"{type(extractor).__name__} maps {len(locations)} pages, not {samples} × {planes}"
        )
    rows, columns = (int(n) for n in extractor.get_frame_shape())
    pages = _page_bytes(locations[: samples * planes])
    return _frames(pages, samples, planes, (rows, columns))


def _is_hdf5(extractor: Any) -> bool:
    return hasattr(extractor, "_mov_field") and hasattr(extractor, "_file")


def _memmap(extractor: Any) -> np.memmap | None:
    video = getattr(extractor, "_video", None)
    return video if isinstance(video, np.memmap) and video.ndim == 3 else None


def _planes(extractor: Any) -> int:
    if not getattr(extractor, "is_volumetric", False):
        return 1
    return int(extractor.get_num_planes())


def _page_locations(extractor: Any) -> list[PageLocation]:
    """The page behind each frame, in the order roiextractors reads them (volumes: plane by
    plane within each sample)."""
    name = type(extractor).__name__
    table = getattr(extractor, "_frames_to_ifd_table", None)
    if table is not None:
        paths = getattr(extractor, "_file_paths", None) or getattr(extractor, "file_paths", None)
        if paths is None:
            raise NotVirtualizable(f"{name} does not say which files it reads")
        files = [Path(p) for p in paths]
        ifd_field = _ifd_field(table)
        return [
            PageLocation(files[int(f)], int(i))
            for f, i in zip(table["file_index"], table[ifd_field], strict=True)
        ]
    if name == "SampleSlicedImagingExtractor":  # NeuroConv's stub conversions, slice_samples
        parent = extractor._parent_imaging
        planes = _planes(parent)
        start, stop = int(extractor._start_sample), int(extractor._end_sample)
        return _page_locations(parent)[start * planes : stop * planes]
    if name == "_FieldOfViewSlicedImagingExtractor":
        raise NotVirtualizable("frames cropped out of their pages (slice_field_of_view)")
    if name in _PAGE_READERS:
        path = Path(extractor.file_path)
        return [PageLocation(path, page) for page in range(int(extractor.get_num_samples()))]
    readers = getattr(extractor, "_imaging_extractors", None)
    if readers is None:
        raise NotVirtualizable(f"{name} does not say where its frames are")
    parts = [_page_locations(reader) for reader in readers]
    samples = int(extractor.get_num_samples())
    if len(parts) > 1 and list(getattr(extractor, "_start_frames", [])) == [0] * len(parts):
        # Readers side by side, one per plane (Bruker's multi-plane extractor).
        if len(parts) != _planes(extractor) or any(len(part) < samples for part in parts):
            raise NotVirtualizable(f"{name}: its planes do not hold {samples} frames each")
        return [part[t] for t in range(samples) for part in parts]
    # Readers one after another in time (Micro-Manager, Bruker's single-plane extractor), each
    # giving its own samples.
    return [
        location
        for reader, part in zip(readers, parts, strict=True)
        for location in part[: int(reader.get_num_samples()) * _planes(reader)]
    ]


def _ifd_field(table: Any) -> str:
    for name in table.dtype.names:
        if name.lower() == "ifd_index":
            return str(name)
    raise NotVirtualizable("roiextractors' frame table has no IFD column")


def _page_bytes(locations: Sequence[PageLocation]) -> list[PageBytes]:
    """Each page's pixel bytes, each file opened once."""
    try:
        import tifffile
    except ModuleNotFoundError as exc:
        raise missing_extra(exc, "virtualizing TIFF imaging") from exc

    found: list[PageBytes] = []
    with ExitStack() as stack:
        opened: dict[Path, _TiffSource] = {}
        for location in locations:
            source = opened.get(location.path)
            if source is None:
                tif = stack.enter_context(tifffile.TiffFile(location.path))
                resolved = location.path.resolve()
                source = _TiffSource(tif, str(resolved), resolved.stat().st_size)
                opened[location.path] = source
            if location.ifd >= len(source.tif.pages):
                raise NotVirtualizable(f"{location.path.name} has no page {location.ifd}")
            found.append(_one_page(source, location))
    return found


@dataclass(frozen=True, slots=True)
class _TiffSource:
    tif: Any
    url: str
    size: int


def _one_page(source: _TiffSource, location: PageLocation) -> PageBytes:
    try:
        from shadowzarr_tiff.codecs import codec_chain, stored_dtype
    except ModuleNotFoundError as exc:
        raise missing_extra(exc, "virtualizing TIFF imaging") from exc

    page = source.tif.pages[location.ifd]
    where = f"{location.path.name} page {location.ifd}"
    if page.is_tiled or int(page.samplesperpixel) != 1 or int(page.imagedepth) != 1:
        raise NotVirtualizable(f"{where}: tiled, multi-sample or deep pages are not referenced")
    shape = (int(page.imagelength), int(page.imagewidth))
    try:
        chain = codec_chain(page, shape, where)
        dtype = stored_dtype(page)
    except UnsupportedFeatureError as exc:
        raise NotVirtualizable(str(exc)) from exc
    if not chain.uncompressed:
        raise NotVirtualizable(f"{where}: compressed TIFF pages")
    offsets = [int(o) for o in page.dataoffsets]
    counts = [int(c) for c in page.databytecounts]
    nbytes = math.prod(shape) * dtype.itemsize
    ends = [o + c for o, c in zip(offsets, counts, strict=True)]
    if offsets[1:] != ends[:-1] or sum(counts) < nbytes:
        raise NotVirtualizable(f"{where}: the strips of the page are not one run of bytes")
    if offsets[0] + nbytes > source.size:
        # Read through a reference, the missing end would be padded, not refused.
        raise NotVirtualizable(f"{where}: the page runs past the end of the file (truncated)")
    return PageBytes(source.url, offsets[0], nbytes, shape, dtype)


def _frames(
    pages: Sequence[PageBytes], samples: int, planes: int, frame_shape: tuple[int, int]
) -> VirtualArray:
    """One chunk per page: (sample, row, column[, plane]), transposed to NeuroConv's order."""
    shapes = {page.shape for page in pages}
    if shapes != {frame_shape}:
        found = ", ".join(f"{r}×{c}" for r, c in sorted(shapes))
        raise NotVirtualizable(
            f"pages of {found} read as (cropped to) {frame_shape[0]}×{frame_shape[1]}"
        )
    dtypes = {page.dtype for page in pages}
    if len(dtypes) != 1:
        raise NotVirtualizable(f"pages of several data types: {sorted(map(str, dtypes))}")
    (dtype,) = dtypes
    rows, columns = frame_shape
    volume = planes > 1
    shape = (samples, rows, columns, planes) if volume else (samples, rows, columns)
    chunk_shape = (1, rows, columns, 1) if volume else (1, rows, columns)
    chunks: list[tuple[tuple[int, ...], str, int, int]] = []
    for k, page in enumerate(pages):
        coords = (k // planes, 0, 0, k % planes) if volume else (k, 0, 0)
        chunks.append((coords, page.url, page.offset, page.nbytes))
    array = VirtualArray.from_chunks(shape, chunk_shape, dtype, chunks)
    return array.transpose(0, 2, 1, 3) if volume else array.transpose(0, 2, 1)


def _hdf5_frames(extractor: Any) -> VirtualArray:
    """roiextractors' HDF5 movies are (channel, frame, row, column); NeuroConv writes the first
    channel's frames as (frame, column, row)."""
    from shadowzarr_spec.virtual import NeedsDataError

    try:
        from shadowzarr_hdf5 import generate_rfs
    except ModuleNotFoundError as exc:
        raise missing_extra(exc, "virtualizing HDF5 imaging") from exc

    path = Path(extractor._file.filename)
    field = str(extractor._mov_field).strip("/")
    movie = VirtualArray.from_rfs(generate_rfs(path), field)
    if movie.ndim != 4:
        raise NotVirtualizable(f"{path.name}:{field} is not (channel, frame, row, column)")
    try:
        frames = movie[0]
    except NeedsDataError as exc:
        raise NotVirtualizable(f"{path.name}:{field}: the first channel of {exc}") from exc
    return frames.transpose(0, 2, 1)
