"""The header of a netCDF-3 file (classic, 64-bit offset or 64-bit data, "CDF-5"), parsed.

The header is strangers' input: every count and length it gives is checked against the bytes
left before anything is allocated or looped over, and the header is read in growing ranges
only as far as it goes (never past the end of the file or `MAX_HEADER_BYTES`). All values are
big-endian; ``NON_NEG`` counts are 4 bytes (8 in CDF-5), offsets 4 bytes in classic files and 8
in the other two; names and attribute values are padded to 4 bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from shadowzarr_spec import SourceError
from shadowzarr_store.transport import redact

from .nc_types import NC_CHAR, NcType, nc_type

__all__ = [
    "MAX_HEADER_BYTES",
    "NcAttribute",
    "NcDimension",
    "NcHeader",
    "NcVariable",
    "NetCDF3FormatError",
    "is_netcdf3",
    "read_header",
]

MAGIC = b"CDF"
VERSIONS = {1: "classic", 2: "64-bit offset", 5: "64-bit data (CDF-5)"}
MAX_HEADER_BYTES = 64 * 2**20
"""Headers of real files are kilobytes (a few MiB with thousands of variables); a header that
claims more is refused rather than read into memory."""
MAX_RANK = 1024
"""netCDF-C's NC_MAX_VAR_DIMS."""
FIRST_READ = 64 * 1024

_NC_DIMENSION, _NC_VARIABLE, _NC_ATTRIBUTE = 0x0A, 0x0B, 0x0C


class NetCDF3FormatError(SourceError):
    """The bytes of a netCDF-3 file do not follow the format (the message names the file)."""


@dataclass(frozen=True, slots=True)
class NcDimension:
    name: str
    length: int
    """0 for the record (unlimited) dimension, whose length is the number of records."""

    @property
    def unlimited(self) -> bool:
        return self.length == 0


@dataclass(frozen=True, slots=True)
class NcAttribute:
    type: NcType
    values: np.ndarray | bytes
    """Big-endian values of a numeric type; the raw bytes of a ``char`` attribute."""


@dataclass(frozen=True, slots=True)
class NcVariable:
    name: str
    dimids: tuple[int, ...]
    attributes: dict[str, NcAttribute]
    type: NcType
    begin: int
    """Offset of the data (of the first record, for a record variable)."""


@dataclass(frozen=True, slots=True)
class NcHeader:
    version: int
    numrecs: int | None
    """None: STREAMING, the count follows from the file's size."""
    dimensions: tuple[NcDimension, ...]
    attributes: dict[str, NcAttribute]
    variables: tuple[NcVariable, ...]


def is_netcdf3(head: bytes) -> bool:
    """Whether the first bytes of a file are a netCDF-3 magic number."""
    return head[:3] == MAGIC and len(head) >= 4 and head[3] in VERSIONS


def read_header(read: Callable[[int, int], bytes], file_size: int, name: str) -> NcHeader:
    """Parse the header of the file ``name``, of ``file_size`` bytes, read through
    ``read(offset, size)``."""
    cursor = _Cursor(read, file_size, redact(name))
    magic = cursor.take(4)
    if magic[:3] != MAGIC or magic[3] not in VERSIONS:
        raise cursor.error(f"not a netCDF-3 file (magic {magic!r})")
    version = magic[3]
    cursor.wide = version == 5
    cursor.offset_bytes = 4 if version == 1 else 8
    raw_numrecs = cursor.non_neg()
    streaming = raw_numrecs == (2 ** (64 if cursor.wide else 32)) - 1
    dimensions = _dimensions(cursor)
    attributes = _attributes(cursor, "global attribute")
    variables = _variables(cursor, len(dimensions))
    return NcHeader(
        version=version,
        numrecs=None if streaming else raw_numrecs,
        dimensions=dimensions,
        attributes=attributes,
        variables=variables,
    )


class _Cursor:
    """Reads the header front to back, fetching more of the file when a read passes the end
    of what was fetched."""

    def __init__(self, read: Callable[[int, int], bytes], file_size: int, name: str) -> None:
        self._read = read
        self.name = name
        self.limit = min(file_size, MAX_HEADER_BYTES)
        self._file_size = file_size
        self._buffer = b""
        self.pos = 0
        self.wide = False
        self.offset_bytes = 4

    def error(self, message: str) -> NetCDF3FormatError:
        return NetCDF3FormatError(f"{self.name}: netCDF-3 header at byte {self.pos}: {message}")

    @property
    def count_bytes(self) -> int:
        return 8 if self.wide else 4

    @property
    def remaining(self) -> int:
        return self.limit - self.pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > self.limit:
            where = "the end of the file" if self.limit == self._file_size else "the header limit"
            raise self.error(f"{n} bytes wanted, past {where} ({self.limit} bytes)")
        if end > len(self._buffer):
            self._grow(end)
        data = self._buffer[self.pos : end]
        self.pos = end
        return data

    def _grow(self, end: int) -> None:
        have = len(self._buffer)
        want = min(self.limit, max(end, 2 * have, FIRST_READ))
        more = self._read(have, want - have)
        if len(more) != want - have:
            raise self.error(f"the file ended at byte {have + len(more)}, before its header")
        self._buffer += more

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def non_neg(self) -> int:
        return self.uint(self.count_bytes)

    def count(self, what: str, min_bytes_each: int) -> int:
        """A ``nelems`` of items needing at least ``min_bytes_each`` bytes each: refused at
        once when the bytes left could not hold them."""
        n = self.non_neg()
        if n * min_bytes_each > self.remaining:
            raise self.error(f"{n} {what}s claimed, but {self.remaining} bytes remain for them")
        return n

    def padding(self, n: int) -> None:
        self.take(-n % 4)

    def name_text(self, what: str) -> str:
        length = self.count(f"byte of a {what} name", 1)
        if length == 0:
            raise self.error(f"an empty {what} name")
        raw = self.take(length)
        self.padding(length)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"a {what} name that is not UTF-8 ({raw[:40]!r})") from exc
        if "/" in text or "\x00" in text:
            raise self.error(f"the {what} name {text[:80]!r} holds '/' or NUL")
        return text

    def list_header(self, tag: int, what: str, min_bytes_each: int) -> int:
        found = self.uint(4)
        n = self.count(what, min_bytes_each)
        if found == 0 and n == 0:
            return 0  # ABSENT
        if found != tag:
            raise self.error(f"expected the {what} list (tag {tag:#x}), found tag {found:#x}")
        return n


def _dimensions(cursor: _Cursor) -> tuple[NcDimension, ...]:
    n = cursor.list_header(_NC_DIMENSION, "dimension", 2 * cursor.count_bytes + 4)
    dimensions = []
    seen: set[str] = set()
    for _ in range(n):
        name = cursor.name_text("dimension")
        if name in seen:
            raise cursor.error(f"the dimension {name!r} is defined twice")
        seen.add(name)
        dimensions.append(NcDimension(name, cursor.non_neg()))
    if sum(d.unlimited for d in dimensions) > 1:
        raise cursor.error("more than one record (unlimited) dimension")
    return tuple(dimensions)


def _attributes(cursor: _Cursor, what: str) -> dict[str, NcAttribute]:
    n = cursor.list_header(_NC_ATTRIBUTE, what, 2 * cursor.count_bytes + 8)
    attributes: dict[str, NcAttribute] = {}
    for _ in range(n):
        name = cursor.name_text(what)
        if name in attributes:
            raise cursor.error(f"the {what} {name!r} is defined twice")
        code = cursor.uint(4)
        kind = nc_type(code, cdf5=cursor.wide)
        if kind is None:
            raise cursor.error(f"the {what} {name!r} has the unknown type {code}")
        count = cursor.count(f"value of the {what} {name!r}", kind.dtype.itemsize)
        size = count * kind.dtype.itemsize
        raw = cursor.take(size)
        cursor.padding(size)
        values = raw if kind.code == NC_CHAR else np.frombuffer(raw, dtype=kind.dtype)
        attributes[name] = NcAttribute(kind, values)
    return attributes


def _variables(cursor: _Cursor, n_dimensions: int) -> tuple[NcVariable, ...]:
    wide = cursor.count_bytes
    minimum = wide + 4 + wide + (4 + wide) + 4 + wide + cursor.offset_bytes
    n = cursor.list_header(_NC_VARIABLE, "variable", minimum)
    variables = []
    seen: set[str] = set()
    for _ in range(n):
        name = cursor.name_text("variable")
        if name in seen:
            raise cursor.error(f"the variable {name!r} is defined twice")
        seen.add(name)
        rank = cursor.count(f"dimension of the variable {name!r}", wide)
        if rank > MAX_RANK:
            raise cursor.error(f"the variable {name!r} has {rank} dimensions (at most {MAX_RANK})")
        dimids = tuple(cursor.non_neg() for _ in range(rank))
        if any(d >= n_dimensions for d in dimids):
            raise cursor.error(
                f"the variable {name!r} names dimension ids {dimids}; there are {n_dimensions}"
            )
        attributes = _attributes(cursor, f"attribute of {name!r}")
        code = cursor.uint(4)
        kind = nc_type(code, cdf5=cursor.wide)
        if kind is None:
            raise cursor.error(f"the variable {name!r} has the unknown type {code}")
        cursor.non_neg()  # vsize: redundant (and clipped for > 4 GiB); sizes follow the shape
        begin = cursor.uint(cursor.offset_bytes)
        variables.append(NcVariable(name, dimids, attributes, kind, begin))
    return tuple(variables)
