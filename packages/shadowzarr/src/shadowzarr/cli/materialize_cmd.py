"""``shadowzarr materialize REFS DEST``: copy the referenced data into an ordinary Zarr store."""

from __future__ import annotations

import argparse
from typing import Any

from shadowzarr.cli.output import add_json_option, emit
from shadowzarr.cli.progress import Bars

__all__ = ["register"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "materialize",
        help="copy the data into an ordinary Zarr v3 store that needs no sources",
        description="Arrays of numbers are rewritten in ~4 MiB chunks along the first axis with "
        "zarr's default compressor; everything else is copied as stored. An interrupted run "
        "resumes where it stopped when started again with the same arguments.",
        epilog="example: shadowzarr materialize session.shadowzarr session.zarr --verify",
        parents=[common],
    )
    parser.add_argument("refs", help="a .json reference file, a reference directory, or a URL")
    parser.add_argument("destination", help="a folder, or a path ending in .zip")
    parser.add_argument("--verify", action="store_true", help="read back and compare every array")
    parser.add_argument(
        "--chunk-bytes",
        type=int,
        default=4 * 2**20,
        help="target size of a rewritten chunk in bytes (default: %(default)s)",
    )
    parser.add_argument("--scheduler", help="address of a Dask scheduler to spread the copy over")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    client = None
    if args.scheduler:
        from shadowzarr._lazy import import_module_for

        distributed = import_module_for("distributed", "dask", "materialize --scheduler")
        client = distributed.Client(args.scheduler)
    with Bars() as bars:
        report = _run(args, client, bars)
    lines = [
        f"{array.action:9} {array.path}  {array.nbytes} bytes -> {array.stored_bytes} stored"
        for array in report.arrays
    ]
    lines.append(
        f"{len(report.arrays)} arrays, {report.groups} groups in {report.seconds:.1f} s"
        + (", verified" if report.verified else "")
    )
    document = {
        "arrays": [
            {
                "path": a.path,
                "action": a.action,
                "nbytes": a.nbytes,
                "stored_bytes": a.stored_bytes,
                "chunks": list(a.chunks),
            }
            for a in report.arrays
        ],
        "groups": report.groups,
        "verified": report.verified,
        "resumed_regions": report.resumed_regions,
        "seconds": report.seconds,
    }
    emit(args, document, lines)
    return 0


def _run(args: argparse.Namespace, client: Any, bars: Bars) -> Any:
    from shadowzarr_store.materialize import materialize
    from shadowzarr_store.materialize.progress import StepDisplays

    displays = StepDisplays(bars.enabled)
    try:
        return materialize(
            args.refs,
            args.destination,
            verify=args.verify,
            client=client,
            progress=displays,
            target_chunk_bytes=args.chunk_bytes,
        )
    finally:
        displays.close()
        if client is not None:
            client.close()
