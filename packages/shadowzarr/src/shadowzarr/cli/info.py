"""``shadowzarr info REFS``: the tree of groups and arrays, their layout and sources."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from shadowzarr_spec import ReferenceFileSystem, array_info, parse_json
from shadowzarr_spec.keys import array_of_chunk_key
from shadowzarr_spec.model import InlineRef
from shadowzarr_store import load_rfs

__all__ = ["describe", "register"]


def register(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subcommands.add_parser(
        "info",
        help="show groups, arrays, codecs, chunk counts and sources",
        description="Show the tree of a reference file system.",
        epilog="example: shadowzarr info session.shadowzarr --json",
    )
    parser.add_argument("refs", help="a .json reference file, a reference directory, or a URL")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    description = describe(load_rfs(args.refs))
    if args.json:
        print(json.dumps(description, indent=2))
        return 0
    print(f"version {description['version']}")
    for node in description["nodes"]:
        depth = node["path"].count("/") + (1 if node["path"] else 0)
        name = node["path"].rsplit("/", 1)[-1] or "/"
        indent = "  " * depth
        if node["type"] == "group":
            print(f"{indent}{name}/")
        else:
            codecs = ",".join(node["codecs"])
            print(
                f"{indent}{name}  {node['dtype']} {tuple(node['shape'])} chunks {tuple(node['chunks'])} "
                f"[{codecs}] {node['stored']}"
            )
    for url, source in description["sources"].items():
        print(f"source {url}  size={source.get('size')} etag={source.get('etag')}")
    return 0


def describe(rfs: ReferenceFileSystem) -> dict[str, Any]:
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
    nodes = []
    for key in sorted(k for k in rfs.refs if k == "zarr.json" or k.endswith("/zarr.json")):
        path = key[: -len("zarr.json")].rstrip("/")
        ref = rfs.refs[key]
        document = parse_json(ref.data) if isinstance(ref, InlineRef) else {}
        if document.get("node_type") != "array":
            nodes.append({"path": path, "type": "group"})
            continue
        info = array_info(rfs, path)
        assert info is not None
        stored: str
        if path in rfs.indexes:
            stored = f"chunk index of {math.prod(info.grid)} chunks"
        else:
            stored = f"{listed.get(path, 0) + generated.get(path, 0)} of {math.prod(info.grid)} chunks"
        nodes.append(
            {
                "path": path,
                "type": "array",
                "shape": list(info.shape),
                "chunks": list(info.chunk_shape),
                "dtype": info.data_type if isinstance(info.data_type, str) else json.dumps(info.data_type),
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
