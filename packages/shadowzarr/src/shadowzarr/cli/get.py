"""``shadowzarr get REFS PATH [SLICE]``: read part of an array, print it or save it as .npy."""

from __future__ import annotations

import argparse

from shadowzarr.cli.output import add_json_option, emit

__all__ = ["register"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "get",
        help="read (part of) an array",
        description="Read an array through the references; print it or write a .npy file.",
        epilog="example: shadowzarr get session.shadowzarr acquisition/ts/data "
        '"0:1000, 3" -o ts.npy',
        parents=[common],
    )
    parser.add_argument(
        "refs",
        help="a .json reference file, a reference directory, a URL, or an Icechunk repository",
    )
    parser.add_argument("path", help="the array's path inside the references")
    parser.add_argument("selection", nargs="?", help='numpy-style selection, e.g. "0:100, ::2, 5"')
    parser.add_argument("-o", "--output", help="write a .npy file instead of printing")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import zarr
    from shadowzarr_spec import DatasetNotFoundError
    from shadowzarr_store import open_rfs

    from shadowzarr.cli.repositories import is_repository, repository_group
    from shadowzarr.selection_text import parse_selection

    root = repository_group(args.refs) if is_repository(args.refs) else open_rfs(args.refs)
    try:
        node = root[args.path]
    except KeyError:
        raise DatasetNotFoundError(f"no array {args.path!r} in {args.refs}") from None
    if not isinstance(node, zarr.Array):
        raise DatasetNotFoundError(f"{args.path!r} is a group of {args.refs}, not an array")
    values = np.asarray(node[parse_selection(args.selection)])
    summary = {"path": args.path, "dtype": str(values.dtype), "shape": list(values.shape)}
    if args.output:
        np.save(args.output, values)
        emit(
            args,
            {**summary, "written": args.output},
            [f"wrote {args.output}: {values.dtype} {values.shape}"],
        )
    elif args.json:
        emit(args, {**summary, "values": values.tolist()}, [])
    else:
        with np.printoptions(threshold=200, edgeitems=5):
            print(values)
    return 0
