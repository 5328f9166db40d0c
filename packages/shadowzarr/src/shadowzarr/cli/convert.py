"""``shadowzarr convert REFS OUT``: single JSON <-> directory with chunk manifests, or Icechunk."""

from __future__ import annotations

import argparse

from shadowzarr.cli.output import add_json_option, emit

__all__ = ["register"]


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "convert",
        help="rewrite references as one JSON file, a directory, or an Icechunk repository",
        description="OUT ending in .json gets one file (version 1 unless selections need 2); "
        "OUT ending in .icechunk gets an Icechunk repository (shadowzarr[icechunk]); any other "
        "OUT gets a directory with chunk manifests for arrays above the threshold.",
        epilog="example: shadowzarr convert session.json session.shadowzarr",
        parents=[common],
    )
    parser.add_argument("refs", help="a .json reference file, a reference directory, or a URL")
    parser.add_argument("out", help="a .json file, a .icechunk repository or a directory")
    parser.add_argument(
        "--manifest-threshold",
        type=int,
        default=1000,
        help="arrays with more chunks than this get a chunk manifest (directories only; "
        "default: %(default)s)",
    )
    parser.add_argument(
        "--chunk-index-threshold",  # deprecated alias of --manifest-threshold, hidden from help
        dest="manifest_threshold",
        type=int,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_spec import write_rfs
    from shadowzarr_store import load_rfs

    rfs = load_rfs(args.refs)
    if args.out.endswith(".icechunk"):
        from shadowzarr._lazy import import_module_for

        bridge = import_module_for(
            "shadowzarr_icechunk", "icechunk", "shadowzarr convert to Icechunk"
        )
        repository = bridge.write_icechunk_repository(rfs, args.out)
        prefixes = sorted(repository.config.virtual_chunk_containers or {})
        code = bridge.opening_code(args.out, prefixes)
        lines = [
            f"wrote {args.out}: an Icechunk repository whose virtual chunks lie in "
            f"{', '.join(prefixes) or 'no container'}",
            f"read it here with: shadowzarr info {args.out}; shadowzarr get {args.out} PATH",
            "open it from Python (Icechunk reads a virtual chunk only from a container the "
            "opener authorizes):",
            *(f"    {line}" for line in code),
        ]
        document = {
            "written": args.out,
            "virtual_chunk_containers": prefixes,
            "python": "\n".join(code),
        }
        emit(args, document, lines)
        return 0
    write_rfs(rfs, args.out, manifest_threshold=args.manifest_threshold)
    emit(args, {"written": args.out}, [f"wrote {args.out}"])
    return 0
