"""generate_rfs_neo: every signal buffer of a NEO raw reader as one time-by-channel array."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import MISSING_CHUNK, RfsBuilder
from shadowzarr_spec.metadata import bytes_codec
from shadowzarr_store.transport import is_local, local_path, probe_local

from shadowzarr_neo.layouts import ChunkedLayout, ContiguousLayout, Layout, buffer_layout
from shadowzarr_neo.streams import buffer_streams

if TYPE_CHECKING:
    from collections.abc import Callable

    from neo.rawio.baserawio import BaseRawIO
    from shadowzarr_spec import ReferenceFileSystem

__all__ = ["buffer_path", "generate_rfs_neo"]

MANIFEST_THRESHOLD = 1000
"""HDF5 buffers with more chunks than this list them in a chunk manifest rather than in refs."""

TARGET_CHUNK_BYTES = 4 * 1024 * 1024
"""Interleaved buffers are cut into slabs of about this size: big enough that one request
carries many samples, small enough that reading a second of a long recording stays cheap."""


def generate_rfs_neo(
    reader: BaseRawIO,
    url_for: Callable[[str], str] | None = None,
    *,
    chunk_samples: int | None = None,
) -> ReferenceFileSystem:
    """References to every signal buffer of a NEO raw reader, as NEO describes them.

    Parameters
    ----------
    reader
        A NEO raw reader of a format whose buffers NEO describes (``BaseRawWithBufferApiIO``);
        its header is parsed if it was not yet.
    url_for
        Maps each local path NEO reads to the URL the references should point at; by default
        the absolute local path.
    chunk_samples
        Samples per chunk of interleaved buffers; by default about 4 MiB of samples. Buffers
        stored channel by channel get one chunk per channel, HDF5 buffers keep their chunks.

    Returns
    -------
    ReferenceFileSystem
        One array per buffer at ``"<buffer id>"`` (one block with one segment) or
        ``"block<b>/segment<s>/<buffer id>"``, whose ``neo`` attribute lists the streams stored
        in it: their columns, sampling rate, t_start and channels.

    Raises
    ------
    NotVirtualizable
        When the reader does not describe its buffers, or a buffer is compressed.
    """
    if getattr(reader, "header", None) is None:
        reader.parse_header()
    to_url = url_for if url_for is not None else _absolute_path
    header = reader.header
    # nb_segment is a list, or a dict keyed by block index (Open Ephys binary)
    n_segments = [int(header["nb_segment"][block]) for block in range(header["nb_block"])]
    single = header["nb_block"] == 1 and n_segments == [1]
    builder = RfsBuilder()
    builder.add_group(
        "",
        attributes={
            "neo": {
                "reader": type(reader).__name__,
                "nb_block": int(header["nb_block"]),
                "nb_segment": n_segments,
            }
        },
    )
    sources: dict[str, str] = {}
    for block in range(header["nb_block"]):
        for segment in range(n_segments[block]):
            for buffer in header["signal_buffers"]:
                buffer_id = str(buffer["id"])
                layout = buffer_layout(reader, block, segment, buffer_id)
                url = sources.setdefault(layout.path, to_url(layout.path))
                path = buffer_path(buffer_id, block, segment, single=single)
                streams = buffer_streams(reader, block, segment, buffer_id, layout.n_channels)
                attributes = {
                    "neo": {
                        "buffer_id": buffer_id,
                        "buffer_name": str(buffer["name"]),
                        "block_index": block,
                        "segment_index": segment,
                        "streams": [stream.to_json() for stream in streams],
                    }
                }
                _add_buffer(builder, path, layout, url, attributes, chunk_samples)
    for local, url in sources.items():
        # A file referenced by its own path is identified as the reads will check it (size,
        # mtime, sampled hash); one served elsewhere only by its size.
        info = probe_local(local)
        if is_local(url) and os.path.abspath(local_path(url)) == os.path.abspath(local):
            builder.add_source(
                url, size=info.size, mtime_ns=info.mtime_ns, sample_hash=info.sample_hash
            )
        else:
            builder.add_source(url, size=info.size)
    return builder.build()


def buffer_path(buffer_id: str, block: int, segment: int, *, single: bool) -> str:
    """Where a buffer's array goes in the reference file system."""
    return buffer_id if single else f"block{block}/segment{segment}/{buffer_id}"


def _add_buffer(
    builder: RfsBuilder,
    path: str,
    layout: Layout,
    url: str,
    attributes: dict[str, Any],
    chunk_samples: int | None,
) -> None:
    shape = [layout.n_samples, layout.n_channels]
    common: dict[str, Any] = {
        "shape": shape,
        "data_type": layout.dtype,
        "attributes": attributes,
        "dimension_names": ["time", "channel"],
    }
    match layout:
        case ChunkedLayout():
            codecs = [bytes_codec(layout.dtype)]
            if layout.channel_major:
                # The file stores each chunk channels by time: transposed back on read.
                codecs.insert(0, {"name": "transpose", "configuration": {"order": [1, 0]}})
            builder.add_array(path, chunk_shape=layout.chunk_shape, codecs=codecs, **common)
            if len(layout.chunks) > MANIFEST_THRESHOLD:
                builder.add_index(path, url, _chunk_table(layout))
            else:
                for coords, (offset, size) in sorted(layout.chunks.items()):
                    builder.add_chunk(path, coords, url, offset, size)
        case ContiguousLayout(channel_major=True):
            # One chunk per channel: a channel's samples are the only contiguous bytes.
            builder.add_array(path, chunk_shape=[max(layout.n_samples, 1), 1], **common)
            if layout.n_samples and layout.n_channels:
                builder.add_strided_chunks(
                    path,
                    url=url,
                    start=layout.offset,
                    stride=layout.row_bytes,
                    length=layout.row_bytes,
                    count=layout.n_channels,
                    axis=1,
                )
        case ContiguousLayout():
            rows = chunk_samples or max(1, TARGET_CHUNK_BYTES // max(layout.row_bytes, 1))
            rows = max(1, min(rows, layout.n_samples))
            builder.add_array(path, chunk_shape=[rows, max(layout.n_channels, 1)], **common)
            if layout.n_samples and layout.n_channels:
                builder.add_contiguous_chunks(
                    path,
                    url=url,
                    start=layout.offset,
                    shape=shape,
                    chunk_shape=[rows, layout.n_channels],
                    itemsize=layout.dtype.itemsize,
                )


def _chunk_table(layout: ChunkedLayout) -> np.ndarray:
    extents = (layout.n_samples, layout.n_channels)
    grid = [-(-n // c) for n, c in zip(extents, layout.chunk_shape, strict=True)]
    table = np.full((*grid, 2), MISSING_CHUNK, dtype=np.uint64)
    for coords, location in layout.chunks.items():
        table[coords] = location
    return table


def _absolute_path(path: str) -> str:
    return str(Path(path).resolve())
