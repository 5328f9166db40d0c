"""``shadowzarr catalog SOURCE DEST``: references for every asset of an archive, with a catalog.

The work is `shadowzarr_catalog.generate_catalog`'s (installed with ``shadowzarr[catalog]``);
this module turns the command line into its arguments and prints its summary.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from shadowzarr._lazy import import_module_for
from shadowzarr.cli.access import access_kwargs, add_access_arguments
from shadowzarr.cli.output import add_json_option, emit

__all__ = ["register"]

SCHEDULER_TIMEOUT = 30
"""Seconds to reach the scheduler of ``--scheduler`` before the command gives up."""


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "catalog",
        help="generate references for every asset of a folder, bucket, URL list or dandiset",
        description="SOURCE is a folder, a .txt/.csv list of URLs and paths, an s3:// (gs://, "
        "az://) prefix or a dandiset (dandi://000123/draft, its web page or API URL). DEST (a "
        "folder or an s3:// prefix) gets one reference set per asset under refs/, "
        "catalog.parquet (one row per asset), index.json and catalog.sqlite (the progress: run "
        "the same command again to resume, or later to update only what changed). "
        "DANDI_API_KEY, when set, authenticates the dandiset's listing. Exit status 1 when an "
        "asset failed in this run (its row says why).",
        epilog="examples:\n  shadowzarr catalog recordings/ refs-catalog/\n"
        "  shadowzarr catalog dandi://000123/draft s3://bucket/catalogs/000123/ --include "
        "'*.nwb'\n  shadowzarr catalog urls.txt catalog/ --form json --workers 4\n"
        "  shadowzarr catalog dandi://000123/draft s3://bucket/catalogs/000123/ "
        "--scheduler tcp://scheduler:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("source", help="folder, URL list, object-store prefix or dandiset")
    parser.add_argument("destination", help="folder or object-store prefix to publish to")
    parser.add_argument("--include", help="only assets whose path matches this glob ('*.nwb')")
    parser.add_argument(
        "--form",
        choices=("directory", "json"),
        default="directory",
        help="one reference directory per asset, or one JSON file (default: %(default)s)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="assets generated at once (default: 12)"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="worker processes the jobs run on (default: two per core on Linux; 0: threads "
        "of this process)",
    )
    parser.add_argument(
        "--per-host", type=int, default=12, help="at most this many at once per host (default: 12)"
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the jobs on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786): "
        "its workers generate and publish, so DEST must be one they all reach (an object-store "
        "prefix or a shared folder); --workers and --processes then do not apply, --per-host "
        "does (needs shadowzarr-catalog[dask])",
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="try every failed asset again, not only those whose failure may pass",
    )
    add_access_arguments(parser)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    catalog = import_module_for("shadowzarr_catalog", "catalog", "shadowzarr catalog")
    if args.scheduler is not None and (args.workers is not None or args.processes is not None):
        raise ValueError("--workers and --processes size a local run; not with --scheduler")
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(_client(args.scheduler)) if args.scheduler else None
        summary = catalog.generate_catalog(
            args.source,
            args.destination,
            **access_kwargs(args),
            dandi_api_key=os.environ.get("DANDI_API_KEY") or None,
            include=args.include,
            form=args.form,
            workers=args.workers,
            processes=args.processes,
            per_host=args.per_host,
            retry_failed=args.retry_failed,
            progress=not args.quiet,
            client=client,
        )
    emit(args, dataclasses.asdict(summary), str(summary).splitlines())
    return 1 if summary.failures else 0


@contextlib.contextmanager
def _client(address: str) -> Iterator[Any]:
    """A Dask client of the scheduler at ``address``, closed when the run ends."""
    try:
        import distributed
    except ModuleNotFoundError as exc:
        raise ImportError(
            "--scheduler needs distributed: pip install 'shadowzarr-catalog[dask]'"
        ) from exc
    untyped: Any = distributed.Client  # no type hints in distributed
    client = untyped(address, timeout=SCHEDULER_TIMEOUT, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
