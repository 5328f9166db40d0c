"""Property test: for random raw binary layouts and chunk heights, the references equal NEO."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neo_recordings.rawbinary import write_rawbinary
from shadowzarr_store import open_rfs

from shadowzarr_neo import generate_rfs_neo, virtual_arrays_neo


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_channels=st.integers(1, 9),
    n_samples=st.integers(1, 400),
    dtype=st.sampled_from(["int16", "uint16", ">i2", "int32", "float32", "float64", "uint8"]),
    header_bytes=st.integers(0, 40),
    partial_tail=st.integers(0, 8),
    chunk_samples=st.integers(1, 500),
    seed=st.integers(0, 2**16),
)
def test_raw_binary_equals_neo(
    n_channels: int,
    n_samples: int,
    dtype: str,
    header_bytes: int,
    partial_tail: int,
    chunk_samples: int,
    seed: int,
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        recording = write_rawbinary(
            Path(directory),
            n_channels=n_channels,
            n_samples=n_samples,
            dtype=dtype,
            header_bytes=header_bytes,
            partial_tail=partial_tail,
            seed=seed,
        )
        reader = recording.open()  # generate_rfs_neo parses headers itself too
        expected = reader.get_analogsignal_chunk(0, 0, None, None, 0)
        np.testing.assert_array_equal(expected, recording.signals[0, 0, "0"])
        root = open_rfs(generate_rfs_neo(reader, chunk_samples=chunk_samples))
        np.testing.assert_array_equal(root["0"][:], expected)
        start = n_samples // 3
        np.testing.assert_array_equal(root["0"][start:], expected[start:])
        array = virtual_arrays_neo(reader, chunk_samples=chunk_samples)["0"]
        from shadowzarr_spec import RfsBuilder

        builder = RfsBuilder()
        builder.add_group("")
        array[start:].add_to(builder, "tail")
        np.testing.assert_array_equal(open_rfs(builder.build())["tail"][:], expected[start:])


def test_an_unparsed_reader_is_parsed(tmp_path: Path) -> None:
    recording = write_rawbinary(tmp_path, n_channels=3, n_samples=50)
    reader = recording.reader_class(**recording.reader_kwargs)
    rfs = generate_rfs_neo(reader)
    np.testing.assert_array_equal(open_rfs(rfs)["0"][:], recording.signals[0, 0, "0"])
