"""``shadowzarr demo``: generate and read references for an embedded NWB example, offline."""

from __future__ import annotations

import argparse
from typing import Any

from shadowzarr.cli.output import add_json_option, emit

__all__ = ["register"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "demo",
        help="the main job on an embedded example NWB file, no internet needed",
        description="Writes a realistic NWB file with pynwb, serves it on a loopback HTTP server, "
        "generates references over HTTP, reads them back through hdmf-zarr's NWBZarrIO and "
        "prints the requests, bytes and time next to h5py reading the same data over the same "
        "server.",
        epilog="example: shadowzarr demo --latency 0.02",
        parents=[common],
    )
    parser.add_argument("--seconds", type=int, default=20, help="length of the example recording")
    parser.add_argument(
        "--latency", type=float, default=0.02, help="seconds added to each request (a real network)"
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="write demo.nwb and demo.shadowzarr to DIR and keep them (default: a temporary "
        "folder, deleted at the end)",
    )
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr.demo import run_demo

    if not args.json:
        return run_demo(seconds=args.seconds, latency=args.latency, keep=args.keep)
    lines: list[str] = []
    results: dict[str, Any] = {}
    status = run_demo(
        seconds=args.seconds,
        latency=args.latency,
        keep=args.keep,
        echo=lines.append,
        results=results,
    )
    emit(args, {**results, "log": lines}, [])
    return status
