"""Packed inner chunks of the grouped view read exactly what the chunks as stored read, for a
sound chunk index and for damaged ones: the same values, or the same typed error naming the
same chunk."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import ShadowzarrError

from shadowzarr_store import open_rfs

CHUNK = 8 * 8 * 4  # bytes of one stored chunk


def _damage(kind: str, table: np.ndarray, file_size: int) -> None:
    offsets = table[:, 0, 0]
    if kind == "over-long":
        table[3, 0, 1] = CHUNK + 8
    elif kind == "short":
        table[5, 0, 1] = CHUNK - 12  # an uncompressed chunk shorter than full: padded
    elif kind == "past the end":
        table[7, 0, 0] = file_size + 100
    elif kind == "reaching past the end":
        table[9, 0, 0] = file_size - 100  # the recorded size proves the rest missing
    elif kind == "swapped":
        offsets[[2, 11]] = offsets[[11, 2]]
    elif kind == "repeated":
        offsets[20:30] = offsets[20]
    elif kind == "never written":
        table[40:60] = np.iinfo(np.uint64).max


@pytest.mark.parametrize(
    "kind",
    ["sound", "over-long", "short", "past the end", "reaching past the end", "swapped",
     "repeated", "never written"],
)
def test_packed_reads_equal_stored_reads(tmp_path: Path, kind: str) -> None:
    values = np.arange(200 * 8 * 8, dtype="<i4").reshape(1600, 8)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(8, 8), fillvalue=-3)
    rfs = generate_rfs(tmp_path / "f.h5", chunk_index_threshold=10, progress=False)
    _damage(kind, rfs.indexes["x"].table, (tmp_path / "f.h5").stat().st_size)
    packed, stored = open_rfs(rfs)["x"], open_rfs(rfs, grouped_view=0)["x"]
    assert packed.chunks != stored.chunks == (8, 8)
    try:
        whole = stored[:]
    except ShadowzarrError as exc:
        failure: ShadowzarrError | None = exc
    else:
        failure = None
    for selection in (np.s_[:], np.s_[30:90, 2:5], np.s_[1599, :]):
        if failure is None:
            np.testing.assert_array_equal(packed[selection], whole[selection])
            continue
        # a damaged chunk fails every read of its pack (a selection may not touch it, but its
        # pack's bytes cannot be made without it), with the error the chunk as stored raises
        with pytest.raises(type(failure)) as raised:
            packed[selection]
        assert str(raised.value) == str(failure)
    if kind == "sound":
        np.testing.assert_array_equal(whole, values)
