"""Intan RHD/RHS: header-attached blocks, one file per signal type, or one file per channel."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from shadowzarr_neo.errors import ComputedStream
from shadowzarr_neo.sources import ChannelRuns, RecordBlocks, Rows

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    from neo.rawio.intanrawio import digital_stream_names

    header = reader.header
    stream = header["signal_streams"][stream_index]
    name = str(stream["name"])
    if name in digital_stream_names and reader.file_format != "one-file-per-channel":
        # with one file per channel each digital channel is stored as its own 0/1 samples
        return ComputedStream(
            f"Intan stream {name!r}: NEO unpacks each channel from bits of a 16-bit word"
        )
    if name == "Stim channel":
        return ComputedStream(
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
        return RecordBlocks(
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
