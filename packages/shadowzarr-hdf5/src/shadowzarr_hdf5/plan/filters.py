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

Codecs outside zarr-python's own set (imagecodecs) handle HDF5's framing differently by data
type: the first chunk they read is checked against h5py's values (:mod:`.chunks`). Small
datasets are inlined as plain values: reading them through h5py needs every filter's HDF5
plugin loaded in this process, while the codecs the references name read the same chunk bytes
without any plugin, so their values are decoded by those codecs (`small_filtered_values`), as a
reader of the references would get them.
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import Any

import h5py
import numpy as np
import zarr
from shadowzarr_spec import SourceError, UnsupportedFeatureError
from shadowzarr_spec.keys import chunk_key
from shadowzarr_spec.metadata import bytes_codec

from ..context import ChunkLocations, Source
from ..format.messages import FilterSpec
from ..header_reader.dataset import HeaderDataset
from ..native_decode import decoded_values
from .encode import MemoryArray, chunk_region, memory_array_store

__all__ = [
    "LZF_MAX_RATIO",
    "FilterSpec",
    "codecs_for",
    "filter_codecs",
    "lzf_rewrites",
    "overcompressed",
    "small_filtered_values",
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


def codecs_for(
    filters: tuple[FilterSpec, ...], dtype: np.dtype, path: str, *, skip_mask: int = 0
) -> list[dict[str, Any]]:
    """The Zarr v3 codecs reading chunks written through ``filters``: the ``bytes`` codec,
    then :func:`filter_codecs`."""
    return [bytes_codec(dtype), *filter_codecs(filters, dtype, path, skip_mask=skip_mask)]


def filter_codecs(
    filters: tuple[FilterSpec, ...], dtype: np.dtype, path: str, *, skip_mask: int = 0
) -> list[dict[str, Any]]:
    """The codecs after ``bytes`` that read chunks written through ``filters``.

    ``skip_mask`` has bit i set when filter i was skipped for a chunk (HDF5's filter mask).
    """
    after: list[dict[str, Any]] = []
    for i, spec in enumerate(filters):
        if skip_mask & (1 << i):
            continue
        codec = _codec(spec, dtype, path, first=not after)
        if codec is not None:
            after.append(codec)
    return after


def _codec(spec: FilterSpec, dtype: np.dtype, path: str, *, first: bool) -> dict[str, Any] | None:
    code, values = spec.code, spec.values
    if code == DEFLATE:
        return {"name": "numcodecs.zlib", "configuration": {"level": values[0] if values else 4}}
    if code == SHUFFLE:
        size = int(values[0]) if values else dtype.itemsize
        if size > 1 and (not first or dtype.itemsize % size):
            # HDF5 leaves bytes past the last whole element unshuffled; numcodecs refuses them
            where = "after another filter" if not first else f"of {size}-byte elements"
            raise _refused(path, spec, f"{where} (chunks need not be whole elements)")
        return {"name": "numcodecs.shuffle", "configuration": {"elementsize": size}}
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


def overcompressed(sizes: np.ndarray, chunk_bytes: int) -> np.ndarray:
    """Which stored sizes imagecodecs_lzf cannot decode to ``chunk_bytes``."""
    return np.asarray(sizes, dtype=np.uint64) * LZF_MAX_RATIO < chunk_bytes


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


# -- decoding stored chunks in memory through the codecs --------------------------------

logger = logging.getLogger(__name__)


def small_filtered_values(
    dataset: h5py.Dataset | HeaderDataset,
    path: str,
    source: Source,
    filters: tuple[FilterSpec, ...],
    locations: ChunkLocations,
    *,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    data_type: np.dtype,
    fill_value: Any,
    plain_codecs: tuple[dict[str, Any], ...],
) -> Any:
    """The values of a small filtered dataset (its stored chunks at ``locations``), decoded by
    the codecs its references would use (``plain_codecs``, then the filters'), else by HDF5
    with hdf5plugin's filters (never h5py's "can't open directory" error)."""
    read_bytes = source.read_bytes
    values: np.ndarray | None = None
    extra = (0,) * (len(shape) - locations.coords.shape[1])
    grid = [math.ceil(s / c) for s, c in zip(shape, chunk_shape, strict=True)]
    try:
        # Chunks that skipped a filter (HDF5's filter mask) decode with that filter left out.
        for mask in np.unique(locations.masks).tolist() or [0]:
            codecs = [*plain_codecs, *filter_codecs(filters, data_type, path, skip_mask=int(mask))]
            if read_bytes is None:
                break
            chosen = locations.masks == mask
            regions = [
                chunk_region((*c, *extra), chunk_shape, shape)
                for c in locations.coords[chosen].tolist()
            ]
            stored: dict[str, bytes] = {}
            for coords, offset, size in zip(
                locations.coords[chosen].tolist(), locations.offsets[chosen].tolist(),
                locations.sizes[chosen].tolist(), strict=True,
            ):  # fmt: skip
                full = (*coords, *extra)
                if any(c >= g for c, g in zip(full, grid, strict=True)):
                    continue  # a chunk of a shrunk dataset, outside the current extent
                stored[chunk_key("", full)] = read_bytes(int(offset), int(size))
            store = memory_array_store(
                MemoryArray(shape, data_type, chunk_shape, codecs, fill_value), stored
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # zarr's notes on unstable data types
                part = np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[...])
            if values is None:
                values = part
                continue
            for region in regions:
                values[region] = part[region]
        else:
            return values
    except SourceError:
        raise  # the source could not be read: not a property of the dataset
    except Exception:  # any codec's failure (zlib.error, ...): HDF5 decides
        pass  # no codec reads these chunks here: HDF5 decodes them (or says it cannot)
    return decoded_values(dataset, path, filters)  # (a HeaderDataset reads through h5py)
