"""The layout of every signal stream of a NEO raw reader, for one block and segment.

Readers that describe their buffers are read through those descriptions; the others through
the memory maps and file offsets they keep, one module of :mod:`shadowzarr_neo.formats` per
reader. A stream whose values NEO
computes rather than reads (Intan's digital words, Intan's stimulation current) has no layout.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.layouts import ChunkedLayout, ContiguousLayout, buffer_layout
from shadowzarr_neo.sources import ChannelRuns, Chunks, Rows, StreamSource
from shadowzarr_neo.streams import stream_columns

if TYPE_CHECKING:
    from collections.abc import Callable

    from neo.rawio.baserawio import BaseRawIO

    from shadowzarr_neo.formats import Outcome
    from shadowzarr_neo.sources import Layout

__all__ = ["stream_sources"]


def stream_sources(
    reader: BaseRawIO, block: int = 0, segment: int = 0
) -> dict[str, StreamSource | NotVirtualizable]:
    """Every stream of one segment: its source, or the NotVirtualizable saying why there is none."""
    if getattr(reader, "header", None) is None:
        reader.parse_header()
    layouts = _layouts_for(reader)
    out: dict[str, StreamSource | NotVirtualizable] = {}
    for stream_index, stream in enumerate(reader.header["signal_streams"]):
        stream_id = str(stream["id"])
        outcome = layouts(reader, block, segment, stream_index)
        if isinstance(outcome, NotVirtualizable):
            out[stream_id] = outcome
            continue
        out[stream_id] = StreamSource(
            stream_id,
            block,
            segment,
            outcome,
            stream_attributes(reader, block, segment, stream_index),
        )
    return out


def stream_attributes(
    reader: BaseRawIO, block: int, segment: int, stream_index: int
) -> dict[str, Any]:
    """What NEO says about one stream: enough to scale and time its raw values."""
    header = reader.header
    stream = header["signal_streams"][stream_index]
    channels = header["signal_channels"]
    mine = channels[channels["stream_id"] == stream["id"]]
    return {
        "stream_id": str(stream["id"]),
        "stream_name": str(stream["name"]),
        "sampling_rate": float(reader.get_signal_sampling_rate(stream_index)),
        "t_start": float(reader.get_signal_t_start(block, segment, stream_index)),
        "channel_ids": [str(c) for c in mine["id"]],
        "channel_names": [str(c) for c in mine["name"]],
        "units": [str(c) for c in mine["units"]],
        "gain": [float(c) for c in mine["gain"]],
        "offset": [float(c) for c in mine["offset"]],
    }


def _layouts_for(reader: BaseRawIO) -> Callable[[BaseRawIO, int, int, int], Outcome]:
    if reader.has_buffer_description_api():
        return _buffer_stream
    name = type(reader).__name__
    try:
        module = _READERS[name]
    except KeyError:
        raise NotVirtualizable(f"{name} does not say where its signals are stored") from None
    return import_module(f"shadowzarr_neo.formats.{module}").stream_layout  # type: ignore[no-any-return]


# -- readers that describe their buffers -------------------------------------------------------
def _buffer_stream(reader: BaseRawIO, block: int, segment: int, stream_index: int) -> Outcome:
    stream = reader.header["signal_streams"][stream_index]
    buffer_id = str(stream["buffer_id"])
    layout = buffer_layout(reader, block, segment, buffer_id)
    columns = stream_columns(reader, str(stream["id"]), layout.n_channels)
    if isinstance(layout, ChunkedLayout):
        if columns != tuple(range(layout.n_channels)):
            return NotVirtualizable(
                f"buffer {buffer_id!r}: some channels of a chunked HDF5 dataset cannot be "
                "picked without reading it"
            )
        # the chunk table is kept in the stored axis order (channels first when channel major)
        stored_chunk = layout.chunk_shape[::-1] if layout.channel_major else layout.chunk_shape
        return Chunks(
            path=layout.path,
            dtype=layout.dtype,
            stored_shape=(
                (layout.n_channels, layout.n_samples)
                if layout.channel_major
                else (layout.n_samples, layout.n_channels)
            ),
            chunk_shape=(stored_chunk[0], stored_chunk[1]),
            channel_major=layout.channel_major,
            chunks={
                (key[::-1] if layout.channel_major else key): value
                for key, value in layout.chunks.items()
            },
        )
    return _contiguous(layout, columns)


def _contiguous(layout: ContiguousLayout, columns: tuple[int, ...]) -> Layout:
    if layout.channel_major:
        run = layout.n_samples * layout.dtype.itemsize
        return ChannelRuns(
            paths=(layout.path,) * len(columns),
            offsets=tuple(layout.offset + c * run for c in columns),
            dtype=layout.dtype,
            n_samples=layout.n_samples,
        )
    return Rows(
        layout.path, layout.offset, layout.dtype, layout.n_samples, layout.row_bytes, columns
    )


_READERS: dict[str, str] = {
    "BiocamRawIO": "biocam",
    "BlackrockRawIO": "blackrock",
    "EDFRawIO": "edf",
    "IntanRawIO": "intan",
    "MEArecRawIO": "mearec",
    "NeuralynxRawIO": "neuralynx",
    "OpenEphysRawIO": "openephys_legacy",
    "SpikeGadgetsRawIO": "spikegadgets",
}
"""Readers that do not describe their buffers, and the module of ``formats`` that reads each."""
