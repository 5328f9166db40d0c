"""HDF5 links → the unified convention's ``_LINKS`` entries on the parent group.

Soft links point at a path in the same file (``source`` "."); external links keep the other
file's name as their source, so they are recorded even though reading across files is up to the
reader. Hard links are ordinary children: the walker visits the object at every name it has.
"""

from __future__ import annotations

import posixpath

import h5py
from shadowzarr_spec.nwb_convention import link_entry

__all__ = ["link_record", "user_defined_class"]


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


def user_defined_class(group: h5py.Group, name: str) -> int | None:
    """The class number of a user-defined link (HDF5 follows one only with its link class
    registered, and h5py reports it as "Unknown link type"); None for any other link."""
    info = group.id.links.get_info(name.encode("utf-8", "surrogateescape"))
    known = (h5py.h5l.TYPE_HARD, h5py.h5l.TYPE_SOFT, h5py.h5l.TYPE_EXTERNAL)
    return None if info.type in known else int(info.type)
