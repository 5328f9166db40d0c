"""``shadowzarr get REFS PATH [SLICE]``: read part of an array, print it or save it as .npy."""

from __future__ import annotations

import argparse

import numpy as np

from shadowzarr.cli.selection import parse_selection

__all__ = ["register"]


def register(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subcommands.add_parser(
        "get",
        help="read (part of) an array",
        description="Read an array through the references; print it or write a .npy file.",
        epilog='example: shadowzarr get session.shadowzarr acquisition/ts/data "0:1000, 3" -o ts.npy',
    )
    parser.add_argument("refs")
    parser.add_argument("path", help="the array's path inside the references")
    parser.add_argument("selection", nargs="?", help='numpy-style selection, e.g. "0:100, ::2, 5"')
    parser.add_argument("-o", "--output", help="write a .npy file instead of printing")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_store import open_rfs

    root = open_rfs(args.refs)
    try:
        array = root[args.path]
    except KeyError:
        raise KeyError(f"no array {args.path!r} in {args.refs}") from None
    if not hasattr(array, "shape") or not hasattr(array, "dtype"):
        raise ValueError(f"{args.path!r} is a group, not an array")
    values = np.asarray(array[parse_selection(args.selection)])
    if args.output:
        np.save(args.output, values)
        print(f"wrote {args.output}: {values.dtype} {values.shape}")
    else:
        with np.printoptions(threshold=200, edgeitems=5):
            print(values)
    return 0
