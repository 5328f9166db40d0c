"""HDF5 filter pipelines → Zarr v3 codec chains.

Each HDF5 filter becomes the codec that decodes exactly the bytes the filter wrote (checked
against h5py's ``read_direct_chunk``): deflate is a zlib stream (not gzip), shuffle needs the
element size, fletcher32 appends a 4-byte checksum, h5py's LZF has no header, the HDF5 LZ4
filter has its own block framing (``imagecodecs_lz4h5``). Filters whose output no codec reads
are refused with an error that names the dataset and the filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from shadowzarr_spec import UnsupportedFeatureError
from shadowzarr_spec.metadata import bytes_codec

__all__ = ["FilterSpec", "codecs_for", "read_filters"]

DEFLATE, SHUFFLE, FLETCHER32, SZIP, NBIT, SCALEOFFSET = 1, 2, 3, 4, 5, 6
LZF, BLOSC, LZ4, BITSHUFFLE, BZIP2, ZSTD, BLOSC2 = 32000, 32001, 32004, 32008, 307, 32015, 32026

_REFUSED = {
    SZIP: "SZIP",
    NBIT: "N-bit",
    SCALEOFFSET: "scale-offset",
    BLOSC2: "Blosc2",  # its chunks are Blosc2 frames with a B2ND header, not plain chunks
}
_BLOSC_COMPRESSORS = {0: "blosclz", 1: "lz4", 2: "lz4hc", 3: "snappy", 4: "zlib", 5: "zstd"}
_BLOSC_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


@dataclass(frozen=True, slots=True)
class FilterSpec:
    """One filter of a dataset's pipeline, as HDF5 reports it."""

    code: int
    flags: int
    values: tuple[int, ...]
    name: str


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
    serializer: dict[str, Any] = bytes_codec(dtype)
    after: list[dict[str, Any]] = []
    for i, spec in enumerate(filters):
        if skip_mask & (1 << i):
            continue
        codec = _codec(spec, dtype, path)
        if codec is None:
            continue
        if codec.get("name") == "imagecodecs_bitshuffle":
            if after or (dtype.byteorder == ">" and dtype.itemsize > 1):
                raise UnsupportedFeatureError(
                    f"dataset {path!r}: the bitshuffle filter after another filter or on "
                    "big-endian data has no Zarr codec"
                )
            serializer = codec
            continue
        after.append(codec)
    return [serializer, *after]


def _codec(spec: FilterSpec, dtype: np.dtype, path: str) -> dict[str, Any] | None:
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
    if code == BITSHUFFLE:
        compression = values[4] if len(values) > 4 else 0
        if compression != 0:
            raise UnsupportedFeatureError(
                f"dataset {path!r}: the bitshuffle filter with LZ4 or Zstd compression "
                "(filter 32008) writes a block format no Zarr codec reads"
            )
        return {"name": "imagecodecs_bitshuffle", "configuration": {"blocksize": 0}}
    if code in _REFUSED:
        raise UnsupportedFeatureError(
            f"dataset {path!r}: the {_REFUSED[code]} filter (HDF5 filter {code}) has no Zarr "
            "codec that reproduces its values"
        )
    raise UnsupportedFeatureError(
        f"dataset {path!r}: unknown HDF5 filter {code} ({spec.name or 'unnamed'}) has no Zarr codec"
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
