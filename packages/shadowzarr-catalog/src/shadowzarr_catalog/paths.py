"""Where an asset's references go: a relative path derived from the asset's own path that can
never leave the destination, whatever the listing says.

A hostile or odd asset path (``../../etc``, ``/abs``, ``C:\\x``, control bytes, a name of 4,000
characters) is made safe part by part; a path that had to change gets a short digest of the
asset id, so two assets whose paths differ only in the characters replaced still get two
locations.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["REFS_FOLDER", "reference_location", "safe_relative_path"]

REFS_FOLDER = "refs"
"""References live under this folder of the destination, apart from the catalog's own files."""
SUFFIXES = {"directory": ".shadowzarr", "json": ".shadowzarr.json"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@,-]")
_MAX_PART = 120
_MAX_PARTS = 32


def safe_relative_path(path: str, asset_id: str) -> str:
    """``path`` as a relative POSIX path of safe parts (letters, digits, ``._+=@,-``), no part
    empty, ``.``/``..`` or starting with a dot, and no folder ending ``.shadowzarr``."""
    parts = []
    for raw in re.split(r"[/\\]+", path):
        if raw in ("", "."):
            continue
        part = _UNSAFE.sub("_", raw)
        if part.startswith("."):
            part = "_" + part
        parts.append(part[:_MAX_PART])
    parts = parts[-_MAX_PARTS:] or ["asset"]
    # A folder named like a reference set would put one asset's references inside another's
    # (and replacing that set would delete them).
    parts[:-1] = [p + "_" if p.endswith(".shadowzarr") else p for p in parts[:-1]]
    safe = "/".join(parts)
    if safe != path:
        digest = hashlib.sha256(asset_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        parts[-1] = f"{parts[-1]}-{digest}"
        safe = "/".join(parts)
    return safe


def reference_location(path: str, asset_id: str, form: str) -> str:
    """The references' location relative to the destination, e.g. ``refs/sub/x.nwb.shadowzarr``."""
    return f"{REFS_FOLDER}/{safe_relative_path(path, asset_id)}{SUFFIXES[form]}"
