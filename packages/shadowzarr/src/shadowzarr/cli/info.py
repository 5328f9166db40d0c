"""``shadowzarr info REFS``: the tree of groups and arrays, their layout and sources."""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any

from shadowzarr.cli.output import add_json_option, emit

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

__all__ = ["describe", "register", "tree_lines"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "info",
        help="show groups, arrays, codecs, chunk counts and sources",
        description="Show the tree of a reference file system (or of an Icechunk repository's "
        "main branch): the root is /, each group is followed by what it holds.",
        epilog="example: shadowzarr info session.shadowzarr --json",
        parents=[common],
    )
    parser.add_argument(
        "refs",
        help="a .json reference file, a reference directory, a URL, or an Icechunk repository",
    )
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_store import load_rfs

    from shadowzarr.cli.repositories import is_repository, repository_references

    if is_repository(args.refs):
        description = describe(repository_references(args.refs))
    else:
        description = describe(load_rfs(args.refs))
    emit(args, description, tree_lines(description))
    return 0


def tree_lines(description: dict[str, Any]) -> list[str]:
    """The tree as text: ``/`` first, every group before what it holds, two spaces a level."""
    lines = [f"version {description['version']}"]
    for node in description["nodes"]:
        path = node["path"]
        depth = path.count("/") + 1 if path else 0
        indent = "  " * depth
        if not path:
            lines.append("/")
        elif node["type"] == "group":
            lines.append(f"{indent}{path.rsplit('/', 1)[-1]}/")
        else:
            codecs = ",".join(node["codecs"])
            lines.append(
                f"{indent}{path.rsplit('/', 1)[-1]}  {node['dtype']} {tuple(node['shape'])} "
                f"chunks {tuple(node['chunks'])} [{codecs}] {node['stored']}"
            )
    for url, source in description["sources"].items():
        lines.append(f"source {url}  size={source.get('size')} etag={source.get('etag')}")
    return lines


def _tree_order(paths: set[str]) -> list[str]:
    """Every path and every group above one, parents first (the root, "", before all)."""
    everything = set(paths) | {""}
    for path in paths:
        parts = path.split("/")
        everything.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return sorted(everything, key=lambda path: tuple(path.split("/")) if path else ())


def describe(rfs: ReferenceFileSystem) -> dict[str, Any]:
    from shadowzarr_spec import array_info, parse_json
    from shadowzarr_spec.keys import array_of_chunk_key
    from shadowzarr_spec.model import InlineRef

    listed: dict[str, int] = {}
    for key in rfs.refs:
        split = array_of_chunk_key(key)
        if split is not None:
            listed[split[0]] = listed.get(split[0], 0) + 1
    generated: dict[str, int] = {}
    for entry in rfs.gen:
        split = array_of_chunk_key(entry.key.split("{{", 1)[0] + "0")
        if split is not None:
            generated[split[0]] = generated.get(split[0], 0) + entry.count
    nodes: list[dict[str, Any]] = []
    described = {
        key[: -len("zarr.json")].rstrip("/")
        for key in rfs.refs
        if key == "zarr.json" or key.endswith("/zarr.json")
    }
    for path in _tree_order(described):
        ref = rfs.refs.get(f"{path}/zarr.json" if path else "zarr.json")
        document = parse_json(ref.data) if isinstance(ref, InlineRef) else {}
        if document.get("node_type") != "array":
            nodes.append({"path": path, "type": "group"})
            continue
        info = array_info(rfs, path)
        assert info is not None
        stored: str
        if path in rfs.indexes:
            stored = f"chunk manifest of {math.prod(info.grid)} chunks"
        else:
            stored = (
                f"{listed.get(path, 0) + generated.get(path, 0)} of {math.prod(info.grid)} chunks"
            )
        nodes.append(
            {
                "path": path,
                "type": "array",
                "shape": list(info.shape),
                "chunks": list(info.chunk_shape),
                "dtype": info.data_type
                if isinstance(info.data_type, str)
                else json.dumps(info.data_type),
                "codecs": [c.get("name", "?") for c in info.codecs],
                "stored": stored,
                "selection": path in rfs.selections,
            }
        )
    return {
        "version": rfs.version,
        "nodes": nodes,
        "sources": {url: s.to_json() for url, s in rfs.sources.items()},
    }
