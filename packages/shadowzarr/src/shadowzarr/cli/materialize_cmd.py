"""``shadowzarr materialize REFS DEST``: copy the referenced data into an ordinary Zarr store."""

from __future__ import annotations

import argparse

from shadowzarr.cli.progress import Progress

__all__ = ["register"]


def register(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subcommands.add_parser(
        "materialize",
        help="copy the data into an ordinary Zarr v3 store that needs no sources",
        description="Arrays of numbers are rewritten in ~4 MiB chunks along the first axis with "
        "zarr's default compressor; everything else is copied as stored. An interrupted run "
        "resumes where it stopped when started again with the same arguments.",
        epilog="example: shadowzarr materialize session.shadowzarr session.zarr --verify",
    )
    parser.add_argument("refs")
    parser.add_argument("destination", help="a folder, or a path ending in .zip")
    parser.add_argument("--verify", action="store_true", help="read back and compare every array")
    parser.add_argument("--chunk-bytes", type=int, default=4 * 2**20, help="target chunk size")
    parser.add_argument("--scheduler", help="address of a Dask scheduler to spread the copy over")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_store.materialize import materialize

    client = None
    if args.scheduler:
        from shadowzarr._lazy import import_module_for

        distributed = import_module_for("distributed", "dask", "materialize --scheduler")
        client = distributed.Client(args.scheduler)
    bar = Progress("materialize")
    try:
        report = materialize(
            args.refs,
            args.destination,
            verify=args.verify,
            client=client,
            progress=bar.update,
            target_chunk_bytes=args.chunk_bytes,
        )
    finally:
        bar.close()
        if client is not None:
            client.close()
    for array in report.arrays:
        print(f"{array.action:9} {array.path}  {array.nbytes} bytes -> {array.stored_bytes} stored")
    print(f"{len(report.arrays)} arrays, {report.groups} groups in {report.seconds:.1f} s"
          + (", verified" if report.verified else ""))
    return 0
