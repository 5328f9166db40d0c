"""Which columns of a NEO buffer belong to which stream, with the stream's channel information.

NEO reads a stream as some columns of its buffer (``_stream_buffer_slice``: None for all of
them, a slice, or column indices); the channel table lists the stream's channels in that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from neo.rawio.baserawio import BaseRawIO

__all__ = ["StreamColumns", "buffer_streams"]


@dataclass(frozen=True, slots=True)
class StreamColumns:
    """One NEO stream inside a buffer of one segment."""

    stream_index: int
    stream_id: str
    name: str
    columns: tuple[int, ...]
    sampling_rate: float
    t_start: float
    channels: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.stream_id,
            "name": self.name,
            "columns": list(self.columns),
            "sampling_rate": self.sampling_rate,
            "t_start": self.t_start,
            "channels": [dict(channel) for channel in self.channels],
        }


def stream_columns(reader: BaseRawIO, stream_id: str, n_buffer_columns: int) -> tuple[int, ...]:
    """The buffer columns NEO reads for ``stream_id``, in NEO's channel order."""
    selector = getattr(reader, "_stream_buffer_slice", {}).get(stream_id)
    everything = np.arange(n_buffer_columns)
    picked = everything if selector is None else everything[selector]
    return tuple(int(c) for c in np.atleast_1d(picked))


def buffer_streams(
    reader: BaseRawIO, block: int, segment: int, buffer_id: str, n_buffer_columns: int
) -> list[StreamColumns]:
    """The streams stored in ``buffer_id`` for one segment, in NEO's stream order."""
    header = reader.header
    channels = header["signal_channels"]
    streams = []
    for stream_index, stream in enumerate(header["signal_streams"]):
        if str(stream["buffer_id"]) != buffer_id:
            continue
        stream_id = str(stream["id"])
        mine = channels[channels["stream_id"] == stream_id]
        streams.append(
            StreamColumns(
                stream_index=stream_index,
                stream_id=stream_id,
                name=str(stream["name"]),
                columns=stream_columns(reader, stream_id, n_buffer_columns),
                sampling_rate=float(reader.get_signal_sampling_rate(stream_index)),
                t_start=float(reader.get_signal_t_start(block, segment, stream_index)),
                channels=tuple(
                    {
                        "id": str(c["id"]),
                        "name": str(c["name"]),
                        "units": str(c["units"]),
                        "gain": float(c["gain"]),
                        "offset": float(c["offset"]),
                    }
                    for c in mine
                ),
            )
        )
    return streams
