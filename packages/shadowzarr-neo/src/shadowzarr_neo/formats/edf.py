"""EDF: data records of every signal, located from the file's own header."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.formats.edf_header import read_edf_layout
from shadowzarr_neo.sources import RecordBlocks

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
    path = os.fspath(reader.filename)
    try:
        layout = read_edf_layout(path)
    except NotVirtualizable as error:
        return error
    signals = [layout.data_signals[int(i)] for i in reader.stream_idx_to_chidx[stream_index]]
    n_samples = int(reader.get_signal_size(block, segment, stream_index))
    return RecordBlocks(
        path=path,
        offset=layout.header_bytes,
        dtype=np.dtype("<i2"),
        n_samples=n_samples,
        record_size=layout.record_size,
        block=layout.samples_per_record[signals[0]],
        channel_offsets=tuple(layout.signal_offset(s) for s in signals),
    )
