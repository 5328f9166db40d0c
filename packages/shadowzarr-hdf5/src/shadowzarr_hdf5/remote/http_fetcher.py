"""Concurrent HTTP range requests with aiohttp, behind a synchronous API that h5py can call.

The event loop runs in a private background thread, so synchronous callers (h5py's file-object
driver) block only on their own batch; async callers use ``fetch_many_async``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import threading
from typing import TYPE_CHECKING

import aiohttp

from .errors import RangeRequestError, SourceChangedError, SourceNotFoundError
from .multipart import boundary_of, parse_byteranges
from .ranges import DEFAULT_MAX_GAP, FetchStats, Run, coalesce, split_run

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Mapping
    from typing import Any

__all__ = ["HttpRangeFetcher"]

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


class _TransientError(Exception):
    """A failure worth retrying (connection reset, timeout, 5xx, 429)."""


class HttpRangeFetcher:
    """Fetches byte ranges of one URL, one range request per coalesced run, concurrently.

    Parameters
    ----------
    url
        The file's URL.
    headers
        Extra request headers (e.g. authorization).
    max_concurrency
        Requests in flight at once (also the connection pool size).
    timeout
        Seconds allowed for one request.
    max_gap
        Ranges closer than this many bytes are fetched in one request.
    retries
        Attempts after the first for transient failures, with exponential backoff.
    multi_range
        Ask for many runs in one request (``Range: bytes=a-b,c-d``), as nginx allows. A server
        that answers otherwise (200, or one part: S3) switches this off for the fetcher, and the
        runs are fetched one per request.
    max_ranges_per_request
        Most runs in one multi-range request.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        max_concurrency: int = 32,
        timeout: float = 60.0,
        *,
        max_gap: int = DEFAULT_MAX_GAP,
        retries: int = 5,
        backoff: float = 0.1,
        max_backoff: float = 5.0,
        multi_range: bool = False,
        max_ranges_per_request: int = 100,
    ) -> None:
        self.url = url
        self._headers = dict(headers or {})
        self._max_concurrency = max_concurrency
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_gap = max_gap
        self._retries = retries
        self._backoff = backoff
        self._max_backoff = max_backoff
        self.multi_range = multi_range
        self._max_ranges = max_ranges_per_request
        self._size: int | None = None
        self._etag: str | None = None
        self._stats = FetchStats()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="HttpRangeFetcher", daemon=True
        )
        self._thread.start()
        self._session: aiohttp.ClientSession | None = None
        self._semaphore: asyncio.Semaphore | None = None

    # -- public API ---------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Total file size, from the first range response's Content-Range.

        When nothing was fetched yet, one byte is asked for (a GET works with presigned S3
        URLs, where a HEAD would not); a HEAD is the fallback for ``Content-Range: …/*``.
        """
        if self._size is None:
            self.fetch_many([(0, 1)])
        if self._size is None:
            self._run(self._head())
        assert self._size is not None
        return self._size

    @property
    def etag(self) -> str | None:
        return self._etag

    @property
    def stats(self) -> FetchStats:
        return self._stats

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Return the bytes of each ``(offset, size)``; blocks until the whole batch arrived."""
        return self._run(self._fetch_many(ranges))

    async def fetch_many_async(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """``fetch_many`` for callers on another event loop."""
        future = asyncio.run_coroutine_threadsafe(self._fetch_many(ranges), self._loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Close the connections and stop the background loop (idempotent)."""
        if not self._loop.is_running() or sys.is_finalizing():
            # At interpreter exit the daemon loop thread may already be frozen: do not wait.
            return
        if self._session is not None:
            future = asyncio.run_coroutine_threadsafe(self._session.close(), self._loop)
            with contextlib.suppress(TimeoutError):
                future.result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> HttpRangeFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------

    def _run[T](self, coro: Coroutine[Any, Any, T]) -> T:
        if not self._loop.is_running():
            coro.close()
            raise RangeRequestError(f"fetcher for {self.url} is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._max_concurrency)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, headers=self._headers
            )
            self._semaphore = asyncio.Semaphore(self._max_concurrency)
        return self._session

    async def _fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        if self._size is not None:
            ranges = [(o, max(0, min(n, self._size - o))) for o, n in ranges]
        wanted = [(o, n) for o, n in ranges if n > 0]
        out: list[bytes | None] = [b"" if n <= 0 else None for _, n in ranges]
        index = [i for i, (_, n) in enumerate(ranges) if n > 0]
        runs = coalesce(wanted, self._max_gap)
        if not runs:
            return [b"" for _ in ranges]
        self._stats.rounds += 1
        if self.multi_range and len(runs) > 1:
            # Spread the runs over the connections, at most ``_max_ranges`` per request.
            per = min(self._max_ranges, -(-len(runs) // self._max_concurrency))
            groups = [runs[i : i + per] for i in range(0, len(runs), per)]
            nested = await asyncio.gather(*(self._fetch_group(g) for g in groups))
            blobs = [blob for group in nested for blob in group]
        else:
            blobs = await asyncio.gather(*(self._fetch_run(run) for run in runs))
        part: list[bytes | None] = [None] * len(wanted)
        for run, blob in zip(runs, blobs, strict=True):
            split_run(run, blob, wanted, part)
        for i, piece in zip(index, part, strict=True):
            out[i] = piece
        return [b if b is not None else b"" for b in out]

    async def _fetch_run(self, run: Run) -> bytes:
        return await self._retrying(lambda: self._get(run.start, run.end), run.start, run.end)

    async def _retrying[T](
        self, attempt_once: Callable[[], Awaitable[T]], start: int, end: int
    ) -> T:
        delay = self._backoff
        for attempt in range(self._retries + 1):
            try:
                return await attempt_once()
            except _TransientError as exc:
                if attempt == self._retries:
                    raise RangeRequestError(
                        f"{self.url} bytes {start}-{end - 1}: gave up after "
                        f"{attempt + 1} attempts ({exc})"
                    ) from exc
                self._stats.retries += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._max_backoff)
        raise AssertionError("unreachable")

    async def _fetch_group(self, runs: list[Run]) -> list[bytes]:
        if len(runs) == 1 or not self.multi_range:
            return list(await asyncio.gather(*(self._fetch_run(run) for run in runs)))
        parts = await self._retrying(lambda: self._get_many(runs), runs[0].start, runs[-1].end)
        if parts is None:  # the server does not do multi-range requests
            self.multi_range = False
            return list(await asyncio.gather(*(self._fetch_run(run) for run in runs)))
        return [_slice(parts, run, self.url) for run in runs]

    async def _get_many(self, runs: list[Run]) -> list[tuple[int, bytes]] | None:
        """One multi-range request; None when the server answers it with anything but parts."""
        session = self._client()
        assert self._semaphore is not None
        spec = ",".join(f"{run.start}-{run.end - 1}" for run in runs)
        async with self._semaphore:
            try:
                async with session.get(self.url, headers={"Range": f"bytes={spec}"}) as response:
                    status = response.status
                    if status not in (206, 404) and status not in _TRANSIENT_STATUS:
                        # 200 (S3 sends the whole object: never download it by accident), or
                        # 416/400 from servers that reject multi-range requests (MinIO).
                        response.close()
                        return None
                    self._check_status(response, runs[0].start, runs[-1].end)
                    body = await response.read()
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                raise _TransientError(repr(exc)) from exc
            except TimeoutError as exc:
                raise _TransientError("timeout") from exc
        self._stats.requests += 1
        self._stats.bytes += len(body)
        boundary = boundary_of(response.headers.get("Content-Type", ""))
        if boundary is None:
            return None
        parts = parse_byteranges(body, boundary)
        for _, total, _ in parts:
            self._remember(response, total)
        return [(first, data) for first, _, data in parts]

    async def _get(self, start: int, end: int) -> bytes:
        session = self._client()
        assert self._semaphore is not None
        headers = {"Range": f"bytes={start}-{end - 1}"}
        async with self._semaphore:
            try:
                async with session.get(self.url, headers=headers) as response:
                    self._check_status(response, start, end)
                    body = await response.read()
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                raise _TransientError(repr(exc)) from exc
            except TimeoutError as exc:
                raise _TransientError("timeout") from exc
        self._stats.requests += 1
        self._stats.bytes += len(body)
        first, last, total = self._content_range(response, start, end)
        self._remember(response, total)
        if len(body) != last - first + 1:
            raise _TransientError(f"short body: {len(body)} of {last - first + 1} bytes")
        return body

    def _check_status(self, response: aiohttp.ClientResponse, start: int, end: int) -> None:
        status = response.status
        if status == 206:
            return
        if status in _TRANSIENT_STATUS:
            raise _TransientError(f"HTTP {status}")
        if status == 404:
            raise SourceNotFoundError(f"{self.url}: HTTP 404")
        if status == 200:
            raise RangeRequestError(
                f"{self.url} ignored the range request for bytes {start}-{end - 1} (HTTP 200)"
            )
        raise RangeRequestError(f"{self.url} bytes {start}-{end - 1}: HTTP {status}")

    def _content_range(
        self, response: aiohttp.ClientResponse, start: int, end: int
    ) -> tuple[int, int, int | None]:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", ""))
        if match is None:
            raise RangeRequestError(f"{self.url}: 206 without a valid Content-Range header")
        first, last = int(match[1]), int(match[2])
        total = None if match[3] == "*" else int(match[3])
        # The server may stop early only at the end of the file.
        if first != start or not (last == end - 1 or (total is not None and last == total - 1)):
            raise RangeRequestError(
                f"{self.url}: asked for bytes {start}-{end - 1}, got {first}-{last}"
            )
        return first, last, total

    def _remember(self, response: aiohttp.ClientResponse, total: int | None) -> None:
        etag = response.headers.get("ETag")
        if self._etag is not None and etag is not None and etag != self._etag:
            raise SourceChangedError(f"{self.url}: ETag changed from {self._etag} to {etag}")
        if total is not None and self._size is not None and total != self._size:
            raise SourceChangedError(f"{self.url}: size changed from {self._size} to {total}")
        self._etag = etag or self._etag
        self._size = total if total is not None else self._size

    async def _head(self) -> None:
        session = self._client()
        try:
            async with session.head(self.url, allow_redirects=True) as response:
                if response.status == 404:
                    raise SourceNotFoundError(f"{self.url}: HTTP 404")
                if response.status != 200 or response.content_length is None:
                    raise RangeRequestError(f"{self.url}: HEAD gave HTTP {response.status}")
                self._etag = response.headers.get("ETag") or self._etag
                self._size = response.content_length
        except aiohttp.ClientError as exc:
            raise RangeRequestError(f"{self.url}: HEAD failed ({exc!r})") from exc


def _slice(parts: list[tuple[int, bytes]], run: Run, url: str) -> bytes:
    """The bytes of ``run`` from the part that holds them (servers may merge close ranges)."""
    for first, data in parts:
        if first <= run.start and run.end <= first + len(data):
            return data[run.start - first : run.end - first]
    # A part cut at the end of the file still serves a run that runs past it.
    for first, data in parts:
        if first <= run.start < first + len(data):
            return data[run.start - first :]
    raise RangeRequestError(f"{url}: no part of the answer holds bytes {run.start}-{run.end - 1}")
