"""HDF5 filter pipelines → Zarr codec chains (the mapping itself; decoding is in the corpus)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from shadowzarr_spec import UnsupportedFeatureError

from shadowzarr_hdf5.plan.filters import FilterSpec, codecs_for

SHUFFLE = FilterSpec(2, 1, (4,), "shuffle")
DEFLATE = FilterSpec(1, 1, (6,), "deflate")
FLETCHER = FilterSpec(3, 1, (), "fletcher32")


def test_pipeline_order_and_configuration() -> None:
    codecs = codecs_for((SHUFFLE, DEFLATE, FLETCHER), np.dtype(">i4"), "x")
    assert codecs == [
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
        {"name": "numcodecs.zlib", "configuration": {"level": 6}},
        {"name": "numcodecs.fletcher32", "configuration": {}},
    ]


def test_filter_mask_drops_skipped_filters() -> None:
    codecs = codecs_for((SHUFFLE, DEFLATE, FLETCHER), np.dtype("<i4"), "x", skip_mask=0b011)
    assert [c["name"] for c in codecs] == ["bytes", "numcodecs.fletcher32"]


def test_blosc_configuration_from_cd_values() -> None:
    blosc = FilterSpec(32001, 1, (2, 2, 4, 2000, 7, 2, 5), "blosc")
    (codec,) = codecs_for((blosc,), np.dtype("<i4"), "x")[1:]
    assert codec == {
        "name": "numcodecs.blosc",
        "configuration": {"cname": "zstd", "clevel": 7, "shuffle": 2, "blocksize": 0},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (FilterSpec(5, 1, (8, 0, 4, 3, 8, 0, 0, 0), "nbit"), "nbit filter .* on compound"),
        (FilterSpec(5, 1, (8, 0, 4, 1, 4, 0, 20, 0), "nbit"), "nbit filter .* float32 values"),
        (FilterSpec(6, 1, (0, 2), "scaleoffset"), "scaleoffset filter .* 2 parameters"),
        (FilterSpec(32099, 1, (), "mystery"), "HDF5 filter 32099 \\(mystery\\) has no Zarr"),
    ],
)
def test_refused_filters_name_dataset_and_filter(spec: FilterSpec, message: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=message) as caught:
        codecs_for((spec,), np.dtype("<f4"), "group/data")
    assert "'group/data'" in str(caught.value)


@pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")
def test_lzf_records_compressed_beyond_the_codec_are_rewritten(tmp_path: Path) -> None:
    """Records of constant values compress beyond 8:1 under LZF: their chunks are rewritten
    inline, and comparing them with the fill value (h5py reads them structured, the array's
    type is raw bytes) refused the whole file with numpy's TypeError."""
    import h5py
    from shadowzarr_spec.errors import ConventionTypeWarning
    from shadowzarr_spec.hdf5_types import as_structured
    from shadowzarr_store import open_rfs

    from shadowzarr_hdf5 import generate_rfs

    record = np.dtype([("id", "<u2"), ("xyz", "<f4", (3,))])
    path = tmp_path / "records.h5"
    values = np.ones(50, record)
    values["id"][20:30] = 0
    values["xyz"][20:30] = 0  # one chunk of only the fill value
    with h5py.File(path, "w") as f:
        f.create_dataset("records", data=values, chunks=(10,), compression="lzf")
    with pytest.warns(ConventionTypeWarning, match="records"):  # array fields: a convention
        rfs = generate_rfs(path, inline_threshold=0)
    array = open_rfs(rfs)["records"]
    assert as_structured(array[...], array.attrs).tobytes() == values.tobytes()


def test_shuffle_only_where_chunks_are_whole_elements() -> None:
    """HDF5's shuffle leaves the bytes past the last whole element as they are; numcodecs'
    refuses such a buffer. After a compressor (jhdf's issue318_example.hdf5: deflate, then
    shuffle) or with an element size that does not divide the type's, chunks need not be whole
    elements: refused by name (the dataset is then inlined or omitted alone)."""
    one_byte = FilterSpec(2, 1, (1,), "shuffle")
    assert [c["name"] for c in codecs_for((DEFLATE, one_byte), np.dtype("u1"), "x")] == [
        "bytes", "numcodecs.zlib", "numcodecs.shuffle",
    ]  # fmt: skip
    with pytest.raises(UnsupportedFeatureError, match=r"'x'.*shuffle.*after another filter"):
        codecs_for((DEFLATE, SHUFFLE), np.dtype("<i4"), "x")
    with pytest.raises(UnsupportedFeatureError, match=r"'x'.*shuffle.*of 3-byte elements"):
        codecs_for((FilterSpec(2, 1, (3,), "shuffle"),), np.dtype("<i4"), "x")


@pytest.mark.filterwarnings("ignore::shadowzarr_spec.UnsupportedDatasetWarning")
def test_shuffle_after_deflate_reads_as_h5py_does(tmp_path: Path) -> None:
    import h5py
    from shadowzarr_store import open_rfs

    from shadowzarr_hdf5 import generate_rfs

    path = tmp_path / "late_shuffle.h5"
    records = np.dtype([("ID", "<i8"), ("SE", "<i8"), ("AFPM", "<i8"), ("TRMC", "<i8")])
    values = np.zeros(1, records)
    values["ID"], values["TRMC"] = 7, -3
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((1010,))
        dcpl.set_deflate(4)
        dcpl.set_shuffle()  # after deflate: shuffles the compressed bytes
        space = h5py.h5s.create_simple((1,), (h5py.h5s.UNLIMITED,))
        h5py.h5d.create(f.id, b"late", h5py.h5t.py_create(records), space, dcpl=dcpl)
        f["late"][...] = values
        f["plain"] = np.arange(4)
    with h5py.File(path) as f:
        assert [f["late"].id.get_create_plist().get_filter(i)[0] for i in range(2)] == [1, 2]
    rfs = generate_rfs(path, inline_threshold=0)  # small data is inlined anyway otherwise
    assert "shuffle" in rfs.unsupported["late"].reason
    root = open_rfs(rfs)
    assert root["late"][...].tobytes() == values.tobytes()  # small: inlined, decoded by HDF5
    assert list(root["plain"][...]) == [0, 1, 2, 3]
