"""The ``shadowzarr`` command: generate (one file, or a catalog of an archive), inspect, read,
check, convert and materialize references.

Every subcommand lives in its own module and registers itself in :data:`COMMANDS`. Results go
to stdout (text, or one JSON document with ``--json``); errors, warnings and progress go to
stderr. Errors that a user can cause (a missing file, a URL that fails, corrupt references)
print one line and exit with status 1; usage errors exit with 2; nothing prints a traceback
unless ``-v``. ``-v``/``-q`` work before or after the subcommand.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from shadowzarr.cli import (
    cache,
    catalog,
    check,
    convert,
    demo,
    generate,
    get,
    info,
    layout,
    materialize_cmd,
)
from shadowzarr.cli.quiet_logs import quiet_third_parties
from shadowzarr.cli.version import VersionAction

__all__ = ["main"]

COMMANDS = (generate, catalog, info, get, layout, check, materialize_cmd, convert, cache, demo)

EPILOG = """examples:
  shadowzarr generate https://api.dandiarchive.org/api/assets/<id>/download/ -o session.shadowzarr
  shadowzarr generate recordings/ -o refs/ --workers 4
  shadowzarr catalog dandi://000123/draft s3://bucket/catalogs/000123/
  shadowzarr info session.shadowzarr
  shadowzarr get session.shadowzarr acquisition/ElectricalSeries/data "0:30000, 17" -o x.npy
  shadowzarr layout session.shadowzarr acquisition/ElectricalSeries/data --png layout.png
  shadowzarr check session.shadowzarr
  shadowzarr materialize session.shadowzarr session.zarr
  shadowzarr demo
  shadowzarr --version
"""

BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a command whose reader went away


def verbosity_options(*, top_level: bool) -> argparse.ArgumentParser:
    """``-v``/``-q`` for the main parser and, without defaults, for every subcommand (so a
    value given before the subcommand is not reset by the subcommand's own parser)."""
    options = argparse.ArgumentParser(add_help=False)
    unset = {} if top_level else {"default": argparse.SUPPRESS}
    options.add_argument(
        "-v",
        "--verbose",
        action="count",
        help="more output (-vv: debug); tracebacks on errors",
        **({"default": 0} if top_level else unset),
    )
    options.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="only errors on stderr",
        **({"default": False} if top_level else unset),
    )
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shadowzarr",
        description="Read remote HDF5/NWB, TIFF and electrophysiology files as Zarr v3.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[verbosity_options(top_level=True)],
    )
    parser.add_argument(
        "--version", action=VersionAction, help="versions of shadowzarr and its sub-packages"
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = verbosity_options(top_level=False)
    for command in COMMANDS:
        command.register(subcommands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = (
        logging.ERROR if args.quiet else (logging.INFO if args.verbose == 1 else logging.WARNING)
    )
    if args.verbose > 1:
        level = logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        # After one chunk fails, zarr lets the other reads of that selection finish in the
        # background; asyncio would print their errors as tracebacks when the process exits.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    # Imported once the arguments are parsed: ``--help`` needs none of zarr, numpy or aiohttp.
    from shadowzarr_spec import ShadowzarrError

    try:
        with quiet_third_parties(args.verbose):
            return int(args.run(args) or 0)
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt:
        print("shadowzarr: interrupted", file=sys.stderr)
        return 130
    except (ShadowzarrError, OSError, ValueError, ImportError, LookupError, TypeError) as exc:
        if args.verbose:
            raise
        print(f"shadowzarr {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _silence_stdout() -> None:
    """The reader of stdout has gone (``… --json | head``): send what is left nowhere, so the
    interpreter's final flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str):
        text = exc.args[0]  # str(KeyError) quotes its message
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
