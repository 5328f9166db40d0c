"""``shadowzarr cache info|clear``: the local chunk cache."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subcommands.add_parser(
        "cache",
        help="show or clear the local chunk cache",
        description="The SQLite chunk cache (default ~/.shadowzarr/cache).",
        epilog="examples: shadowzarr cache info; shadowzarr cache clear --path /tmp/cache",
    )
    parser.add_argument("action", choices=["info", "clear"])
    parser.add_argument("--path", help="the cache folder (default: ~/.shadowzarr/cache)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_store import LocalCache

    cache = LocalCache(args.path) if args.path else LocalCache()
    try:
        if args.action == "clear":
            cache.clear()
            print(f"cleared {cache.path}")
        else:
            print(f"{cache.path}: {len(cache)} chunks, {cache.size_bytes} bytes")
    finally:
        cache.close()
    return 0
