"""HeaderFile: object headers of one file, parsed once each, and what they say."""

from __future__ import annotations

import functools
import mmap
import os
from collections.abc import Callable
from typing import Any

import h5py
from shadowzarr_store.transport import RangeSource

from ..format.data_layout import parse_layout
from ..format.dataspace import dataspace_extent
from ..format.datatypes import parse_datatype
from ..format.errors import MALFORMED, Hdf5FormatError, NotNative
from ..format.groups import group_links
from ..format.heaps import GlobalHeap
from ..format.messages import (
    DATASPACE,
    DATATYPE,
    EXTERNAL_FILES,
    FILL_VALUE,
    FILL_VALUE_OLD,
    FILTERS,
    LAYOUT,
    LINK,
    LINK_INFO,
    SHARED,
    SYMBOL_TABLE,
    Link,
    parse_fill_value,
    parse_filters,
    stored_attributes,
)
from ..format.object_header import ObjectHeader, header_walk
from ..format.superblock import Superblock
from ..format.superblock_extension import read_superblock
from ..object_paths import ObjectPaths
from .attributes import json_attributes
from .dataset import HeaderDataset

__all__ = ["HeaderFile"]

Messages = list[tuple[int, int, bytes]]
ReadAt = Callable[[int, int], bytes]

_DIMENSION_ATTRIBUTES = frozenset({b"DIMENSION_LIST", b"DIMENSION_LABELS", b"CLASS"})
"""Dimension scales need h5py's h5ds to name axes: such datasets are left to h5py."""


def _or_not_native[**P, T](method: Callable[P, T]) -> Callable[P, T]:
    """Turn a parse failure into NotNative: h5py then reads the object and reports errors."""

    @functools.wraps(method)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except MALFORMED as exc:
            raise NotNative(f"{type(exc).__name__}: {exc}") from exc

    return guarded


class HeaderFile:
    """Links, attributes and simple datasets of an HDF5 file, from its headers.

    Every question raises :class:`NotNative` when the answer needs a structure this reader
    does not parse; the caller then asks h5py for that object.
    """

    def __init__(self, read: ReadAt, superblock: Superblock) -> None:
        # No reference to the h5py file or its ObjectPaths: a cycle through them would leave
        # h5py objects to the cyclic garbage collector, which may free them in another thread
        # while HDF5 is busy in this one (a deadlock under h5py's lock).
        self._read = read
        self._sb = superblock
        self.read_at = _relative(read, superblock.base)
        """Bytes at a (relative) file address."""
        self._headers: dict[int, Messages] = {}
        self._kinds: dict[int, str] = {}
        self._links: dict[int, list[Link]] = {}
        self.heap = GlobalHeap(self.read_at, superblock.offset_size, superblock.length_size)

    @classmethod
    def open(cls, raw: Any) -> HeaderFile | None:
        """A reader for ``raw`` (a local path or a RemoteFile); None when the file's layout
        is not one this reader handles (a user block shifts addresses)."""
        try:
            if isinstance(raw, str):
                read = _mapped_reader(raw)
                with RangeSource(raw) as fetcher:
                    superblock = read_superblock(fetcher)
            else:
                whole = raw.whole()
                read = raw.read_at if whole is None else _slicer(whole)
                superblock = raw.superblock
        except (Hdf5FormatError, OSError, ValueError):
            return None
        if superblock.base != 0:
            return None
        return cls(read, superblock)

    @property
    def superblock(self) -> Superblock:
        return self._sb

    def messages(self, address: int) -> Messages:
        found = self._headers.get(address)
        if found is None:
            try:
                header = self._read_header(address)
            except MALFORMED as exc:
                raise NotNative(f"object header at {address}: {exc}") from exc
            found = [(m.type, m.flags, m.data) for m in header.messages]
            self._headers[address] = found
        return found

    @_or_not_native
    def kind(self, address: int) -> str:
        """'dataset', 'group' or 'other' (a committed datatype)."""
        kind = self._kinds.get(address)
        if kind is None:
            kind = self._kinds[address] = _kind(address, self.messages(address))
        return kind

    @_or_not_native
    def links(self, address: int) -> list[Link]:
        found = self._links.get(address)
        if found is None:
            sb = self._sb
            messages = self.messages(address)
            found = group_links(messages, self.read_at, sb.offset_size, sb.length_size)
            self._links[address] = found
        return found

    @_or_not_native
    def attributes(self, address: int, paths: ObjectPaths) -> tuple[dict[str, Any], list[bytes]]:
        """JSON values of every attribute (references as ``paths`` names their targets), and
        the stored names."""
        sb = self._sb
        stored = stored_attributes(self.messages(address), sb.offset_size)
        values = json_attributes(stored, self.heap, paths, sb.offset_size, sb.length_size)
        return values, [name for name, _ in stored]

    @_or_not_native
    def dataset(
        self,
        address: int,
        name: str,
        open_h5py: Callable[[], h5py.Dataset],
        paths: ObjectPaths,
    ) -> HeaderDataset:
        """The dataset (with its attributes) when every part of its header is readable."""
        sb = self._sb
        found: dict[int, bytes] = {}
        for mtype, flags, data in self.messages(address):
            if mtype in (DATATYPE, DATASPACE, LAYOUT, FILTERS, FILL_VALUE) and flags & SHARED:
                raise NotNative("shared dataset message")
            if mtype == EXTERNAL_FILES:
                raise NotNative("external storage")
            found.setdefault(mtype, data)
        if FILL_VALUE_OLD in found and FILL_VALUE not in found:
            raise NotNative("only an old-style fill value message")
        if DATATYPE not in found or DATASPACE not in found or LAYOUT not in found:
            raise NotNative("dataset header without type, space or layout")
        attributes, names = self.attributes(address, paths)
        if _DIMENSION_ATTRIBUTES.intersection(names):
            raise NotNative("dimension scales")
        shape, maxshape = dataspace_extent(found[DATASPACE], sb.length_size)
        return HeaderDataset(
            name=name,
            address=address,
            datatype=parse_datatype(found[DATATYPE], sb.offset_size),
            shape=shape,
            maxshape=maxshape,
            layout=parse_layout(found[LAYOUT], sb),
            filters=parse_filters(found[FILTERS]) if FILTERS in found else (),
            fill=parse_fill_value(found[FILL_VALUE]) if FILL_VALUE in found else None,
            attributes=attributes,
            attribute_names=names,
            read_at=self.read_at,
            heap=self.heap,
            offset_size=sb.offset_size,
            open_h5py=open_h5py,
        )

    def _read_header(self, address: int) -> ObjectHeader:
        """One header with its continuation blocks, each read as the walk asks for it."""
        walk = header_walk(self._sb, address)
        ranges = next(walk)
        while True:
            try:
                ranges = walk.send([self._read(offset, size) for offset, size in ranges])
            except StopIteration as done:
                header: ObjectHeader = done.value  # `header_walk`'s return (typeshed: Any)
                return header


def _kind(address: int, messages: Messages) -> str:
    types = {mtype for mtype, _, _ in messages}
    if LAYOUT in types:
        return "dataset"
    if types & {SYMBOL_TABLE, LINK_INFO, LINK}:
        return "group"
    if DATATYPE in types:
        return "other"
    raise NotNative(f"object header at {address} is neither group nor dataset")


def _relative(read: ReadAt, base: int) -> ReadAt:
    """Reads at addresses relative to the superblock (a closure, not a bound method: the
    global heap keeps it, and must not keep the HeaderFile)."""

    def read_at(address: int, size: int) -> bytes:
        return read(base + address, size)

    return read_at


def _slicer(data: bytes) -> ReadAt:
    """Reads of a file held whole in memory."""

    def read(offset: int, size: int) -> bytes:
        return data[offset : offset + size]

    return read


def _mapped_reader(path: str) -> ReadAt:
    """Reads of a local file through a read-only memory map (no system call per read)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise ValueError("empty file")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)

    def read(offset: int, size: int) -> bytes:
        return mapped[offset : offset + size]

    return read
