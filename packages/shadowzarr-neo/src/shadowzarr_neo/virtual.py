"""virtual_arrays_neo: one VirtualArray per signal stream of a NEO raw reader."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.errors import ComputedStream
from shadowzarr_neo.hdf5_datasets import hdf5_dataset_array
from shadowzarr_neo.sources import ChannelRuns, Chunks, Hdf5Dataset, RecordBlocks, Rows, Stacked
from shadowzarr_neo.stream_sources import stream_sources

if TYPE_CHECKING:
    from collections.abc import Callable

    from neo.rawio.baserawio import BaseRawIO
    from shadowzarr_spec.virtual import VirtualArray

    from shadowzarr_neo.sources import Layout

__all__ = ["virtual_arrays_neo"]


def virtual_arrays_neo(
    reader: BaseRawIO,
    url_for: Callable[[str], str] | None = None,
    *,
    block_index: int = 0,
    seg_index: int = 0,
    strict: bool = False,
    chunk_samples: int | None = None,
) -> dict[str, VirtualArray]:
    """One time-by-channel VirtualArray per signal stream, holding only that stream's channels.

    Parameters
    ----------
    reader
        A NEO raw reader: any reader :func:`generate_rfs_neo` takes, or Blackrock,
        SpikeGadgets, Intan, Neuralynx, Open Ephys (legacy format), EDF, BioCam or MEArec
        (whose HDF5 datasets the HDF5 generator references, compressed or not).
    url_for
        Maps each local path NEO reads to the URL the references should point at; by default
        the absolute local path.
    block_index, seg_index
        Which segment of the recording.
    strict
        Streams whose values NEO computes rather than reads (Intan's digital channels and
        stimulation current) are left out; with ``strict`` they raise NotVirtualizable.
    chunk_samples
        Samples per chunk where the file does not impose one (interleaved samples, channels
        stored one after another); by default about 4 MiB.

    Returns
    -------
    dict
        Stream id → VirtualArray of the stream's raw values, whose ``attributes`` hold the
        stream's ``sampling_rate``, ``t_start`` and per channel ``channel_ids``,
        ``channel_names``, ``units``, ``gain`` and ``offset``.

    Raises
    ------
    NotVirtualizable
        For a reader that does not say where its data is, a recording whose stored values are
        not NEO's (an Open Ephys recording with gaps, BDF's 24-bit samples, a discontinuous
        EDF+ file, an inverted or event-only BioCam file, an HDF5 dataset with a filter the
        HDF5 generator does not support) or, with ``strict``, a stream that would be left out
        (:class:`~shadowzarr_neo.errors.ComputedStream`).
    """
    to_url = url_for if url_for is not None else _absolute_path
    arrays: dict[str, VirtualArray] = {}
    for stream_id, source in stream_sources(reader, block_index, seg_index).items():
        if isinstance(source, NotVirtualizable):
            if strict or not isinstance(source, ComputedStream):
                raise source
            continue
        array = _from_layout(source.layout, to_url, chunk_samples)
        array.attributes.update(source.attributes)
        arrays[stream_id] = array
    return arrays


def _from_layout(
    layout: Layout, to_url: Callable[[str], str], chunk_samples: int | None = None
) -> VirtualArray:
    from shadowzarr_spec.virtual import VirtualArray, stack

    match layout:
        case Rows():
            # whole rows, then the stream's columns: the records then end where the file's do
            n_items = max((layout.row_bytes - layout.skip) // layout.dtype.itemsize, 1)
            rows = VirtualArray.records(
                to_url(layout.path),
                shape=[layout.n_samples, n_items],
                dtype=layout.dtype,
                record_size=layout.row_bytes,
                skip=layout.skip,
                offset=layout.offset,
                chunk_rows=chunk_samples,
            )
            if layout.columns == tuple(range(n_items)):
                return rows
            first = layout.columns[0]
            if layout.columns == tuple(range(first, first + len(layout.columns))):
                return rows[:, first : first + len(layout.columns)]
            return rows[:, list(layout.columns)]
        case ChannelRuns():
            return stack(
                [
                    VirtualArray.contiguous(
                        to_url(p), [layout.n_samples], layout.dtype, o, chunk_rows=chunk_samples
                    )
                    for p, o in zip(layout.paths, layout.offsets, strict=True)
                ],
                axis=1,
            )
        case RecordBlocks():
            url = to_url(layout.path)
            if layout.channels_back_to_back:
                stored = VirtualArray.blocks(
                    url,
                    shape=[layout.n_channels, layout.n_samples],
                    chunk_shape=[layout.n_channels, layout.block],
                    dtype=layout.dtype,
                    record_size=layout.record_size,
                    offset=layout.offset + layout.channel_offsets[0],
                    axis=1,
                )
                return stored.transpose(1, 0)
            return stack([_channel_blocks(layout, o, url) for o in layout.channel_offsets], axis=1)
        case Chunks():
            stored = VirtualArray.from_chunks(
                layout.stored_shape,
                layout.chunk_shape,
                layout.dtype,
                [(c, to_url(layout.path), o, n) for c, (o, n) in sorted(layout.chunks.items())],
            )
            return stored.transpose(1, 0) if layout.channel_major else stored
        case Hdf5Dataset():
            return hdf5_dataset_array(layout, to_url)
        case Stacked():
            return stack(
                [_single_channel(part, to_url, chunk_samples) for part in layout.parts], axis=1
            )
    raise TypeError(f"not a stream layout: {layout!r}")


def _channel_blocks(layout: RecordBlocks, channel_offset: int, url: str) -> VirtualArray:
    from shadowzarr_spec.virtual import VirtualArray

    return VirtualArray.blocks(
        url,
        shape=[layout.n_samples],
        chunk_shape=[layout.block],
        dtype=layout.dtype,
        record_size=layout.record_size,
        offset=layout.offset + channel_offset,
    )


def _single_channel(
    part: Any, to_url: Callable[[str], str], chunk_samples: int | None
) -> VirtualArray:
    """One channel of a stacked layout as a one-dimensional array."""
    if part.n_channels != 1:
        raise NotVirtualizable("stacked layouts hold one channel per part")
    if isinstance(part, RecordBlocks):
        return _channel_blocks(part, part.channel_offsets[0], to_url(part.path))
    return _from_layout(part, to_url, chunk_samples)[:, 0]


def _absolute_path(path: str) -> str:
    return str(Path(path).resolve())
