"""Which array a set of references carries, so an export reopens without naming its dataset.

An export (`RemoteArray.save`, ``to_cframe``) records the path of its array in the root group's
attributes under `CARRIER_ATTRIBUTE`; references with one array, or a root that is an array,
need no record. Kept in the references themselves (not in a file beside them) so a single JSON
file or bytes in memory carry it too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from shadowzarr_spec import InlineRef, ReferenceFileSystem, array_info, array_paths

from shadowzarr_store.remote.errors import AddressError

__all__ = ["CARRIER_ATTRIBUTE", "carried_array", "mark_carrier"]

CARRIER_ATTRIBUTE = "shadowzarr_remote_array"
"""Root group attribute of an exported RemoteArray: ``{"dataset": "<path of its array>"}``."""


def mark_carrier(rfs: ReferenceFileSystem, path: str) -> ReferenceFileSystem:
    """``rfs`` with ``path`` recorded as the array it carries (a root array needs no record)."""
    if not path:
        return rfs
    root = rfs.refs.get("zarr.json")
    document: dict[str, Any] = (
        json.loads(root.data)
        if isinstance(root, InlineRef)
        else {"zarr_format": 3, "node_type": "group"}
    )
    attributes = dict(document.get("attributes") or {})
    attributes[CARRIER_ATTRIBUTE] = {"dataset": path}
    document["attributes"] = attributes
    refs = dict(rfs.refs)
    refs["zarr.json"] = InlineRef(json.dumps(document).encode())
    return dataclasses.replace(rfs, refs=refs)


def carried_array(rfs: ReferenceFileSystem, where: str) -> str:
    """The array to open when none was named: the root array, the recorded one, or the only one.

    Raises
    ------
    AddressError
        The references hold several arrays and record none (names ``where`` and some arrays).
    """
    if array_info(rfs, "") is not None:
        return ""
    root = rfs.refs.get("zarr.json")
    if isinstance(root, InlineRef):
        recorded = (json.loads(root.data).get("attributes") or {}).get(CARRIER_ATTRIBUTE)
        if isinstance(recorded, dict) and isinstance(recorded.get("dataset"), str):
            return str(recorded["dataset"])
    paths = sorted(array_paths(rfs))
    if len(paths) == 1:
        return paths[0]
    if not paths:
        raise AddressError(f"{where} holds no array")
    shown = ", ".join(repr(path) for path in paths[:8]) + (", …" if len(paths) > 8 else "")
    raise AddressError(
        f"{where} holds {len(paths)} arrays; name one (dataset=… or {where}::/<path>): {shown}"
    )
