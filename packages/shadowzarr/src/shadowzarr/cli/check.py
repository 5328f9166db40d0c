"""``shadowzarr check REFS``: is every source still reachable and unchanged (size and ETag,
or a local file's identity)?"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shadowzarr.cli.access import access_kwargs, add_access_arguments, transport_options
from shadowzarr.cli.output import add_json_option, emit

if TYPE_CHECKING:
    from shadowzarr_spec import SourceInfo
    from shadowzarr_store.transport import TransportOptions

__all__ = ["SourceStatus", "check_source", "register"]


@dataclass(frozen=True, slots=True)
class SourceStatus:
    url: str
    ok: bool
    detail: str


def register(
    subcommands: argparse._SubParsersAction,  # type: ignore[type-arg]
    common: argparse.ArgumentParser,
) -> None:
    parser = subcommands.add_parser(
        "check",
        help="check that every source file is reachable and unchanged",
        description="Compare each source's size and ETag (a local file: size, modification "
        "time and sampled hash) with the ones recorded in the references.",
        epilog="example: shadowzarr check session.shadowzarr; exit status 1 if any source changed",
        parents=[common],
    )
    parser.add_argument("refs", help="a .json reference file, a reference directory, or a URL")
    add_access_arguments(parser)
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shadowzarr_store import load_rfs

    options = transport_options(args)
    rfs = load_rfs(args.refs, **access_kwargs(args))
    statuses = [
        check_source(url, recorded, rfs.base, options) for url, recorded in rfs.sources.items()
    ]
    lines = [
        f"{'ok     ' if status.ok else 'CHANGED'} {status.url}  {status.detail}"
        for status in statuses
    ] or ["no sources recorded: nothing to check"]
    document = {"sources": [dataclasses.asdict(status) for status in statuses]}
    emit(args, document, lines)
    return 1 if any(not status.ok for status in statuses) else 0


def check_source(
    url: str, recorded: SourceInfo, base: str | None, options: TransportOptions | None = None
) -> SourceStatus:
    """Ask the source who it is now (one small request, or a local probe) and compare."""
    from shadowzarr_spec import SourceNotFoundError
    from shadowzarr_store.transport import (
        join_location,
        redact,
        run_blocking,
        same_etag,
        transport_for,
    )

    location = url if base is None else join_location(base, url)
    shown = redact(url)

    async def probe() -> SourceInfo:
        transport = transport_for(options)
        try:
            return await transport.probe(location)
        finally:
            await transport.aclose()

    try:
        now = run_blocking(probe())
    except SourceNotFoundError as exc:
        return SourceStatus(shown, False, f"not found: {exc}")
    except OSError as exc:
        return SourceStatus(shown, False, f"unreachable: {exc}")
    problems = []
    if recorded.size is not None and now.size is not None and now.size != recorded.size:
        problems.append(f"size {now.size} != recorded {recorded.size}")
    if (
        recorded.etag is not None
        and now.etag is not None
        and not same_etag(now.etag, recorded.etag)
    ):
        problems.append(f"ETag {now.etag} != recorded {recorded.etag}")
    # As the store decides: the sampled bytes when recorded (an mtime can be set back), else
    # the mtime.
    if recorded.sample_hash is not None and now.sample_hash != recorded.sample_hash:
        problems.append("rewritten since the references were made (its sampled bytes differ)")
    elif (
        recorded.sample_hash is None
        and recorded.mtime_ns is not None
        and now.mtime_ns != recorded.mtime_ns
    ):
        problems.append("modified since the references were made (mtime differs)")
    if problems:
        return SourceStatus(shown, False, "; ".join(problems))
    return SourceStatus(shown, True, f"size={now.size} etag={now.etag}")
