"""Open Ephys legacy format: one file per channel, records of 1024 samples."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.sources import RecordBlocks, Stacked

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
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
            RecordBlocks(
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
