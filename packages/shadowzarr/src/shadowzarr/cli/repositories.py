"""Icechunk repositories where the commands take references: ``info`` and ``get`` open what
``convert … x.icechunk`` wrote, authorizing for reading the virtual chunk containers the
repository declares (its local folders and HTTP servers)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

__all__ = ["is_repository", "repository_group", "repository_references"]


def is_repository(location: str) -> bool:
    """Whether ``location`` is a local folder holding an Icechunk repository (told by its
    ``repo`` file and ``snapshots`` folder, without importing icechunk)."""
    if "://" in location:
        return False
    return os.path.isfile(os.path.join(location, "repo")) and os.path.isdir(
        os.path.join(location, "snapshots")
    )


def _bridge(command: str) -> Any:
    from shadowzarr._lazy import import_module_for

    return import_module_for("shadowzarr_icechunk", "icechunk", f"shadowzarr {command} of Icechunk")


def repository_references(location: str) -> ReferenceFileSystem:
    """What the repository's ``main`` branch holds, as references (for ``info``)."""
    bridge = _bridge("info")
    repository = bridge.open_icechunk_repository(location)
    rfs: ReferenceFileSystem = bridge.icechunk_to_rfs(repository.readonly_session("main"))
    return rfs


def repository_group(location: str) -> Any:
    """The root group of the ``main`` branch, read through Icechunk (for ``get``)."""
    import zarr

    repository = _bridge("get").open_icechunk_repository(location)
    return zarr.open_group(repository.readonly_session("main").store, mode="r")
