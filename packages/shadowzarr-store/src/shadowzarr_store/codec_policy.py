"""Which codecs a reference may name, and how the store checks each before it is decoded.

A reference file comes from anywhere, and a codec's native decoder may trust what the chunk
says about itself. So every codec of an array falls in one of these roles:

- ``transform``: decoded by Python, numpy or code whose output size is its input's (``bytes``,
  ``transpose``, shuffles, checksums, deltas, ``vlen-*``…): nothing to check beforehand.
- a compressor kind (``deflate``, ``bz2``, ``lzma``, ``blosc``, ``zstd``, ``lz4``, ``lz4h5``,
  ``szip``, ``bounded``): `shadowzarr_store.decode_limits` checks its frame or decodes it with
  an output bound before the chunk reaches zarr.
- ``checked``: shadowzarr's own HDF5 filter codecs (``shadowzarr.hdf5_*``), which check their
  streams and decode to exactly the chunk's size themselves.
- ``image``: an image codec whose header `shadowzarr_store.image_headers` parses for the size
  it declares.
- ``refused``: a native decoder shadowzarr does not check (any other ``imagecodecs_*`` codec,
  ``numcodecs.pcodec``, ``numcodecs.zfpy``): an array using one fails with
  `UnsupportedFeatureError` when it is opened, and only that array. ``sharding_indexed`` is read
  only as an array's one codec (its inner chunks checked as chunks), not nested.
- ``opaque``: a codec shadowzarr does not know (registered by another package). It is decoded
  as zarr decodes it, bounded only by the generous variable-size bound; the package that
  registers it answers for its decoder.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["CodecRole", "codec_role", "compressed_bound"]

type CodecRole = Literal[
    "serializer",
    "transform",
    "checksum",
    "deflate",
    "bz2",
    "lzma",
    "blosc",
    "zstd",
    "lz4",
    "lz4h5",
    "szip",
    "bounded",
    "checked",
    "image",
    "refused",
    "opaque",
]

_ROLES: Final[dict[str, CodecRole]] = {
    "bytes": "serializer",
    "vlen-utf8": "serializer",
    "vlen-bytes": "serializer",
    "transpose": "transform",
    "numcodecs.shuffle": "transform",
    "numcodecs.delta": "transform",
    "numcodecs.fixedscaleoffset": "transform",
    "numcodecs.quantize": "transform",
    "numcodecs.bitround": "transform",
    "numcodecs.astype": "transform",
    "numcodecs.packbits": "transform",
    "imagecodecs_delta": "transform",
    "imagecodecs_floatpred": "serializer",
    "imagecodecs_packints": "serializer",
    "imagecodecs_bitshuffle": "serializer",
    "crc32c": "checksum",
    "numcodecs.crc32": "checksum",
    "numcodecs.crc32c": "checksum",
    "numcodecs.adler32": "checksum",
    "numcodecs.fletcher32": "checksum",
    "numcodecs.jenkins_lookup3": "checksum",
    "numcodecs.zlib": "deflate",
    "numcodecs.gzip": "deflate",
    "gzip": "deflate",
    "numcodecs.bz2": "bz2",
    "numcodecs.lzma": "lzma",
    "blosc": "blosc",
    "numcodecs.blosc": "blosc",
    "imagecodecs_blosc": "blosc",
    "zstd": "zstd",
    "numcodecs.zstd": "zstd",
    "imagecodecs_zstd": "zstd",
    "numcodecs.lz4": "lz4",
    "imagecodecs_lz4h5": "lz4h5",
    # imagecodecs byte codecs whose decoders take an output bound and honour it.
    "imagecodecs_zlib": "bounded",
    "imagecodecs_deflate": "bounded",
    "imagecodecs_lz4": "bounded",
    "imagecodecs_lzma": "bounded",
    "imagecodecs_bz2": "bounded",
    "imagecodecs_lzw": "bounded",
    "imagecodecs_packbits": "bounded",
    "imagecodecs_lzf": "bounded",
    "imagecodecs_szip": "szip",
    "imagecodecs_jpeg": "image",
    "imagecodecs_png": "image",
    "imagecodecs_webp": "image",
    "imagecodecs_jpeg2k": "image",
    "imagecodecs_jpegxl": "image",
    "imagecodecs_jpegxr": "image",
    "imagecodecs_lerc": "image",
    "numcodecs.pcodec": "refused",
    "numcodecs.zfpy": "refused",
    "sharding_indexed": "serializer",  # as the only codec, checked shard by shard
    # the same format, decoded by shadowzarr_store.views.slab_shards (the views name it)
    "shadowzarr.sharding_indexed": "serializer",
}


def codec_role(name: str) -> CodecRole:
    """The role of codec ``name`` (see the module docstring)."""
    role = _ROLES.get(name)
    if role is not None:
        return role
    if name.startswith("shadowzarr.hdf5_"):
        return "checked"
    return "refused" if name.startswith("imagecodecs_") else "opaque"


def compressed_bound(role: CodecRole, size: int) -> int | None:
    """The most bytes any sane encoder writes for ``size`` bytes through a codec of ``role``
    (None: unknown). Generous: it only stops references claiming absurd sizes."""
    match role:
        case "serializer" | "transform":
            return size
        case "checksum":
            return size + 4
        case (
            "deflate" | "bz2" | "lzma" | "blosc" | "zstd" | "lz4" | "lz4h5" | "bounded" | "checked"
        ):
            # Fixed-Huffman deflate of incompressible data grows by 1/8; gzip headers may hold
            # a file name; LZW's 12-bit codes grow by 1/2.
            return size + size // 2 + (64 << 10)
        case "image":
            return 4 * size + (1 << 20)
        case _:
            return None
