"""A read-only file over HTTP range requests, with a block cache that reads ahead along the
IFD chain, so tifffile can parse a remote TIFF in a few rounds of requests.

tifffile walks the IFDs one at a time: seek, read a few hundred bytes, seek to the next IFD.
Over HTTP each of those reads would be a round trip. The pages of a stack are usually written
the same way one after another, so their IFDs are evenly spaced: once three cache misses fall
at the same stride, the next IFDs are fetched ahead, in parallel, twice as many each time the
guess holds. Neighbouring blocks are merged into one request.
"""

from __future__ import annotations

import io
import itertools
import re
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import requests
from requests.adapters import HTTPAdapter
from shadowzarr_spec import SourceChangedError, SourceError, SourceNotFoundError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from _typeshed import WriteableBuffer

__all__ = ["HttpFileStats", "HttpRangeFile"]

_IFD_MARGIN = 512  # bytes of IFD (tags and their values) expected after its start
_TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
_T = TypeVar("_T")
_MIN_STRIDE = 64  # bytes: closer reads are parts of one IFD, not successive IFDs
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


@dataclass(slots=True)
class HttpFileStats:
    """What reading the file cost."""

    requests: int = 0
    bytes: int = 0


class HttpRangeFile(io.RawIOBase):
    """A seekable, read-only binary file at ``url``, read in cached blocks.

    Parameters
    ----------
    block_size
        Cache granularity: every request covers whole blocks.
    read_ahead
        Bytes fetched after a cache miss that follows no pattern (headers, tag values).
    max_ahead
        Most IFD positions guessed in one round.
    merge_gap
        Blocks closer than this are fetched by one request (bytes are cheaper than a round trip).
    max_concurrency
        Parallel requests.
    multipart, ranges_per_request
        Ask for many ranges in one request (``multipart/byteranges``, which nginx and most
        static servers answer); a server that answers otherwise (S3 sends one range or the
        whole file) is asked one range at a time from then on, its body never read.
    cache_bytes
        Most bytes kept; the least recently used blocks are dropped.
    retries, backoff
        Attempts after a failure that may pass (connection error, 429, 5xx, short body),
        pausing ``backoff * 2**n`` seconds (or as ``Retry-After`` says).
    """

    def __init__(
        self,
        url: str,
        *,
        block_size: int = 1024,
        read_ahead: int = 65536,
        max_ahead: int = 4096,
        merge_gap: int = 16 * 1024,
        max_request: int = 16 * 2**20,
        max_concurrency: int = 16,
        multipart: bool = True,
        ranges_per_request: int = 128,
        cache_bytes: int = 256 * 2**20,
        session: requests.Session | None = None,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 0.1,
    ) -> None:
        super().__init__()
        self.url = url
        self.name = url
        self.stats = HttpFileStats()
        self._block = block_size
        self._read_ahead_blocks = max(1, read_ahead // block_size)
        self._max_ahead = max_ahead
        self._merge_blocks = max(0, merge_gap // block_size)
        self._max_request_blocks = max(1, max_request // block_size)
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._cache_blocks = max(16, cache_bytes // block_size)
        self._timeout = timeout
        self._target = url  # the URL requests go to: ``url``, or where it redirected
        self._retries = retries
        self._backoff = backoff
        self._lock = threading.Lock()
        self._session = session or requests.Session()
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=max_concurrency)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="shadowzarr-tiff")
        self._position = 0
        self._reads: deque[int] = deque(maxlen=64)  # where recent reads started
        self._pattern: tuple[int, int] | None = None  # (a miss, stride) of the IFDs guessed last
        self._ahead = 8
        self._multipart: bool | None = None if multipart else False
        self._ranges_per_request = ranges_per_request
        self.etag: str | None = None
        self.size, self.etag = self._probe()

    @property
    def multipart_ranges(self) -> bool | None:
        """Whether the server answers multi-range requests (None: not asked yet)."""
        return self._multipart

    # -- io.RawIOBase ------------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        elif whence == io.SEEK_END:
            position = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if position < 0:
            raise ValueError(f"negative seek position {position}")
        self._position = position
        return position

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        start = self._position
        stop = min(start + len(view), self.size)
        if stop <= start:
            return 0
        data = self.read_range(start, stop)
        view[: len(data)] = data
        self._position = start + len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._pool.shutdown(wait=True)
            self._session.close()
        super().close()

    # -- reading -----------------------------------------------------------------------------
    def read_range(self, start: int, stop: int) -> bytes:
        """Bytes [start, stop), fetching the blocks that are not cached."""
        first, last = start // self._block, (stop - 1) // self._block
        wanted = range(first, last + 1)
        missing = [b for b in wanted if b not in self._cache]
        if missing:
            self._fetch_blocks(sorted(set(missing) | set(self._guess(start, last))))
        self._reads.append(start)
        parts = []
        for index in wanted:
            block = self._cache[index]
            self._cache.move_to_end(index)
            parts.append(block)
        joined = b"".join(parts)
        offset = start - first * self._block
        return joined[offset : offset + (stop - start)]

    def cached(self, start: int, stop: int) -> bool:
        """Whether bytes [start, stop) are all in the cache."""
        stop = min(stop, self.size)
        return all(
            b in self._cache for b in range(start // self._block, (stop - 1) // self._block + 1)
        )

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Bring the blocks holding ``ranges`` into the cache, in as few requests as possible."""
        blocks: set[int] = set()
        for start, stop in ranges:
            stop = min(stop, self.size)
            if stop > start:
                blocks.update(range(start // self._block, (stop - 1) // self._block + 1))
        missing = sorted(b for b in blocks if b not in self._cache)
        if missing:
            self._fetch_blocks(missing)

    def trim(self, start: int, stop: int, keep: list[tuple[int, int]]) -> None:
        """Drop cached blocks inside [start, stop) that hold none of the ``keep`` ranges, so a
        walk that fetched wide windows does not push what it found out of the cache."""
        wanted: set[int] = set()
        for a, b in keep:
            if b > a:
                wanted.update(range(a // self._block, (b - 1) // self._block + 1))
        first, last = start // self._block, max(start, stop - 1) // self._block
        for block in [b for b in self._cache if first <= b <= last and b not in wanted]:
            del self._cache[block]

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Bytes of each [start, stop) range, fetched together (not cached)."""
        order = sorted(range(len(ranges)), key=lambda i: ranges[i])
        ordered = [ranges[i] for i in order]
        if any(a[1] > b[0] for a, b in itertools.pairwise(ordered)):
            fetched = [self._get(*r) for r in ordered]  # overlapping: one at a time
        else:
            fetched = self._get_all(ordered) if ordered else []
        out: list[bytes] = [b""] * len(ranges)
        for index, data in zip(order, fetched, strict=True):
            out[index] = data
        return out

    def _guess(self, start: int, last: int) -> list[int]:
        """Blocks to fetch along with a miss at ``start``: the next IFDs when the reads so far
        are evenly spaced, else the next ``read_ahead`` bytes."""
        history = [*self._reads, start]
        stride = None
        if self._pattern is not None:
            anchor, known = self._pattern
            if start > anchor and (start - anchor) % known == 0:
                stride = known
        if stride is None:
            stride = _stride(history)
        self._pattern = None if stride is None else (start, stride)
        total_blocks = (self.size + self._block - 1) // self._block
        if stride is None:
            self._ahead = 8
            return list(range(last + 1, min(last + 1 + self._read_ahead_blocks, total_blocks)))
        guesses: list[int] = []
        for step in range(1, self._ahead + 1):
            position = start + step * stride
            if position >= self.size:
                break
            block = position // self._block
            guesses.append(block)
            if position % self._block > self._block - _IFD_MARGIN and block + 1 < total_blocks:
                guesses.append(block + 1)  # the IFD may cross the block's end
        self._ahead = min(self._ahead * 2, self._max_ahead)
        return guesses

    def _fetch_blocks(self, blocks: Sequence[int]) -> None:
        runs: list[tuple[int, int]] = []
        for block in blocks:
            if block in self._cache:
                continue
            if (
                runs
                and block - runs[-1][1] <= self._merge_blocks + 1
                and block - runs[-1][0] < self._max_request_blocks
            ):
                runs[-1] = (runs[-1][0], block)
            else:
                runs.append((block, block))
        ranges = [(a * self._block, min((b + 1) * self._block, self.size)) for a, b in runs]
        results = self._get_all(ranges)
        for (first, _), data in zip(runs, results, strict=True):
            for i in range(0, len(data), self._block):
                self._cache[first + i // self._block] = data[i : i + self._block]
        while len(self._cache) > self._cache_blocks:
            self._cache.popitem(last=False)

    def _get_all(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Fetch ``ranges``: several per request (multipart/byteranges) while the server
        answers them, else one request each; requests run in parallel."""
        if len(ranges) == 1:
            return [self._get(*ranges[0])]
        if self._multipart is not False:
            groups = [
                ranges[i : i + self._ranges_per_request]
                for i in range(0, len(ranges), self._ranges_per_request)
            ]
            try:
                if self._multipart is None:  # find out with one request before trusting it
                    first = [self._get_many(groups[0])]
                    self._multipart = True
                    rest = list(self._pool.map(self._get_many, groups[1:]))
                    groups_data = first + rest
                else:
                    groups_data = list(self._pool.map(self._get_many, groups))
                return [data for group in groups_data for data in group]
            except _NoMultipart:
                self._multipart = False
        return list(self._pool.map(lambda r: self._get(*r), ranges))

    def _get_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        if len(ranges) == 1:  # a server answers a single range without multipart
            return [self._get(*ranges[0])]
        what = f"{len(ranges)} ranges from {ranges[0][0]} to {ranges[-1][1] - 1}"
        return self._retrying(what, lambda: self._get_many_once(ranges))

    def _get_many_once(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        spec = ",".join(f"{start}-{stop - 1}" for start, stop in ranges)
        headers = {"Range": f"bytes={spec}"}
        if self.etag:
            headers["If-Match"] = self.etag
        try:
            response = self._session.get(
                self._target, headers=headers, timeout=self._timeout, stream=True
            )
            with response:
                kind = response.headers.get("Content-Type", "")
                if response.status_code != 206 or not kind.startswith("multipart/byteranges"):
                    with self._lock:
                        self.stats.requests += 1
                    if response.status_code != 200 and response.status_code != 206:
                        self._check_status(response, ranges[0][0], ranges[-1][1])
                    # S3 and others answer one range, or the whole file: never read that body.
                    raise _NoMultipart
                body = response.content
        except requests.RequestException as exc:
            raise _Transient(str(exc)) from exc
        with self._lock:
            self.stats.requests += 1
            self.stats.bytes += len(body)
        parts = _multipart_parts(body, kind, self.url)
        out = []
        for start, stop in ranges:
            data = parts.get((start, min(stop, self.size) - 1))
            if data is None:
                raise SourceError(
                    f"{self.url}: the multipart answer lacks bytes {start}-{stop - 1}"
                )
            out.append(data)
        return out

    # -- HTTP --------------------------------------------------------------------------------
    def _probe(self) -> tuple[int, str | None]:
        """Size and ETag from a one-byte range request (HEAD is not always allowed)."""
        response = self._retrying("the first byte", lambda: self._request(0, 1))
        etag = response.headers.get("ETag")
        total = _content_range(response, 0, 0, self.url)[2]
        if total is None:
            raise SourceError(f"{self.url}: the server does not say the size of the file")
        return total, etag

    def _get(self, start: int, stop: int) -> bytes:
        return self._retrying(f"bytes {start}-{stop - 1}", lambda: self._get_once(start, stop))

    def _get_once(self, start: int, stop: int) -> bytes:
        response = self._request(start, stop)
        first, last, total = _content_range(response, start, stop - 1, self.url)
        if total is not None and total != self.size:
            raise SourceChangedError(
                f"{self.url}: size changed from {self.size} to {total} while reading"
            )
        data = response.content
        if len(data) != last - first + 1:
            raise _Transient(f"got {len(data)} bytes, Content-Range says {last - first + 1}")
        return data

    def _request(self, start: int, stop: int) -> requests.Response:
        headers = {"Range": f"bytes={start}-{stop - 1}"}
        if self.etag:
            headers["If-Match"] = self.etag
        try:
            response = self._session.get(self._target, headers=headers, timeout=self._timeout)
            body = response.content
            if response.history and response.status_code == 206:
                # Where a redirect led (DANDI sends assets to presigned S3 URLs): ask there
                # directly from now on, instead of being redirected at every request.
                self._target = response.url
        except requests.RequestException as exc:
            raise _Transient(str(exc)) from exc
        with self._lock:
            self.stats.requests += 1
            self.stats.bytes += len(body)
        self._check_status(response, start, stop)
        return response

    def _retrying(self, what: str, attempt: Callable[[], _T]) -> _T:
        """Run ``attempt``, again after a pause when the failure may pass (connection errors,
        429 and 5xx answers, short bodies)."""
        for number in range(self._retries + 1):
            try:
                return attempt()
            except _Transient as exc:
                if number == self._retries:
                    raise SourceError(
                        f"{self.url}: {what}: {exc} (gave up after {number + 1} attempts)"
                    ) from exc
                pause = (
                    exc.retry_after if exc.retry_after is not None else self._backoff * 2**number
                )
                time.sleep(min(pause, 10.0))
        raise AssertionError("unreachable")

    def _check_status(self, response: requests.Response, start: int, stop: int) -> None:
        if response.status_code == 403 and self._target != self.url:
            # A presigned URL we were redirected to expired: go through the redirect again.
            self._target = self.url
            raise _Transient("HTTP 403 from the redirected URL", 0.0)
        if response.status_code == 404:
            raise SourceNotFoundError(f"{self.url}: not found (HTTP 404)")
        if response.status_code == 412:
            raise SourceChangedError(f"{self.url}: the ETag changed (HTTP 412)")
        if response.status_code in _TRANSIENT_STATUSES:
            retry_after = response.headers.get("Retry-After", "")
            raise _Transient(
                f"HTTP {response.status_code}",
                float(retry_after) if retry_after.isdigit() else None,
            )
        if response.status_code != 206:
            raise SourceError(
                f"{self.url}: bytes {start}-{stop - 1}: HTTP {response.status_code} "
                "(expected 206 Partial Content)"
            )


class _Transient(Exception):
    """A failure that may pass: the request is tried again."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _NoMultipart(Exception):
    """The server does not answer multi-range requests with multipart/byteranges."""


def _multipart_parts(body: bytes, content_type: str, url: str) -> dict[tuple[int, int], bytes]:
    """The parts of a multipart/byteranges body, by (first, last) byte."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if match is None:
        raise SourceError(f"{url}: multipart answer without a boundary")
    delimiter = b"--" + match.group(1).encode("latin-1")
    parts: dict[tuple[int, int], bytes] = {}
    position = body.find(delimiter)
    while position >= 0:
        position += len(delimiter)
        if body[position : position + 2] == b"--":
            break
        header_end = body.find(b"\r\n\r\n", position)
        if header_end < 0:
            raise SourceError(f"{url}: truncated multipart answer")
        headers = body[position:header_end].decode("latin-1")
        found = re.search(r"(?im)^content-range:\s*bytes (\d+)-(\d+)/", headers)
        if found is None:
            raise SourceError(f"{url}: a multipart part without Content-Range")
        first, last = int(found.group(1)), int(found.group(2))
        start = header_end + 4
        data = body[start : start + last - first + 1]
        if len(data) != last - first + 1:
            raise SourceError(f"{url}: multipart part {first}-{last} is short")
        parts[(first, last)] = data
        position = body.find(delimiter, start + len(data))
    return parts


def _content_range(
    response: requests.Response, start: int, last: int, url: str
) -> tuple[int, int, int | None]:
    header = response.headers.get("Content-Range", "")
    match = _CONTENT_RANGE.match(header.strip())
    if match is None:
        raise SourceError(f"{url}: bytes {start}-{last}: bad Content-Range {header!r}")
    first, end = int(match.group(1)), int(match.group(2))
    total = None if match.group(3) == "*" else int(match.group(3))
    expected_end = last if total is None else min(last, total - 1)
    if first != start or end != expected_end:
        raise SourceError(f"{url}: asked for bytes {start}-{last}, the server sent {first}-{end}")
    return first, end, total


def _stride(history: list[int]) -> int | None:
    """The smallest stride d (at least an IFD apart) such that the newest read x has x - d and
    x - 2d among earlier reads: the spacing of the IFDs tifffile walks."""
    if len(history) < 3:
        return None
    newest = history[-1]
    earlier = set(history[:-1])
    strides = [
        newest - previous
        for previous in earlier
        if newest - previous >= _MIN_STRIDE and newest - 2 * (newest - previous) in earlier
    ]
    return min(strides, default=None)
