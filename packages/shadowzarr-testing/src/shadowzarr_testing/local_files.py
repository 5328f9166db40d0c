"""Answers for files under a folder, as S3 gives them: the proxy's cheap stand-in for nginx.

Forwarding every request to nginx costs the proxy a second HTTP exchange per request; with
thousands of small range requests (a generator reading B-tree nodes) that, not the simulated
network, is what a benchmark on two shared cores would measure. A real object store costs its
client nothing of the kind. So `LatencyProxy(root=...)` answers from the files itself, with what
S3 answers: one range per request (``bytes=a-b``, ``bytes=a-``, ``bytes=-n``) as 206 with
``Content-Range``, a whole file as 200, a range starting past the end as 416, ``If-Match`` with
another ETag as 412, ETag and Last-Modified computed the way nginx does (so an ETag recorded
through either server is the same). Multi-range requests are not answered here: the proxy
removes their ``Range`` header first (S3's 200 with the whole object).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from email.utils import formatdate
from functools import lru_cache
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING
from urllib.parse import unquote

from multidict import CIMultiDict

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable
    from types import TracebackType

__all__ = ["LocalAnswer", "local_answer"]

_RANGE = re.compile(r"^bytes=(?P<start>\d*)-(?P<end>\d*)$")


class _Body:
    """``iter_chunked`` over bytes ``[start, start + length)`` of a file, as aiohttp's stream."""

    def __init__(self, path: str | None, start: int, length: int) -> None:
        self._path, self._start, self._length = path, start, length

    def read(self) -> bytes:
        """The whole body at once (for bodies of one piece: a page-cache read)."""
        if self._path is None or self._length <= 0:
            return b""
        descriptor = os.open(self._path, os.O_RDONLY)
        try:
            return os.pread(descriptor, self._length, self._start)
        finally:
            os.close(descriptor)

    async def iter_chunked(self, size: int) -> AsyncIterator[bytes]:
        if self._path is None or self._length <= 0:
            return
        descriptor = os.open(self._path, os.O_RDONLY)
        try:
            done = 0
            while done < self._length:
                # Page-cache reads of at most one piece: too short to be worth a thread.
                piece = os.pread(descriptor, min(size, self._length - done), self._start + done)
                if not piece:
                    return
                done += len(piece)
                yield piece
        finally:
            os.close(descriptor)


@dataclass(slots=True)
class LocalAnswer:
    """What `LatencyProxy` reads of an upstream answer: status, headers, length, body."""

    status: int
    reason: str
    headers: CIMultiDict[str]
    content_length: int | None
    content: _Body

    async def __aenter__(self) -> LocalAnswer:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


def nginx_etag(stat: os.stat_result) -> str:
    """nginx's ETag: hex of the mtime in whole seconds and of the size."""
    return f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'


def local_answer(
    root: Path, raw_path: str, method: str, headers: Iterable[tuple[str, str]]
) -> LocalAnswer:
    """The answer for ``method`` of ``raw_path`` (percent-encoded) under ``root``."""
    sent = CIMultiDict(headers)
    if method not in ("GET", "HEAD"):
        return _plain(405, "Method Not Allowed")
    target = _resolve(root, raw_path)
    try:
        stat = os.stat(target) if target is not None else None
    except OSError:
        stat = None
    if target is None or stat is None or not S_ISREG(stat.st_mode):
        return _plain(404, "Not Found")
    size = stat.st_size
    etag = nginx_etag(stat)
    common = CIMultiDict(
        {
            "Content-Type": "application/octet-stream",
            "ETag": etag,
            "Last-Modified": _http_date(int(stat.st_mtime)),
            "Accept-Ranges": "bytes",
        }
    )
    wanted = sent.get("If-Match")
    if wanted is not None:
        tags = [tag.strip() for tag in wanted.split(",")]
        if "*" not in tags and etag not in tags:
            return _plain(412, "Precondition Failed")
    span = _span(sent.get("Range"), size)
    body_path = target if method == "GET" else None
    if span is None:
        return LocalAnswer(200, "OK", common, size, _Body(body_path, 0, size))
    if span == _UNSATISFIABLE:
        common["Content-Range"] = f"bytes */{size}"
        return LocalAnswer(416, "Range Not Satisfiable", common, 0, _Body(None, 0, 0))
    start, end = span
    common["Content-Range"] = f"bytes {start}-{end}/{size}"
    length = end - start + 1
    return LocalAnswer(206, "Partial Content", common, length, _Body(body_path, start, length))


@lru_cache(maxsize=1024)
def _http_date(seconds: int) -> str:
    return formatdate(seconds, usegmt=True)


@lru_cache(maxsize=4096)
def _resolve(root: Path, raw_path: str) -> str | None:
    """The file a request path names under ``root`` (None: outside it). Cached: resolving
    costs a system call per path component, on every one of thousands of requests."""
    relative = unquote(raw_path).lstrip("/")
    target = (root / relative).resolve()
    if not relative or not target.is_relative_to(root):
        return None
    return str(target)


_UNSATISFIABLE = (-1, -1)


def _span(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a single range, `_UNSATISFIABLE`, or None (the whole file)."""
    if header is None:
        return None
    match = _RANGE.match(header.strip())
    if match is None or (not match["start"] and not match["end"]):
        return None  # not a range S3 answers in part: the whole object
    if not match["start"]:
        suffix = int(match["end"])
        if suffix == 0:
            return _UNSATISFIABLE
        return max(0, size - suffix), size - 1
    start = int(match["start"])
    end = int(match["end"]) if match["end"] else size - 1
    if start >= size:
        return _UNSATISFIABLE
    if end < start:
        return None
    return start, min(end, size - 1)


def _plain(status: int, reason: str) -> LocalAnswer:
    text = f"{status} {reason}\n".encode()
    headers = CIMultiDict({"Content-Type": "text/plain"})
    return LocalAnswer(status, reason, headers, len(text), _Text(text))  # type: ignore[arg-type]


class _Text:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self) -> bytes:
        return self._data

    async def iter_chunked(self, size: int) -> AsyncIterator[bytes]:
        for start in range(0, len(self._data), size):
            yield self._data[start : start + size]
