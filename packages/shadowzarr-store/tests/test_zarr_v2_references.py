"""Reference documents with Zarr v2 keys (kerchunk's JSON, LINDI's) read as Zarr v3.

kerchunk's own generator writes the documents from files h5py wrote; every dataset must read
back equal to h5py, locally and over HTTP, and what cannot be expressed is refused by name.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from kerchunk.hdf import SingleHdf5ToZarr
from shadowzarr_spec import ReferenceFormatError, decode_attributes

from shadowzarr_store import open_rfs
from shadowzarr_store.zarr_v2 import has_v2_keys, v3_document


def _write_file(path: Path) -> None:
    rng = np.random.default_rng(7)
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "gzip", data=rng.normal(size=(100, 10)).astype("<f4"), chunks=(10, 10),
            compression="gzip",
        )  # fmt: skip
        f["gzip"].attrs["units"] = "m"
        f.create_dataset("big_endian", data=np.arange(1000, dtype=">i4"), chunks=(64,))
        f.create_dataset("fixed", data=np.array([b"ab", b"cde", b""]))
        f.create_dataset("text", data=["x", "yz", "élan"], dtype=h5py.string_dtype())
        f.create_dataset("scalar", data=np.float64(2.5))
        group = f.create_group("group")
        group.attrs["note"] = "a group"
        group.create_dataset(
            "shuffled", data=rng.integers(0, 9, (30, 20), dtype="u2"), chunks=(7, 6),
            shuffle=True, compression="gzip", fillvalue=3,
        )  # fmt: skip
        group.create_dataset("partial", shape=(50,), chunks=(10,), dtype="i2", fillvalue=-1)
        group["partial"][:12] = np.arange(12)


def _kerchunk_document(path: Path) -> dict[str, Any]:
    refs = SingleHdf5ToZarr(str(path), inline_threshold=0).translate()
    assert ".zgroup" in refs["refs"]  # the v2 keys this test is about
    return refs


def _assert_equal_to_h5py(root: Any, path: Path, *, skip: tuple[str, ...] = ()) -> int:
    compared = 0
    with h5py.File(path) as f:
        names: list[str] = []
        f.visititems(
            lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None
        )
        for name in names:
            if name in skip:
                continue
            dataset = f[name]
            text = h5py.check_string_dtype(dataset.dtype) is not None and dataset.dtype.kind == "O"
            expected = dataset.asstr()[()] if text else dataset[()]
            got = root[name][()]
            if text:
                expected, got = np.asarray(expected).tolist(), np.asarray(got).tolist()
            if text:
                assert got == expected, name
            else:
                assert np.array_equal(np.asarray(got), np.asarray(expected)), name
                assert np.asarray(got).shape == np.shape(expected), name
            compared += 1
    return compared


def test_kerchunk_json_file_reads_equal_to_h5py(tmp_path: Path) -> None:
    source = tmp_path / "data.h5"
    _write_file(source)
    refs_file = tmp_path / "refs.json"
    refs_file.write_text(json.dumps(_kerchunk_document(source)))
    root = open_rfs(str(refs_file))
    assert _assert_equal_to_h5py(root, source) == 7
    assert dict(root["gzip"].attrs) == {"units": "m"}
    assert root["gzip"].metadata.dimension_names == ("phony_dim_0", "phony_dim_1")
    assert dict(root["group"].attrs) == {"note": "a group"}
    assert root["group/partial"].fill_value == -1


def test_kerchunk_document_over_http(tmp_path: Path, nginx: Any, nginx_root: Path) -> None:
    source = nginx_root / "data.h5"
    _write_file(source)
    document = _kerchunk_document(source)
    url = nginx.url("data.h5")
    document["refs"] = {
        key: [url, *value[1:]] if isinstance(value, list) else value
        for key, value in document["refs"].items()
    }
    (nginx_root / "refs.json").write_text(json.dumps(document))
    root = open_rfs(nginx.url("refs.json"))
    assert _assert_equal_to_h5py(root, source) == 7
    # the same document handed over as a dict
    assert _assert_equal_to_h5py(open_rfs(document), source) == 7


def test_slash_separated_chunk_keys(tmp_path: Path) -> None:
    source = tmp_path / "data.h5"
    _write_file(source)
    document = _kerchunk_document(source)
    refs = document["refs"]
    zarray = json.loads(refs["group/shuffled/.zarray"])
    zarray["dimension_separator"] = "/"
    refs["group/shuffled/.zarray"] = json.dumps(zarray)
    for key in [k for k in refs if k.startswith("group/shuffled/") and "." in k[-4:]]:
        tail = key.rpartition("/")[2]
        if tail[0].isdigit():
            refs["group/shuffled/" + tail.replace(".", "/")] = refs.pop(key)
    rewritten = v3_document(document)
    assert "group/shuffled/c/0/0" in rewritten["refs"]
    root = open_rfs(rewritten)
    with h5py.File(source) as f:
        assert np.array_equal(root["group/shuffled"][:], f["group/shuffled"][:])


def test_lindi_conventions(tmp_path: Path) -> None:
    """A LINDI document: ``generationMetadata`` beside the refs, a scalar stored as shape (1,)
    with ``_SCALAR``, and an array whose chunks LINDI leaves in the HDF5 file."""
    data = tmp_path / "data.bin"
    data.write_bytes(np.array([7.5], "<f8").tobytes() + np.arange(4, dtype="<i2").tobytes())
    zarray = {
        "chunks": [1], "compressor": None, "dtype": "<f8", "fill_value": 0.0,
        "filters": None, "order": "C", "shape": [1], "zarr_format": 2,
    }  # fmt: skip
    linked = {**zarray, "chunks": [1000], "shape": [10_000_000], "dtype": "<i2", "fill_value": 0}
    document = {
        "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            ".zattrs": json.dumps({"neurodata_type": "NWBFile"}),
            "rate/.zarray": json.dumps(zarray),
            "rate/.zattrs": json.dumps({"_SCALAR": True, "unit": "Hz"}),
            "rate/0": [str(data), 0, 8],
            "data/.zarray": json.dumps(linked),
            "data/.zattrs": json.dumps(
                {"_EXTERNAL_ARRAY_LINK": {"link_type": "hdf5_dataset", "url": "x.nwb", "name": "d"}}
            ),
        },
        "generationMetadata": {"generatedBy": "a test"},
    }
    assert has_v2_keys(document)
    path = tmp_path / "session.lindi.json"
    path.write_text(json.dumps(document))
    root = open_rfs(str(path))
    assert root["rate"].shape == ()
    assert root["rate"][()] == 7.5
    assert dict(root["rate"].attrs) == {"unit": "Hz"}
    assert dict(root.attrs) == {"neurodata_type": "NWBFile"}
    assert "data" not in root  # never served as fill
    omitted = root.store.rfs.unsupported["data"]
    assert omitted.outcome == "omitted"
    assert "'d' of 'x.nwb'" in omitted.reason


def _json_chunk(values: list[Any], shape: list[int], compress: bool = False) -> str:
    import numcodecs

    array = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        array[i] = value
    data = numcodecs.JSON().encode(array.reshape(shape))
    if compress:
        data = numcodecs.Blosc(cname="lz4").encode(data)
    return "base64:" + base64.b64encode(bytes(data)).decode()


def test_lindi_json_arrays(tmp_path: Path) -> None:
    """LINDI's arrays of JSON values: references become the unified convention's paths,
    strings strings (LINDI compresses them with Blosc), compound records structured records
    (LINDI's type names; reference fields as paths under ``_REFERENCE_FIELDS``);
    a soft link group is a ``_LINKS`` entry, "NaN" a number; an array of other JSON values is
    left out alone, recorded, while the rest of the document reads."""
    codec = {"id": "json2", "allow_nan": True, "encoding": "utf-8", "sort_keys": True}
    blosc = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
    json_array = {
        "chunks": [2], "compressor": None, "dtype": "|O", "fill_value": 0,
        "filters": [codec], "order": "C", "shape": [2], "zarr_format": 2,
    }  # fmt: skip
    reference = {"_REFERENCE": {"object_id": None, "path": "/names", "source": ".",
                                "source_object_id": None}}  # fmt: skip
    document = {
        "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            ".zattrs": json.dumps({"rate": "NaN", "target": reference}),
            "refs/.zarray": json.dumps(json_array),
            "refs/0": _json_chunk([reference, reference], [2]),
            "names/.zarray": json.dumps({**json_array, "compressor": blosc}),
            "names/0": _json_chunk(["ab", "c"], [2], compress=True),
            "records/.zarray": json.dumps(json_array),
            "records/.zattrs": json.dumps({"_COMPOUND_DTYPE": [["i", "<i4"], ["x", "<f8"]]}),
            "records/0": _json_chunk([[1, 2.5], [3, "NaN"]], [2]),
            "linked/.zarray": json.dumps(json_array),
            "linked/.zattrs": json.dumps(
                {"_COMPOUND_DTYPE": [["start", "int32"], ["series", "<REFERENCE>"]]}
            ),
            "linked/0": _json_chunk([[0, reference], [5, reference]], [2]),
            "other/.zarray": json.dumps(json_array),
            "other/0": _json_chunk([1, {"a": 2}], [2]),
            "soft/.zgroup": json.dumps({"zarr_format": 2}),
            "soft/.zattrs": json.dumps({"_SOFT_LINK": {"path": "/names"}}),
        },
        "generationMetadata": {"generatedBy": "a test"},
    }
    path = tmp_path / "session.lindi.json"
    path.write_text(json.dumps(document))
    root = open_rfs(str(path))
    assert root["refs"][...].tolist() == ["/names", "/names"]
    assert dict(root["refs"].attrs) == {"_DTYPE": "object_reference"}
    assert root["names"][...].tolist() == ["ab", "c"]
    records = root["records"][...]
    assert records["i"].tolist() == [1, 3]
    assert records["x"][0] == 2.5
    assert np.isnan(records["x"][1])
    linked = root["linked"][...]
    assert linked["start"].tolist() == [0, 5]
    assert linked["series"].tolist() == ["/names", "/names"]
    assert dict(root["linked"].attrs) == {"_REFERENCE_FIELDS": ["series"]}
    attributes = decode_attributes(dict(root.attrs))
    assert np.isnan(attributes["rate"])
    assert attributes["target"] == reference
    assert attributes["_LINKS"] == [{"name": "soft", "source": ".", "path": "/names"}]
    assert "soft" not in root
    assert "other" not in root
    assert "JSON values other than" in root.store.rfs.unsupported["other"].reason


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"filters": [{"id": "no-such-codec"}]}, "no-such-codec"),
        ({"dtype": "not a dtype"}, "not understood"),
        ({"filters": [{"id": "zlib", "level": 1}, {"id": "delta", "dtype": "<i2"}]}, "after"),
    ],
)
def test_what_v3_cannot_express_is_refused_by_name(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    zarray = {
        "chunks": [4], "compressor": None, "dtype": "<i2", "fill_value": 0,
        "filters": None, "order": "C", "shape": [4], "zarr_format": 2, **change,
    }  # fmt: skip
    document = {"version": 1, "refs": {".zgroup": '{"zarr_format":2}', "x/.zarray": zarray}}
    with pytest.raises(ReferenceFormatError, match=message) as caught:
        open_rfs(document)
    assert "x" in str(caught.value)


def test_documents_with_v3_keys_are_left_alone() -> None:
    assert not has_v2_keys({"version": 1, "refs": {"zarr.json": "{}", "a/.zarray": "{}"}})
    assert not has_v2_keys({"version": 1, "refs": {"zarr.json": "{}"}})
    assert has_v2_keys({"version": 1, "refs": {"a/.zarray": "{}"}})
