"""The keys of one store: sorted refs keys, and listings as zarr asks for them (as stored, or
with a grouped view's shard keys in place of the stored chunks they hold)."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Protocol

from shadowzarr_spec import (
    InlineRef,
    ReferenceFormatError,
    ShadowzarrError,
    UnsupportedFeatureError,
    parse_json,
)
from shadowzarr_spec.keys import array_of_chunk_key, chunk_key, join

from shadowzarr_store.resolve import listed_table

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from shadowzarr_spec import GenEntry, ReferenceFileSystem

    from shadowzarr_store.manifests import ManifestReader
    from shadowzarr_store.metadata_gate import MetadataGate

__all__ = ["MAX_LISTED_GEN_KEYS", "ShardKeys", "SortedRefs", "StoreListing"]

MAX_LISTED_GEN_KEYS = 1 << 20
"""Most keys listed from a gen entry whose keys are not chunks inside an array's grid, and
most keys a listing holds or walks before it answers (``list_dir``, a grouped view's shards)."""


def _within_listing_bound(count: int, what: str) -> None:
    """A listing that must hold (or walk) every key before its first answer stops at
    `MAX_LISTED_GEN_KEYS`: a few bytes of references can claim 10**12 chunks."""
    if count > MAX_LISTED_GEN_KEYS:
        raise UnsupportedFeatureError(
            f"listing {what} would walk more than {MAX_LISTED_GEN_KEYS} keys; list() and "
            "list_prefix() stream the keys one by one instead"
        )


def _array_of(key: str) -> str:
    split = array_of_chunk_key(key)
    return key if split is None else split[0]


class ShardKeys(Protocol):
    """A view that lists shard keys in place of the stored chunk keys they hold."""

    def chunks_root(self, key: str) -> str | None:
        """The array's chunk root (``path/c``) when ``key`` lies inside a shown array's
        chunks; None otherwise."""
        ...

    def shard_key(self, key: str) -> str | None:
        """The shard key that shows stored chunk ``key``; None when it is shown as stored."""
        ...


class SortedRefs:
    """The keys of ``rfs.refs``, sorted once (again only if refs changed size)."""

    def __init__(self, rfs: ReferenceFileSystem) -> None:
        self._rfs = rfs
        self._sorted: list[str] = []
        self._count = -1
        self._node_paths_of: tuple[int, frozenset[str]] = (-1, frozenset())
        self._index_only: dict[str, bool] = {}

    def keys(self) -> list[str]:
        refs = self._rfs.refs
        if self._count != len(refs):
            self._sorted = sorted(refs)
            self._count = len(refs)
        return self._sorted

    def any_under(self, prefix: str) -> bool:
        """Whether a refs key starts with ``prefix``."""
        keys = self.keys()
        position = bisect.bisect_left(keys, prefix)
        return position < len(keys) and keys[position].startswith(prefix)

    def manifest_only(self, path: str) -> bool:
        """Whether every chunk reference of ``path`` comes from one table of (offset, size)
        entries: its chunk manifest (no refs or gen entry can override one, no selection applies)
        or its listed chunks held as columns, into one file (`listed_table`)."""
        found = self._index_only.get(path)
        if found is None:
            rfs = self._rfs
            found = self._index_only[path] = (
                path in rfs.indexes
                and not rfs.gen
                and path not in rfs.selections
                and not self.any_under(chunk_key(path, ()) + "/")
            ) or listed_table(rfs, path) is not None
        return found

    def node_paths(self) -> frozenset[str]:
        """Every path that holds a node (a ``zarr.json`` in refs) or lies above one."""
        keys = self.keys()
        if self._node_paths_of[0] != len(keys):
            paths: set[str] = set()
            for key in keys:
                if key == "zarr.json" or key.endswith("/zarr.json"):
                    path = key[: -len("zarr.json")].rstrip("/")
                    while path and path not in paths:
                        paths.add(path)
                        path = path.rpartition("/")[0]
            self._node_paths_of = (len(keys), frozenset(paths))
        return self._node_paths_of[1]


class StoreListing:
    """``list_prefix`` and ``list_dir`` of one store; ``shards``: the grouped view, if on."""

    def __init__(
        self,
        rfs: ReferenceFileSystem,
        refs: SortedRefs,
        gate: MetadataGate,
        indexes: ManifestReader,
        shards: ShardKeys | None = None,
    ) -> None:
        self._rfs = rfs
        self._refs = refs
        self._gate = gate
        self._indexes = indexes
        self._shards = shards

    async def list_prefix(self, prefix: str, *, walk_bound: bool = False) -> AsyncIterator[str]:
        """The keys under ``prefix`` as shown; ``walk_bound``: stop at `MAX_LISTED_GEN_KEYS`
        keys walked (for a caller that holds them all before answering)."""
        shards = self._shards
        if shards is None:
            async for key in self._stored_keys(prefix):
                yield key
            return
        # Keys as the grouped view shows them: one shard key for its stored chunks. A prefix
        # inside a grouped array's chunks is listed from all of them, then filtered.
        inside = shards.chunks_root(prefix.rstrip("/") or "-")
        scan = inside + "/" if inside is not None else prefix
        seen: set[str] = set()
        walked = 0
        async for key in self._stored_keys(scan):
            walked += 1
            if walk_bound:
                _within_listing_bound(walked, f"the keys under {scan!r}")
            shard = shards.shard_key(key)
            if shard is not None:
                key = shard
                if key in seen:
                    continue
                seen.add(key)
                _within_listing_bound(len(seen), f"the shards of {_array_of(key)!r}")
            if key.startswith(prefix):
                yield key

    async def _stored_keys(self, prefix: str) -> AsyncIterator[str]:
        """Every stored key starting with ``prefix`` (refs, then gen, then chunk manifests)."""
        keys = self._refs.keys()
        for position in range(bisect.bisect_left(keys, prefix), len(keys)):
            if not keys[position].startswith(prefix):
                break
            yield keys[position]
        refs = self._rfs.refs
        for entry in self._rfs.gen:
            if entry.prefix.startswith(prefix) or prefix.startswith(entry.prefix):
                for key in self._gen_keys(entry):
                    if key.startswith(prefix) and key not in refs:
                        yield key
        for path in self._rfs.indexes:
            chunk_root = join(path, "c")
            if chunk_root.startswith(prefix) or prefix.startswith(chunk_root):
                for coords in await self._indexes.written_chunks(path):
                    key = join(chunk_root, *map(str, coords))
                    if key.startswith(prefix) and key not in refs:
                        yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        base = prefix.rstrip("/")
        start = f"{base}/" if base else ""
        if self._shards is not None and self._shards.chunks_root(base or "-") is not None:
            shards = {
                key[len(start) :].split("/", 1)[0]
                async for key in self.list_prefix(start, walk_bound=True)
            }
            for name in sorted(shards):
                yield name
            return
        names: set[str] = set()
        keys = self._refs.keys()
        position = bisect.bisect_left(keys, start)
        while position < len(keys) and keys[position].startswith(start):
            rest = keys[position][len(start) :]
            name, slash, _ = rest.partition("/")
            names.add(name)
            # Skip everything under this child: "name/..." keys sort before "name0".
            position = bisect.bisect_left(keys, start + name + "0") if slash else position + 1
        for entry in self._rfs.gen:
            literal = entry.prefix
            if literal.startswith(start) and "/" in literal[len(start) :]:
                names.add(literal[len(start) :].split("/", 1)[0])
            elif literal.startswith(start) or start.startswith(literal):
                # Every key is walked for a few names: bounded, where list_prefix streams.
                for walked, key in enumerate(self._gen_keys(entry), 1):
                    _within_listing_bound(walked, f"the keys of gen entry {entry.key!r}")
                    if key.startswith(start):
                        names.add(key[len(start) :].split("/", 1)[0])
        for path in self._rfs.indexes:
            chunk_root = join(path, "c")
            if chunk_root.startswith(start) and chunk_root != start.rstrip("/"):
                names.add(chunk_root[len(start) :].split("/", 1)[0])
            elif f"{chunk_root}/".startswith(start) or start.startswith(f"{chunk_root}/"):
                for walked, coords in enumerate(await self._indexes.written_chunks(path), 1):
                    _within_listing_bound(walked, f"the chunks of {path!r}")
                    key = join(chunk_root, *map(str, coords))
                    if key.startswith(start):
                        names.add(key[len(start) :].split("/", 1)[0])
        if self._is_group(base):
            # a group's members are the names that hold a node: a stray key (a hostile or
            # damaged file's) is no member, and zarr's member walk would leave its KeyError
            # unretrieved when another member fails
            nodes = self._refs.node_paths()
            names = {n for n in names if n == "zarr.json" or join(base, n) in nodes}
        for name in sorted(names):
            yield name

    def _is_group(self, path: str) -> bool:
        """Whether ``path`` holds group metadata (its ``zarr.json``, inline, says ``group``):
        any other key stays a plain store key, listed as it is."""
        ref = self._rfs.refs.get(join(path, "zarr.json"))
        if not isinstance(ref, InlineRef):
            return False
        try:
            document = parse_json(ref.data)
        except ShadowzarrError:
            return False
        return isinstance(document, dict) and document.get("node_type") == "group"

    def _gen_keys(self, entry: GenEntry) -> Iterator[str]:
        """The keys a gen entry lists, lazily: only those inside its array's chunk grid (a
        small entry may claim 10**12 chunks); an entry of other keys only if it has at most
        `MAX_LISTED_GEN_KEYS`, else `ReferenceFormatError`."""
        template = entry.chunk_template()
        if template is not None:
            try:
                checks = self._gate.array(template[0])
            except ShadowzarrError:
                return iter(())  # a refused array's chunks are unreadable: none are listed
            if checks is not None:
                keys = entry.keys_in_grid(checks.metadata_grid)
                if keys is not None:
                    return keys
        if entry.count > MAX_LISTED_GEN_KEYS:
            raise ReferenceFormatError(
                f"gen entry {entry.key!r} describes {entry.count} keys that are not chunks "
                f"inside an array's grid; more than {MAX_LISTED_GEN_KEYS} are not listed"
            )
        return (key for key, _ in entry.items())
