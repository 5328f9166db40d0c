"""ListedRefs: the ``refs`` of a reference file system, with listed chunks held as columns.

A version-1 file lists every chunk as ``"a/c/i": [url, offset, size]``. Held as a dict of
`FileRef` objects, each chunk costs about 175 bytes (key string, object, two integers, dict
slot); a million chunks cost 175 MB. `ListedRefs` keeps the chunk references of each array as
numpy columns instead (coordinates, an index into a table of URLs, offset, size: about 22 bytes
a chunk, 4 more once a lookup table is made) and everything else (metadata, inline data,
whole-file references, keys that are not canonical chunk keys) in a plain dict. It is a
`MutableMapping` that behaves exactly like the dict it replaces: same keys in the same order,
same values (a `FileRef` is made when a key is read), and any change to a chunk held in columns
turns it back into that dict first.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, MutableMapping, ValuesView
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np

from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_spec.model import FileRef, Ref, checked_file_ref

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ChunkColumns", "ListedRefs", "note_dict_run"]

_DENSE_FACTOR = 4
"""A lookup table over the bounding box of the chunk coordinates is used while it has at most
this many cells per chunk (plus a small constant); sparser arrays use a sorted search."""


@dataclass(slots=True, eq=False)
class ChunkColumns:
    """The listed chunks of one array: row ``i`` is chunk ``coords[i]``, ``sizes[i]`` bytes at
    ``offsets[i]`` of ``urls[url_index[i]]``. Never changed after it is made."""

    path: str
    coords: np.ndarray
    """(n, rank) int64, canonical chunk coordinates (unique)."""
    urls: list[str]
    url_index: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    _lookup: tuple[Any, ...] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.offsets)

    def key_prefix(self) -> str:
        return f"{self.path}/c/" if self.path else "c/"

    def keys(self, start: int = 0, stop: int | None = None) -> list[str]:
        """The chunk keys of rows ``start:stop``, in row order."""
        prefix = self.key_prefix()
        rows = self.coords[start:stop]
        if rows.shape[1] == 1:
            return [prefix + str(c) for c in rows[:, 0].tolist()]
        return [prefix + "/".join(map(str, row)) for row in rows.tolist()]

    def refs(self, start: int = 0, stop: int | None = None) -> list[FileRef]:
        """The references of rows ``start:stop``, in row order."""
        urls = self.urls
        return [
            checked_file_ref(urls[u], offset, size)
            for u, offset, size in zip(
                self.url_index[start:stop].tolist(),
                self.offsets[start:stop].tolist(),
                self.sizes[start:stop].tolist(),
                strict=True,
            )
        ]

    def ref(self, row: int) -> FileRef:
        return checked_file_ref(
            self.urls[int(self.url_index[row])], int(self.offsets[row]), int(self.sizes[row])
        )

    def row(self, coords: tuple[int, ...]) -> int | None:
        """The row holding chunk ``coords``, or None."""
        if len(coords) != self.coords.shape[1]:
            return None
        lookup = self._lookup
        if lookup is None:
            lookup = self._lookup = self._make_lookup()
        shape = lookup[1]
        linear = 0
        for c, extent in zip(coords, shape, strict=True):
            if not 0 <= c < extent:
                return None
            linear = linear * extent + c
        if lookup[0] == "dense":
            found = int(lookup[2][linear])
            return found if found >= 0 else None
        if lookup[0] == "dict":
            return lookup[2].get(coords)  # type: ignore[no-any-return]
        ordered, order = lookup[2], lookup[3]
        at = int(np.searchsorted(ordered, linear))
        return int(order[at]) if at < len(ordered) and int(ordered[at]) == linear else None

    def rows_of(self, points: np.ndarray) -> np.ndarray:
        """`row` of many chunks at once: ``points`` (n, rank) integer coordinates; an int64
        array of rows, -1 for a chunk not held (never a Python object per chunk)."""
        rows = np.full(len(points), -1, dtype=np.int64)
        if not len(points) or not len(self):
            return rows
        points = np.asarray(points, dtype=np.int64).reshape(len(points), -1)
        if points.shape[1] != self.coords.shape[1]:
            return rows
        lookup = self._lookup
        if lookup is None:
            lookup = self._lookup = self._make_lookup()
        shape = lookup[1]
        inside = ((points >= 0) & (points < np.array(shape, dtype=np.int64))).all(axis=1)
        held = points[inside]
        if lookup[0] == "dict":
            rows[inside] = [lookup[2].get(tuple(p), -1) for p in held.tolist()]
            return rows
        linear = np.ravel_multi_index(tuple(held.T), shape) if len(shape) > 1 else held[:, 0]
        if lookup[0] == "dense":
            rows[inside] = lookup[2][linear]
            return rows
        ordered, order = lookup[2], lookup[3]
        at = np.minimum(np.searchsorted(ordered, linear), len(ordered) - 1)
        rows[inside] = np.where(ordered[at] == linear, order[at], -1)
        return rows

    def _make_lookup(self) -> tuple[Any, ...]:
        shape = tuple(int(e) + 1 for e in self.coords.max(axis=0).tolist())
        cells = 1
        for extent in shape:
            cells *= extent
        if cells >= 2**62:  # a grid too large for one integer index (hostile keys)
            rows = {tuple(row): i for i, row in enumerate(self.coords.tolist())}
            return ("dict", shape, rows)
        if len(shape) > 1:
            linear = np.ravel_multi_index(tuple(self.coords.T), shape)
        else:
            linear = self.coords[:, 0]
        if cells <= _DENSE_FACTOR * len(self) + 1024:
            kind = np.int32 if len(self) < 2**31 else np.int64
            table = np.full(cells, -1, dtype=kind)
            table[linear] = np.arange(len(self), dtype=kind)
            return ("dense", shape, table)
        order = np.argsort(linear, kind="stable")
        return ("sorted", shape, linear[order], order)


class ListedRefs(MutableMapping[str, Ref]):
    """``refs`` with listed chunks held as `ChunkColumns`; otherwise a dict (see the module).

    ``other`` holds every key not in columns; ``segments`` gives the order of all keys:
    ``(None, n, 0)`` is the next ``n`` keys of ``other``, ``(path, start, stop)`` rows
    ``start:stop`` of that array's columns.
    """

    __slots__ = ("_columns", "_other", "_segments")

    def __init__(
        self,
        other: dict[str, Ref],
        columns: Mapping[str, ChunkColumns],
        segments: Iterable[tuple[str | None, int, int]],
    ) -> None:
        self._other = other
        self._columns = dict(columns)
        self._segments = list(segments)

    @property
    def columns(self) -> dict[str, ChunkColumns]:
        """Array path → its chunks held as columns (empty once anything turned it into a dict)."""
        return self._columns

    # -- reading ---------------------------------------------------------------------------
    def only_columns(self, path: str) -> ChunkColumns | None:
        """The columns of array ``path`` when every key under its chunk prefix is in them (no
        key of the dict lies there); None otherwise. Scans the dict: callers keep the answer."""
        columns = self._columns.get(path)
        if columns is None:
            return None
        prefix = columns.key_prefix()
        return None if any(key.startswith(prefix) for key in self._other) else columns

    def __getitem__(self, key: str) -> Ref:
        try:
            return self._other[key]
        except KeyError:
            pass
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        columns, row = found
        return columns.ref(row)

    def get(self, key: str, default: Any = None) -> Any:
        ref = self._other.get(key)
        if ref is not None:
            return ref
        found = self._find(key) if self._columns else None
        return default if found is None else found[0].ref(found[1])

    def __contains__(self, key: object) -> bool:
        return key in self._other or (isinstance(key, str) and self._find(key) is not None)

    def _find(self, key: str) -> tuple[ChunkColumns, int] | None:
        if not self._columns:
            return None
        split = array_of_chunk_key(key)
        if split is None:
            return None
        columns = self._columns.get(split[0])
        if columns is None:
            return None
        row = columns.row(split[1])
        return None if row is None else (columns, row)

    def __len__(self) -> int:
        return len(self._other) + sum(len(c) for c in self._columns.values())

    def __iter__(self) -> Iterator[str]:
        if not self._columns:
            yield from self._other
            return
        others = iter(self._other)
        for path, start, stop in self._segments:
            if path is None:
                yield from islice(others, start)
            else:
                yield from self._columns[path].keys(start, stop)

    def runs(self) -> Iterator[tuple[ChunkColumns, int, int] | list[tuple[str, Ref]]]:
        """The keys in order as runs: ``(columns, start, stop)`` for rows held as columns, a
        list of (key, reference) pairs for the others (for writers that encode columns whole)."""
        if not self._columns:
            yield list(self._other.items())
            return
        others = iter(self._other.items())
        for path, start, stop in self._segments:
            if path is None:
                yield list(islice(others, start))
            else:
                yield (self._columns[path], start, stop)

    def items(self) -> ItemsView[str, Ref]:
        return _Items(self)

    def values(self) -> ValuesView[Ref]:
        return _Values(self)

    def _iter_items(self) -> Iterator[tuple[str, Ref]]:
        if not self._columns:
            yield from self._other.items()
            return
        others = iter(self._other.items())
        for path, start, stop in self._segments:
            if path is None:
                yield from islice(others, start)
            else:
                columns = self._columns[path]
                yield from zip(columns.keys(start, stop), columns.refs(start, stop), strict=True)

    # -- changing (a chunk held in columns first turns everything into the dict) --------------
    def __setitem__(self, key: str, value: Ref) -> None:
        if key in self._other or not self._columns:
            self._other[key] = value
            return
        if self._find(key) is not None:
            self._to_dict()
            self._other[key] = value
            return
        self._other[key] = value
        if self._segments and self._segments[-1][0] is None:
            self._segments[-1] = (None, self._segments[-1][1] + 1, 0)
        else:
            self._segments.append((None, 1, 0))

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._to_dict()
        del self._other[key]

    def popitem(self) -> tuple[str, Ref]:
        """The last key and its reference, removed (as ``dict.popitem``, not the first)."""
        self._to_dict()
        return self._other.popitem()

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self))

    def __or__(self, other: Mapping[str, Ref]) -> ListedRefs:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: Mapping[str, Ref]) -> dict[str, Ref]:
        return {**other, **dict(self.items())}

    def __ior__(self, other: Mapping[str, Ref]) -> ListedRefs:
        self.update(other)
        return self

    def clear(self) -> None:
        self._other.clear()
        self._columns.clear()
        self._segments.clear()

    def copy(self) -> ListedRefs:
        """A shallow copy, as ``dict.copy`` (the columns, never changed, are shared)."""
        return ListedRefs(dict(self._other), self._columns, self._segments)

    def _to_dict(self) -> None:
        if self._columns:
            self._other = dict(self._iter_items())
            self._columns = {}
            self._segments = []

    # -- comparing, showing, pickling ------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, ListedRefs) and self._same_layout(other):
            return True  # (after a pickle round trip: no FileRef needs to be made)
        if isinstance(other, ListedRefs | dict):
            return len(self) == len(other) and dict(self.items()) == dict(other.items())
        return NotImplemented

    def _same_layout(self, other: ListedRefs) -> bool:
        """Whether ``other`` holds the same dict, columns and order (equal, but not only then)."""
        if self._segments != other._segments or self._columns.keys() != other._columns.keys():
            return False
        if self._other != other._other:
            return False
        for path, mine in self._columns.items():
            theirs = other._columns[path]
            if mine is theirs:
                continue
            if mine.urls != theirs.urls or not all(
                np.array_equal(a, b)
                for a, b in (
                    (mine.coords, theirs.coords),
                    (mine.url_index, theirs.url_index),
                    (mine.offsets, theirs.offsets),
                    (mine.sizes, theirs.sizes),
                )
            ):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        held = sum(len(c) for c in self._columns.values())
        return f"ListedRefs({len(self)} refs, {held} of them as columns)"


def note_dict_run(segments: list[tuple[str | None, int, int]], count: int) -> None:
    """Add ``count`` more keys of the dict to the order ``segments`` of a `ListedRefs`."""
    if not count:
        return
    if segments and segments[-1][0] is None:
        segments[-1] = (None, segments[-1][1] + count, 0)
    else:
        segments.append((None, count, 0))


class _Items(ItemsView[str, Ref]):
    _mapping: ListedRefs

    def __iter__(self) -> Iterator[tuple[str, Ref]]:
        return self._mapping._iter_items()


class _Values(ValuesView[Ref]):
    _mapping: ListedRefs

    def __iter__(self) -> Iterator[Ref]:
        return (ref for _, ref in self._mapping._iter_items())
