"""A roiextractors imaging extractor as a VirtualArray of the frames NeuroConv writes.

roiextractors' TIFF extractors keep a table of the file and page (IFD) holding each frame. Each
file's pages are referenced by :func:`generate_rfs_tiff`; each frame is one page, the frames are
stacked in the table's order and transposed to the (frame, width, height) order NeuroConv
writes. Compressed pages, cropped frames and volumes are refused. Its HDF5 extractor's movie is
referenced as :func:`generate_rfs` references the dataset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shadowzarr_spec import VirtualArray, stack
from shadowzarr_spec.errors import NotVirtualizable

__all__ = ["imaging_array"]


def imaging_array(extractor: Any) -> VirtualArray:
    """The frames of a TIFF or HDF5 imaging extractor, (frame, width, height)."""
    if hasattr(extractor, "_mov_field") and hasattr(extractor, "_file"):
        return _hdf5_frames(extractor)
    table = getattr(extractor, "_frames_to_ifd_table", None)
    paths = getattr(extractor, "_file_paths", None)
    if table is None or paths is None:
        raise NotVirtualizable(f"{type(extractor).__name__} does not say where its frames are")
    if getattr(extractor, "is_volumetric", False):
        raise NotVirtualizable("volumes (several planes per frame) are not referenced")
    pages = [_pages(Path(path)) for path in paths]
    files = [int(f) for f in table["file_index"]]
    ifds = [int(i) for i in table[_ifd_field(table)]]
    if len(set(files)) == 1 and ifds == list(range(ifds[0], ifds[0] + len(ifds))):
        frames = pages[files[0]][ifds[0] : ifds[0] + len(ifds)]
    else:
        frames = stack([pages[f][i] for f, i in zip(files, ifds, strict=True)], axis=0)
    rows, columns = (
        extractor.get_frame_shape() if hasattr(extractor, "get_frame_shape") else (frames.shape[1:])
    )
    if tuple(frames.shape[1:]) != (int(rows), int(columns)):
        raise NotVirtualizable(f"frames of {tuple(frames.shape[1:])} cropped to {rows}×{columns}")
    return frames.transpose(0, 2, 1)


def _hdf5_frames(extractor: Any) -> VirtualArray:
    """roiextractors' HDF5 movies are (channel, frame, row, column); NeuroConv writes the first
    channel's frames as (frame, column, row)."""
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec.virtual import NeedsDataError

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


def _pages(path: Path) -> VirtualArray:
    """Every page of one TIFF file, (page, row, column), each page one chunk."""
    from shadowzarr_tiff import generate_rfs_tiff

    rfs = generate_rfs_tiff(path)
    pages = VirtualArray.from_rfs(rfs, "0")
    if any(codec.get("name") not in ("bytes", "transpose") for codec in pages.codecs):
        raise NotVirtualizable(f"{path.name}: compressed TIFF pages")
    if pages.ndim != 3:
        raise NotVirtualizable(f"{path.name}: pages of shape {pages.shape[1:]} are not 2-D images")
    return pages


def _ifd_field(table: Any) -> str:
    for name in table.dtype.names:
        if name.lower() == "ifd_index":
            return str(name)
    raise NotVirtualizable("roiextractors' frame table has no IFD column")
