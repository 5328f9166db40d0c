"""The synchronous face of the transport, for code that cannot await (h5py's file object,
tifffile, the command line): the async `Transport` runs on one private event-loop thread.

`RangeSource` is one file read in ranges. It learns the file's size and ETag from the first
answer and holds every later request to them (``If-Match``, and the answers' ETag and size
compared; a local file: its stamp, see ``local.py``), so a file replaced while a generator
reads it raises `SourceChangedError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
from typing import TYPE_CHECKING, Any

from shadowzarr_spec import SourceChangedError, SourceError, SourceInfo

from shadowzarr_store.transport.client import Transport, same_etag, transport_for
from shadowzarr_store.transport.home import home_loop, home_running, is_home_thread
from shadowzarr_store.transport.local import Stamp, identify_local, read_local
from shadowzarr_store.transport.locations import kind_of, redact
from shadowzarr_store.transport.pools import pool_stats
from shadowzarr_store.transport.stats import StatsSnapshot, StoreStats

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from shadowzarr_store.transport.answer import Answer
    from shadowzarr_store.transport.options import TransportOptions

__all__ = ["DEFAULT_MAX_GAP", "RangeSource", "run_blocking"]

DEFAULT_MAX_GAP = 16 * 1024
"""Ranges closer than this share a request: ~ bandwidth x RTT / requests in flight."""


def run_blocking[T](coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the transport's loop thread and wait for it (not from that thread)."""
    loop = home_loop()
    if is_home_thread():
        coro.close()
        raise RuntimeError("run_blocking was called from the transport's own loop thread")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


def _sent_so_far() -> int:
    """Requests sent on the transport's own connections, every origin."""
    return sum(origin.requests for origin in pool_stats().values())


async def _sent(count: int) -> None:
    """Wait until `_sent_so_far` reaches ``count`` (at most a second: a round answered from
    elsewhere, aiohttp or an object store, is not counted there)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 1.0
    while _sent_so_far() < count and loop.time() < deadline:
        await asyncio.sleep(0.001)


async def _after_the_round() -> None:
    """Let the round the caller sends next (`fetch_many`, scheduled just after) start its
    requests first: its first steps start them, a step of this loop each."""
    for _ in range(2):
        await asyncio.sleep(0)


class RangeSource:
    """Ranges of one file (local path, URL or object-store URL), read synchronously.

    Parameters
    ----------
    location
        What to read.
    options
        The transport's settings (headers, allowed_urls, storage_options, retries…).
    max_gap
        Ranges of one `fetch_many` closer than this many bytes share a request.
    expect
        What the file must look like (its recorded size and ETag), if known already.
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        options: TransportOptions | None = None,
        *,
        max_gap: int = DEFAULT_MAX_GAP,
        expect: SourceInfo | None = None,
    ) -> None:
        self.url = os.fspath(location)
        self._stats = StoreStats()
        self._transport = transport_for(options, self._stats)
        self._kind = kind_of(self.url)
        self._transport.access.check(self.url)
        self._max_gap = max_gap
        self._expect = expect or SourceInfo()
        self._closed = False
        self._warming: list[concurrent.futures.Future[object]] = []
        """Connections being opened (`warm`) and the multi-range question (`_probing`)."""
        self._probing: concurrent.futures.Future[object] | None = None
        self._stamp: Stamp | None = None
        if self._kind == "local":
            self._expect, self._stamp = identify_local(self.url)

    # -- what the file is -----------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Total size: from the first answer (one byte is asked for when nothing was read)."""
        if self._expect.size is None:
            self.fetch_many([(0, 1)])
        if self._expect.size is None:
            raise SourceError(f"{redact(self.url)}: the server does not say the size of the file")
        return self._expect.size

    @property
    def etag(self) -> str | None:
        return self._expect.etag

    @property
    def info(self) -> SourceInfo:
        """What to record under ``sources`` (size and ETag, or a local file's identity)."""
        self.size  # noqa: B018 - learn it if nothing was read yet
        return self._expect

    @property
    def stats(self) -> StatsSnapshot:
        """Requests, bytes, retries and rounds sent so far."""
        return self._stats.snapshot()

    @property
    def transport(self) -> Transport:
        return self._transport

    # -- reading --------------------------------------------------------------------------------

    def fetch_many(
        self, ranges: list[tuple[int, int]], *, max_gap: int | None = None, singles: bool = False
    ) -> list[bytes]:
        """The bytes of each ``(offset, size)``, clipped at the end of the file, in one round;
        ranges closer than ``max_gap`` (default: the source's) share a request. ``singles``:
        never a multi-range request (see `Transport.read_many`)."""
        if self._closed:
            raise SourceError(f"{redact(self.url)} is closed")
        size = self._expect.size
        spans = [
            (offset, offset + (n if size is None else max(0, min(n, size - offset))))
            for offset, n in ranges
        ]
        if self._kind == "local":
            wanted = [(a, b) for a, b in spans if b > a]
            blobs = iter(
                read_local(self.url, list(wanted), size, pinned=self._stamp)[0] if wanted else []
            )
            if wanted:
                self._stats.add(requests=len(wanted), bytes=sum(b - a for a, b in wanted), rounds=1)
            return [next(blobs) if b > a else b"" for a, b in spans]
        answers = run_blocking(
            self._transport.read_many(
                self.url,
                spans,
                expect=self._expect,
                max_gap=self._max_gap if max_gap is None else max_gap,
                singles=singles,
            )
        )
        self._learn(answers)
        return [bytes(answer.data) for answer in answers]  # bytes already: no copy

    def warm(self, connections: int, *, after: int = 0) -> None:
        """Open about ``connections`` more kept-alive connections to the source now, without
        waiting for them: a caller that will soon send a wide round (the leaves of a chunk
        manifest) pays their set-up (TCP, TLS: a round trip or two each) during the narrow round
        before it, in parallel, instead of at its start. Each connection carries a one-byte
        read (at 0, held to the size and ETag seen), which is also what proves it works. At
        most `max_connections` are open at once: a caller leaves room for the requests it
        sends meanwhile, and ``after``: how many requests it sends next, which go out first
        (each set-up costs CPU; those requests are the round being waited for). HTTP only;
        failures are ignored (the round then opens its own)."""
        if self._closed or self._kind != "http" or connections < 1:
            return
        expect, url, transport = self._expect, self.url, self._transport

        async def opened() -> object:
            # Half of them: nearby ranges may share a request, and the rest are under way.
            await _sent(_sent_so_far() + after // 2)
            reads = (transport.read(url, 0, 1, expect=expect) for _ in range(connections))
            return await asyncio.gather(*reads, return_exceptions=True)

        self._warming.append(asyncio.run_coroutine_threadsafe(opened(), home_loop()))

    def probe_multi_range(self) -> bool:
        """Start asking an HTTP source, in the background, whether it answers multi-range
        requests with their parts, so that a round can go out beside the question instead of
        after it (`fetch_many` with ``singles``). False: nothing to ask (known already, not
        HTTP, multi-range requests off)."""
        transport = self._transport
        if self._closed or self._kind != "http" or not transport.options.multi_range:
            return False
        if transport.multi_range_known(self.url) is not None:
            return False
        if self._probing is not None and not self._probing.done():
            return True  # asked already, not answered yet
        expect, url = self._expect, self.url

        async def probe() -> object:
            await _after_the_round()
            with contextlib.suppress(SourceError):  # unanswered: the next round asks again
                await transport.probe_multi_range(url, expect)
            return None

        self._probing = asyncio.run_coroutine_threadsafe(probe(), home_loop())
        self._warming.append(self._probing)
        return True

    def read(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` (fewer at the end of the file)."""
        return self.fetch_many([(start, stop - start)])[0]

    def _learn(self, answers: list[Answer]) -> None:
        size, etag = self._expect.size, self._expect.etag
        for answer in answers:
            if answer.total is not None and size is not None and answer.total != size:
                raise SourceChangedError(
                    f"{redact(self.url)}: size changed from {size} to {answer.total} while reading"
                )
            if answer.etag and etag and not same_etag(answer.etag, etag):
                raise SourceChangedError(
                    f"{redact(self.url)}: ETag changed from {etag} to {answer.etag} while reading"
                )
            size = answer.total if size is None else size
            etag = answer.etag if etag is None else etag
        self._expect = SourceInfo(size, etag)

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for warming in self._warming:
            warming.cancel()
        # Their connections back in the pool, or closed, before the transport closes.
        concurrent.futures.wait(self._warming, timeout=5)
        if self._kind != "local" and home_running():
            run_blocking(self._transport.aclose())

    def __enter__(self) -> RangeSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RangeSource({redact(self.url)!r})"
