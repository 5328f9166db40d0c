"""``shadowzarr cache info|clear``: the local chunk cache."""

from __future__ import annotations

import argparse

from shadowzarr.cli.output import add_json_option, emit

__all__ = ["register"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "cache",
        help="show or clear the local chunk cache",
        description="The SQLite chunk cache (default ~/.shadowzarr/cache).",
        epilog="examples: shadowzarr cache info; shadowzarr cache clear --path /tmp/cache",
        parents=[common],
    )
    parser.add_argument("action", choices=["info", "clear"], help="show its size, or empty it")
    parser.add_argument("--path", help="the cache folder (default: ~/.shadowzarr/cache)")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_store import LocalCache

    cache = LocalCache(args.path) if args.path else LocalCache()
    try:
        if args.action == "clear":
            cache.clear()
            emit(args, {"cleared": str(cache.path)}, [f"cleared {cache.path}"])
        else:
            chunks, size = len(cache), cache.size_bytes
            emit(
                args,
                {"path": str(cache.path), "chunks": chunks, "bytes": size},
                [f"{cache.path}: {chunks} chunks, {size} bytes"],
            )
    finally:
        cache.close()
    return 0
