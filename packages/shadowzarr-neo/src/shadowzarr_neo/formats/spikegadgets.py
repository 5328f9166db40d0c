"""SpikeGadgets .rec: one packet per sample after an XML header."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.sources import Rows

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
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
