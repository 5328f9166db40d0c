"""The layout found for every stream holds exactly what NEO reads, for every block and segment."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
from neo_cases import virtual_cases
from neo_read_sources import read_layout
from shadowzarr_spec.errors import NotVirtualizable

from shadowzarr_neo.errors import ComputedStream
from shadowzarr_neo.sources import StreamSource
from shadowzarr_neo.stream_sources import stream_sources

if TYPE_CHECKING:
    from pathlib import Path


@virtual_cases
def test_layouts_hold_what_neo_reads(write, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Blackrock without its NEV file
        reader = write(tmp_path).open()
    header = reader.header
    stream_ids = [str(s) for s in header["signal_streams"]["id"]]
    checked = 0
    for block in range(header["nb_block"]):
        for seg in range(int(header["nb_segment"][block])):
            sources = stream_sources(reader, block, seg)
            assert list(sources) == stream_ids
            for stream_id, source in sources.items():
                if isinstance(source, NotVirtualizable):
                    assert isinstance(source, ComputedStream)  # the only refusal in these cases
                    assert type(reader).__name__ == "IntanRawIO"
                    continue
                assert isinstance(source, StreamSource)
                index = stream_ids.index(stream_id)
                expected = reader.get_analogsignal_chunk(block, seg, None, None, index)
                got = read_layout(source.layout)
                assert got.dtype == expected.dtype
                np.testing.assert_array_equal(got, expected)
                assert source.attributes["sampling_rate"] == reader.get_signal_sampling_rate(index)
                assert len(source.attributes["channel_ids"]) == expected.shape[1]
                checked += 1
    assert checked >= 1
