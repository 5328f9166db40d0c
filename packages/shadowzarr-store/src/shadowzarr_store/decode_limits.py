"""Decode a chunk's byte codecs with bounds, checking each frame before a native decoder runs.

zarr decodes whatever a chunk's codecs produce and only then notices the size is wrong, so a few
kilobytes of zlib, zstd or Blosc (a "zip bomb") can make it allocate gigabytes first, and some
native decoders trust a frame's header (Blosc reads as far as its header says). Before a chunk
is handed to zarr, the store decodes its byte-to-byte codecs here, outermost first, each with
the most bytes it may legitimately produce (`Layer.limit`):

- deflate (zlib, gzip), bzip2 and LZMA are inflated with Python's decoders stopping one byte past
  the limit, exactly as numcodecs would decode them (so a stream that inflates here decodes in
  zarr, and one that fails here fails there);
- Blosc frames are walked by `check_blosc_frame`, zstd frames by `zstd_decoded_bound`, LZ4 and
  HDF5-LZ4 frames have their declared sizes checked; then zarr's own codec decodes them;
- imagecodecs' byte codecs (LZW, PackBits, LZF, …) decode with an output buffer of the limit;
- checksums and shuffles are zarr's own codecs (the checksum is verified there).

The limit of a layer is the size of what it compressed: the serialized chunk (``elements *
itemsize``) for the innermost one, then each codec's `compressed_bound` outward. Chunks without
a fixed size (``vlen-*``, object types, opaque codecs) get a generous bound, ``max(64 MiB, 1 KiB
per element)``. The outermost bound also caps the size of a chunk's reference, so a reference
claiming gigabytes for a kilobyte chunk is refused before any byte is read.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from shadowzarr_spec import ChunkDecodeError
from shadowzarr_spec.blosc_frame import check_blosc_frame, read_blosc_header
from shadowzarr_spec.zstd_frame import zstd_decoded_bound

from shadowzarr_store.codec_policy import CodecRole, compressed_bound

if TYPE_CHECKING:
    from zarr.abc.codec import BytesBytesCodec
    from zarr.core.array_spec import ArraySpec

__all__ = [
    "DEFLATE_MAX_RATIO",
    "VARIABLE_FLOOR",
    "VARIABLE_PER_ELEMENT",
    "Layer",
    "decode_layer",
    "variable_bound",
]

VARIABLE_FLOOR: Final = 64 << 20
"""The least a chunk of variable-size elements may decompress to (64 MiB)."""
VARIABLE_PER_ELEMENT: Final = 1024
DEFLATE_MAX_RATIO: Final = 1032
"""Deflate's best possible ratio: 2 bits for a 258-byte match."""
LZMA_MEMORY: Final = 128 << 20
"""Memory an LZMA stream's decoder may use besides the output (its dictionary, up to 64 MiB)."""
_STEP: Final = 1 << 20
_GZIP_NAMES: Final = frozenset({"numcodecs.gzip", "gzip"})


def variable_bound(elements: int) -> int:
    """The bound of a chunk of ``elements`` variable-size elements."""
    return max(VARIABLE_FLOOR, VARIABLE_PER_ELEMENT * elements)


@dataclass(frozen=True, slots=True)
class Layer:
    """One bytes-to-bytes codec of an array, and the most bytes its decoding may produce."""

    role: CodecRole
    name: str
    limit: int
    codec: BytesBytesCodec

    @property
    def compresses(self) -> bool:
        return self.role not in ("transform", "checksum", "opaque")

    @property
    def encoded_bound(self) -> int | None:
        """The most bytes this layer's input may hold."""
        return compressed_bound(self.role, self.limit)


def decode_layer(layer: Layer, data: bytes, spec: ArraySpec, key: str, where: str) -> bytes:
    """``data`` decoded by one layer, or `ChunkDecodeError` naming the chunk and its source."""
    try:
        decoded = _DECODERS[layer.role](layer, data, spec)
    except ChunkDecodeError as exc:
        raise ChunkDecodeError(f"{where}: chunk {key!r}: {exc}") from exc
    except Exception as exc:
        # A native decoder's error type is its own (zlib.error, RuntimeError, imagecodecs'
        # errors…); each means the same thing here: this chunk cannot be decoded.
        raise ChunkDecodeError(
            f"{where}: chunk {key!r}: not valid {layer.name} data: {type(exc).__name__}: {exc}"
        ) from exc
    if len(decoded) > layer.limit:
        raise ChunkDecodeError(f"{where}: chunk {key!r}: {_too_large(layer, len(decoded))}")
    return decoded


def _too_large(layer: Layer, declared: int | None = None) -> ChunkDecodeError:
    size = "more than" if declared is None else f"{declared} bytes, more than"
    return ChunkDecodeError(
        f"would decompress ({layer.name}) to {size} the {layer.limit} bytes a chunk of its "
        "array holds"
    )


def _zarr_decode(layer: Layer, data: bytes, spec: ArraySpec) -> bytes:
    from zarr.core.buffer import default_buffer_prototype

    buffer = default_buffer_prototype().buffer.from_bytes(data)
    return layer.codec._decode_sync(buffer, spec).to_bytes()  # type: ignore[attr-defined,no-any-return]


def _decode_deflate(layer: Layer, data: bytes, _: ArraySpec) -> bytes:
    """numcodecs' zlib (``zlib.decompress``) or gzip (``GzipFile.read``: members, zero padding),
    stopping one byte past the limit."""
    gzip = layer.name in _GZIP_NAMES
    wbits = 16 + zlib.MAX_WBITS if gzip else zlib.MAX_WBITS
    parts: list[bytes] = []
    total = 0
    pending = data
    while True:
        decompressor = zlib.decompressobj(wbits)
        while True:
            piece = decompressor.decompress(pending, min(_STEP, layer.limit + 1 - total))
            parts.append(piece)
            total += len(piece)
            if total > layer.limit:
                raise _too_large(layer)
            if decompressor.eof:
                break
            pending = decompressor.unconsumed_tail
            if not pending and not piece:
                raise ChunkDecodeError("the stream ends early")
        rest = decompressor.unused_data.lstrip(b"\0") if gzip else b""
        if not rest:
            return b"".join(parts)
        pending = rest  # another gzip member


def _decode_streams(layer: Layer, data: bytes, _: ArraySpec) -> bytes:
    """numcodecs' bz2 / lzma (``bz2.decompress``, ``lzma.decompress``: concatenated streams,
    trailing bytes that are no stream ignored), stopping one byte past the limit."""
    new = _stream_factory(layer)
    parts: list[bytes] = []
    total = 0
    pending = data
    while pending:
        decompressor = new()
        try:
            while True:
                piece = decompressor.decompress(pending, min(_STEP, layer.limit + 1 - total))
                parts.append(piece)
                total += len(piece)
                if total > layer.limit:
                    raise _too_large(layer)
                pending = b""
                if decompressor.eof or decompressor.needs_input:
                    break
        except (OSError, lzma.LZMAError):
            if parts:
                break  # what follows the first stream is not a stream: ignored, as numcodecs does
            raise
        if not decompressor.eof:
            raise ChunkDecodeError("the stream ends before its end marker")
        pending = decompressor.unused_data
    return b"".join(parts)


def _stream_factory(layer: Layer) -> Callable[[], Any]:
    if layer.role == "bz2":
        return bz2.BZ2Decompressor
    configuration = getattr(layer.codec, "codec_config", {}) or {}
    form = configuration.get("format", lzma.FORMAT_AUTO)
    if form == lzma.FORMAT_RAW:
        raise ChunkDecodeError("raw LZMA streams are not read (their filters come unchecked)")
    # The stream names its dictionary size and the decoder allocates it: up to 1.5 GiB. Enough
    # for the largest preset (64 MiB) is allowed, more is refused as invalid.
    memlimit = layer.limit + LZMA_MEMORY
    return lambda: lzma.LZMADecompressor(format=form, memlimit=memlimit)


def _decode_blosc(layer: Layer, data: bytes, spec: ArraySpec) -> bytes:
    declared = read_blosc_header(data).nbytes
    if declared > layer.limit:
        raise _too_large(layer, declared)
    check_blosc_frame(data, layer.limit)
    return _zarr_decode(layer, data, spec)


def _decode_zstd(layer: Layer, data: bytes, spec: ArraySpec) -> bytes:
    bound, slack = zstd_decoded_bound(data, layer.limit)
    if bound - slack > layer.limit:
        raise _too_large(layer, bound)
    return _zarr_decode(layer, data, spec)


def _decode_lz4(layer: Layer, data: bytes, spec: ArraySpec) -> bytes:
    """numcodecs' LZ4: a little-endian 32-bit decoded size, then one LZ4 block."""
    if len(data) < 4:
        raise ChunkDecodeError(f"{len(data)} bytes, shorter than its header")
    declared = int.from_bytes(data[:4], "little", signed=True)
    if declared < 0 or declared > layer.limit:
        raise _too_large(layer, declared)
    return _zarr_decode(layer, data, spec)


def _decode_lz4h5(layer: Layer, data: bytes, spec: ArraySpec) -> bytes:
    """HDF5's LZ4 filter: a big-endian 64-bit total and 32-bit block size, then blocks each
    prefixed with its big-endian 32-bit size (the block size when stored raw)."""
    if len(data) < 12:
        raise ChunkDecodeError(f"{len(data)} bytes, shorter than its header")
    total = int.from_bytes(data[:8], "big")
    block = int.from_bytes(data[8:12], "big")
    if total > layer.limit:
        raise _too_large(layer, total)
    if total and not 0 < block <= total:
        raise ChunkDecodeError(f"block size {block} for {total} bytes")
    position, left = 12, total
    while left > 0:
        expected = min(block, left)
        if position + 4 > len(data):
            raise ChunkDecodeError("the frame ends before its last block")
        size = int.from_bytes(data[position : position + 4], "big")
        if not 0 < size <= expected or position + 4 + size > len(data):
            raise ChunkDecodeError(f"a block of {size} bytes at byte {position}")
        position += 4 + size
        left -= expected
    if position != len(data):
        raise ChunkDecodeError(f"{len(data) - position} bytes after the last block")
    import imagecodecs

    return bytes(imagecodecs.lz4h5_decode(data, out=total)) if total else b""


# imagecodecs function and the codec attributes it takes, per codec name (imagecodecs is only
# imported when an array names one of its codecs).
_BOUNDED: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "imagecodecs_zlib": ("zlib_decode", ()),
    "imagecodecs_deflate": ("deflate_decode", ("raw",)),
    "imagecodecs_lz4": ("lz4_decode", ("header",)),
    "imagecodecs_lzma": ("lzma_decode", ()),
    "imagecodecs_bz2": ("bz2_decode", ()),
    "imagecodecs_lzw": ("lzw_decode", ()),
    "imagecodecs_packbits": ("packbits_decode", ()),
    "imagecodecs_lzf": ("lzf_decode", ("header",)),
}
_SZIP_OPTIONS: Final = ("options_mask", "pixels_per_block", "bits_per_pixel", "pixels_per_scanline")


def _decode_bounded(layer: Layer, data: bytes, _: ArraySpec) -> bytes:
    """imagecodecs' own decoder into a buffer one byte larger than the limit: it stops there
    (LZW, LZMA, bzip2 truncate; the others refuse to overflow)."""
    import imagecodecs

    function, options = _BOUNDED[layer.name]
    decode = getattr(imagecodecs, function)
    arguments = {name: getattr(layer.codec, name) for name in options if hasattr(layer.codec, name)}
    if layer.name == "imagecodecs_lz4" and not arguments.get("header"):
        raise ChunkDecodeError("LZ4 blocks without a size header are not read")
    return bytes(decode(data, out=layer.limit + 1, **arguments))


def _decode_szip(layer: Layer, data: bytes, _: ArraySpec) -> bytes:
    """HDF5's SZIP filter: a little-endian 32-bit decoded size, then the libaec stream, decoded
    into a buffer of exactly that size (libaec refuses other sizes)."""
    import imagecodecs

    if not getattr(layer.codec, "header", False):
        raise ChunkDecodeError("SZIP streams without a size header are not read")
    if len(data) < 4:
        raise ChunkDecodeError(f"{len(data)} bytes, shorter than its header")
    declared = int.from_bytes(data[:4], "little")
    if declared > layer.limit:
        raise _too_large(layer, declared)
    options = {name: getattr(layer.codec, name) for name in _SZIP_OPTIONS}
    return bytes(imagecodecs.szip_decode(data, header=True, out=declared, **options))


_DECODERS: Final[dict[str, Callable[[Layer, bytes, ArraySpec], bytes]]] = {
    "szip": _decode_szip,
    "deflate": _decode_deflate,
    "bz2": _decode_streams,
    "lzma": _decode_streams,
    "blosc": _decode_blosc,
    "zstd": _decode_zstd,
    "lz4": _decode_lz4,
    "lz4h5": _decode_lz4h5,
    "bounded": _decode_bounded,
    "transform": _zarr_decode,
    "checksum": _zarr_decode,
    "checked": _zarr_decode,
    "opaque": _zarr_decode,
}
