"""``shadowzarr check REFS``: is every source still reachable and unchanged (size and ETag)?"""

from __future__ import annotations

import argparse
import dataclasses
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from shadowzarr_spec import SourceInfo, load_rfs

from shadowzarr.cli.output import add_json_option, emit

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
        description="Compare each source's size and ETag with the ones recorded in the references.",
        epilog="example: shadowzarr check session.shadowzarr; exit status 1 if any source changed",
        parents=[common],
    )
    parser.add_argument("refs", help="a .json reference file, a reference directory, or a URL")
    add_json_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rfs = load_rfs(args.refs)
    statuses = [check_source(url, recorded, rfs.base) for url, recorded in rfs.sources.items()]
    lines = [
        f"{'ok     ' if status.ok else 'CHANGED'} {status.url}  {status.detail}"
        for status in statuses
    ] or ["no sources recorded: nothing to check"]
    document = {"sources": [dataclasses.asdict(status) for status in statuses]}
    emit(args, document, lines)
    return 1 if any(not status.ok for status in statuses) else 0


def check_source(url: str, recorded: SourceInfo, base: str | None) -> SourceStatus:
    if url.startswith(("http://", "https://")):
        request = urllib.request.Request(url, method="HEAD")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                size = response.headers.get("Content-Length")
                etag = response.headers.get("ETag")
        except urllib.error.HTTPError as exc:
            return SourceStatus(url, False, f"HTTP {exc.code}")
        except urllib.error.URLError as exc:
            return SourceStatus(url, False, f"unreachable: {exc.reason}")
        size_now = int(size) if size is not None else None
    else:
        path = urllib.parse.urlparse(url).path if url.startswith("file://") else url
        if base and not os.path.isabs(path) and "://" not in base:
            path = os.path.join(base, path)
        try:
            size_now = os.stat(path).st_size
        except OSError as exc:
            return SourceStatus(url, False, f"unreadable: {exc.strerror}")
        etag = None
    problems = []
    if recorded.size is not None and size_now is not None and size_now != recorded.size:
        problems.append(f"size {size_now} != recorded {recorded.size}")
    if recorded.etag is not None and etag is not None and _bare(etag) != _bare(recorded.etag):
        problems.append(f"ETag {etag} != recorded {recorded.etag}")
    if problems:
        return SourceStatus(url, False, "; ".join(problems))
    return SourceStatus(url, True, f"size={size_now} etag={etag}")


def _bare(etag: str) -> str:
    return etag.removeprefix("W/").strip('"')
