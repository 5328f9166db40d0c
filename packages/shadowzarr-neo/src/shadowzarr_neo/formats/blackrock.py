"""Blackrock NSx files: data blocks of interleaved samples, or one PTP packet per sample."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_neo.sources import Rows

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
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
