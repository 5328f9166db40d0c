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
