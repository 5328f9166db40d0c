"""HDF5 filter pipelines → Zarr codec chains (the mapping itself; decoding is in the corpus)."""

from __future__ import annotations

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
