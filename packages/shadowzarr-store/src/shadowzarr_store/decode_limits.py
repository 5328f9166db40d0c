"""Refuse compressed chunks that would decompress far beyond what their array's chunks hold.

zarr decodes whatever a chunk's codecs produce and only then notices the size is wrong, so a few
kilobytes of zlib, zstd or blosc (a "zip bomb") can make it allocate gigabytes first. Before a
chunk is handed to zarr, the store reads the decompressed size that blosc, zstd and LZ4 declare
in their headers, and inflates deflate, bzip2 and LZMA streams with a bound, stopping one byte
past the limit. The real decode stays zarr's: deflate streams short enough that even deflate's
best ratio (1032:1) stays within the limit are not inflated at all.

The limit of the outermost compressor is the size of what it compressed: the chunk's bytes
(``prod(chunk_shape) * itemsize``), plus 4 bytes per checksum codec inside it. Chunks without a
fixed size (``vlen-utf8``, ``vlen-bytes``, array-to-array codecs other than ``transpose``) get a
generous bound, ``max(64 MiB, 1 KiB per element)``. A chain with compressors nested inside each
other is decoded layer by layer with the same bounds (rare; never on the path of HDF5 chunks).
"""

from __future__ import annotations

import asyncio
import bz2
import functools
import lzma
import math
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numcodecs
import numcodecs.blosc
from shadowzarr_spec import ChunkDecodeError, array_info
from shadowzarr_spec.keys import array_of_chunk_key
from zarr.core.dtype import get_data_type_from_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadowzarr_spec import ArrayInfo, ReferenceFileSystem

__all__ = ["ChunkGuard", "DecodeLimits", "chunk_guard"]

type LayerKind = Literal[
    "checksum", "shuffle", "deflate", "bz2", "lzma", "blosc", "zstd", "lz4", "opaque"
]

VARIABLE_FLOOR = 64 << 20
"""The least a chunk of variable-size elements may decompress to (64 MiB)."""
VARIABLE_PER_ELEMENT = 1024
DEFLATE_MAX_RATIO = 1032
"""Deflate's best possible ratio: 2 bits for a 258-byte match."""
LZMA_MEMORY = 128 << 20
"""Memory an LZMA stream's decoder may use besides the output (its dictionary, up to 64 MiB)."""
INLINE_CHECK_BYTES = 64 << 10
"""Checks that may inflate or walk more than this run in a worker thread, off the event loop."""
_STEP = 1 << 20
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 << 10

_SERIALIZERS = frozenset({"bytes", "vlen-utf8", "vlen-bytes"})
_CHECKSUMS_AT_END = frozenset({"numcodecs.fletcher32", "crc32c"})
_CHECKSUMS_CONFIGURED = frozenset({"numcodecs.crc32", "numcodecs.adler32"})
_COMPRESSORS: dict[str, LayerKind] = {
    "numcodecs.zlib": "deflate",
    "numcodecs.gzip": "deflate",
    "gzip": "deflate",
    "numcodecs.bz2": "bz2",
    "numcodecs.lzma": "lzma",
    "blosc": "blosc",
    "numcodecs.blosc": "blosc",
    "zstd": "zstd",
    "numcodecs.zstd": "zstd",
    "numcodecs.lz4": "lz4",
}
_WRAPPED = frozenset({"numcodecs.gzip", "gzip"})  # deflate inside gzip members, not zlib


@dataclass(frozen=True, slots=True)
class Layer:
    """One bytes-to-bytes codec, and the most bytes its decoding may legitimately produce."""

    kind: LayerKind
    name: str
    limit: int
    configuration: dict[str, Any]

    @property
    def compresses(self) -> bool:
        return self.kind in ("deflate", "bz2", "lzma", "blosc", "zstd", "lz4")


@dataclass(frozen=True, slots=True)
class ChunkGuard:
    """The codecs of one array that can be checked, outermost (first decoded) first."""

    path: str
    layers: tuple[Layer, ...]

    @property
    def compressors(self) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if layer.compresses)

    def cheap(self, data: bytes | memoryview) -> bool:
        """Whether `check` does little enough work here to run on the event loop."""
        compressors = self.compressors
        if len(compressors) != 1:
            return False
        only, size = compressors[0], len(data)
        match only.kind:
            case "blosc" | "lz4":
                return True
            case "zstd":
                # A bound walks the block headers: a few dozen in a legitimate chunk, but a
                # hostile one may hold millions.
                return size <= INLINE_CHECK_BYTES
            case "deflate":
                most = size * DEFLATE_MAX_RATIO
                return most <= only.limit or min(most, only.limit) <= INLINE_CHECK_BYTES
            case _:
                return False

    def check(self, data: bytes | memoryview, key: str, where: str) -> None:
        """Raise `ChunkDecodeError` if ``data`` would decompress beyond a layer's limit."""
        left = len(self.compressors)
        current: bytes | memoryview = data
        for layer in self.layers:
            match layer.kind:
                case "checksum":
                    current = _strip_checksum(current, layer)
                case "shuffle":
                    elementsize = int(layer.configuration.get("elementsize", 1))
                    current = numcodecs.Shuffle(elementsize=elementsize).decode(current)
                case _:
                    left -= 1
                    decoded = _check_layer(current, layer, key, where, keep=left > 0)
                    if decoded is None:
                        return
                    current = decoded


def chunk_guard(info: ArrayInfo) -> ChunkGuard | None:
    """The checkable codecs of an array, or None when no compressor can be checked."""
    names = [codec.get("name") for codec in info.codecs]
    serializer = next((i for i, name in enumerate(names) if name in _SERIALIZERS), None)
    if serializer is None:
        return None
    size = _serialized_limit(info, serializer)
    inside_out: list[Layer] = []
    for codec in info.codecs[serializer + 1 :]:
        name = str(codec.get("name"))
        configuration = dict(codec.get("configuration") or {})
        kind: LayerKind
        if name in _CHECKSUMS_AT_END or name in _CHECKSUMS_CONFIGURED:
            kind, after = "checksum", size + 4
        elif name == "numcodecs.shuffle":
            kind, after = "shuffle", size
        elif name in _COMPRESSORS:
            kind, after = _COMPRESSORS[name], _compress_bound(size)
        else:
            kind, after = "opaque", max(VARIABLE_FLOOR, 8 * size)
        inside_out.append(Layer(kind, name, size, configuration))
        size = after
    layers: list[Layer] = []
    for layer in reversed(inside_out):
        if layer.kind == "opaque":
            break  # nothing inside an unknown codec can be seen without running it
        if layer.kind == "lzma" and layer.configuration.get("format") == lzma.FORMAT_RAW:
            break
        layers.append(layer)
    if not any(layer.compresses for layer in layers):
        return None
    return ChunkGuard(info.path, tuple(layers))


def _serialized_limit(info: ArrayInfo, serializer: int) -> int:
    """Bytes of one chunk as the serializer writes them (a bound when elements vary in size)."""
    elements = math.prod(info.chunk_shape)
    variable = max(VARIABLE_FLOOR, VARIABLE_PER_ELEMENT * elements)
    before = info.codecs[:serializer]
    if info.codecs[serializer].get("name") != "bytes" or any(
        codec.get("name") != "transpose" for codec in before
    ):
        return variable
    try:
        native = get_data_type_from_json(info.data_type, zarr_format=3).to_native_dtype()
    except (ValueError, TypeError, KeyError):
        return variable
    if native.itemsize == 0 or native.hasobject:
        return variable
    return elements * native.itemsize


def _compress_bound(size: int) -> int:
    """More than any of these compressors writes for ``size`` bytes of incompressible input."""
    return size + size // 8 + 1024


def _strip_checksum(data: bytes | memoryview, layer: Layer) -> bytes | memoryview:
    at_start = layer.name in _CHECKSUMS_CONFIGURED and layer.configuration.get("location") != "end"
    return data[4:] if at_start else data[:-4]


def _refuse(key: str, where: str, layer: Layer, declared: int | None) -> ChunkDecodeError:
    size = "more" if declared is None else f"{declared} bytes,"
    return ChunkDecodeError(
        f"{where}: chunk {key!r} would decompress ({layer.name}) to {size} more than the "
        f"{layer.limit} bytes a chunk of its array holds"
    )


def _malformed(key: str, where: str, layer: Layer, why: str) -> ChunkDecodeError:
    return ChunkDecodeError(f"{where}: chunk {key!r} is not valid {layer.name} data: {why}")


def _check_layer(
    data: bytes | memoryview, layer: Layer, key: str, where: str, *, keep: bool
) -> bytes | None:
    """Check one compressor; with ``keep``, also return what it decodes to (bounded)."""
    if layer.kind in ("deflate", "bz2", "lzma"):
        if not keep and layer.kind == "deflate":
            if len(data) * DEFLATE_MAX_RATIO <= layer.limit:
                return None  # even the best deflate ratio cannot reach the limit
            if layer.name not in _WRAPPED and _fits_by_libdeflate(data, layer.limit):
                return None
        try:
            total, parts = _inflate(data, layer, keep)
        except (zlib.error, OSError, EOFError, lzma.LZMAError) as exc:
            raise _malformed(key, where, layer, str(exc)) from exc
        if total > layer.limit:
            raise _refuse(key, where, layer, None)
        return b"".join(parts) if keep else None
    declared, slack = _declared_size(data, layer, key, where)
    if declared - slack > layer.limit:
        raise _refuse(key, where, layer, declared)
    if not keep:
        return None
    decoder = {
        "blosc": numcodecs.blosc.decompress,
        "zstd": numcodecs.Zstd().decode,
        "lz4": numcodecs.LZ4().decode,
    }[layer.kind]
    try:
        return bytes(decoder(data))
    except (RuntimeError, ValueError) as exc:  # what numcodecs raises for damaged input
        raise _malformed(key, where, layer, str(exc)) from exc


def _declared_size(data: bytes | memoryview, layer: Layer, key: str, where: str) -> tuple[int, int]:
    """The decompressed size a blosc, zstd or LZ4 chunk announces (what its decoder allocates),
    and by how much that may exceed the real size."""
    view = memoryview(data).cast("B")
    if layer.kind == "blosc":
        if len(view) < 16:
            raise _malformed(key, where, layer, f"{len(view)} bytes, shorter than its header")
        return int.from_bytes(view[4:8], "little"), 0
    if layer.kind == "lz4":
        if len(view) < 4:
            raise _malformed(key, where, layer, f"{len(view)} bytes, shorter than its header")
        return int.from_bytes(view[0:4], "little"), 0
    try:
        return _zstd_bound(view)
    except IndexError as exc:
        raise _malformed(key, where, layer, "the frame ends early") from exc
    except ValueError as exc:
        raise _malformed(key, where, layer, str(exc)) from exc


def _zstd_bound(view: memoryview) -> tuple[int, int]:
    """What a run of zstd frames decodes to at most, from frame and block headers only.

    A frame that states its content size is held to it by the decoder; one that does not is
    bounded by its blocks (raw and RLE blocks state their size, a compressed block decodes to at
    most the block maximum), so the bound may exceed the real size by under one block: that
    much slack is returned with it.
    """
    position, total, unsized = 0, 0, False
    while position < len(view):
        if len(view) - position < 4:
            raise ValueError("trailing bytes after the last frame")
        magic = int.from_bytes(view[position : position + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            position += 8 + int.from_bytes(view[position + 4 : position + 8], "little")
            continue
        if magic != _ZSTD_MAGIC:
            raise ValueError(f"no zstd frame at byte {position}")
        descriptor = view[position + 4]
        position += 5
        single_segment = bool(descriptor & 0x20)
        window: int | None = None
        if not single_segment:
            exponent, mantissa = view[position] >> 3, view[position] & 7
            base = 1 << (10 + exponent)
            window = base + (base >> 3) * mantissa
            position += 1
        position += (0, 1, 2, 4)[descriptor & 3]  # dictionary id
        content_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        content_size: int | None = None
        if content_bytes:
            field = view[position : position + content_bytes]
            if len(field) < content_bytes:
                raise IndexError("frame header")
            content_size = int.from_bytes(field, "little") + (256 if content_bytes == 2 else 0)
            position += content_bytes
        block_max = min(window if window is not None else content_size or 0, _ZSTD_BLOCK_MAX)
        blocks, position = _zstd_blocks(view, position, block_max)
        if descriptor & 0x04:
            position += 4  # content checksum
        if content_size is None:
            unsized = True
        total += blocks if content_size is None else content_size
    # An unsized frame's last block may be counted whole although it is short.
    return total, _ZSTD_BLOCK_MAX if unsized else 0


def _zstd_blocks(view: memoryview, position: int, block_max: int) -> tuple[int, int]:
    """Upper bound of what a frame's blocks decode to, and where the frame's blocks end."""
    bound = 0
    while True:
        if len(view) - position < 3:
            raise IndexError("block header")
        header = int.from_bytes(view[position : position + 3], "little")
        position += 3
        block_type, size = (header >> 1) & 3, header >> 3
        if block_type == 0:  # raw
            bound, position = bound + size, position + size
        elif block_type == 1:  # RLE: one byte repeated size times
            bound, position = bound + size, position + 1
        elif block_type == 2:
            bound, position = bound + block_max, position + size
        else:
            raise ValueError("reserved block type")
        if position > len(view):
            raise IndexError("block")
        if header & 1:
            return bound, position


def _inflate(data: bytes | memoryview, layer: Layer, keep: bool) -> tuple[int, list[bytes]]:
    """Decompress at most ``layer.limit + 1`` bytes: how many came out, and them if ``keep``."""
    limit = layer.limit
    total = 0
    parts: list[bytes] = []
    new = _decompressor_factory(layer)
    decompressor = new()
    pending: bytes | memoryview = data
    while True:
        piece = decompressor.decompress(pending, min(_STEP, limit + 1 - total))
        total += len(piece)
        if keep:
            parts.append(piece)
        if total > limit:
            return total, parts
        if decompressor.eof:
            rest = decompressor.unused_data
            if layer.kind == "deflate" and (layer.name not in _WRAPPED or not rest.strip(b"\0")):
                return total, parts  # zlib ignores what follows its stream; gzip skips padding
            if not rest:
                return total, parts
            # Another gzip member (after zero padding), bz2 or xz stream.
            decompressor, pending = new(), rest.lstrip(b"\0") if layer.kind == "deflate" else rest
            continue
        if layer.kind == "deflate":
            pending = decompressor.unconsumed_tail
            if not pending and not piece:
                return total, parts  # the stream ends early: zarr reports it
        else:
            pending = b""
            if decompressor.needs_input:
                return total, parts


def _fits_by_libdeflate(data: bytes | memoryview, limit: int) -> bool:
    """Whether libdeflate (through imagecodecs, if installed) inflates ``data`` into ``limit``
    bytes, about twice as fast as zlib. False when it cannot; the exact check then decides."""
    found = _libdeflate()
    if found is None:
        return False
    decode, error = found
    try:
        decode(data, out=limit)
    except error:
        return False
    return True


@functools.cache
def _libdeflate() -> tuple[Callable[..., Any], type[Exception]] | None:
    try:
        import imagecodecs
    except ImportError:
        return None
    if not imagecodecs.DEFLATE.available:
        return None
    return imagecodecs.deflate_decode, imagecodecs.DeflateError


def _decompressor_factory(layer: Layer) -> Callable[[], Any]:
    if layer.kind == "deflate":
        wbits = 16 + zlib.MAX_WBITS if layer.name in _WRAPPED else zlib.MAX_WBITS
        return lambda: zlib.decompressobj(wbits)
    if layer.kind == "bz2":
        return bz2.BZ2Decompressor
    # The stream names its dictionary size and the decoder allocates it: up to 1.5 GiB. Enough
    # for the largest preset (64 MiB) is allowed, more is refused as invalid.
    memlimit = layer.limit + LZMA_MEMORY
    return lambda: lzma.LZMADecompressor(memlimit=memlimit)


class DecodeLimits:
    """Per-array chunk guards of one reference file system, built on first use."""

    def __init__(self, rfs: ReferenceFileSystem) -> None:
        self._rfs = rfs
        self._guards: dict[str, ChunkGuard | None] = {}

    def guard(self, key: str) -> ChunkGuard | None:
        """The guard of the array holding chunk ``key`` (None: not a chunk, or nothing to check)."""
        split = array_of_chunk_key(key)
        if split is None:
            return None
        path = split[0]
        try:
            return self._guards[path]
        except KeyError:
            pass
        info = array_info(self._rfs, path)
        guard = None if info is None else chunk_guard(info)
        self._guards[path] = guard
        return guard

    async def check(self, key: str, data: bytes | memoryview, where: str) -> None:
        """Raise `ChunkDecodeError` if chunk ``key`` would decompress beyond its array's limit."""
        guard = self.guard(key)
        if guard is None:
            return
        if guard.cheap(data):
            guard.check(data, key, where)
        else:
            await asyncio.to_thread(guard.check, data, key, where)
