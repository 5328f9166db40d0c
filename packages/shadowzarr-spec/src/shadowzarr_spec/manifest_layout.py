"""Reading a chunk manifest as its own ``zarr.json`` describes it.

An index array is a plain Zarr v3 array, so any Zarr writer may have written it, with its own
chunk shape (the last axis too), chunk key encoding, byte order, fill value and compressor.
`ManifestLayout` is parsed from that document and says which stored chunk holds an entry and
how to decode it; nothing assumes the chunking shadowzarr writes.

Index chunks are decoded here, not by zarr, because they decide where every data read goes and
arrive from wherever the references came from: each compressor is bounded to the chunk's exact
size and its frame checked before a native decoder sees it (`check_blosc_frame`,
`zstd_decoded_bound`). Supported: the ``bytes`` serializer (either byte order), ``transpose``,
and at most one of ``blosc``, ``zstd``, ``gzip``, ``numcodecs.zlib``, ``numcodecs.lz4``; a
sharded or otherwise encoded index is refused by name. A decoded index chunk may hold at most
:data:`MAX_INDEX_CHUNK_BYTES`. Every index chunk must exist: a missing one is an error, never the
fill value (which would read every data chunk it covers as never written if a file were lost).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Final

import numcodecs
import numcodecs.blosc
import numpy as np

from shadowzarr_spec.blosc_frame import check_blosc_frame
from shadowzarr_spec.errors import ChunkDecodeError, ReferenceFormatError, UnsupportedFeatureError
from shadowzarr_spec.zstd_frame import zstd_decoded_bound

__all__ = ["MAX_INDEX_CHUNK_BYTES", "ManifestLayout"]

MAX_INDEX_CHUNK_BYTES: Final = 64 << 20
"""Largest decoded index chunk read (4 Mi entries; shadowzarr writes 1 MiB chunks)."""

_COMPRESSORS: Final = {
    "blosc": "blosc",
    "numcodecs.blosc": "blosc",
    "zstd": "zstd",
    "numcodecs.zstd": "zstd",
    "gzip": "gzip",
    "numcodecs.gzip": "gzip",
    "numcodecs.zlib": "zlib",
    "numcodecs.lz4": "lz4",
}
_MAX_UINT64: Final = 2**64 - 1


@dataclass(frozen=True, slots=True)
class ManifestLayout:
    """How one stored index array is chunked and encoded."""

    grid: tuple[int, ...]
    """The data array's chunk grid: the index array's shape without its last axis (of 2)."""
    chunk_shape: tuple[int, ...]
    """Shape of one index chunk, the last axis included."""
    default_keys: bool
    """``c/0/1`` keys (Zarr v3 default encoding) or ``0.1`` keys (``v2`` encoding)."""
    separator: str
    big_endian: bool
    order: tuple[int, ...] | None
    """The ``transpose`` codec's order, if any."""
    compressor: str | None
    fill: int

    @classmethod
    def from_metadata(cls, document: object, grid: tuple[int, ...], where: str) -> ManifestLayout:
        """The layout of the index array whose ``zarr.json`` is ``document``.

        ``grid`` is the chunk grid of the data array it indexes; ``where`` names the index in
        errors. Raises `ReferenceFormatError` or `UnsupportedFeatureError`.
        """
        if not isinstance(document, dict) or document.get("node_type") != "array":
            raise ReferenceFormatError(f"{where}: the index's zarr.json does not describe an array")
        if document.get("zarr_format") != 3 or document.get("data_type") != "uint64":
            raise ReferenceFormatError(f"{where}: an index array must be a Zarr v3 uint64 array")
        shape = document.get("shape")
        if shape != [*grid, 2]:
            raise ReferenceFormatError(
                f"{where}: the index array has shape {shape!r}; the data array's chunk grid "
                f"needs {[*grid, 2]}"
            )
        chunk_shape = _chunk_shape(document.get("chunk_grid"), len(grid) + 1, where)
        if math.prod(chunk_shape) * 8 > MAX_INDEX_CHUNK_BYTES:
            raise UnsupportedFeatureError(
                f"{where}: index chunks of {chunk_shape} hold more than the "
                f"{MAX_INDEX_CHUNK_BYTES} bytes an index chunk may hold"
            )
        default_keys, separator = _key_encoding(document.get("chunk_key_encoding"), where)
        big_endian, order, compressor = _codecs(document.get("codecs"), len(chunk_shape), where)
        if document.get("storage_transformers") not in (None, []):
            raise UnsupportedFeatureError(f"{where}: an index array with storage transformers")
        fill = document.get("fill_value")
        if not isinstance(fill, int) or isinstance(fill, bool) or not 0 <= fill <= _MAX_UINT64:
            raise ReferenceFormatError(f"{where}: the index's fill value {fill!r} is not a uint64")
        return cls(grid, chunk_shape, default_keys, separator, big_endian, order, compressor, fill)

    @property
    def counts(self) -> tuple[int, ...]:
        """Index chunks along each axis of the index array."""
        return tuple(
            math.ceil(s / c) for s, c in zip((*self.grid, 2), self.chunk_shape, strict=True)
        )

    def chunk_key(self, block: tuple[int, ...]) -> str:
        """The key of index chunk ``block``, relative to the index array's folder."""
        parts = [str(i) for i in block]
        if self.default_keys:
            return self.separator.join(["c", *parts])
        return self.separator.join(parts) or "0"

    def locate(self, element: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(index chunk, position inside it) of one element of the index array."""
        block = tuple(e // c for e, c in zip(element, self.chunk_shape, strict=True))
        inside = tuple(e % c for e, c in zip(element, self.chunk_shape, strict=True))
        return block, inside

    def decode(self, data: bytes | memoryview, where: str) -> np.ndarray:
        """One stored index chunk as a uint64 array of `chunk_shape`; `ReferenceFormatError`
        when it is not what the layout says (checked before any native decoder runs)."""
        expected = math.prod(self.chunk_shape) * 8
        try:
            raw = _decompress(self.compressor, data, expected)
        except ChunkDecodeError as exc:
            raise ReferenceFormatError(f"{where}: index chunk {exc}") from exc
        if len(raw) != expected:
            raise ReferenceFormatError(
                f"{where}: index chunk holds {len(raw)} bytes, its zarr.json says {expected}"
            )
        stored_shape = self.chunk_shape
        if self.order is not None:
            stored_shape = tuple(self.chunk_shape[i] for i in self.order)
        block = np.frombuffer(raw, dtype=">u8" if self.big_endian else "<u8")
        block = block.reshape(stored_shape)
        if self.order is not None:
            block = block.transpose(np.argsort(self.order))
        return np.ascontiguousarray(block, dtype=np.uint64)


def _chunk_shape(grid: object, ndim: int, where: str) -> tuple[int, ...]:
    if (
        not isinstance(grid, dict)
        or grid.get("name") != "regular"
        or not isinstance(grid.get("configuration"), dict)
    ):
        raise UnsupportedFeatureError(f"{where}: an index array needs a regular chunk grid")
    shape = grid["configuration"].get("chunk_shape")
    if (
        not isinstance(shape, list)
        or len(shape) != ndim
        or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in shape)
    ):
        raise ReferenceFormatError(f"{where}: invalid index chunk shape {shape!r}")
    return tuple(shape)


def _key_encoding(encoding: object, where: str) -> tuple[bool, str]:
    if encoding is None:
        return True, "/"
    if not isinstance(encoding, dict) or encoding.get("name") not in ("default", "v2"):
        raise UnsupportedFeatureError(f"{where}: index chunk key encoding {encoding!r}")
    default = encoding["name"] == "default"
    configuration = encoding.get("configuration") or {}
    separator = (
        configuration.get("separator", "/" if default else ".")
        if isinstance(configuration, dict)
        else None
    )
    if separator not in ("/", "."):
        raise ReferenceFormatError(f"{where}: index chunk key separator {separator!r}")
    return default, separator


def _codecs(
    codecs: object, ndim: int, where: str
) -> tuple[bool, tuple[int, ...] | None, str | None]:
    if not isinstance(codecs, list) or not all(isinstance(c, dict) for c in codecs):
        raise ReferenceFormatError(f"{where}: the index's codecs must be a list of objects")
    names = [c.get("name") for c in codecs]
    if "bytes" not in names:
        raise UnsupportedFeatureError(
            f"{where}: index arrays need the 'bytes' serializer, not {names!r}"
        )
    serializer = names.index("bytes")
    order: tuple[int, ...] | None = None
    for codec in codecs[:serializer]:
        configuration = codec.get("configuration") or {}
        given = configuration.get("order") if isinstance(configuration, dict) else None
        if (
            codec.get("name") != "transpose"
            or order is not None
            or not isinstance(given, list)
            or sorted(given) != list(range(ndim))
        ):
            raise UnsupportedFeatureError(f"{where}: index array codecs {names!r}")
        order = tuple(given)
    configuration = codecs[serializer].get("configuration") or {}
    endian = configuration.get("endian", "little") if isinstance(configuration, dict) else None
    if endian not in ("little", "big"):
        raise ReferenceFormatError(f"{where}: index byte order {endian!r}")
    after = names[serializer + 1 :]
    if len(after) > 1 or (after and after[0] not in _COMPRESSORS):
        raise UnsupportedFeatureError(
            f"{where}: index array codecs {names!r}; after 'bytes' an index may use one of "
            f"{sorted(_COMPRESSORS)}"
        )
    return endian == "big", order, _COMPRESSORS[after[0]] if after else None


def _decompress(kind: str | None, data: bytes | memoryview, expected: int) -> bytes | memoryview:
    """``data`` decompressed, refused (`ChunkDecodeError`) if it would not be ``expected``
    bytes; frames are checked before numcodecs' native decoders run."""
    match kind:
        case None:
            return data
        case "blosc":
            check_blosc_frame(data, expected)
            return _run(numcodecs.blosc.decompress, data, "blosc")
        case "zstd":
            bound, slack = zstd_decoded_bound(data, expected)
            if bound - slack > expected:
                raise ChunkDecodeError(f"would decompress to {bound} bytes, not {expected}")
            return _run(numcodecs.Zstd().decode, data, "zstd")
        case "lz4":
            if len(data) < 4 or int.from_bytes(bytes(data[:4]), "little") != expected:
                raise ChunkDecodeError(f"is not LZ4 data of {expected} bytes")
            return _run(numcodecs.LZ4().decode, data, "lz4")
        case _:
            wbits = 16 + zlib.MAX_WBITS if kind == "gzip" else zlib.MAX_WBITS
            decompressor = zlib.decompressobj(wbits)
            try:
                raw = decompressor.decompress(data, expected + 1)
            except zlib.error as exc:
                raise ChunkDecodeError(f"is not valid {kind} data: {exc}") from exc
            if not decompressor.eof:
                raise ChunkDecodeError(f"is {kind} data of more than {expected} bytes, or cut")
            return raw


def _run(decode: Any, data: bytes | memoryview, name: str) -> bytes:
    try:
        return bytes(decode(data))
    except (RuntimeError, ValueError) as exc:
        raise ChunkDecodeError(f"is not valid {name} data: {exc}") from exc
