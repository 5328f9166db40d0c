"""Paths of the objects that references point at, without asking HDF5 for each name.

h5py's ``file[ref].name`` asks HDF5 for the name of an object opened by reference, and HDF5
answers by walking every link of the file until it meets the object's address: one full walk
per reference (seconds for an NWB file with a few thousand references). One walk of the links,
done the first time a reference needs a path, gives every object's path at once.
"""

from __future__ import annotations

import logging
from typing import Any

import h5py

from .format.errors import NotNative

__all__ = ["ObjectPaths", "object_address", "objno_address"]

logger = logging.getLogger(__name__)


def object_address(obj: h5py.HLObject) -> int:
    """The object header address (its identity: hard links share it).

    Not ``h5py.h5o.get_info``: it asks HDF5 for every field, and HDF5 then walks the
    dataset's whole chunk index (one read per v1 B-tree node)."""
    return objno_address(h5py.h5g.get_objinfo(obj.id).objno)


def objno_address(objno: Any) -> int:
    """The address in an ``h5g.get_objinfo`` answer's two-word object number."""
    return int(objno[0]) | (int(objno[1]) << 32) if objno[1] else int(objno[0])


class ObjectPaths:
    """``paths(ref)`` → the absolute path of a reference's target ("" for a null reference, and
    for a dangling one whose target was deleted).

    The walk visits links in the order HDF5's own name lookup does (by name, native order,
    depth first, each group once), so an object reachable by several hard links gets the path
    HDF5 would report.
    """

    def __init__(self, file: h5py.File, headers: Any = None) -> None:
        """``headers``: a HeaderFile to walk the links with instead of h5py, or None."""
        self._file = file
        self._by_address: dict[int, str] | None = None
        self._headers = headers

    def __call__(self, ref: Any) -> str:
        if not ref:
            return ""
        try:
            target = self._file[ref]
        except (KeyError, ValueError) as exc:  # the target was deleted: nothing to point at
            logger.warning("a reference points at no object (%s); it reads as null", exc)
            return ""
        path = self.by_address().get(object_address(target))
        if path is not None:
            return path
        # Not reachable by a hard link from the root (e.g. an anonymous object): ask HDF5.
        return str(target.name or "")

    @property
    def file(self) -> h5py.File:
        """The file whose objects these are."""
        return self._file

    def at_address(self, address: int) -> str | None:
        """The path of the object whose header is at ``address`` (a reference's stored value;
        "" for the null address), None when no hard link from the root reaches it."""
        if not address:
            return ""
        return self.by_address().get(address)

    def resolve(self, address: int, ref: Any) -> str:
        """``ref``'s path, from its stored ``address`` when a hard link reaches it."""
        path = self.at_address(address)
        return self(ref) if path is None else path

    def by_address(self) -> dict[int, str]:
        """Every object a hard link reaches: header address → path, in the walk's order."""
        if self._by_address is None:
            self._by_address = self._walk()
        return self._by_address

    def _walk(self) -> dict[int, str]:
        if self._headers is not None:
            try:
                return self._walk_headers()
            except NotNative as exc:
                logger.debug("paths found through h5py (%s)", exc)
        table: dict[int, str] = {object_address(self._file): "/"}

        def visit(name: bytes, info: Any) -> None:
            if info.type == h5py.h5l.TYPE_HARD:
                table.setdefault(int(info.u), "/" + name.decode("utf-8", "surrogateescape"))

        self._file.id.links.visit(
            visit, idx_type=h5py.h5.INDEX_NAME, order=h5py.h5.ITER_NATIVE, info=True
        )
        return table

    def _walk_headers(self) -> dict[int, str]:
        """The same table from the header reader's links. HDF5's native order for compact
        groups is their message order, which only matters for an object reached by several
        hard links: such a file is left to h5py's walk."""
        headers = self._headers
        root = object_address(self._file)
        table: dict[int, str] = {root: "/"}
        # Depth first, each link before the group it leads into (an explicit stack: a nested
        # recursive function would be a reference cycle holding the header reader).
        stack = [(iter(headers.links(root)), "/")]
        while stack:
            links, prefix = stack[-1]
            link = next(links, None)
            if link is None:
                stack.pop()
                continue
            if link.address is None:
                continue
            if link.address in table:
                raise NotNative("an object reached by several hard links")
            path = prefix + link.name.decode("utf-8", "surrogateescape")
            table[link.address] = path
            if headers.kind(link.address) == "group":
                stack.append((iter(headers.links(link.address)), path + "/"))
        return table
