"""HDF5 links → the unified convention's ``_LINKS`` entries on the parent group.

Soft links point at a path in the same file (``source`` "."); external links keep the other
file's name as their source, so they are recorded even though reading across files is up to the
reader. Hard links are ordinary children: the walker visits the object at every name it has.
"""

from __future__ import annotations

import posixpath

import h5py
from shadowzarr_spec.nwb_convention import link_entry

__all__ = ["link_record"]


def link_record(group: h5py.Group, name: str, link: object) -> dict[str, str] | None:
    """The ``_LINKS`` entry for a soft or external link, None for a hard link."""
    if isinstance(link, h5py.SoftLink):
        target = link.path
        if not target.startswith("/"):
            target = posixpath.normpath(posixpath.join(group.name or "/", target))
        return link_entry(name, target)
    if isinstance(link, h5py.ExternalLink):
        return link_entry(name, link.path, source=link.filename)
    return None
