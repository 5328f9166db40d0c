"""What a store holds, as a person reads it: the tree of groups and arrays with each array's
shape, data type, chunks as stored and as shown (the grouped or sharded view), codecs, the bytes
its references point at and the files they are in; and what reading has cost (`Traffic`).

Gathered from the references alone (no request is sent), in one pass over the keys, and cut to
the first ``max_nodes`` nodes so that the summary of a 10**5-node file stays small.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from shadowzarr_spec import MISSING_CHUNK, FileRef, InlineRef
from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_spec.units import format_bytes

from shadowzarr_store.store_tree_html import traffic_html, tree_html
from shadowzarr_store.transport.locations import redact
from shadowzarr_store.tree_cells import referenced_text, shape_text, short_source

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.transport.stats import StatsSnapshot

type ShownMetadata = Callable[[str, bytes], bytes]
"""``shown(key, zarr_json)``: the metadata as the store's view shows it (`RfsStore`'s)."""

__all__ = ["MAX_NODES", "NodeSummary", "StoreTree", "Traffic", "session_traffic", "store_tree"]

MAX_NODES = 200
"""Nodes a summary lists; the rest are counted ("… and 99,800 more")."""


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """One group or array of the tree (``shape`` and the rest are empty for a group)."""

    path: str
    kind: str
    shape: tuple[int, ...] = ()
    dtype: str = ""
    chunks: tuple[int, ...] = ()
    shown_chunks: tuple[int, ...] = ()
    codecs: tuple[str, ...] = ()
    referenced_bytes: int = 0
    inline_bytes: int = 0
    """Chunk bytes held in the references themselves."""
    indexed: bool = False
    """Chunks listed in a chunk manifest read on demand: their bytes are not counted here."""
    sources: tuple[str, ...] = ()

    @property
    def depth(self) -> int:
        return 0 if not self.path else self.path.count("/") + 1

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1] if self.path else "/"


@dataclass(frozen=True, slots=True)
class StoreTree:
    """The first nodes of a store, depth first, and how many were left out."""

    where: str
    nodes: tuple[NodeSummary, ...]
    more: int
    arrays: int
    groups: int
    referenced_bytes: int
    sources: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """The tree as indented lines (what ``print(store.tree())`` shows)."""
        head = (
            f"RfsStore {self.where}: {self.groups:,} groups, {self.arrays:,} arrays, "
            f"{format_bytes(self.referenced_bytes)} referenced in {len(self.sources):,} "
            + ("file" if len(self.sources) == 1 else "files")
        )
        lines = [head]
        for node in self.nodes:
            indent = "  " * node.depth
            if node.kind == "group":
                lines.append(f"{indent}{node.name.rstrip('/')}/")
                continue
            parts = [f"{indent}{node.name}", node.dtype, shape_text(node.shape)]
            parts.append(f"chunks {shape_text(node.chunks)}")
            if node.shown_chunks != node.chunks:
                parts.append(f"shown {shape_text(node.shown_chunks)}")
            if node.codecs:
                parts.append("+".join(node.codecs))
            parts.append(referenced_text(node))
            if node.sources:
                parts.append(", ".join(short_source(s) for s in node.sources))
            lines.append("  ".join(parts))
        if self.more:
            lines.append(f"… and {self.more:,} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return tree_html(self)


@dataclass(frozen=True, slots=True)
class Traffic:
    """What reading through a store has cost so far (``store.traffic``), from its counters."""

    stats: StatsSnapshot
    title: str = "traffic"

    def text(self) -> str:
        s = self.stats
        head = "" if self.title == "traffic" else f"{self.title}: "
        return head + (
            f"{s.requests:,} requests ({s.merged_requests:,} merged, serving "
            f"{s.merged_chunks:,} chunks), {format_bytes(s.bytes)} received, "
            f"{s.rounds:,} rounds of batched reads, {s.cache_hits:,} cache hits, "
            f"{s.index_chunk_reads:,} index chunk reads, {s.retries:,} retries"
        )

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return traffic_html(self)


def session_traffic() -> Traffic:
    """What reading has cost in this process so far, every store, remote array and generator
    together (`SESSION_STATS`; ``SESSION_STATS.reset()`` starts a new count)."""
    from shadowzarr_store.transport.stats import SESSION_STATS

    return Traffic(SESSION_STATS.snapshot(), title="traffic of this session")


def store_tree(
    rfs: ReferenceFileSystem,
    shown_metadata: ShownMetadata,
    max_nodes: int = MAX_NODES,
    prefix: str = "",
) -> StoreTree:
    """The tree of the references ``rfs`` under the node ``prefix`` (default: all of it), its
    first ``max_nodes`` nodes described, chunks as ``shown_metadata`` shows them."""
    prefix = prefix.strip("/")
    node_paths = sorted(
        path
        for key in rfs.refs
        if key == "zarr.json" or key.endswith("/zarr.json")
        if _under(path := key[: -len("zarr.json")].rstrip("/"), prefix)
    )
    shown = node_paths[:max_nodes]
    wanted = set(shown)
    referenced: dict[str, int] = defaultdict(int)
    inline: dict[str, int] = defaultdict(int)
    files: dict[str, set[str]] = defaultdict(set)
    all_sources: set[str] = set()
    total = 0
    for key, ref in rfs.refs.items():
        if isinstance(ref, InlineRef):
            split = array_of_chunk_key(key)
            if split is not None and split[0] in wanted:
                inline[split[0]] += len(ref.data)
            continue
        if not isinstance(ref, FileRef):
            continue
        split = array_of_chunk_key(key)
        if not _under(key, prefix):
            continue
        size = ref.size if ref.size is not None else _whole_size(rfs, ref.url)
        total += size
        all_sources.add(ref.url)
        if split is not None and split[0] in wanted:
            referenced[split[0]] += size
            files[split[0]].add(ref.url)
    for path, index in rfs.indexes.items():
        if not _under(path, prefix):
            continue
        all_sources.add(index.url)
        if index.table is not None:
            sizes = index.table[..., 1][index.table[..., 0] != MISSING_CHUNK]
            count = int(np.sum(sizes, dtype=np.uint64))
            total += count
            referenced[path] += count
        files[path].add(index.url)
    nodes = []
    arrays = groups = 0
    for path in node_paths:
        kind = _node_kind(rfs.refs.get(_metadata_key(path)))
        arrays += kind == "array"
        groups += kind != "array"
    for path in shown:
        nodes.append(_node(rfs, shown_metadata, path, referenced[path], inline[path], files[path]))
    where = redact(rfs.base) if rfs.base else "in memory"
    return StoreTree(
        where=f"{where} {prefix}" if prefix else where,
        nodes=tuple(nodes),
        more=len(node_paths) - len(shown),
        arrays=arrays,
        groups=groups,
        referenced_bytes=total,
        sources=tuple(sorted(redact(url) for url in all_sources)),
    )


def _under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + "/")


def _metadata_key(path: str) -> str:
    return f"{path}/zarr.json" if path else "zarr.json"


def _whole_size(rfs: ReferenceFileSystem, url: str) -> int:
    info = rfs.sources.get(url)
    return info.size if info is not None and info.size is not None else 0


def _node_kind(ref: Any) -> str:
    if isinstance(ref, InlineRef) and b'"array"' in ref.data:
        return "array" if _document(ref.data).get("node_type") == "array" else "group"
    return "group"


def _document(data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def _node(
    rfs: ReferenceFileSystem,
    shown_metadata: ShownMetadata,
    path: str,
    referenced: int,
    inline: int,
    files: set[str],
) -> NodeSummary:
    key = _metadata_key(path)
    ref = rfs.refs.get(key)
    stored = _document(ref.data) if isinstance(ref, InlineRef) else {}
    if stored.get("node_type") != "array":
        return NodeSummary(path=path, kind="group")
    shown = _document(shown_metadata(key, ref.data)) if isinstance(ref, InlineRef) else {}
    return NodeSummary(
        path=path,
        kind="array",
        shape=_integers(stored.get("shape")),
        dtype=_dtype_text(stored.get("data_type")),
        chunks=_grid(stored),
        shown_chunks=_grid(shown) or _grid(stored),
        codecs=tuple(_codec_text(codec) for codec in stored.get("codecs") or ()),
        referenced_bytes=referenced,
        inline_bytes=inline,
        indexed=path in rfs.indexes and rfs.indexes[path].table is None,
        sources=tuple(sorted(redact(url) for url in files)),
    )


def _integers(value: Any) -> tuple[int, ...]:
    if isinstance(value, list) and all(isinstance(n, int) for n in value):
        return tuple(value)
    return ()


def _grid(document: dict[str, Any]) -> tuple[int, ...]:
    grid = document.get("chunk_grid")
    configuration = grid.get("configuration") if isinstance(grid, dict) else None
    return _integers(configuration.get("chunk_shape")) if isinstance(configuration, dict) else ()


def _dtype_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return str(value.get("name", "?"))
    return "?"


def _codec_text(codec: Any) -> str:
    if not isinstance(codec, dict):
        return "?"
    name = str(codec.get("name", "?"))
    configuration = codec.get("configuration")
    if name == "sharding_indexed" and isinstance(configuration, dict):
        inner = "+".join(_codec_text(c) for c in configuration.get("codecs") or ())
        return f"shards of {shape_text(_integers(configuration.get('chunk_shape')))} [{inner}]"
    return name
