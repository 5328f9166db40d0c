"""Our references as kerchunk version-1 JSON with Zarr v2 keys, read by fsspec's reference
file system and zarr-python (Zarr v2) equal to h5py: listed refs, gen entries and chunk
manifests, local and over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fsspec
import h5py
import numpy as np
import pytest
import zarr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs

from shadowzarr_store import open_rfs
from shadowzarr_store.kerchunk_export import ExportWarning, kerchunk_document


def _write(path: Path) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    values: dict[str, Any] = {
        "gzip": rng.normal(size=(64, 12)).astype("<f4"),
        "big_endian": np.arange(3000, dtype=">i4"),
        "scalar": np.float64(1.25),
        "group/shuffled": rng.integers(0, 9, (30, 20), dtype="u2"),
        "text": ["a", "bc", "déf"],
        "nan_fill": np.full(40, np.nan, dtype="f8"),
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("gzip", data=values["gzip"], chunks=(8, 12), compression="gzip")
        f.create_dataset("big_endian", data=values["big_endian"], chunks=(100,))
        f.create_dataset("scalar", data=values["scalar"])
        f.create_dataset(
            "group/shuffled", data=values["group/shuffled"], chunks=(7, 6), shuffle=True,
            compression="gzip", fletcher32=True,
        )  # fmt: skip
        f.create_dataset("text", data=values["text"], dtype=h5py.string_dtype())
        f.create_dataset("nan_fill", shape=(40,), chunks=(10,), dtype="f8", fillvalue=np.nan)
        f["gzip"].attrs["units"] = "V"
    return values


def _v2_group(document: dict[str, Any], remote_protocol: str = "file") -> Any:
    fs = fsspec.filesystem(
        "reference",
        fo=document,
        remote_protocol=remote_protocol,
        remote_options={"asynchronous": True} if remote_protocol == "http" else None,
        asynchronous=True,
    )
    store = zarr.storage.FsspecStore(fs, read_only=True)
    return zarr.open_group(store, mode="r", zarr_format=2)


def _check(group: Any, values: dict[str, Any]) -> None:
    for name, expected in values.items():
        got = group[name][()]
        if name == "text":
            assert [str(v) for v in np.asarray(got).tolist()] == expected
        else:
            np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.parametrize("threshold", [None, 4])
def test_export_reads_equal_through_fsspec(tmp_path: Path, threshold: int | None) -> None:
    source = tmp_path / "data.h5"
    values = _write(source)
    refs = tmp_path / "data.shadowzarr"
    write_rfs(generate_rfs(str(source)), refs, manifest_threshold=threshold)
    if threshold is not None:
        assert open_rfs(refs).store.rfs.indexes  # the chunk manifest path is exercised
    document = kerchunk_document(refs)
    assert document["version"] == 1
    assert "gzip/.zarray" in document["refs"]
    assert "gzip/0.0" in document["refs"]
    assert all("{{" not in str(v) for v in document["refs"].values())
    assert json.loads(document["refs"]["gzip/.zattrs"])["units"] == "V"
    _check(_v2_group(json.loads(json.dumps(document))), values)
    # and back: our reader opens the export as well
    _check(open_rfs(document), values)


def test_export_of_remote_references(tmp_path: Path, nginx: Any, nginx_root: Path) -> None:
    source = nginx_root / "data.h5"
    values = _write(source)
    write_rfs(
        generate_rfs(nginx.url("data.h5")), nginx_root / "refs.shadowzarr", manifest_threshold=4
    )
    document = kerchunk_document(nginx.url("refs.shadowzarr"))
    locations = {v[0] for v in document["refs"].values() if isinstance(v, list)}
    assert locations == {nginx.url("data.h5")}
    _check(_v2_group(document, "http"), values)


def test_what_v2_cannot_describe_is_left_out_by_name(tmp_path: Path) -> None:
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                    {"name": "no.such.codec", "configuration": {}}],
    }  # fmt: skip
    document = {
        "version": 1,
        "refs": {
            "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
            "odd/zarr.json": json.dumps(meta),
            "odd/c/0": "base64:AAAAAAAAAAA=",
        },
    }
    with pytest.warns(ExportWarning, match=r"odd: left out: codec 'no.such.codec'"):
        exported = kerchunk_document(document)
    assert not [key for key in exported["refs"] if key.startswith("odd")]
