"""The recordings the tests write are read by NEO as written: every stream of every segment."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from neo_cases import REAL, every_written_case

if TYPE_CHECKING:
    from pathlib import Path


def _stream_keys(reader) -> set[tuple[int, int, str]]:
    return {
        (block, seg, str(stream_id))
        for block in range(reader.header["nb_block"])
        for seg in range(int(reader.header["nb_segment"][block]))
        for stream_id in reader.header["signal_streams"]["id"]
    }


@every_written_case
def test_neo_reads_the_values_written(write, tmp_path: Path) -> None:
    recording = write(tmp_path)
    reader = recording.open()
    assert _stream_keys(reader) == set(recording.signals)
    stream_ids = list(reader.header["signal_streams"]["id"])
    for (block, seg, stream_id), expected in recording.signals.items():
        stream_index = stream_ids.index(stream_id)
        got = reader.get_analogsignal_chunk(block, seg, None, None, stream_index)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        middle = reader.get_analogsignal_chunk(block, seg, 3, 17, stream_index, [0])
        np.testing.assert_array_equal(middle, expected[3:17, [0]])


def test_real_recordings_are_there(tmp_path: Path) -> None:
    """Every file of tests/data/ephys that the cases name is there (see its README)."""
    axon = ["171116sh_0011", "2018_12_15_0000", "File_axon_7", "multichannelAbf1WithTags"]
    assert set(REAL) == {"brainvision-real", *(f"axon-{name}" for name in axon)}
    for write in REAL.values():
        reader = write(tmp_path).open()
        assert reader.header["signal_streams"].size >= 1
