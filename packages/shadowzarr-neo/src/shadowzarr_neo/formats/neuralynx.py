"""Neuralynx .ncs: one file per channel, records of 512 samples."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr_neo.memmaps import memmap_position
from shadowzarr_neo.sources import RecordBlocks, Stacked

if TYPE_CHECKING:
    from shadowzarr_neo.formats import Outcome

__all__ = ["stream_layout"]


def stream_layout(reader: Any, block: int, segment: int, stream_index: int) -> Outcome:
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
            RecordBlocks(
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
