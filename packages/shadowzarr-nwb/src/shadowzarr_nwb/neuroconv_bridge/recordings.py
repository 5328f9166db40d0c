"""A SpikeInterface recording as a VirtualArray of the raw values NeuroConv would write.

Channel and frame slices are followed down to the recording that reads files: a NEO-based one
(its NEO reader, stream and block go to :func:`virtual_arrays_neo`: SpikeGLX, Open Ephys,
Intan, Blackrock, Neuroscope, MEArec, BioCam and the others it reads) or a plain binary one
(WhiteMatter, CellExplorer: a contiguous array of each segment's file). The channels NeuroConv
writes become a column selection (Neuroscope's spike-detection channels), the frames a row
slice. What NEO's reader computes rather than reads (an inverted BioCam or Neuralynx input) is
refused with NotVirtualizable, which ``virtualize(..., strict=False)`` leaves to NeuroConv.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shadowzarr_spec import VirtualArray
from shadowzarr_spec.errors import NotVirtualizable
from shadowzarr_spec.virtual import NeedsDataError

from shadowzarr_nwb.neuroconv_bridge.extra import missing_extra

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["recording_array"]


def recording_array(
    recording: Any, *, segment_index: int = 0, channel_ids: Sequence[Any] | None = None
) -> VirtualArray:
    """The raw values of ``channel_ids`` (default: all) of one segment of ``recording``."""
    ids = [_key(i) for i in (recording.get_channel_ids() if channel_ids is None else channel_ids)]
    start, stop = 0, int(recording.get_num_samples(segment_index))
    while True:
        kind = type(recording).__name__
        parent = getattr(recording, "_kwargs", {}).get("recording")
        if kind == "ChannelSliceRecording" and parent is not None:
            renamed = [_key(i) for i in recording._renamed_channel_ids.tolist()]
            original = [_key(i) for i in recording._channel_ids.tolist()]
            mapping = dict(zip(renamed, original, strict=True))
            ids = [mapping[i] for i in ids]
            recording = parent
        elif kind == "FrameSliceRecording" and parent is not None:
            first = int(recording._kwargs.get("start_frame") or 0)
            start, stop = start + first, stop + first
            recording = parent
        else:
            break
    base, base_ids = _base_array(recording, segment_index)
    columns = [_column(base_ids, channel) for channel in ids]
    array = base
    try:
        if (start, stop) != (0, base.shape[0]):
            array = array[start:stop]
        if columns != list(range(base.shape[1])):
            array = array[:, columns]
    except NeedsDataError as exc:
        raise NotVirtualizable(f"the channels or frames NeuroConv writes: {exc}") from exc
    return array


def _base_array(recording: Any, segment_index: int) -> tuple[VirtualArray, list[str]]:
    """The whole stream a file-reading recording reads, with its channel ids in column order."""
    if hasattr(recording, "neo_reader") and hasattr(recording, "stream_id"):
        return _neo_array(recording, segment_index)
    if any(cls.__name__ == "BinaryRecordingExtractor" for cls in type(recording).__mro__):
        return _binary_array(recording, segment_index)
    raise NotVirtualizable(f"{type(recording).__name__} does not say where its data is stored")


def _neo_array(recording: Any, segment_index: int) -> tuple[VirtualArray, list[str]]:
    try:
        from shadowzarr_neo import virtual_arrays_neo
    except ModuleNotFoundError as exc:
        raise missing_extra(exc, "virtualizing a NEO-based recording") from exc

    arrays = virtual_arrays_neo(
        recording.neo_reader,
        block_index=int(getattr(recording, "block_index", 0) or 0),
        seg_index=segment_index,
        strict=False,
    )
    stream_id = recording.stream_id
    if stream_id not in arrays:
        raise NotVirtualizable(f"NEO computes the values of stream {stream_id!r}")
    array = arrays[stream_id]
    gains = array.attributes.get("gain") or []
    if any(float(g) < 0 for g in gains):
        # SpikeInterface negates samples of a negative gain (Neuralynx's inverted input).
        raise NotVirtualizable(f"stream {stream_id!r} has negative gains: its input was inverted")
    ids = [_key(i) for i in array.attributes["channel_ids"]]
    names = [_key(i) for i in array.attributes.get("channel_names", [])]
    si_ids = [_key(i) for i in recording.get_channel_ids()]
    # SpikeInterface names channels by NEO's ids, or by NEO's names for some readers.
    if set(si_ids) <= set(ids):
        return array, ids
    if names and set(si_ids) <= set(names):
        return array, names
    raise NotVirtualizable(f"channels {si_ids[:4]}… are not NEO's channels of {stream_id!r}")


def _binary_array(recording: Any, segment_index: int) -> tuple[VirtualArray, list[str]]:
    """Each segment of a binary recording reads one file: samples after ``file_offset``."""
    segment = recording.segments[segment_index]
    if int(getattr(segment, "time_axis", 0)) != 0:
        raise NotVirtualizable("a binary recording stored channel by channel (time_axis=1)")
    shape = [int(segment.num_samples), int(segment.num_channels)]
    offset = int(segment.file_offset or 0)
    array = VirtualArray.contiguous(str(segment.file_path), shape, segment.dtype, offset=offset)
    return array, [_key(i) for i in recording.get_channel_ids()]


def _column(ids: list[str], channel: str) -> int:
    try:
        return ids.index(channel)
    except ValueError:
        raise NotVirtualizable(f"channel {channel!r} is not in the recording's files") from None


def _key(channel: Any) -> str:
    return str(channel.item() if hasattr(channel, "item") else channel)
