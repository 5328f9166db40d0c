"""The ``shadowzarr`` command: generate, inspect, read, check, convert and materialize references.

Every subcommand lives in its own module and registers itself in :data:`COMMANDS`. Errors that a
user can cause (a missing file, a URL that fails, corrupt references) print one line and exit
with status 1; usage errors exit with 2; nothing prints a traceback unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from shadowzarr.cli import cache, check, convert, demo, generate, get, info, materialize_cmd
from shadowzarr.cli.version import VersionAction

__all__ = ["main"]

COMMANDS = (generate, info, get, check, materialize_cmd, convert, cache, demo)

EPILOG = """examples:
  shadowzarr generate https://api.dandiarchive.org/api/assets/<id>/download/ -o session.shadowzarr
  shadowzarr generate recordings/ -o refs/ --workers 4
  shadowzarr info session.shadowzarr
  shadowzarr get session.shadowzarr acquisition/ElectricalSeries/data "0:30000, 17" -o x.npy
  shadowzarr check session.shadowzarr
  shadowzarr materialize session.shadowzarr session.zarr
  shadowzarr demo
  shadowzarr --version
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shadowzarr",
        description="Read remote HDF5/NWB, TIFF and electrophysiology files as Zarr v3.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more output; -vv debug")
    parser.add_argument("-q", "--quiet", action="store_true", help="only errors")
    parser.add_argument(
        "--version", action=VersionAction, help="versions of shadowzarr and its sub-packages"
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.ERROR if args.quiet else (logging.INFO if args.verbose == 1 else logging.WARNING)
    if args.verbose > 1:
        level = logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        # After one chunk fails, zarr lets the other reads of that selection finish in the
        # background; asyncio would print their errors as tracebacks when the process exits.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("shadowzarr: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, ImportError, KeyError, IndexError, TypeError) as exc:
        if args.verbose:
            raise
        print(f"shadowzarr {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
