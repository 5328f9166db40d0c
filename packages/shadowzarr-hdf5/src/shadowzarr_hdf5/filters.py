"""HDF5 filter pipelines → Zarr v3 codec chains.

Each HDF5 filter becomes the codec that decodes exactly the bytes the filter wrote (checked
against h5py on files the filter's own plugin wrote):

=================  ======  ================================================================
filter             id      codec
=================  ======  ================================================================
deflate            1       ``numcodecs.zlib`` (a zlib stream, not gzip)
shuffle            2       ``numcodecs.shuffle`` with the element size
fletcher32         3       ``numcodecs.fletcher32`` (4-byte checksum at the end)
SZIP               4       ``imagecodecs_szip`` with the filter's parameters, HDF5's size header
N-bit              5       ``shadowzarr.hdf5_nbit`` (integers)
scale-offset       6       ``shadowzarr.hdf5_scaleoffset``
bzip2              307     ``numcodecs.bz2`` (a plain bzip2 stream)
LZF                32000   ``imagecodecs_lzf`` without header
Blosc              32001   ``numcodecs.blosc``
LZ4                32004   ``imagecodecs_lz4h5`` (HDF5's own block framing)
bitshuffle         32008   ``shadowzarr.hdf5_bitshuffle`` (none, LZ4 or Zstd blocks)
ZFP                32013   ``shadowzarr.hdf5_zfp`` (the zfp header kept in cd_values)
Zstd               32015   ``numcodecs.zstd``
Blosc2             32026   ``shadowzarr.hdf5_blosc2`` (B2ND frames)
=================  ======  ================================================================

The ``shadowzarr.*`` codecs live in shadowzarr-store (:mod:`shadowzarr_store.hdf5_codecs`).
Filters whose output no codec reads are refused with an error naming the dataset and filter.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

from .format.messages import FilterSpec
from .inline import encode_chunks

__all__ = [
    "LZF_MAX_RATIO",
    "FilterSpec",
    "codecs_for",
    "literal_lzf",
    "lzf_literal_chunks",
    "lzf_rewrites",
    "overcompressed",
    "read_filters",
]

DEFLATE, SHUFFLE, FLETCHER32, SZIP, NBIT, SCALEOFFSET = 1, 2, 3, 4, 5, 6
LZF, BLOSC, LZ4, BITSHUFFLE, BZIP2, ZSTD, BLOSC2 = 32000, 32001, 32004, 32008, 307, 32015, 32026
ZFP = 32013

_KNOWN_NAMES = {
    32017: "SZ",
    32018: "FCIDECOMP",
    32024: "SZ3",
    32028: "Sperr",
    32033: "HTJ2K",
}
"""Other filters hdf5plugin writes: lossy or image codecs with no Zarr codec reproducing them."""
_NBIT_ATOMIC = 1
_BLOSC_COMPRESSORS = {0: "blosclz", 1: "lz4", 2: "lz4hc", 3: "snappy", 4: "zlib", 5: "zstd"}
_BLOSC_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def read_filters(dataset: Any) -> tuple[FilterSpec, ...]:
    """The filter pipeline of an h5py dataset, in the order HDF5 applies it when writing."""
    plist = dataset.id.get_create_plist()
    filters = []
    for i in range(plist.get_nfilters()):
        code, flags, values, name = plist.get_filter(i)
        text = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        filters.append(FilterSpec(int(code), int(flags), tuple(int(v) for v in values), text))
    return tuple(filters)


def codecs_for(
    filters: tuple[FilterSpec, ...], dtype: np.dtype, path: str, *, skip_mask: int = 0
) -> list[dict[str, Any]]:
    """The Zarr v3 codecs reading chunks written through ``filters``.

    ``skip_mask`` has bit i set when filter i was skipped for a chunk (HDF5's filter mask).
    """
    after: list[dict[str, Any]] = []
    for i, spec in enumerate(filters):
        if skip_mask & (1 << i):
            continue
        codec = _codec(spec, dtype, path, first=not after)
        if codec is not None:
            after.append(codec)
    return [bytes_codec(dtype), *after]


def _codec(spec: FilterSpec, dtype: np.dtype, path: str, *, first: bool) -> dict[str, Any] | None:
    code, values = spec.code, spec.values
    if code == DEFLATE:
        return {"name": "numcodecs.zlib", "configuration": {"level": values[0] if values else 4}}
    if code == SHUFFLE:
        size = values[0] if values else dtype.itemsize
        return {"name": "numcodecs.shuffle", "configuration": {"elementsize": int(size)}}
    if code == FLETCHER32:
        return {"name": "numcodecs.fletcher32", "configuration": {}}
    if code == LZF:
        return {"name": "imagecodecs_lzf", "configuration": {"header": False}}
    if code == ZSTD:
        level = values[0] if values else 0
        return {"name": "numcodecs.zstd", "configuration": {"level": int(level), "checksum": False}}
    if code == LZ4:
        return {"name": "imagecodecs_lz4h5"}
    if code == BLOSC:
        return _blosc(values)
    if code == BZIP2:
        level = values[0] if values else 9
        return {"name": "numcodecs.bz2", "configuration": {"level": int(level)}}
    if code == BITSHUFFLE:
        return _cd_values_codec("shadowzarr.hdf5_bitshuffle", values)
    if code == ZFP:
        return _cd_values_codec("shadowzarr.hdf5_zfp", values)
    if code == BLOSC2:
        return _cd_values_codec("shadowzarr.hdf5_blosc2", values)
    if code == SCALEOFFSET:
        if len(values) != 20:
            raise _refused(path, spec, f"{len(values)} parameters instead of 20")
        return _cd_values_codec("shadowzarr.hdf5_scaleoffset", values)
    if code == NBIT:
        return _nbit(spec, dtype, path, first=first)
    if code == SZIP:
        return _szip(spec, path)
    name = _KNOWN_NAMES.get(code, spec.name or "unnamed")
    raise UnsupportedFeatureError(
        f"dataset {path!r}: HDF5 filter {code} ({name}) has no Zarr codec that reproduces "
        "its values"
    )


def _cd_values_codec(name: str, values: tuple[int, ...]) -> dict[str, Any]:
    return {"name": name, "configuration": {"cd_values": [int(v) for v in values]}}


def _nbit(spec: FilterSpec, dtype: np.dtype, path: str, *, first: bool) -> dict[str, Any] | None:
    """N-bit: integers of one atomic type, decoded last (HDF5 converts their bits to the
    memory type after every filter; the codec does that conversion)."""
    values = spec.values
    if len(values) < 8 or values[3] != _NBIT_ATOMIC:
        raise _refused(path, spec, "on compound or array types")
    if values[1]:  # "nothing to pack": the filter passes the data through
        return None
    if dtype.kind not in "iu" or dtype.itemsize != values[4]:
        raise _refused(path, spec, f"on {dtype} values (integers only)")
    if not first:
        raise _refused(path, spec, "after another filter in the pipeline")
    return {
        "name": "shadowzarr.hdf5_nbit",
        "configuration": {"cd_values": [int(v) for v in values[:8]], "signed": dtype.kind == "i"},
    }


def _szip(spec: FilterSpec, path: str) -> dict[str, Any]:
    values = spec.values
    if len(values) < 4:
        raise _refused(path, spec, f"{len(values)} parameters instead of 4")
    return {
        "name": "imagecodecs_szip",
        "configuration": {
            "options_mask": int(values[0]),
            "pixels_per_block": int(values[1]),
            "bits_per_pixel": int(values[2]),
            "pixels_per_scanline": int(values[3]),
            "header": True,
        },
    }


def _refused(path: str, spec: FilterSpec, why: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"dataset {path!r}: the {spec.name or spec.code} filter (HDF5 filter {spec.code}) {why} "
        "has no Zarr codec"
    )


def _blosc(values: tuple[int, ...]) -> dict[str, Any]:
    # cd_values: filter revision, blosc version, typesize, buffer size, clevel, shuffle, compressor.
    clevel = values[4] if len(values) > 4 else 5
    shuffle = values[5] if len(values) > 5 else 1
    compressor = values[6] if len(values) > 6 else 0
    return {
        "name": "numcodecs.blosc",
        "configuration": {
            "cname": _BLOSC_COMPRESSORS.get(compressor, "blosclz"),
            "clevel": int(clevel),
            "shuffle": {0: 0, 1: 1, 2: 2}.get(shuffle, 1),
            "blocksize": 0,
        },
    }


# -- LZF: chunks imagecodecs' codec cannot decode, rewritten so that it can ----------------
#
# LZF chunks that imagecodecs' codec cannot decode, rewritten so that it can.
#
# ``imagecodecs_lzf`` (no header) is not told the chunk size and decodes into a buffer eight
# times the compressed size, so a chunk HDF5 compressed beyond 8:1 (zeros, padded edge chunks)
# fails to decode. Such a chunk is either all fill value (then it is left out and reads as the
# fill value) or is re-encoded as an LZF stream of literal runs only, which any LZF decoder reads
# and which is never smaller than the data.

LZF_MAX_RATIO = 8
_LITERAL_RUN = 32  # an LZF control byte below 32 copies (byte + 1) literal bytes


def overcompressed(sizes: np.ndarray, chunk_bytes: int) -> np.ndarray:
    """Which stored sizes imagecodecs_lzf cannot decode to ``chunk_bytes``."""
    return np.asarray(sizes, dtype=np.uint64) * LZF_MAX_RATIO < chunk_bytes


def literal_lzf(data: bytes) -> bytes:
    """``data`` as an LZF stream of literal runs (decodes to ``data`` with any LZF decoder)."""
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(view), _LITERAL_RUN):
        block = view[start : start + _LITERAL_RUN]
        out.append(len(block) - 1)
        out += block
    return bytes(out)


def lzf_rewrites(
    codecs: list[dict[str, Any]],
    sizes: np.ndarray,
    filtered: np.ndarray,
    chunk_bytes: int,
    path: str,
) -> np.ndarray | None:
    """LZF chunks (among those with every filter applied, ``filtered``) compressed beyond what
    imagecodecs_lzf decodes, to be rewritten inline; None when the codecs have no LZF."""
    names = [c.get("name") for c in codecs]
    if "imagecodecs_lzf" not in names:
        return None
    rewrite: np.ndarray = overcompressed(sizes, chunk_bytes) & filtered
    if rewrite.any() and names[-1] != "imagecodecs_lzf":
        raise UnsupportedFeatureError(
            f"dataset {path!r}: LZF chunks compressed more than {LZF_MAX_RATIO}:1, followed by "
            f"{names[-1]}, are beyond what the imagecodecs_lzf codec decodes"
        )
    if int(rewrite.sum()) * chunk_bytes > _LZF_INLINE_LIMIT:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: {int(rewrite.sum())} LZF chunks are compressed more than "
            f"{LZF_MAX_RATIO}:1, too many to hold in the references for the imagecodecs_lzf codec"
        )
    return rewrite


_LZF_INLINE_LIMIT = 64 * 2**20
"""At most this many bytes of LZF chunks are rewritten into the references."""


def _only_fill(block: np.ndarray, fill: np.ndarray) -> bool:
    if block.dtype.kind == "V" or fill.dtype.kind == "V":
        # records: h5py reads them structured, the array's type is raw bytes; compare bytes
        whole = np.ascontiguousarray(block)
        return (
            whole.dtype.itemsize == fill.itemsize and whole.tobytes() == fill.tobytes() * whole.size
        )
    same = block == fill
    if block.dtype.kind in "fc":
        same |= np.isnan(block) & np.isnan(fill)
    return bool(np.all(same))


def lzf_literal_chunks(
    values: Any,
    regions: list[tuple[int, ...]],
    shape: tuple[int, ...],
    data_type: Any,
    chunk_shape: tuple[int, ...],
    codecs: list[dict[str, Any]],
    fill_value: Any,
) -> dict[tuple[int, ...], bytes]:
    """Chunks of an LZF array (``values``: anything sliceable) re-encoded as literal LZF;
    chunks of only fill value left out."""
    fill = np.asarray(
        fill_value if fill_value is not None else np.zeros((), dtype=data_type), dtype=data_type
    )
    kept = []
    for coords in regions:
        region = tuple(
            slice(c * n, min((c + 1) * n, s))
            for c, n, s in zip(coords, chunk_shape, shape, strict=True)
        )
        if not _only_fill(np.asarray(values[region]), fill):
            kept.append(coords)
    encoded = encode_chunks(
        values, shape=shape, data_type=data_type, chunk_shape=chunk_shape,
        codecs=codecs[:-1], fill_value=fill_value, regions=kept,
    )  # fmt: skip
    return {c: literal_lzf(data) for c, data in encoded.items()}
