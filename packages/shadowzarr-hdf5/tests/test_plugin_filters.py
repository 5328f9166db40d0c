"""Every filter real writers use, written by the filter's own plugin, reads back equal to h5py.

Each case writes one dataset with edge chunks (the shape is not a multiple of the chunks), a
fill value, chunks never written, NaN and infinities where the type has them, then compares
every value bit for bit and checks which codec the references name (and that the chunks were
stored filtered, not skipped by the filter).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest
from shadowzarr_testing.compare import assert_array_equal_exact

from shadowzarr_hdf5 import generate_rfs

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

SHAPE, CHUNKS = (45, 37), (16, 16)
RNG = np.random.default_rng(21)


def _values(dtype: str, *, special: bool = True) -> np.ndarray:
    native = np.dtype(dtype)
    if native.kind == "f":
        values = np.cumsum(RNG.normal(size=SHAPE), axis=1) * 10
        if special:
            values[0, 0], values[1, 1], values[2, 2] = np.nan, np.inf, -np.inf
        return values.astype(native)
    walk = np.cumsum(RNG.integers(-3, 4, size=SHAPE), axis=1)
    info = np.iinfo(native)
    return np.clip(walk + (info.min + info.max) // 2, info.min, info.max).astype(native)


def _write(f: h5py.File, name: str, data: np.ndarray, fill: Any, **filters: Any) -> None:
    dset = f.create_dataset(
        name, shape=SHAPE, dtype=data.dtype, chunks=CHUNKS, fillvalue=fill, **filters
    )
    dset[:32] = data[:32]  # rows 32.. stay unwritten: their chunks are never stored
    dset[40:, :5] = data[40:, :5]
    if fill is not None:
        dset[3, 3:9] = fill  # fill values inside written chunks


def _nbit(f: h5py.File, name: str, data: np.ndarray, precision: int, offset: int) -> None:
    """The N-bit filter on an integer type of ``precision`` bits from ``offset``."""
    base = {"i4": h5py.h5t.STD_I32LE, "u2": h5py.h5t.STD_U16LE, "i8": h5py.h5t.STD_I64LE}[
        data.dtype.str[1:]
    ]
    file_type = base.copy()
    file_type.set_precision(precision)
    file_type.set_offset(offset)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(CHUNKS)
    dcpl.set_filter(h5py.h5z.FILTER_NBIT, h5py.h5z.FLAG_OPTIONAL)  # H5Pset_nbit
    space = h5py.h5s.create_simple(SHAPE)
    dataset = h5py.h5d.create(f.id, name.encode(), file_type, space, dcpl=dcpl)
    dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))


def _signed_17_bits() -> np.ndarray:
    return RNG.integers(-(2**16), 2**16, size=SHAPE, dtype="i4")


Case = tuple[str, Callable[[h5py.File], None], str]
"""(name, writer, codec name the references must use)."""

_ANY, _FLOAT, _INTEGER = "biuf", "f", "iu"
_FILTERS: list[tuple[str, str, str, bool, Callable[[str], dict[str, Any]]]] = [
    # (name, codec, dtype kinds, fill value and NaN/inf too, filter arguments by dtype kind)
    ("bzip2", "numcodecs.bz2", _ANY, True, lambda k: dict(hdf5plugin.BZip2(blocksize=5))),
    ("lz4", "imagecodecs_lz4h5", _ANY, True, lambda k: dict(hdf5plugin.LZ4(nbytes=256))),
    ("bitshuffle-lz4", "shadowzarr.hdf5_bitshuffle", _ANY, True,
     lambda k: dict(hdf5plugin.Bitshuffle(cname="lz4"))),
    ("bitshuffle-zstd", "shadowzarr.hdf5_bitshuffle", _ANY, True,
     lambda k: dict(hdf5plugin.Bitshuffle(cname="zstd", clevel=5))),
    ("bitshuffle-none", "shadowzarr.hdf5_bitshuffle", _ANY, True,
     lambda k: dict(hdf5plugin.Bitshuffle(cname="none"))),
    ("blosc2", "shadowzarr.hdf5_blosc2", _ANY, True,
     lambda k: dict(hdf5plugin.Blosc2(cname="zstd", filters=hdf5plugin.Blosc2.BITSHUFFLE))),
    ("scaleoffset", "shadowzarr.hdf5_scaleoffset", _ANY, False,
     lambda k: {"scaleoffset": 2 if k == "f" else 0}),
    ("scaleoffset-gzip", "shadowzarr.hdf5_scaleoffset", _ANY, False,
     lambda k: {"scaleoffset": 3 if k == "f" else 0, "compression": "gzip"}),
    ("szip", "imagecodecs_szip", _INTEGER, True,
     lambda k: {"compression": "szip", "compression_opts": ("nn", 16)}),
    ("zfp-reversible", "shadowzarr.hdf5_zfp", _FLOAT, True,
     lambda k: dict(hdf5plugin.Zfp(reversible=True))),
    ("zfp-rate", "shadowzarr.hdf5_zfp", _FLOAT, False, lambda k: dict(hdf5plugin.Zfp(rate=10))),
    ("zfp-accuracy", "shadowzarr.hdf5_zfp", _FLOAT, False,
     lambda k: dict(hdf5plugin.Zfp(accuracy=1e-3))),
    ("zfp-expert", "shadowzarr.hdf5_zfp", _FLOAT, False,
     lambda k: dict(hdf5plugin.Zfp(minbits=1, maxbits=4000, maxprec=40, minexp=-60))),
]  # fmt: skip
_DTYPES = ["<f4", "<f8", ">f4", "<i2", "<u1", ">i4", "<i8"]
_PLUGIN_DTYPES = {"szip": {"<i2", ">i4", "<i8"}, "zfp": {"<f4", "<f8"}}
"""SZIP packs integers of 2 bytes or more here; H5Z-ZFP takes native-order floats."""


def _writer(dtype: str, special: bool, arguments: dict[str, Any]) -> Callable[[h5py.File], None]:
    kind = np.dtype(dtype).kind
    fill = (-7.5 if kind == "f" else 7) if special else None

    def write(f: h5py.File) -> None:
        _write(f, "x", _values(dtype, special=special), fill, **arguments)

    return write


CASES: list[Case] = []
for _name, _codec, _kinds, _special, _arguments in _FILTERS:
    _only = _PLUGIN_DTYPES.get(_name.split("-")[0])
    for _dtype in _DTYPES:
        if np.dtype(_dtype).kind in _kinds and (_only is None or _dtype in _only):
            _writes = _writer(_dtype, _special, _arguments(np.dtype(_dtype).kind))
            CASES.append((f"{_name}-{_dtype}", _writes, _codec))


def _more_cases() -> list[Case]:
    def bits(low: int, high: int, dtype: str) -> np.ndarray:
        return RNG.integers(low, high, SHAPE, dtype=dtype)

    nbit = "shadowzarr.hdf5_nbit"
    return [
        ("scaleoffset-minbits-i4",
         lambda f: _write(f, "x", _values("<i4") % 1000, 3, scaleoffset=12),
         "shadowzarr.hdf5_scaleoffset"),
        ("nbit-signed-17-at-3", lambda f: _nbit(f, "x", bits(-(2**16), 2**16, "i4"), 17, 3), nbit),
        ("nbit-unsigned-12-at-2", lambda f: _nbit(f, "x", bits(0, 2**12, "u2"), 12, 2), nbit),
        ("nbit-signed-31-at-1", lambda f: _nbit(f, "x", bits(-(2**30), 2**30, "i4"), 31, 1), nbit),
        ("nbit-signed-60-at-2", lambda f: _nbit(f, "x", bits(-(2**59), 2**59, "i8"), 60, 2), nbit),
        ("shuffle-bitshuffle",
         lambda f: _write(f, "x", _values("<i2"), 1, shuffle=True,
                          **hdf5plugin.Bitshuffle(cname="lz4")),
         "shadowzarr.hdf5_bitshuffle"),
    ]  # fmt: skip


CASES += _more_cases()


@pytest.mark.parametrize(("name", "writer", "codec"), CASES, ids=[c[0] for c in CASES])
def test_filter_reads_back_equal_to_h5py(
    tmp_path: Path, open_refs: Any, name: str, writer: Callable[[h5py.File], None], codec: str
) -> None:
    path = tmp_path / f"{name}.h5"
    with h5py.File(path, "w") as f:
        writer(f)
    with h5py.File(path) as f:
        dset = f["x"]
        expected = dset[...]
        expected = expected.astype(expected.dtype.newbyteorder("="))  # zarr reads native order
        masks = {dset.id.get_chunk_info(i).filter_mask for i in range(dset.id.get_num_chunks())}
    assert masks == {0}, f"{name}: some chunks were stored without the filter ({masks})"
    rfs = generate_rfs(path, inline_threshold=0, strict=True)
    array = open_refs(rfs, grouped_view="auto")["x"]  # small chunks shown grouped as shards
    stored = open_refs(rfs, grouped_view=0)["x"]  # the chunks as the references store them
    names = [c["name"] for c in stored.metadata.to_dict()["codecs"]]
    assert codec in names
    assert_array_equal_exact(stored[...], expected, f"{name} stored view")
    assert_array_equal_exact(array[...], expected, name)
    assert_array_equal_exact(array[30:, 2:20], expected[30:, 2:20], f"{name} edge")
