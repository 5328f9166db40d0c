"""A dataset's plan is all that writing it needs: planned while the file is open, emitted after
it is closed, the array reads back what h5py read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_spec import FileRef, RfsBuilder
from shadowzarr_store import open_rfs_array

from shadowzarr_hdf5.context import Options, Source
from shadowzarr_hdf5.emit.dataset import emit_dataset
from shadowzarr_hdf5.object_paths import ObjectPaths
from shadowzarr_hdf5.plan.dataset import plan_dataset
from shadowzarr_hdf5.plan.dataset_plan import (
    DatasetPlan,
    InlineChunks,
    References,
    Slabs,
    StoredChunks,
)


def _write(path: Path) -> None:
    with h5py.File(path, "w") as f:
        values = np.arange(4000, dtype="<i4").reshape(40, 100)
        f.create_dataset("chunked", data=values, chunks=(10, 50), compression="gzip", shuffle=True)
        f.create_dataset("indexed", data=np.arange(3000, dtype="<u2"), chunks=(10,))
        f.create_dataset("contiguous", data=np.linspace(0, 1, 5000, dtype=">f8"))
        f.create_dataset("small", data=np.arange(10, dtype="u1"))
        f.create_dataset("strings", data=["a", "bb", "ccc"], dtype=h5py.string_dtype())
        f.create_dataset("empty", shape=(0, 3), dtype="i2")
        segment = (path.with_suffix(".raw"), 0, 512)
        f.create_dataset("external", data=np.arange(64, dtype="<i8"), external=[segment])


def test_a_plan_emitted_after_the_file_is_closed_reads_back_as_h5py_reads(tmp_path: Path) -> None:
    path = tmp_path / "f.h5"
    _write(path)
    expected: dict[str, np.ndarray] = {}
    plans: list[DatasetPlan] = []
    with h5py.File(path, "r") as f, open(path, "rb") as raw:

        def read_bytes(offset: int, size: int) -> bytes:
            raw.seek(offset)
            return raw.read(size)

        source = Source(
            file=f, url=str(path), base=str(tmp_path), paths=ObjectPaths(f), read_bytes=read_bytes
        )
        options = Options(manifest_threshold=100)
        for name in f:
            plans.append(plan_dataset(f[name], name, source, options))
            expected[name] = np.asarray(f[name][()])
    placements = {plan.path: type(plan.placement) for plan in plans}
    assert placements == {
        "chunked": StoredChunks,
        "contiguous": Slabs,
        "empty": InlineChunks,
        "external": Slabs,
        "indexed": StoredChunks,
        "small": InlineChunks,
        "strings": InlineChunks,
    }
    indexed = next(p.placement for p in plans if p.path == "indexed")
    assert isinstance(indexed, StoredChunks)
    assert indexed.as_index  # 300 chunks > 100
    with pytest.raises(dataclasses.FrozenInstanceError):
        plans[0].shape = (1,)  # type: ignore[misc]

    builder = RfsBuilder()
    for plan in plans:  # the file is closed: emit sees nothing but the plan
        emit_dataset(builder, plan)
    rfs = builder.build()
    for name, values in expected.items():
        got = np.asarray(open_rfs_array(rfs, name)[...])
        if values.dtype.kind == "O":  # h5py reads variable-length strings as bytes
            assert [str(v) for v in got.ravel()] == [v.decode() for v in values.ravel()]
            continue
        np.testing.assert_array_equal(got, values, err_msg=name)


def test_references_one_by_one_are_written_as_planned() -> None:
    plan = DatasetPlan(
        path="x", shape=(4,), data_type=np.dtype("<i4"), chunk_shape=(2,),
        codecs=({"name": "bytes", "configuration": {"endian": "little"}},), fill_value=0,
        attributes={"a": 1}, dimension_names=("t",),
        placement=References((((0,), "one.bin", 0, 8), ((1,), "two.bin", 16, 8))),
    )  # fmt: skip
    builder = RfsBuilder()
    emit_dataset(builder, plan)
    rfs = builder.build()
    assert rfs.refs["x/c/0"] == FileRef("one.bin", 0, 8)
    assert rfs.refs["x/c/1"] == FileRef("two.bin", 16, 8)
