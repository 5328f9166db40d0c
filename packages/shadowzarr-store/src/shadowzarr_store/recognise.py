"""Is this path a reference file system with Zarr v3 keys? Answered from bytes, never by parsing.

xarray asks every installed engine whether it can open a path before any of them opens it, so the
answer must be cheap and must not depend on the file being small: a single JSON file of a long
recording can be hundreds of megabytes. The file is scanned in blocks for the first *key* that
tells the Zarr version (``"…zarr.json":`` for v3, ``"….zarray":``/``"….zgroup":`` for v2) and
the scan stops there. Inline metadata documents are JSON strings inside the file, so their own
quotes are escaped (``\\"``) and cannot be mistaken for keys.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["REFERENCE_SUFFIXES", "is_v3_reference_path", "v3_keys_in_json"]

REFERENCE_SUFFIXES = (".shadowzarr", ".shadowzarr.json")
"""Names `write_rfs` users give references; a remote URL ending so is claimed without a read."""

_KEY = re.compile(rb'(zarr\.json|\.zarray|\.zgroup|\.zattrs)"\s*:')
_BLOCK = 1 << 20
_OVERLAP = 64


def v3_keys_in_json(path: str | os.PathLike[str]) -> bool:
    """Whether the JSON file at ``path`` holds references whose first version-telling key is a
    Zarr v3 ``zarr.json`` (False for Zarr v2 keys, other JSON, binary files and unreadable ones)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(_BLOCK)
            if head.lstrip()[:1] != b"{":
                return False
            tail = b""
            block = head
            while block:
                found = _KEY.search(tail + block)
                if found is not None:
                    return found.group(1) == b"zarr.json"
                tail = block[-_OVERLAP:]
                block = stream.read(_BLOCK)
    except OSError:
        return False
    return False


def is_v3_reference_path(target: str | os.PathLike[str]) -> bool:
    """A local reference directory (``refs.json`` inside), a local JSON reference file with v3
    keys, or a URL named like references (``….shadowzarr``, ``….shadowzarr.json``)."""
    text = os.fspath(target)
    if "://" in text and not text.startswith("file://"):
        bare = text.split("?", 1)[0].rstrip("/")
        return bare.endswith(REFERENCE_SUFFIXES)
    path = Path(text.removeprefix("file://"))
    if path.is_dir():
        refs = path / "refs.json"
        return refs.is_file() and v3_keys_in_json(refs)
    return path.suffix == ".json" and path.is_file() and v3_keys_in_json(path)
