"""Region references keep their region: every kind of selection, read back as h5py reads it."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_spec import decode_attributes
from shadowzarr_spec.region_references import (
    REGION_REFERENCE_DTYPE,
    AllRegion,
    Blocks,
    Hyperslab,
    NoRegion,
    Points,
    region_references,
)
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_hdf5 import generate_rfs

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")


def _space_reference(f: h5py.File, target: h5py.Dataset, select: Any) -> Any:
    space = target.id.get_space()
    select(space)
    return h5py.h5r.create(f.id, target.name.encode(), h5py.h5r.DATASET_REGION, space)


def _write(path: Path) -> None:
    with h5py.File(path, "w") as f:
        table = f.create_dataset("target/table", data=np.arange(60, dtype="i4").reshape(6, 10))
        line = f.create_dataset("target/line", data=np.linspace(0, 1, 25))
        regions = f.create_dataset("regions", shape=(9,), dtype=h5py.regionref_dtype)
        regions[0] = table.regionref[2:5, 1:3]
        regions[1] = table.regionref[...]
        regions[2] = table.regionref[::2, 3]
        regions[3] = table.regionref[1:6:2, 0:10:3]
        regions[4] = _space_reference(
            f, table, lambda s: s.select_elements(np.array([[0, 0], [5, 9], [2, 3]]))
        )

        def union(space: Any) -> None:
            space.select_hyperslab((0, 0), (2, 2))
            space.select_hyperslab((3, 5), (2, 3), op=h5py.h5s.SELECT_OR)

        regions[5] = _space_reference(f, table, union)
        regions[6] = _space_reference(f, line, lambda s: s.select_none())
        regions[7] = line.regionref[3:20:4]
        # regions[8] stays a null reference
        f.attrs["one_region"] = table.regionref[1:2, 4:8]
        square = f.create_dataset("square", shape=(2, 2), dtype=h5py.regionref_dtype)
        square[0, 0], square[1, 1] = line.regionref[:5], table.regionref[0]


def test_every_selection_reads_back_like_h5py(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "regions.h5"
    _write(path)
    root = open_refs(generate_rfs(path))
    assert root["regions"].attrs["_DTYPE"] == REGION_REFERENCE_DTYPE
    stored = region_references(root["regions"][...])
    kinds = [type(r.selection) for r in stored]
    assert kinds == [Hyperslab, AllRegion, Hyperslab, Hyperslab, Points, Blocks, NoRegion,
                     Hyperslab, NoRegion]  # fmt: skip
    with h5py.File(path) as f:
        for index, (ours, theirs) in enumerate(zip(stored, f["regions"][...], strict=True)):
            if not theirs:
                assert ours.path == ""
                continue
            target = f[theirs]
            assert ours.path == target.name
            assert_array_equal_exact(
                ours.apply(root[ours.path.lstrip("/")]), target[theirs], f"regions[{index}]"
            )
        square = region_references(root["square"][...])
        for index in np.ndindex(2, 2):
            ref = f["square"][index]
            if ref:
                found = square[index]
                assert_array_equal_exact(found.apply(root[found.path.lstrip("/")]), f[ref][ref])
            else:
                assert square[index].path == ""


def test_attribute_region_reference_is_not_an_object_reference(
    tmp_path: Path, open_refs: Any
) -> None:
    path = tmp_path / "regions.h5"
    _write(path)
    value = decode_attributes(dict(open_refs(generate_rfs(path)).attrs))["one_region"]
    assert "_REFERENCE" not in value
    assert value["_REGION_REFERENCE"]["path"] == "/target/table"
    assert value["_REGION_REFERENCE"]["selection"]["kind"] == "hyperslab"


def test_nwbzarrio_refuses_region_references_as_pynwb_does(tmp_path: Path) -> None:
    """hdmf 6 (and so hdmf-zarr) has no region references: an NWB 2.0-style region reference
    (MatNWB's ElectrodeTableRegion) fails loudly in NWBZarrIO, as it does in NWBHDF5IO, rather
    than reading as the whole electrodes table."""
    from hdmf.build import ConstructError
    from hdmf_zarr.nwb import NWBZarrIO
    from pynwb import NWBHDF5IO, NWBFile
    from pynwb.testing.mock.ecephys import mock_ElectricalSeries
    from shadowzarr_store import RfsStore

    nwbfile = NWBFile("regions", "id", datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC))
    mock_ElectricalSeries(nwbfile=nwbfile, name="series")
    path = tmp_path / "regions.nwb"
    with NWBHDF5IO(path, "w") as io:
        io.write(nwbfile)
    with h5py.File(path, "a") as f:
        series = f["acquisition/series"]
        attributes = dict(series["electrodes"].attrs)
        del series["electrodes"]
        electrodes = series.create_dataset("electrodes", shape=(1,), dtype=h5py.regionref_dtype)
        electrodes[0] = f["general/extracellular_ephys/electrodes/id"].regionref[0:2]
        electrodes.attrs.update(attributes)
    with NWBHDF5IO(path, "r") as io, pytest.raises(ConstructError):
        io.read()
    rfs = generate_rfs(path)
    assert rfs.unsupported == {}
    with NWBZarrIO(RfsStore(rfs), mode="r") as io, pytest.raises(ConstructError):
        io.read()


def test_regions_of_a_big_endian_dataset_compare_equal(tmp_path: Path, open_refs: Any) -> None:
    """The HDF Group's tallrw.h5: region references into a big-endian float32 dataset. The
    comparison with h5py reads the region natively ordered, as zarr gives it (it reported a
    byte-order difference where the values are equal)."""
    from shadowzarr_testing.hdf5_compare import compare_hdf5

    path = tmp_path / "regions_be.h5"
    with h5py.File(path, "w") as f:
        data = f.create_dataset("data", data=np.arange(12, dtype=">f4").reshape(3, 4))
        refs = f.create_dataset("myrefs", shape=(2,), dtype=h5py.regionref_dtype)
        refs[0], refs[1] = data.regionref[1:, ::2], data.regionref[0, 1:3]
    rfs = generate_rfs(path, inline_threshold=0)
    compare_hdf5(path, open_refs(rfs), rfs)
