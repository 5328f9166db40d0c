"""Files that used to be refused whole: each problem now costs one dataset (or one link) at most.

Every file here is written by h5py and then patched byte by byte into the shape old or unusual
writers leave (an undefined fill value, a user-defined link, corrupt storage). Each one is
generated, and every dataset is compared with h5py through the product's reader: what h5py
reads must read equal, and what it cannot must be in ``unsupported`` with its reason.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_spec import (
    ConventionTypeWarning,
    UnsupportedDatasetWarning,
    UnsupportedFeatureError,
)
from shadowzarr_testing.compare import assert_array_equal_exact
from shadowzarr_testing.hdf5_compare import compare_hdf5

from shadowzarr_hdf5 import generate_rfs
from shadowzarr_hdf5.format.checksum import lookup3

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

MARK = 0x7B3C1D2E
"""A fill value whose four bytes occur nowhere else in the files: it finds the fill messages."""


def _generated(path: Path, open_refs: Any, **options: Any) -> tuple[Any, Any]:
    rfs = generate_rfs(path, **options)
    root = open_refs(rfs)
    compare_hdf5(path, root, rfs)
    return rfs, root


def _undefine_fill_values(path: Path) -> None:
    """Clear "fill value defined" in every version 2 fill value message holding MARK: how
    HDF5 1.6 era files without a fill value look."""
    data = bytearray(path.read_bytes())
    patched = 0
    for match in re.finditer(re.escape(struct.pack("<I", MARK)), data):
        at = match.start()
        if data[at - 8] == 2 and data[at - 5] == 1:  # version 2, ..., defined, size, value
            data[at - 5] = 0
            patched += 1
    assert patched
    path.write_bytes(bytes(data))


def _write_undefined_fill(path: Path) -> None:
    records = np.dtype([("a", "<i4"), ("b", "<f8")])
    with h5py.File(path, "w", libver="earliest") as f:
        partly = f.create_dataset("partly", shape=(40,), dtype="<i4", chunks=(10,), fillvalue=MARK)
        partly[:10] = np.arange(10)
        gzip = f.create_dataset(
            "gzip", shape=(3000,), dtype="<i4", chunks=(500,), fillvalue=MARK, compression="gzip"
        )
        gzip[1000:1500] = np.arange(500)
        rows = f.create_dataset(
            "records",
            shape=(6,),
            dtype=records,
            chunks=(3,),
            fillvalue=np.array((MARK, 0.5), records),
        )
        rows[:3] = np.array([(1, 2.0)] * 3, records)
        f.create_dataset("never_written", shape=(5,), dtype="<i4", fillvalue=MARK)
        f["plain"] = np.arange(4.0)
    _undefine_fill_values(path)


def test_undefined_fill_value_reads_as_h5py_does(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "undefined_fill.h5"
    _write_undefined_fill(path)
    with h5py.File(path) as f:
        with pytest.raises(RuntimeError, match="undefined"):
            f["partly"].fillvalue  # noqa: B018 - what refused these files
        assert f["partly"][-1] == 0  # HDF5 leaves unwritten chunks alone: h5py's zeros
    with pytest.warns(UnsupportedDatasetWarning, match="never_written"):
        rfs, root = _generated(path, open_refs)
    # Nothing was ever stored there: HDF5 refuses to read it, and so do the references.
    assert set(rfs.unsupported) == {"never_written"}
    assert "undefined fill value" in rfs.unsupported["never_written"].reason
    assert root["partly"][12] == 0
    assert root["gzip"][0] == 0
    assert_array_equal_exact(root["gzip"][1000:1500], np.arange(500, dtype="<i4"))


def test_undefined_fill_value_through_h5py_alone(tmp_path: Path, open_refs: Any) -> None:
    """Named datasets are opened in h5py only (no header reader): the same reads."""
    path = tmp_path / "undefined_fill.h5"
    _write_undefined_fill(path)
    rfs = generate_rfs(path, datasets=["partly", "gzip", "records"])
    root = open_refs(rfs)
    with h5py.File(path) as f:
        for name in ["partly", "gzip", "records"]:
            assert root[name][...].tobytes() == f[name][()].tobytes(), name
    with pytest.raises(UnsupportedFeatureError, match=r"'never_written'.*undefined fill"):
        generate_rfs(path, datasets=["never_written"])


def _user_defined_link(path: Path, name: bytes, target: bytes) -> None:
    """Turn the soft link ``name`` into a user-defined link of class 99 (its data: the soft
    link's path), fixing the object header's checksum."""
    data = bytearray(path.read_bytes())
    tail = bytes([len(name)]) + name + struct.pack("<H", len(target)) + target
    at = data.find(tail)
    assert at > 0
    assert data.find(tail, at + 1) == -1
    assert data[at - 1] == 1  # link type: soft
    data[at - 1] = 99  # 64 is an external link; 65 to 255 are user-defined classes
    start = data.rfind(b"OHDR", 0, at)
    flags = data[start + 5]
    size_at = start + 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
    width = 1 << (flags & 3)
    end = size_at + width + int.from_bytes(data[size_at : size_at + width], "little")
    data[end : end + 4] = struct.pack("<I", lookup3(bytes(data[start:end])))
    path.write_bytes(bytes(data))


def test_user_defined_link_is_recorded_not_fatal(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "user_link.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f["data"] = np.arange(10)
        f["target"] = np.arange(3)
        f["soft"] = h5py.SoftLink("/target")
        f["strange"] = h5py.SoftLink("/target")
    _user_defined_link(path, b"strange", b"/target")
    with h5py.File(path) as f, pytest.raises(TypeError, match="Unknown link type"):
        f.get("strange", getlink=True)
    with pytest.warns(UnsupportedDatasetWarning, match="strange"):
        rfs, root = _generated(path, open_refs)
    assert rfs.unsupported["strange"].outcome == "omitted"
    assert "user-defined link (class 99)" in rfs.unsupported["strange"].reason
    assert "strange" not in root
    assert {"name": "soft", "source": ".", "path": "/target"} in root.attrs["_LINKS"]
    with pytest.raises(UnsupportedFeatureError, match="'strange'"):
        generate_rfs(path, strict=True)


def test_types_no_reference_holds_cost_their_dataset_only(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "types.h5"
    sequences = h5py.vlen_dtype("u1")
    pair = np.dtype([("first", sequences), ("second", sequences)])
    values = np.empty(2, dtype=pair)
    values[0] = (np.frombuffer(b"ab", "u1"), np.frombuffer(b"xyz", "u1"))
    values[1] = (np.frombuffer(b"", "u1"), np.frombuffer(b"q", "u1"))
    with h5py.File(path, "w") as f:
        f.create_dataset("pair", data=values)
        scalar = f.create_dataset("scalar_sequence", shape=(), dtype=h5py.vlen_dtype("f4"))
        scalar[()] = np.array([1.5, -2.0, 3.25], "f4")
        rows = f.create_dataset("sequences", shape=(3,), dtype=h5py.vlen_dtype("f4"))
        rows[0], rows[2] = np.array([1.0, 2.0], "f4"), np.array([3.0], "f4")
        f["plain"] = np.arange(5)
    with (
        pytest.warns(UnsupportedDatasetWarning, match="pair"),
        pytest.warns(ConventionTypeWarning, match=r"scalar_sequence .*; sequences "),
    ):
        rfs, root = _generated(path, open_refs)
    assert set(rfs.unsupported) == {"pair"}
    assert "variable-length sequences" in rfs.unsupported["pair"].reason
    assert root["scalar_sequence"].shape == ()
    assert root["scalar_sequence"].attrs["_VLEN_DTYPE"] == "<f4"


def test_datasets_h5py_cannot_read_are_refused_alone(tmp_path: Path, open_refs: Any) -> None:
    path = tmp_path / "corrupt.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f["good"] = np.arange(20.0)
        f["beyond_eof"] = np.arange(7, dtype="<i4")
        gzip = f.create_dataset(
            "corrupt_gzip", data=np.arange(50, dtype="<i4"), chunks=(50,), compression="gzip"
        )
        f.create_dataset("names", data=["alpha", "beta"], dtype=h5py.string_dtype())
        beyond = f["beyond_eof"].id.get_offset()
        chunk = gzip.id.get_chunk_info(0)
    data = bytearray(path.read_bytes())
    layout = struct.pack("<QQ", beyond, 28)  # the contiguous layout's address and size
    at = data.find(layout)
    assert at > 0
    assert data.find(layout, at + 1) == -1
    data[at : at + 8] = struct.pack("<Q", len(data) + 10**6)
    data[chunk.byte_offset : chunk.byte_offset + chunk.size] = bytes(range(7, 7 + chunk.size))
    heap = data.find(b"GCOL")  # the strings' global heap collection
    data[heap : heap + 4] = b"XXXX"
    path.write_bytes(bytes(data))
    with h5py.File(path) as f:
        for name in ["corrupt_gzip", "names"]:
            with pytest.raises(OSError, match="Can't synchronously read data"):
                f[name][()]
        with pytest.raises(KeyError, match="corruption"):
            f["beyond_eof"]
    for parse_indexes in [True, False]:
        with pytest.warns(UnsupportedDatasetWarning, match="3 dataset"):
            rfs, root = _generated(path, open_refs, parse_indexes=parse_indexes)
        assert set(rfs.unsupported) == {"beyond_eof", "corrupt_gzip", "names"}
        assert all("HDF5 cannot" in u.reason for u in rfs.unsupported.values())
        assert {o.outcome for o in rfs.unsupported.values()} == {"omitted"}
        assert_array_equal_exact(root["good"][...], np.arange(20.0))


def test_a_float_type_numpy_cannot_represent_costs_its_dataset_only(
    tmp_path: Path, open_refs: Any
) -> None:
    """IEEE quadruple precision (PyTables' float.h5): h5py has no numpy type for it, and its
    ValueError refused the whole file; now that dataset alone is omitted, with its reason."""
    path = tmp_path / "quad.h5"
    with h5py.File(path, "w") as f:
        quad = h5py.h5t.IEEE_F64LE.copy()
        quad.set_size(16)
        quad.set_precision(128)
        quad.set_fields(127, 112, 15, 0, 112)
        quad.set_ebias(16383)
        space = h5py.h5s.create_simple((4,))
        h5py.h5d.create(f.id, b"quadprecision", quad, space)
        f.create_dataset("plain", data=np.arange(6.0))
    with h5py.File(path) as f, pytest.raises(ValueError, match="Insufficient precision"):
        _ = f["quadprecision"].dtype
    with pytest.warns(UnsupportedDatasetWarning, match="quadprecision"):
        rfs, root = _generated(path, open_refs)
    assert rfs.unsupported["quadprecision"].outcome == "omitted"
    assert "numpy cannot represent" in rfs.unsupported["quadprecision"].reason
    assert_array_equal_exact(root["plain"][...], np.arange(6.0))


def test_an_hdf5_time_type_costs_its_dataset_only(tmp_path: Path, open_refs: Any) -> None:
    """PyTables' time columns are HDF5 time types, which h5py has no numpy type for (its
    TypeError refused the whole file): that dataset alone is omitted, with its reason."""
    import tables

    path = tmp_path / "times.h5"
    with tables.open_file(path, "w") as t:
        t.create_carray("/", "times", atom=tables.Time64Atom(), obj=np.arange(4.0) / 3)
        t.create_array("/", "plain", obj=np.arange(5, dtype="<i8"))
    with h5py.File(path) as f, pytest.raises(TypeError, match="TypeTimeID"):
        _ = f["times"].dtype
    with pytest.warns(UnsupportedDatasetWarning, match="times"):
        rfs, root = _generated(path, open_refs)
    assert rfs.unsupported["times"].outcome == "omitted"
    assert "numpy cannot represent" in rfs.unsupported["times"].reason
    assert_array_equal_exact(root["plain"][...], np.arange(5, dtype="<i8"))
