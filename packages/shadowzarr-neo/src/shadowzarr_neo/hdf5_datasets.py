"""A stream stored as an HDF5 dataset, referenced as the HDF5 generator references it.

MEArec and BioCam recordings are HDF5 files: whatever their datasets' storage (contiguous,
chunked, compressed with a filter the generator supports), ``generate_rfs`` says where each
chunk is and how to decode it. A flat dataset (BioCam 101 and BRW 4: one frame of every channel
after another) becomes frames by channels: each of its chunks holds whole frames, so the same
chunk bytes decode to a block of frames.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable, UnsupportedFeatureError

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadowzarr_spec.model import ReferenceFileSystem
    from shadowzarr_spec.virtual import VirtualArray

    from shadowzarr_neo.sources import Hdf5Dataset

__all__ = ["hdf5_dataset_array"]


def hdf5_dataset_array(layout: Hdf5Dataset, to_url: Callable[[str], str]) -> VirtualArray:
    """Rows ``[0, n_samples)`` of the dataset, frames by channels. The dataset's own HDF5
    attributes are not the stream's, so the array starts without attributes."""
    from shadowzarr_hdf5 import generate_rfs
    from shadowzarr_spec.virtual import VirtualArray

    where = f"{layout.path}:{layout.name}"
    try:
        rfs = generate_rfs(
            to_url(layout.path),
            local_hdf5_path=layout.path,
            datasets=[layout.name],
            record_source=False,
            progress=False,
            # a flat dataset's chunks are re-keyed one by one below
            manifest_threshold=None if layout.flat else 1000,
            inline_threshold=0,
        )
    except UnsupportedFeatureError as exc:
        if isinstance(exc, NotVirtualizable):
            raise
        raise NotVirtualizable(f"{where}: {exc}") from exc
    array = VirtualArray.from_rfs(rfs, layout.name)
    if layout.flat:
        array = _frames(rfs, array, layout)
    array.attributes.clear()
    if array.shape[0] != layout.n_samples:
        array = array[: layout.n_samples]
    return array


def _frames(rfs: ReferenceFileSystem, flat: VirtualArray, layout: Hdf5Dataset) -> VirtualArray:
    """The flat dataset as frames by channels, chunk for chunk."""
    from shadowzarr_spec import RfsBuilder
    from shadowzarr_spec.keys import array_of_chunk_key
    from shadowzarr_spec.model import FileRef
    from shadowzarr_spec.virtual import VirtualArray

    where = f"{layout.path}:{layout.name}"
    n_channels = layout.n_channels
    (chunk,) = flat.chunk_shape
    if chunk % n_channels:
        raise NotVirtualizable(f"{where}: its chunks of {chunk} values do not hold whole frames")
    name = layout.name.strip("/")
    if rfs.gen or name in rfs.indexes:
        raise NotVirtualizable(f"{where}: the generator did not list its chunks one by one")
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "frames",
        shape=(flat.shape[0] // n_channels, n_channels),
        data_type=flat.dtype,
        chunk_shape=(chunk // n_channels, n_channels),
        codecs=flat.codecs,
        fill_value=_json_fill(flat.fill_value),
    )
    n_chunks = -(-(flat.shape[0] // n_channels) // (chunk // n_channels))
    for key, ref in rfs.refs.items():
        parsed = array_of_chunk_key(key)
        if parsed is None or parsed[0] != name:
            continue
        (index,) = parsed[1]
        if index >= n_chunks:
            continue  # values after the last whole frame
        if not isinstance(ref, FileRef) or ref.offset is None or ref.size is None:
            raise NotVirtualizable(f"{where}: chunk {index} is not a range of the file")
        builder.add_chunk("frames", (index, 0), ref.url, ref.offset, ref.size)
    return VirtualArray.from_rfs(builder.build(), "frames")


def _json_fill(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
