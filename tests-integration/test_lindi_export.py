"""`lindi_document` writes what LINDI reads as h5py reads the HDF5 file, and we read it back.

Files written by h5py (every kind of dataset LINDI has a form for) and by pynwb go through
``generate_rfs`` and ``lindi_document`` into a ``.lindi.json``; ``lindi.LindiH5pyFile`` (in its
own environment, built here with uv: lindi needs zarr 2) compares every dataset and attribute
with h5py (``lindi_compare.py``), and our ``open_rfs`` reads the same document back. What LINDI
cannot express is refused by name, or left out alone with ``strict=False``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import UnsupportedFeatureError, decode_attributes
from shadowzarr_store import open_rfs
from shadowzarr_store.kerchunk_export import ExportWarning
from shadowzarr_store.lindi_export import lindi_document

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

LINDI = ("lindi==0.4.6", "h5py", "numpy")
COMPARE = Path(__file__).with_name("lindi_compare.py")


@pytest.fixture(scope="session")
def lindi_python() -> Path:
    """The python of an environment with lindi (zarr 2), built once under the user's cache."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = base / "shadowzarr-tests" / "lindi-0.4.6"
    python = venv / "bin" / "python"
    if (venv / "ready").exists():
        return python
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv is not None, "uv is needed to build lindi's environment"
    shutil.rmtree(venv, ignore_errors=True)
    interpreter = os.path.realpath(sys.executable)
    subprocess.run([uv, "venv", "-q", "--python", interpreter, str(venv)], check=True)
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), *LINDI], check=True, timeout=600
    )
    (venv / "ready").touch()
    return python


def _plain_file(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "plain"
        f.attrs["f32"] = np.float32(1.5)
        f.attrs["shorts"] = np.arange(3, dtype=np.int16)
        f.attrs["one"] = np.array([7])
        f.attrs["nan"] = np.nan
        f.attrs["inf"] = np.array([1.0, -np.inf])
        f.attrs["names"] = np.array(["a", "bc"], dtype=h5py.string_dtype())
        f.attrs["fixed"] = np.bytes_(b"bytes!")
        f.create_dataset(
            "a", data=np.arange(1000, dtype="<f4").reshape(50, 20), chunks=(10, 20),
            compression="gzip", shuffle=True,
        )  # fmt: skip
        f.create_dataset("b", data=np.arange(24, dtype=">i4").reshape(2, 3, 4))
        f.create_dataset("scalar", data=3.25)
        f.create_dataset("text", data="hello")
        f.create_dataset("texts", data=["x", "yy", "zzz"], dtype=h5py.string_dtype())
        f.create_dataset("fixed", data=np.array([b"ab", b"cd"], dtype="S2"))
        f.create_dataset("checked", data=np.arange(10, dtype="u2"), chunks=(4,), fletcher32=True)
        f.create_dataset("empty", shape=(0, 3), dtype="f8")
        f.create_dataset("filled", shape=(6,), dtype="i4", chunks=(2,), fillvalue=-7)
        f["filled"][0:2] = [1, 2]
        f.create_dataset("complex", data=np.array([1 + 2j, 3 - 1j], dtype="c8"))
        records = np.array(
            [(1, 2.5, b"x"), (3, np.nan, b"yz")], dtype=[("i", "<i4"), ("x", "<f8"), ("s", "S2")]
        )
        f.create_dataset("records", data=records)
        linked = np.dtype([("start", "<i4"), ("count", "<i4"), ("series", h5py.ref_dtype)])
        f.create_dataset("linked", data=np.array([(0, 2, f["a"].ref), (2, 1, f["b"].ref)], linked))
        group = f.create_group("g")
        group.attrs["target"] = f["a"].ref
        group.create_dataset("refs", data=[f["a"].ref, f["b"].ref, f.ref], dtype=h5py.ref_dtype)
        group["hard"] = f["b"]
        f["soft"] = h5py.SoftLink("/a")
        f["g/soft_group"] = h5py.SoftLink("/g")
    return path


def _nwb_file(path: Path) -> Path:
    from pynwb import NWBHDF5IO, NWBFile, TimeSeries
    from pynwb.ecephys import ElectricalSeries
    from pynwb.file import Subject

    nwb = NWBFile(
        session_description="lindi export", identifier="lindi-1",
        session_start_time=dt.datetime(2024, 1, 1, tzinfo=dt.UTC), experimenter=["Ada"],
        subject=Subject(subject_id="m1", species="Mus musculus", age="P90D"),
    )  # fmt: skip
    device = nwb.create_device("probe")
    group = nwb.create_electrode_group("shank0", description="d", location="CA1", device=device)
    for i in range(4):
        nwb.add_electrode(
            x=float(i), y=0.0, z=0.0, imp=np.nan, location="CA1", filtering="none", group=group
        )
    region = nwb.create_electrode_table_region([0, 1, 2], "three electrodes")
    data = np.arange(300, dtype=np.int16).reshape(100, 3)
    nwb.add_acquisition(
        ElectricalSeries(name="es", data=data, electrodes=region, rate=1000.0, conversion=0.5)
    )
    series = TimeSeries(
        name="ts", data=np.linspace(0, 1, 50), unit="V", timestamps=np.arange(50) / 10
    )
    nwb.add_acquisition(series)
    nwb.add_acquisition(TimeSeries(name="linked", data=series, unit="V", timestamps=series))
    nwb.add_unit_column("quality", "sorting quality")
    nwb.add_unit(spike_times=[0.1, 0.2], quality="good")
    nwb.add_unit(spike_times=[0.3], quality="bad")
    with NWBHDF5IO(path, "w") as io:
        io.write(nwb)
    return path


def _lindi_compare(python: Path, source: Path, document: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(COMPARE), str(source), str(document)],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _write(source: Path, **options: Any) -> Path:
    target = source.with_suffix(".lindi.json")
    target.write_text(json.dumps(lindi_document(generate_rfs(str(source)), **options)))
    return target


@pytest.mark.parametrize("make", [_plain_file, _nwb_file], ids=["h5py", "pynwb"])
def test_lindi_reads_what_h5py_reads(make: Any, tmp_path: Path, lindi_python: Path) -> None:
    source = make(tmp_path / "file.h5")
    document = _write(source)
    report = _lindi_compare(lindi_python, source, document)
    assert report["missing"] == []
    assert report["mismatches"] == []
    with h5py.File(source) as f:
        names: list[str] = []
        f.visit(names.append)
        assert report["datasets"] == sum(isinstance(f[n], h5py.Dataset) for n in names)
    assert report["datasets"] >= 13
    assert report["attributes"] >= 8


@pytest.mark.parametrize("make", [_plain_file, _nwb_file], ids=["h5py", "pynwb"])
def test_we_read_our_lindi_document_back(make: Any, tmp_path: Path) -> None:
    """``open_rfs`` of the ``.lindi.json``: every dataset equal to h5py (references as their
    targets' paths, our convention), soft links as ``_LINKS``, attributes' values equal."""
    source = make(tmp_path / "file.h5")
    root = open_rfs(_write(source))
    assert dict(root.store.rfs.unsupported) == {}
    with h5py.File(source) as f:
        names: list[str] = []
        f.visit(names.append)
        for name in names:
            node = f[name]
            ours = root[name]
            _same_attributes(f, dict(node.attrs), decode_attributes(dict(ours.attrs)), name)
            if isinstance(node, h5py.Dataset):
                _same_values(f, node, ours[...], name)
        links = decode_attributes(dict(root.attrs)).get("_LINKS", [])
        for name in names:
            link = f.get(name, getlink=True)
            if isinstance(link, h5py.SoftLink):
                parent, _, leaf = name.rpartition("/")
                holder = root[parent] if parent else root
                entries = (
                    decode_attributes(dict(holder.attrs)).get("_LINKS", []) if parent else links
                )
                assert {"name": leaf, "source": ".", "path": link.path} in entries


def test_we_read_what_lindi_writes(tmp_path: Path, lindi_python: Path) -> None:
    """A ``.lindi.json`` written by lindi itself from a pynwb file (strings and references as
    Blosc-compressed JSON values, scalars, soft links) reads through ``open_rfs`` equal to h5py,
    nothing left out."""
    source = _nwb_file(tmp_path / "session.nwb")
    target = tmp_path / "session.lindi.json"
    script = (
        "import lindi, sys; f = lindi.LindiH5pyFile.from_hdf5_file(sys.argv[1], url=sys.argv[1]);"
        " f.write_lindi_file(sys.argv[2])"
    )
    done = subprocess.run(
        [str(lindi_python), "-c", script, str(source), str(target)],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    root = open_rfs(target)
    assert dict(root.store.rfs.unsupported) == {}
    compared = 0
    with h5py.File(source) as f:
        names: list[str] = []
        f.visit(names.append)
        for name in names:
            node, ours = f[name], root[name]
            _same_attributes(f, dict(node.attrs), decode_attributes(dict(ours.attrs)), name)
            if isinstance(node, h5py.Dataset):
                _same_values(f, node, ours[...], name)
                compared += 1
    assert compared >= 30


def _same_values(f: h5py.File, node: h5py.Dataset, ours: Any, name: str) -> None:
    expected = node[()]
    assert np.shape(ours) == node.shape, name
    if h5py.check_dtype(ref=node.dtype) is not None:
        assert [str(p) for p in np.ravel(ours)] == [f[r].name for r in np.ravel(expected)], name
    elif node.dtype.names is not None:
        for field in node.dtype.names:
            if h5py.check_dtype(ref=node.dtype[field]) is not None:  # targets' paths
                paths = [f[r].name for r in np.ravel(expected[field])]
                assert [str(p) for p in np.ravel(ours[field])] == paths, name
                continue
            np.testing.assert_array_equal(ours[field], expected[field], err_msg=name)
    elif node.dtype.kind in "OS":
        texts = [v.decode() if isinstance(v, bytes) else v for v in np.ravel(expected)]
        assert [str(v) for v in np.ravel(ours)] == texts, name
    else:
        assert ours.dtype == node.dtype.newbyteorder("="), name  # zarr gives native order
        np.testing.assert_array_equal(ours, expected, err_msg=name)


def _same_attributes(
    f: h5py.File, expected: dict[str, Any], ours: dict[str, Any], name: str
) -> None:
    for key, value in expected.items():
        assert key in ours, (name, key)
        if isinstance(value, h5py.Reference):
            assert ours[key]["_REFERENCE"]["path"] == f[value].name, (name, key)
        elif np.asarray(value).dtype.kind in "OSU":
            flat = [v.decode() if isinstance(v, bytes) else v for v in np.ravel(value)]
            assert [str(v) for v in np.ravel(ours[key])] == flat, (name, key)
        else:
            np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(value), err_msg=key)


def _refused_file(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f.create_dataset("kept", data=np.arange(4.0))
        data = f.create_dataset("data", data=np.arange(10.0))
        f.create_dataset("regions", data=[data.regionref[2:5]], dtype=h5py.regionref_dtype)
        sequences = f.create_dataset("sequences", (2,), dtype=h5py.vlen_dtype(np.float32))
        sequences[0] = [1.0, 2.0]
        sequences[1] = [3.0]
        f["kept"].attrs["z"] = np.complex64(1 + 2j)
        f["kept"].attrs["label"] = "kept"
        f["outside"] = h5py.ExternalLink("other.h5", "/x")
    return path


def test_what_lindi_cannot_express_is_refused_by_name(tmp_path: Path, lindi_python: Path) -> None:
    source = _refused_file(tmp_path / "refused.h5")
    rfs = generate_rfs(str(source))
    with pytest.raises(UnsupportedFeatureError, match=r"^outside: .* an external link"):
        lindi_document(rfs)  # the root's links come first
    with pytest.warns(ExportWarning) as caught:
        document = lindi_document(rfs, strict=False)
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, ExportWarning))
    assert any(m.startswith("kept attribute 'z': left out: a complex number") for m in messages)
    assert any(m.startswith("outside: left out: an external link") for m in messages)
    assert any(m.startswith("regions: left out: region references") for m in messages)
    assert any(m.startswith("sequences: left out: variable-length sequences") for m in messages)
    target = tmp_path / "refused.lindi.json"
    target.write_text(json.dumps(document))
    report = _lindi_compare(lindi_python, source, target)
    assert sorted(name for name, _ in report["missing"]) == ["regions", "sequences"]
    assert report["mismatches"] == [["kept", "attribute names differ: ['z']"]]
    assert report["datasets"] == 2  # kept and data, equal to h5py's
