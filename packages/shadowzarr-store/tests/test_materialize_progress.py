"""materialize reports bytes of array data over the whole run, and verification as its own
phase (so a display does not sit at "done" while every array is read back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from shadowzarr_spec import RfsBuilder, write_rfs

from shadowzarr_store import materialize
from shadowzarr_store.materialize import MaterializeStep

if TYPE_CHECKING:
    from pathlib import Path


def test_steps_count_bytes_and_verify_separately(tmp_path: Path) -> None:
    values = np.arange(3000 * 4, dtype="<i4").reshape(3000, 4)
    raw = tmp_path / "raw.bin"
    raw.write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    for name in ("a", "b"):
        builder.add_array(name, shape=[3000, 4], data_type="<i4", chunk_shape=[100, 4])
        builder.add_contiguous_chunks(
            name, url=str(raw), start=0, shape=[3000, 4], chunk_shape=[100, 4], itemsize=4
        )
    refs = write_rfs(builder.build(), tmp_path / "refs.shadowzarr")
    steps: list[MaterializeStep] = []
    materialize(
        refs, tmp_path / "out.zarr", verify=True, progress=steps.append, target_chunk_bytes=8_000
    )
    total = 2 * values.nbytes
    copy = [s for s in steps if s.phase == "copy"]
    verify = [s for s in steps if s.phase == "verify"]
    assert {s.total for s in steps} == {total}
    assert copy[-1].done == total
    assert verify[-1].done == total
    assert verify[-1].arrays_done == 2
    assert [s.done for s in copy] == sorted(s.done for s in copy)  # never goes back
    assert len(verify) > 2  # it moves while arrays are read back
    again: list[MaterializeStep] = []
    materialize(refs, tmp_path / "plain.zarr", progress=again.append, target_chunk_bytes=8_000)
    assert {s.phase for s in again} == {"copy"}
