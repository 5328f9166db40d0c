"""Zarr v3 keys and array paths: building chunk keys, checking keys and paths are safe."""

from __future__ import annotations

import math
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from shadowzarr_spec.errors import UnsafePathError

__all__ = [
    "ParsedKey",
    "array_of_chunk_key",
    "check_key",
    "check_relative_path",
    "chunk_grid_shape",
    "chunk_key",
    "join",
    "metadata_key",
    "parse_key",
]

MAX_KEY_LENGTH = 4096


def join(*parts: str) -> str:
    """Join path parts with '/', ignoring empty ones ('' is the root)."""
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


def metadata_key(path: str) -> str:
    return join(path, "zarr.json")


def chunk_key(path: str, coords: Sequence[int]) -> str:
    """``path/c/i/j``; ``path/c`` for a 0-d array."""
    return join(path, "/".join(["c", *(str(int(i)) for i in coords)]))


def chunk_grid_shape(shape: Sequence[int], chunk_shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(math.ceil(s / c) if c else 0 for s, c in zip(shape, chunk_shape, strict=True))


def array_of_chunk_key(key: str) -> tuple[str, tuple[int, ...]] | None:
    """Split ``a/b/c/1/2`` into ``("a/b", (1, 2))``; None if ``key`` is not a chunk key.

    The array is what precedes the last ``c`` part; every part after it must be a coordinate.
    """
    if key == "c" or key.endswith("/c"):
        return key[:-2], ()
    head, found, tail = key.rpartition("/c/")
    if not found:
        if not key.startswith("c/"):
            return None
        head, tail = "", key[2:]
    parts = tail.split("/")
    if all(_is_coordinate(part) for part in parts):
        return head, tuple(int(part) for part in parts)
    return None


@dataclass(frozen=True, slots=True)
class ParsedKey:
    """A store key read once: a node's ``zarr.json``, a chunk of an array, or another key."""

    key: str
    array: str | None
    """The array a chunk key belongs to (None: not a chunk key)."""
    coords: tuple[int, ...] = ()
    metadata: bool = False


def parse_key(key: str) -> ParsedKey:
    """What ``key`` names, so that later steps read this rather than the key's text."""
    if key == "zarr.json" or key.endswith("/zarr.json"):
        return ParsedKey(key, None, metadata=True)
    split = array_of_chunk_key(key)
    return ParsedKey(key, None) if split is None else ParsedKey(key, split[0], split[1])


def _is_coordinate(part: str) -> bool:
    """A chunk coordinate as zarr writes it: ASCII digits without leading zeros ("0", "12")."""
    return part.isascii() and part.isdigit() and (part == "0" or part[0] != "0")


def check_key(key: object) -> None:
    """Refuse keys that are not relative, normalised paths (no '..', no leading '/')."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise UnsafePathError(f"invalid key {str(key)[:80]!r}")
    if key.startswith("/") or "\\" in key or "\x00" in key:
        raise UnsafePathError(f"key {key[:80]!r} must be a relative path")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise UnsafePathError(f"key {key[:80]!r} has an empty, '.' or '..' part")


def check_relative_path(path: str) -> None:
    """Refuse index paths that would leave the reference directory."""
    if not path or path.startswith("/") or "\\" in path or "\x00" in path:
        raise UnsafePathError(f"index path {path[:80]!r} must be relative")
    normal = posixpath.normpath(path)
    if normal.startswith("..") or normal != path.rstrip("/"):
        raise UnsafePathError(f"index path {path[:80]!r} escapes the reference directory")
