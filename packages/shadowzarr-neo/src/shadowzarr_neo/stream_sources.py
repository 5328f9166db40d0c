"""The layout of every signal stream of a NEO raw reader, for one block and segment.

Readers that describe their buffers are read through those descriptions; the others through
the memory maps and file offsets they keep, one function per reader. A stream whose values NEO
computes rather than reads (Intan's digital words, Intan's stimulation current) has no layout.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.edf_header import read_edf_layout
from shadowzarr_neo.layouts import ChunkedLayout, ContiguousLayout, buffer_layout
from shadowzarr_neo.memmaps import memmap_position
from shadowzarr_neo.sources import Blocks, ChannelRuns, Chunks, Rows, Stacked, StreamSource
from shadowzarr_neo.streams import stream_columns

if TYPE_CHECKING:
    from collections.abc import Callable

    from neo.rawio.baserawio import BaseRawIO

    from shadowzarr_neo.sources import Layout

__all__ = ["stream_sources"]

type Outcome = Layout | NotVirtualizable


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
        return _READERS[name]
    except KeyError:
        raise NotVirtualizable(f"{name} does not say where its signals are stored") from None


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


# -- Blackrock: NSx data blocks, plain or one PTP packet per sample ---------------------------
def _blackrock_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    nsx = int(reader.header["signal_streams"][stream_index]["id"])
    kwargs = reader._nsx_data_header[nsx][segment]["memmap_kwargs"]
    n_channels = int(kwargs.get("num_channels", reader._nsx_basic_header[nsx]["channel_count"]))
    dtype = np.dtype(kwargs["dtype"])
    packet = kwargs.get("packet_size") or n_channels * dtype.itemsize
    return Rows(
        path=os.fspath(kwargs["filename"]),
        offset=int(kwargs["offset"]),
        dtype=dtype,
        n_samples=int(kwargs["num_samples"]),
        row_bytes=int(packet),
        columns=tuple(range(n_channels)),
        skip=int(kwargs.get("item_offset", 0)),
    )


# -- Intan: header-attached blocks, one file per signal type, one file per channel ------------
def _intan_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    from neo.rawio.intanrawio import digital_stream_names

    header = reader.header
    stream = header["signal_streams"][stream_index]
    name = str(stream["name"])
    if name in digital_stream_names and reader.file_format != "one-file-per-channel":
        # with one file per channel each digital channel is stored as its own 0/1 samples
        return NotVirtualizable(
            f"Intan stream {name!r}: NEO unpacks each channel from bits of a 16-bit word"
        )
    if name == "Stim channel":
        return NotVirtualizable(
            f"Intan stream {name!r}: NEO computes the current from the stored stimulation words"
        )
    channel_ids = [
        str(c)
        for c in header["signal_channels"]["id"][
            header["signal_channels"]["stream_id"] == stream["id"]
        ]
    ]
    if reader.file_format == "header-attached":
        raw = reader._raw_data
        fields = [raw.dtype.fields[c] for c in channel_ids]
        base = fields[0][0].base
        block_size = fields[0][0].shape[0] if fields[0][0].shape else 1
        return Blocks(
            path=os.fspath(raw.filename),
            offset=int(raw.offset),
            dtype=base,
            n_samples=int(raw[channel_ids[0]].size),
            record_size=raw.dtype.itemsize,
            block=block_size,
            channel_offsets=tuple(int(f[1]) for f in fields),
        )
    data = reader._raw_data[name]
    if reader.file_format == "one-file-per-signal":
        return Rows(
            path=os.fspath(data.filename),
            offset=int(data.offset),
            dtype=data.dtype,
            n_samples=int(data.shape[0]),
            row_bytes=int(data.strides[0]),
            columns=tuple(range(data.shape[1])),
        )
    return ChannelRuns(
        paths=tuple(os.fspath(m.filename) for m in data),
        offsets=tuple(int(m.offset) for m in data),
        dtype=data[0].dtype,
        n_samples=int(data[0].size),
    )


# -- Open Ephys legacy: one file per channel, records of 1024 samples ------------------------
def _openephys_legacy_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    from neo.rawio.openephysrawio import HEADER_SIZE, RECORD_SIZE

    if reader._gap_mode:
        return NotVirtualizable(
            "this Open Ephys recording has gaps between records, which NEO fills with zeros"
        )
    header = reader.header
    stream_id = header["signal_streams"][stream_index]["id"]
    (channel_indexes,) = np.nonzero(header["signal_channels"]["stream_id"] == stream_id)
    first = int(reader._sig_timestamp0[segment])
    oe_index = sorted(reader._info["continuous"])[segment]
    parts = []
    for channel_index in channel_indexes:
        records = reader._sigs_memmap[segment][int(channel_index)]
        # clipped channels are copies, not memmaps: the file comes from NEO's folder scan
        path = os.fspath(reader._info["continuous"][oe_index][int(channel_index)])
        # NEO may have dropped whole records at the start to align the channels: find where
        # the first one it kept starts from the file's own first timestamp.
        with open(path, "rb") as f:
            f.seek(HEADER_SIZE)
            file_first = int(np.frombuffer(f.read(8), dtype="<i8")[0])
        skipped = (first - file_first) // RECORD_SIZE
        samples = records.dtype.fields["samples"]
        parts.append(
            Blocks(
                path=path,
                offset=HEADER_SIZE + skipped * records.dtype.itemsize,
                dtype=samples[0].base,
                n_samples=int(reader._sig_length[segment]),
                record_size=records.dtype.itemsize,
                block=RECORD_SIZE,
                channel_offsets=(int(samples[1]),),
            )
        )
    return Stacked(tuple(parts))


# -- SpikeGadgets: one packet per sample ----------------------------------------------------
def _spikegadgets_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    stream_id = str(reader.header["signal_streams"][stream_index]["id"])
    raw = reader._raw_memmap  # (packets, packet_size) uint8 view after the XML header
    # NEO takes a stream's bytes in packet order, whatever order the channels are listed in
    (positions,) = np.nonzero(reader._mask_streams[stream_id])
    first = int(positions[0])
    starts = positions[::2]
    if np.any((starts - first) % 2) or np.any(positions[1::2] != starts + 1):
        return NotVirtualizable(
            f"SpikeGadgets stream {stream_id!r}: its samples are not aligned 16-bit words"
        )
    return Rows(
        path=os.fspath(raw.filename),
        offset=int(raw.offset),
        dtype=np.dtype("<i2"),
        n_samples=int(raw.shape[0]),
        row_bytes=int(raw.shape[1]),
        columns=tuple(int(p - first) // 2 for p in starts),
        skip=first,
    )


# -- Neuralynx: one .ncs file per channel, records of 512 samples ---------------------------
def _neuralynx_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    header = reader.header
    stream_id = header["signal_streams"][stream_index]["id"]
    channels = header["signal_channels"][header["signal_channels"]["stream_id"] == stream_id]
    n_samples = int(reader.get_signal_size(block, segment, stream_index))
    parts = []
    for channel in channels:
        records = reader._sigs_memmaps[segment][(channel["name"], channel["id"])]
        path, offset = memmap_position(records)
        samples = records.dtype.fields["samples"]
        parts.append(
            Blocks(
                path=path,
                offset=offset,
                dtype=samples[0].base,
                n_samples=n_samples,
                record_size=records.dtype.itemsize,
                block=samples[0].shape[0],
                channel_offsets=(int(samples[1]),),
            )
        )
    return Stacked(tuple(parts))


# -- EDF: data records of every signal, located from the file's header ----------------------
def _edf_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    path = os.fspath(reader.filename)
    try:
        layout = read_edf_layout(path)
    except NotVirtualizable as error:
        return error
    signals = [layout.data_signals[int(i)] for i in reader.stream_idx_to_chidx[stream_index]]
    n_samples = int(reader.get_signal_size(block, segment, stream_index))
    return Blocks(
        path=path,
        offset=layout.header_bytes,
        dtype=np.dtype("<i2"),
        n_samples=n_samples,
        record_size=layout.record_size,
        block=layout.samples_per_record[signals[0]],
        channel_offsets=tuple(layout.signal_offset(s) for s in signals),
    )


# -- BioCam: HDF5, frames of every channel ---------------------------------------------------
def _biocam_stream(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    from neo.rawio import biocamrawio

    read = reader._read_function
    if read in (biocamrawio.readHDF5t_100_i, biocamrawio.readHDF5t_101_i):
        return NotVirtualizable("this BioCam file stores inverted values, which NEO turns back")
    if read is biocamrawio.readHDF5t_brw4_sparse:
        return NotVirtualizable("this BioCam file stores only events, which NEO fills in")
    handle = reader._filehandle
    if read is biocamrawio.readHDF5t_brw4:
        dataset = next(handle[key]["Raw"] for key in handle if key.startswith("Well_"))
    else:
        dataset = handle["3BData/Raw"]
    n_frames, n_channels = int(reader._num_frames), int(reader._num_channels)
    return _hdf5_frames(dataset, n_frames, n_channels)


def _hdf5_frames(dataset: Any, n_frames: int, n_channels: int) -> Outcome:
    """An HDF5 dataset of frames by channels, flat or two-dimensional, uncompressed."""
    name = f"{dataset.file.filename}:{dataset.name}"
    plist = dataset.id.get_create_plist()
    if plist.get_nfilters():
        return NotVirtualizable(f"{name} is compressed; only uncompressed datasets are referenced")
    path = os.fspath(dataset.file.filename)
    dtype = dataset.dtype
    if dataset.chunks is None:
        offset = dataset.id.get_offset()
        if offset is None:
            return NotVirtualizable(f"{name} has no stored data")
        return Rows(
            path,
            int(offset),
            dtype,
            n_frames,
            n_channels * dtype.itemsize,
            tuple(range(n_channels)),
        )
    stored = tuple(int(c) for c in dataset.chunks)
    if len(stored) == 1:
        if stored[0] % n_channels:
            return NotVirtualizable(f"{name}: its chunks do not hold whole frames")
        chunk_shape = (stored[0] // n_channels, n_channels)
    else:
        chunk_shape = (stored[0], stored[1])
    chunks = {}
    for i in range(dataset.id.get_num_chunks()):
        info = dataset.id.get_chunk_info(i)
        row = int(info.chunk_offset[0]) // stored[0]
        column = int(info.chunk_offset[1]) // stored[1] if len(stored) == 2 else 0
        chunks[(row, column)] = (int(info.byte_offset), int(info.size))
    return Chunks(path, dtype, (n_frames, n_channels), chunk_shape, False, chunks)


_READERS: dict[str, Callable[[Any, int, int, int], Outcome]] = {
    "BiocamRawIO": _biocam_stream,
    "BlackrockRawIO": _blackrock_stream,
    "EDFRawIO": _edf_stream,
    "IntanRawIO": _intan_stream,
    "NeuralynxRawIO": _neuralynx_stream,
    "OpenEphysRawIO": _openephys_legacy_stream,
    "SpikeGadgetsRawIO": _spikegadgets_stream,
}
