"""``shadowzarr check REFS``: is every source still reachable and unchanged (size and ETag)?"""

from __future__ import annotations

import argparse
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from shadowzarr_spec import SourceInfo, load_rfs

__all__ = ["SourceStatus", "check_source", "register"]


@dataclass(frozen=True, slots=True)
class SourceStatus:
    url: str
    ok: bool
    detail: str


def register(subcommands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subcommands.add_parser(
        "check",
        help="check that every source file is reachable and unchanged",
        description="Compare each source's size and ETag with the ones recorded in the references.",
        epilog="example: shadowzarr check session.shadowzarr; exit status 1 if any source changed",
    )
    parser.add_argument("refs")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rfs = load_rfs(args.refs)
    if not rfs.sources:
        print("no sources recorded: nothing to check")
        return 0
    failures = 0
    for url, recorded in rfs.sources.items():
        status = check_source(url, recorded, rfs.base)
        failures += not status.ok
        print(f"{'ok     ' if status.ok else 'CHANGED'} {url}  {status.detail}")
    return 1 if failures else 0


def check_source(url: str, recorded: SourceInfo, base: str | None) -> SourceStatus:
    if url.startswith(("http://", "https://")):
        request = urllib.request.Request(url, method="HEAD")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
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
