"""Make sure every codec the arrays name can be found before the first chunk is decoded.

zarr-python ships the ``numcodecs.*`` codecs HDF5 needs (``numcodecs.fletcher32`` verifies its
checksum). imagecodecs' codecs (``imagecodecs_*``) come from the imagecodecs-zarr entry points;
when they are missing the error says what to install, rather than failing mid-read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import numcodecs
from shadowzarr_spec import ChunkDecodeError, UnsupportedFeatureError, array_info, array_paths
from zarr.errors import UnknownCodecError
from zarr.registry import get_codec_class

if TYPE_CHECKING:
    from shadowzarr_spec import ArrayInfo, ReferenceFileSystem

__all__ = ["check_codecs", "ends_with_fletcher32", "verify_fletcher32"]

_FLETCHER32 = numcodecs.Fletcher32()


def _codec_names(codecs: object) -> list[str]:
    names: list[str] = []
    if not isinstance(codecs, list | tuple):
        return names
    for codec in codecs:
        if isinstance(codec, dict) and isinstance(codec.get("name"), str):
            names.append(codec["name"])
            configuration = codec.get("configuration")
            if isinstance(configuration, dict):
                names.extend(_codec_names(configuration.get("codecs")))
                names.extend(_codec_names(configuration.get("index_codecs")))
    return names


def check_codecs(rfs: ReferenceFileSystem) -> None:
    """Raise `UnsupportedFeatureError` naming the array if one of its codecs is unavailable."""
    for path in array_paths(rfs):
        info = array_info(rfs, path)
        assert info is not None
        for name in _codec_names(list(info.codecs)):
            try:
                get_codec_class(name)
            except UnknownCodecError as exc:
                if name.startswith("imagecodecs_") and _load_imagecodecs():
                    continue
                hint = " (pip install imagecodecs-zarr)" if name.startswith("imagecodecs_") else ""
                raise UnsupportedFeatureError(
                    f"array {path!r} needs codec {name!r}, which is not available{hint}"
                ) from exc


def _load_imagecodecs() -> bool:
    try:
        importlib.import_module("imagecodecs.zarr")
    except ImportError:
        return False
    return True


def ends_with_fletcher32(info: ArrayInfo) -> bool:
    """Whether a stored chunk of this array ends with an HDF5 Fletcher-32 checksum."""
    return bool(info.codecs) and info.codecs[-1].get("name") == "numcodecs.fletcher32"


def verify_fletcher32(data: bytes | memoryview, key: str, url: str) -> None:
    """Raise `ChunkDecodeError` naming the chunk and its source if its checksum does not match.

    zarr verifies the checksum too, but its error names neither the chunk nor the file.
    """
    try:
        _FLETCHER32.decode(data)
    except RuntimeError as exc:
        raise ChunkDecodeError(f"{url}: chunk {key!r} failed its fletcher32 checksum") from exc
