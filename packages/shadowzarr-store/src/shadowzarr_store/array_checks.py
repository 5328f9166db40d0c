"""What the store knows about one array before it serves it: valid metadata, bounds, safe codecs.

An array's ``zarr.json`` is validated by zarr-python's own parser (``ArrayV3Metadata``), so an
array zarr would refuse is refused when it is opened, with an error of ours naming it. Beyond
what zarr checks, an array of references must stay within bounds that a reference file of a
few hundred bytes cannot push the reader past:

- a decoded chunk holds at most ``max_chunk_bytes`` (a store option, 2 GiB by default; an
  element of variable size counts as :data:`OBJECT_ELEMENT_BYTES`);
- an array has at most :data:`MAX_DIMENSIONS` dimensions (its grid may be huge: nothing walks
  a grid, listing and copying follow the references, see `GenEntry.keys_in_grid`);
- every codec is one whose decoder the store checks (`shadowzarr_store.codec_policy`).

Then each chunk of a compressed (or otherwise encoded) array is decoded once before zarr sees
it: its byte codecs with bounds (`shadowzarr_store.decode_limits`), an image codec after its
header's size is checked (`shadowzarr_store.image_headers`), its serializer and filters by
zarr's own codecs. Any failure is a `ChunkDecodeError` naming the chunk and where it came from,
so zarr's decode of the same bytes cannot fail. This costs a second decode of each compressed
chunk; it is the price of every reading error being ours.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import math
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from shadowzarr_spec import (
    ChunkDecodeError,
    ReferenceFormatError,
    ShadowzarrError,
    UnsupportedFeatureError,
)
from zarr.codecs.sharding import ShardingCodec
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.codec_pipeline import codecs_from_list_unchecked, resolve_aa_specs
from zarr.core.metadata.v3 import ArrayV3Metadata, RegularChunkGridMetadata
from zarr.errors import UnknownCodecError

from shadowzarr_store.codec_policy import CodecRole, codec_role, compressed_bound
from shadowzarr_store.decode_limits import Layer, decode_layer, variable_bound
from shadowzarr_store.image_headers import image_size
from shadowzarr_store.missing_codecs import is_stand_in

if TYPE_CHECKING:
    from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec, Codec

__all__ = [
    "MAX_DIMENSIONS",
    "METADATA_ERRORS",
    "OBJECT_ELEMENT_BYTES",
    "ArrayChecks",
    "ShardFormat",
]

MAX_DIMENSIONS: Final = 32
OBJECT_ELEMENT_BYTES: Final = 64
"""What one element of variable size (a string, an object) costs at least once decoded."""
INLINE_CHECK_BYTES: Final = 64 << 10
"""Chunks up to this size are checked on the event loop; larger ones in a worker thread."""
IMAGE_SLACK: Final = 16
"""An image chunk may declare at most as many pixels as its chunk holds elements; decoded, a
pixel may take up to this many bytes (4 samples of float32) where the header's sample format is
not parsed."""

# What zarr-python's metadata parser raises for documents it refuses (its own errors derive
# from ValueError); a dict of the wrong shape surfaces as the others.
METADATA_ERRORS: Final = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    NotImplementedError,
    OverflowError,
    RecursionError,
)


@dataclass(frozen=True, slots=True, eq=False)
class ArrayChecks:
    """One validated array: its metadata as zarr parses it, and how its chunks are checked."""

    path: str
    metadata: ArrayV3Metadata | None
    chunk_shape: tuple[int, ...]
    chunk_bytes: int
    layers: tuple[Layer, ...]
    """Byte codecs, outermost (first decoded) first."""
    layer_spec: ArraySpec
    serializer: ArrayBytesCodec
    serializer_name: str
    serializer_role: CodecRole
    filters: tuple[tuple[ArrayArrayCodec, ArraySpec], ...]
    """Array codecs in decoding order, with the spec each decodes to."""
    stored_bound: int | None
    """Most bytes one stored chunk may hold (None: unknown, an opaque codec is involved)."""
    verified: bool
    """Whether chunks are decoded before zarr sees them (anything but plain ``bytes``)."""
    image_header: bytes
    shards: ShardFormat | None
    """For a sharded array: its shards' layout (a shard is checked whole, its inner chunks as
    chunks of their own)."""

    @property
    def metadata_grid(self) -> tuple[int, ...]:
        """The array's chunk grid (chunks along each axis)."""
        assert self.metadata is not None
        return tuple(
            math.ceil(s / c) for s, c in zip(self.metadata.shape, self.chunk_shape, strict=True)
        )

    @classmethod
    def from_document(cls, path: str, document: Any, max_chunk_bytes: int) -> ArrayChecks:
        """Validate an array's ``zarr.json``; `ReferenceFormatError` when zarr refuses it,
        `UnsupportedFeatureError` when it is beyond what the store reads safely."""
        metadata = _parse(path, document)
        grid = metadata.chunk_grid
        if not isinstance(grid, RegularChunkGridMetadata):
            raise UnsupportedFeatureError(f"array {path!r}: only regular chunk grids are read")
        chunk_shape = tuple(int(c) for c in grid.chunk_shape)
        if len(chunk_shape) > MAX_DIMENSIONS:
            raise UnsupportedFeatureError(
                f"array {path!r} has {len(chunk_shape)} dimensions, more than {MAX_DIMENSIONS}"
            )
        elements = math.prod(chunk_shape)
        native = metadata.data_type.to_native_dtype()
        fixed = native.itemsize > 0 and not native.hasobject
        chunk_bytes = elements * (native.itemsize if fixed else OBJECT_ELEMENT_BYTES)
        if chunk_bytes > max_chunk_bytes:
            raise UnsupportedFeatureError(
                f"array {path!r}: a chunk of {chunk_shape} holds {chunk_bytes} bytes, more than "
                f"the {max_chunk_bytes} bytes a chunk may hold (the store option max_chunk_bytes)"
            )
        checks = _build(
            path, metadata.codecs, chunk_shape, metadata.data_type, metadata.fill_value, chunk_bytes
        )
        return replace(checks, metadata=metadata)

    def check_stored_size(self, size: int, key: str, where: str) -> None:
        """Refuse a stored chunk larger than any encoder writes for a chunk of this array."""
        if self.stored_bound is not None and size > self.stored_bound:
            raise ChunkDecodeError(
                f"{where}: the reference of chunk {key!r} holds {size} bytes, more than the "
                f"{self.stored_bound} bytes any chunk of array {self.path!r} compresses to; "
                "the references are damaged"
            )

    def shard_checked(self, key: str, identity: object) -> bool:
        """Whether shard ``key`` with the stored bytes ``identity`` names passed `verify`."""
        return self.shards is not None and self.shards.checked.seen(key, identity)

    async def verify(
        self, data: bytes | memoryview, key: str, where: str, identity: object = None
    ) -> None:
        """Decode chunk ``key`` as zarr will, with bounds; `ChunkDecodeError` if it fails. A
        shard is checked once per content (and ``identity``, the reference its bytes came
        from, is remembered as checked: its partial reads then cost no check)."""
        if not self.verified:
            return
        raw = bytes(data)
        if self.shards is not None:
            await self.shards.verify_once(raw, key, where, identity)
            return
        if len(raw) <= INLINE_CHECK_BYTES:
            encoded = self._decode_layers(raw, key, where)
        else:
            encoded = await asyncio.to_thread(self._decode_layers, raw, key, where)
        try:
            buffer = default_buffer_prototype().buffer.from_bytes(encoded)
            array: Any = await self.serializer._decode_single(buffer, self.layer_spec)
            for codec, spec in self.filters:
                array = await codec._decode_single(array, spec)
        except ShadowzarrError:
            raise
        except Exception as exc:
            # The codec's error type is its own (numcodecs, imagecodecs, zarr); each means
            # this chunk cannot be decoded.
            raise ChunkDecodeError(
                f"{where}: chunk {key!r} of array {self.path!r} cannot be decoded "
                f"({self.serializer_name}): {type(exc).__name__}: {exc}"
            ) from exc
        if tuple(array.shape) != self.chunk_shape:
            raise ChunkDecodeError(
                f"{where}: chunk {key!r} decodes to shape {tuple(array.shape)}, not "
                f"{self.chunk_shape}"
            )

    def decoded_chunk(self, data: bytes | memoryview, key: str, where: str) -> bytes:
        """A stored chunk of an array whose only array codec is ``bytes``, its byte codecs
        undone (bounded, checksums checked): the chunk's items as stored, exactly
        `chunk_bytes` of them, or `ChunkDecodeError`."""
        decoded = self._decode_layers(bytes(data), key, where)
        if len(decoded) != self.chunk_bytes:
            raise ChunkDecodeError(
                f"{where}: chunk {key!r} of array {self.path!r} decodes to {len(decoded)} "
                f"bytes, not the {self.chunk_bytes} of a chunk"
            )
        return decoded

    def _decode_layers(self, data: bytes, key: str, where: str) -> bytes:
        for layer in self.layers:
            data = decode_layer(layer, data, self.layer_spec, key, where)
        if self.serializer_role == "image":
            try:
                size = image_size(self.serializer_name, data, self.image_header)
            except ChunkDecodeError as exc:
                raise ChunkDecodeError(f"{where}: chunk {key!r}: {exc}") from exc
            elements = math.prod(self.chunk_shape)
            if size.pixels > elements:
                raise ChunkDecodeError(
                    f"{where}: chunk {key!r} is an image of {size.pixels} pixels; a chunk of "
                    f"array {self.path!r} holds {elements} elements"
                )
        elif self.serializer_name in ("vlen-utf8", "vlen-bytes"):
            # numcodecs allocates an object array of the item count a variable-length chunk's
            # header states before it reads any item (8 bytes per item: 10**9 items are 8 GB):
            # a count other than the chunk's elements, or more than its bytes hold, is refused.
            elements = math.prod(self.layer_spec.shape)
            count = int.from_bytes(data[:4], "little") if len(data) >= 4 else None
            if count != elements or 4 + 4 * count > len(data):
                raise ChunkDecodeError(
                    f"{where}: chunk {key!r} of array {self.path!r} is not "
                    f"{self.serializer_name} data of {elements} items (its header says {count}, "
                    f"in {len(data)} bytes)"
                )
        return data


def _parse(path: str, document: Any) -> ArrayV3Metadata:
    """zarr-python's own validation of an array document, its errors made ours."""
    if not isinstance(document, dict):
        raise ReferenceFormatError(f"array {path!r}: its zarr.json is not an object")
    _check_text_lengths(path, document.get("data_type"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr warns again when it opens the array itself
            return ArrayV3Metadata.from_dict(document, path=path)
    except UnknownCodecError as exc:
        raise UnsupportedFeatureError(
            f"array {path!r} needs a codec that is not installed: {exc}"
        ) from exc
    except METADATA_ERRORS as exc:
        raise ReferenceFormatError(
            f"array {path!r} has metadata zarr refuses: {type(exc).__name__}: {exc}"
        ) from exc


def _check_text_lengths(path: str, data_type: Any) -> None:
    """Refuse a ``fixed_length_utf32`` type (plain or a struct's field, at any depth) whose
    ``length_bytes`` is not a whole number of 4-byte code points: zarr-python rounds it down,
    so its elements would be read at other offsets than the writer put them."""
    waiting = [data_type]
    while waiting:
        node = waiting.pop()
        if not isinstance(node, dict) or not isinstance(node.get("configuration"), dict):
            continue  # zarr's parser judges the rest
        configuration = node["configuration"]
        if node.get("name") == "fixed_length_utf32":
            size = configuration.get("length_bytes")
            if isinstance(size, int) and not isinstance(size, bool) and size % 4 != 0:
                raise ReferenceFormatError(
                    f"array {path!r}: a fixed_length_utf32 type of {size} bytes is not a whole "
                    "number of 4-byte code points"
                )
        fields = configuration.get("fields")
        if node.get("name") == "struct" and isinstance(fields, list):
            for entry in fields:
                if isinstance(entry, dict):
                    waiting.append(entry.get("data_type"))
                elif isinstance(entry, list) and len(entry) == 2:
                    waiting.append(entry[1])


def _name(codec: Codec) -> str:
    try:
        name = codec.to_dict().get("name")
    except METADATA_ERRORS:
        name = None
    return name if isinstance(name, str) else type(codec).__name__


def _check_configuration(path: str, name: str, codec: Codec) -> None:
    """zarr makes a ``numcodecs.*`` codec from its configuration only when it first decodes a
    chunk: a configuration numcodecs refuses (an unknown keyword, a value of the wrong type)
    is the array's error here, not a TypeError from inside zarr's read."""
    if not hasattr(type(codec), "_codec"):
        return
    try:
        # building it is the check; `_codec` is the numcodecs wrappers' own (lazily built)
        # attribute, checked present above, which zarr's Codec types do not declare
        codec._codec  # type: ignore[union-attr]  # noqa: B018
    except METADATA_ERRORS as exc:
        raise ReferenceFormatError(
            f"array {path!r}: codec {name!r} refuses its configuration: {type(exc).__name__}: {exc}"
        ) from exc


def _build(
    path: str,
    codecs: tuple[Codec, ...],
    chunk_shape: tuple[int, ...],
    data_type: Any,
    fill_value: Any,
    chunk_bytes: int,
) -> ArrayChecks:
    """The checks of one codec chain over chunks of ``chunk_shape`` (an array's, or a shard's
    inner chunks)."""
    if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec):
        return _build_sharded(path, codecs[0], chunk_shape, data_type, fill_value, chunk_bytes)
    for codec in codecs:
        name = _name(codec)
        if codec_role(name) == "refused" and not is_stand_in(name):
            raise UnsupportedFeatureError(
                f"array {path!r} uses codec {name!r}, whose decoder shadowzarr cannot check "
                "before it runs, so it does not read it from references"
            )
        if not is_stand_in(name):
            _check_configuration(path, name, codec)
    try:
        aa_codecs, serializer, bb_codecs = codecs_from_list_unchecked(codecs)
        chunk_spec = ArraySpec(
            shape=chunk_shape,
            dtype=data_type,
            fill_value=fill_value,
            config=ArrayConfig.from_dict({}),
            prototype=default_buffer_prototype(),
        )
        aa_specs, layer_spec = resolve_aa_specs(aa_codecs, chunk_spec)
    except METADATA_ERRORS as exc:
        raise ReferenceFormatError(f"array {path!r}: its codecs do not chain: {exc}") from exc
    serializer_name = _name(serializer)
    serializer_role = codec_role(serializer_name)
    elements = math.prod(layer_spec.shape)
    serialized = layer_spec.dtype.to_native_dtype()
    size: int | None
    if serializer_role == "image":
        size = compressed_bound("image", chunk_bytes)
    elif serializer_role == "serializer" and serialized.itemsize and not serialized.hasobject:
        size = elements * serialized.itemsize if serializer_name != "vlen-bytes" else None
    else:
        size = None
    if serializer_name in ("vlen-utf8", "vlen-bytes") or size is None:
        size = variable_bound(elements)
    inside_out: list[Layer] = []
    bounded = serializer_role != "opaque"
    for codec in bb_codecs:
        name = _name(codec)
        role = codec_role(name)
        inside_out.append(Layer(role, name, size, codec))
        after = compressed_bound(role, size)
        if after is None:
            bounded = False
            after = max(variable_bound(elements), 8 * size)
        size = after
    image_header = b""
    if serializer_name == "imagecodecs_jpeg" and getattr(serializer, "header", None):
        try:
            header = serializer.header  # type: ignore[attr-defined]
            image_header = header if isinstance(header, bytes) else base64.b64decode(header)
        except (binascii.Error, TypeError, ValueError) as exc:
            raise ReferenceFormatError(f"array {path!r}: invalid JPEG header: {exc}") from exc
    plain = (
        not bb_codecs
        and serializer_name == "bytes"
        and all(_name(codec) == "transpose" for codec in aa_codecs)
    )
    return ArrayChecks(
        path=path,
        metadata=None,
        chunk_shape=chunk_shape,
        chunk_bytes=chunk_bytes,
        layers=tuple(reversed(inside_out)),
        layer_spec=layer_spec,
        serializer=serializer,
        serializer_name=serializer_name,
        serializer_role=serializer_role,
        filters=tuple(zip(reversed(aa_codecs), reversed(aa_specs), strict=True)),
        stored_bound=size if bounded else None,
        verified=not plain,
        image_header=image_header,
        shards=None,
    )


def _build_sharded(
    path: str,
    sharding: ShardingCodec,
    shard_shape: tuple[int, ...],
    data_type: Any,
    fill_value: Any,
    shard_bytes: int,
) -> ArrayChecks:
    """A sharded array: its inner chunks are checked as an array of their own, and its index
    is read only through ``bytes`` and ``crc32c`` (what zarr writes)."""
    inner_shape = tuple(int(c) for c in sharding.chunk_shape)
    if any(isinstance(codec, ShardingCodec) for codec in sharding.codecs):
        raise UnsupportedFeatureError(f"array {path!r}: nested sharding is not read")
    index_names = [_name(codec) for codec in sharding.index_codecs]
    if index_names not in (["bytes"], ["bytes", "crc32c"]):
        raise UnsupportedFeatureError(
            f"array {path!r}: a shard index encoded with {index_names} is not read"
        )
    if any(s % c for s, c in zip(shard_shape, inner_shape, strict=True)):
        raise ReferenceFormatError(
            f"array {path!r}: shards of {shard_shape} do not divide into chunks of {inner_shape}"
        )
    per_shard = tuple(s // c for s, c in zip(shard_shape, inner_shape, strict=True))
    inner = _build(
        path,
        tuple(sharding.codecs),
        inner_shape,
        data_type,
        fill_value,
        shard_bytes // max(1, math.prod(per_shard)),
    )
    endian = getattr(sharding.index_codecs[0], "endian", None)
    layout = ShardFormat(
        inner=inner,
        per_shard=per_shard,
        index_bytes=16 * math.prod(per_shard) + (4 if len(index_names) == 2 else 0),
        index_at_start=sharding.index_location == "start",
        checksum=sharding.index_codecs[1] if len(index_names) == 2 else None,
        big_endian=getattr(endian, "value", endian) == "big",
    )
    count = math.prod(per_shard)
    bound = None if inner.stored_bound is None else count * inner.stored_bound + layout.index_bytes
    return ArrayChecks(
        path=path,
        metadata=None,
        chunk_shape=shard_shape,
        chunk_bytes=shard_bytes,
        layers=(),
        layer_spec=inner.layer_spec,
        serializer=sharding,
        serializer_name="sharding_indexed",
        serializer_role="serializer",
        filters=(),
        stored_bound=bound,
        verified=True,
        image_header=b"",
        shards=layout,
    )


_MISSING: Final = 2**64 - 1
_CHECKED_SHARDS: Final = 4096
"""Shards remembered as checked per array (their partial reads then cost no check)."""


class CheckedShards:
    """The shards of one array that passed their checks, by content and by reference."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, object], None] = OrderedDict()

    def seen(self, key: str, identity: object) -> bool:
        with self._lock:
            return (key, identity) in self._seen

    def note(self, key: str, *identities: object) -> None:
        with self._lock:
            for identity in identities:
                if identity is not None:
                    self._seen[(key, identity)] = None
            while len(self._seen) > _CHECKED_SHARDS:
                self._seen.popitem(last=False)


@dataclass(frozen=True, slots=True)
class ShardFormat:
    """How the shards of a sharded array are laid out, and the checks of its inner chunks."""

    inner: ArrayChecks
    per_shard: tuple[int, ...]
    index_bytes: int
    index_at_start: bool
    checksum: Codec | None
    big_endian: bool
    checked: CheckedShards = field(default_factory=CheckedShards, compare=False)

    async def verify_once(self, shard: bytes, key: str, where: str, identity: object) -> None:
        """`verify` a shard unless one of the same bytes passed already."""
        digest = hashlib.blake2b(shard, digest_size=16).digest()
        if not self.checked.seen(key, digest):
            await self.verify(shard, key, where)
        self.checked.note(key, digest, identity)

    async def verify(self, shard: bytes, key: str, where: str) -> None:
        """Check a whole shard: its index, then every inner chunk it lists."""
        if len(shard) < self.index_bytes:
            raise ChunkDecodeError(
                f"{where}: shard {key!r} holds {len(shard)} bytes, less than its index"
            )
        index = shard[: self.index_bytes] if self.index_at_start else shard[-self.index_bytes :]
        if self.checksum is not None:
            try:
                buffer = default_buffer_prototype().buffer.from_bytes(index)
                decode: Any = getattr(self.checksum, "_decode_sync")  # noqa: B009
                index = decode(buffer, self.inner.layer_spec).to_bytes()
            except Exception as exc:
                # crc32c's own error type: the index fails its checksum.
                raise ChunkDecodeError(
                    f"{where}: the index of shard {key!r} fails its checksum: {exc}"
                ) from exc
        entries = np.frombuffer(index, dtype=">u8" if self.big_endian else "<u8").reshape(-1, 2)
        for number, (offset, nbytes) in enumerate(entries.tolist()):
            if offset == _MISSING and nbytes == _MISSING:
                continue
            if offset + nbytes > len(shard):
                raise ChunkDecodeError(
                    f"{where}: shard {key!r}: inner chunk {number} lies outside the shard"
                )
            inner_key = f"{key} (inner chunk {number})"
            self.inner.check_stored_size(nbytes, inner_key, where)
            await self.inner.verify(shard[offset : offset + nbytes], inner_key, where)
