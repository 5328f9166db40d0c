"""A codec this install lacks makes only the arrays that need it unreadable, at their first read.

zarr-python looks every codec up when it parses an array's metadata, and parses all arrays at
once from consolidated metadata, so one LZF array would make a whole NWB file unopenable where
imagecodecs-zarr is not installed. Before the store hands zarr a ``zarr.json``, each codec name
zarr cannot find gets a stand-in registered under that name (array-to-array, array-to-bytes or
bytes-to-bytes, from its place in the chain): the metadata parses, the group and the array open,
and the store refuses the chunks of the arrays that name it, saying what to install. A stand-in
decodes nothing, for any store.

zarr's codec registry is process-wide, so a stand-in stays registered; it only ever replaces
"not found".
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from shadowzarr_spec import UnsupportedFeatureError, parse_json
from shadowzarr_spec.codec_packages import package_for_codec
from shadowzarr_spec.keys import array_of_chunk_key, join
from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec
from zarr.errors import UnknownCodecError
from zarr.registry import get_codec_class, register_codec

if TYPE_CHECKING:
    from zarr.core.array_spec import ArraySpec

__all__ = ["MissingCodecs", "install_hint", "is_stand_in"]

type CodecKind = Literal["array-array", "array-bytes", "bytes-bytes"]

_BASES: dict[CodecKind, type] = {
    "array-array": ArrayArrayCodec,
    "array-bytes": ArrayBytesCodec,
    "bytes-bytes": BytesBytesCodec,
}
_NOTES = {
    "imagecodecs-zarr": " (with imagecodecs; shadowzarr-tiff and shadowzarr[tiff] include it)"
}
_stand_ins: dict[str, CodecKind] = {}  # codec name -> the kind of stand-in registered for it
_available: set[str] = set()


def is_stand_in(name: str) -> bool:
    """Whether codec ``name`` is a stand-in for one this install lacks (its chunks are refused
    here, at their first read)."""
    return name in _stand_ins


def install_hint(name: str) -> str:
    """What to install for codec ``name``."""
    package = package_for_codec(name)
    if package is None:
        return "install a package that registers it with zarr-python"
    return f"pip install {package}{_NOTES.get(package, '')}"


class MissingCodecs:
    """The arrays of one store that name a codec this install lacks."""

    def __init__(self) -> None:
        self._refused: dict[str, str] = {}  # array path -> the reason its chunks are refused

    def note_metadata(self, key: str, data: bytes | memoryview) -> None:
        """Look at a ``zarr.json`` before zarr parses it (with its consolidated metadata)."""
        if b'"codecs"' not in data:
            return
        document = parse_json(bytes(data))
        if not isinstance(document, dict):
            return
        path = key.removesuffix("zarr.json").rstrip("/")
        nodes = {path: document}
        consolidated = document.get("consolidated_metadata")
        if isinstance(consolidated, dict) and isinstance(consolidated.get("metadata"), dict):
            for child, child_document in consolidated["metadata"].items():
                nodes[join(path, child) if path else child] = child_document
        for node_path, node in nodes.items():
            if not isinstance(node, dict) or node.get("node_type") != "array":
                continue
            missing = _missing_in_chain(node.get("codecs"))
            if missing:
                name = missing[0]
                self._refused[node_path] = (
                    f"array {node_path!r} needs codec {name!r}, which is not installed: "
                    f"{install_hint(name)}"
                )

    def refuses(self, path: str) -> bool:
        """Whether the array at ``path`` is refused here (a codec it needs is not installed)."""
        return path in self._refused

    def check_chunk(self, key: str) -> None:
        """Raise `UnsupportedFeatureError` if ``key`` is a chunk of an array refused here."""
        if not self._refused:
            return
        split = array_of_chunk_key(key)
        if split is not None:
            self.check_array(split[0])

    def check_array(self, path: str) -> None:
        """Raise `UnsupportedFeatureError` if the array at ``path`` is refused here."""
        reason = self._refused.get(path)
        if reason is not None:
            raise UnsupportedFeatureError(reason)


def _missing_in_chain(codecs: object) -> list[str]:
    """Names of the codecs of a chain (and the chains nested in it) zarr cannot find; each gets
    a stand-in registered."""
    if not isinstance(codecs, list | tuple):
        return []
    entries = [c for c in codecs if isinstance(c, dict) and isinstance(c.get("name"), str)]
    kinds = [_kind_of(entry["name"]) for entry in entries]
    serializer = next((i for i, k in enumerate(kinds) if k == "array-bytes"), None)
    if serializer is None:  # the serializer itself is missing: the first unknown codec
        serializer = next((i for i, k in enumerate(kinds) if k is None), len(kinds))
    missing: list[str] = []
    for position, (entry, kind) in enumerate(zip(entries, kinds, strict=True)):
        name = entry["name"]
        if kind is None:
            if position < serializer:
                kind = "array-array"
            elif position == serializer:
                kind = "array-bytes"
            else:
                kind = "bytes-bytes"
            _register_stand_in(name, kind)
            missing.append(name)
        elif name in _stand_ins:
            missing.append(name)
        configuration = entry.get("configuration")
        if isinstance(configuration, dict):
            missing += _missing_in_chain(configuration.get("codecs"))
            missing += _missing_in_chain(configuration.get("index_codecs"))
    return missing


def _kind_of(name: str) -> CodecKind | None:
    """The kind of codec ``name`` (a stand-in's too); None when zarr cannot find it."""
    if name in _stand_ins:
        return _stand_ins[name]
    if name not in _available:
        try:
            get_codec_class(name)
        except UnknownCodecError:
            if not (name.startswith("imagecodecs_") and _load_imagecodecs()):
                return None
            try:
                get_codec_class(name)
            except UnknownCodecError:
                return None
        _available.add(name)
    found = get_codec_class(name)
    for kind, base in _BASES.items():
        if issubclass(found, base):
            return kind
    return None


def _load_imagecodecs() -> bool:
    """imagecodecs registers its zarr codecs on import of ``imagecodecs.zarr`` too."""
    try:
        importlib.import_module("imagecodecs.zarr")
    except ImportError:
        return False
    return True


def _register_stand_in(name: str, kind: CodecKind) -> None:
    if name in _stand_ins:
        return
    stand_in = type(
        f"MissingCodec[{name!r}]",  # repr: a name from a reference may hold a NUL
        (_StandIn, _BASES[kind]),
        {"codec_name": name, "__module__": __name__},
    )
    register_codec(name, stand_in, qualname=f"{__name__}.missing.{name}")
    _stand_ins[name] = kind


@dataclass(frozen=True)
class _StandIn:
    """Parses and writes back a missing codec's metadata; refuses to encode or decode."""

    codec_name: ClassVar[str]
    configuration_json: str = "{}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        configuration = data.get("configuration") or {}
        return cls(configuration_json=json.dumps(configuration, sort_keys=True))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.codec_name, "configuration": json.loads(self.configuration_json)}

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        raise self._refusal()

    async def _decode_single(self, chunk_data: Any, chunk_spec: ArraySpec) -> Any:
        raise self._refusal()

    async def _encode_single(self, chunk_data: Any, chunk_spec: ArraySpec) -> Any:
        raise self._refusal()

    def _refusal(self) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            f"codec {self.codec_name!r} is not installed: {install_hint(self.codec_name)}"
        )
