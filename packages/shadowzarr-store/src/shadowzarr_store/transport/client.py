"""Transport: every request of the project, whatever the location, through one front door.

A location is routed to local files, HTTP (after the ``resolve_url`` hook and DANDI
resolution) or an object store. Around each backend it does, once for all of them: the access
check, the comparison of what the answer says about the file (size, ETag) with what the caller
recorded (a server ignoring ``If-Match`` still returns the new ETag: `SourceChangedError`),
retries of transient failures with backoff, an overall deadline per request
(`SourceTimeoutError`), coalescing of many ranges into few requests, multi-range requests where
a server answers them, and the counters in ``stats``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING

from shadowzarr_spec import SourceAccessError, SourceChangedError, SourceError, SourceInfo
from shadowzarr_spec.etags import is_entity_tag

from shadowzarr_store.transport.answer import Answer
from shadowzarr_store.transport.coalesce import Run, coalesce
from shadowzarr_store.transport.dandi import DandiResolver
from shadowzarr_store.transport.documents import DOCUMENTS
from shadowzarr_store.transport.errors import (
    RangeNotSatisfiable,
    SourceTimeoutError,
    TransientError,
)
from shadowzarr_store.transport.framing import consistent, same_etag
from shadowzarr_store.transport.head_values import escaped
from shadowzarr_store.transport.home import home_loop
from shadowzarr_store.transport.http import HttpBackend
from shadowzarr_store.transport.local import (
    Stamp,
    changed_under,
    check_identity,
    probe_local,
    read_local,
    stamp_now,
)
from shadowzarr_store.transport.locations import kind_of, redact
from shadowzarr_store.transport.object_store import ObjectStoreBackend
from shadowzarr_store.transport.options import TransportOptions
from shadowzarr_store.transport.pools import close_all_pools
from shadowzarr_store.transport.singles import read_singles
from shadowzarr_store.transport.stats import StoreStats, counting_also

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine
    from typing import Any, Concatenate

__all__ = ["Transport", "same_etag", "transport_for"]

_UNKNOWN = SourceInfo()


def _http_at_home[**P, T](
    method: Callable[Concatenate[Transport, str, P], Awaitable[T]],
) -> Callable[Concatenate[Transport, str, P], Coroutine[Any, Any, T]]:
    """A request entry point of `Transport`: for an HTTP(S) location it runs on the transport's
    loop (`home`), where the process's one pool per origin lives, whichever loop awaits it
    (zarr's, a user's); other locations are read on the caller's loop (no connection of ours)."""

    @functools.wraps(method)
    async def hopped(self: Transport, url: str, /, *args: P.args, **kwargs: P.kwargs) -> T:
        loop = home_loop()
        if kind_of(url) != "http" or asyncio.get_running_loop() is loop:
            return await method(self, url, *args, **kwargs)

        async def there() -> T:
            return await method(self, url, *args, **kwargs)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(there(), loop))

    return hopped


def _describe(url: str, start: int, end: int | None) -> str:
    shown = redact(url)
    if start == 0 and end is None:
        return shown
    return f"{shown} bytes {start}-{'' if end is None else end - 1}"


class Transport:
    """Reads locations under one set of `TransportOptions`; safe to share between event loops.

    ``stats`` counts ``requests`` (physical reads, a local read included), ``bytes``,
    ``retries``, ``rounds`` (calls of `read_many` that sent anything) and ``url_resolutions``.
    """

    def __init__(self, options: TransportOptions | None = None, stats: StoreStats | None = None):
        self.options = options if options is not None else TransportOptions()
        self.stats = counting_also(stats if stats is not None else StoreStats())
        self.access = self.options.access
        self.http = HttpBackend(self.options, self.access)
        self.objects = ObjectStoreBackend(self.options)
        self.dandi = DandiResolver(self.options.dandi_api_hosts, self.options.presigned_url_ttl)
        self._lock = threading.Lock()
        # The stamp of each local file when first read against a recorded identity: every
        # later read must find the same file (see `local.read_local`).
        self._pinned: dict[tuple[str, SourceInfo], Stamp] = {}
        self._single_range: dict[str, bool] = {}
        self._redirects: dict[str, tuple[str, float]] = {}
        self._finalizer = weakref.finalize(self, self.http.close_soon)
        _TRANSPORTS.add(self)

    # -- one range ------------------------------------------------------------------------------

    @_http_at_home
    async def read(
        self,
        url: str,
        start: int,
        end: int | None,
        *,
        expect: SourceInfo | None = None,
        name: str | None = None,
        view: bool = False,
    ) -> Answer:
        """Bytes ``[start, end)`` of ``url`` (``end`` None: to the end; ``0, None``: all of it);
        fewer only where the file ends. ``expect`` is what the file looked like when recorded
        (size, ETag, local identity); ``name`` the location shown in errors; ``view``: the data
        may be a read-only ``memoryview`` of the bytes as received (no copy into ``bytes``).

        A range (open-ended too) or a whole file over HTTP goes on a kept-alive connection of
        the origin's one pool (`HttpBackend.get_range`, `get_to_end`, `get_whole`: the body
        received straight into one buffer); an empty range (``end <= start``) is refused."""
        expect = expect or _UNKNOWN
        shown = _describe(name or url, start, end)
        self.access.check(url)
        kind = kind_of(url)
        if expect.size is not None and end is not None and end > start >= expect.size:
            raise RangeNotSatisfiable(
                f"{shown}: starts past the end of the file ({expect.size} bytes recorded)"
            )
        if kind == "local":
            spans: list[tuple[int, int | None]] = [(start, end)]
            return (await asyncio.to_thread(self._read_local_many, url, spans, expect, shown))[0]

        async def attempt(target: str) -> Answer:
            if kind_of(target) == "object_store":
                answer = await self.objects.get(target, start, end, expect.etag, shown)
            elif end is not None and end > start:
                answer = await self.http.get_range(
                    target, start, end, expect.etag, shown, view=view
                )
            elif start == 0 and end is None:
                answer = await self.http.get_whole(target, expect.etag, shown, size=expect.size)
            elif end is None:
                answer = await self.http.get_to_end(
                    target, start, expect.etag, shown, size=expect.size
                )
            else:  # what a server answers to bytes=5-4 (no request needed to know it)
                raise RangeNotSatisfiable(f"{shown}: an empty range (end {end} <= start {start})")
            consistent(answer, expect, shown)
            return answer

        answer = await self._remote(url, shown, attempt)
        self._check(answer, expect, shown)
        self.stats.add(requests=1, bytes=len(answer.data))
        return answer

    @_http_at_home
    async def read_whole(self, url: str, *, expect: SourceInfo | None = None) -> bytes:
        """All of ``url``. Over HTTP with nothing recorded to expect (a reference file, a
        ``zarr.json``), a file read before in this process is asked for again only with
        ``If-None-Match`` its ETag (`documents`): unchanged, it costs a 304."""
        if expect is None and self._document_cacheable(url):
            return await self._read_document(url)
        return bytes((await self.read(url, 0, None, expect=expect)).data)  # bytes: no copy

    def _document_cacheable(self, url: str) -> bool:
        """Only a URL read as itself: a ``resolve_url`` hook or DANDI resolution may send it
        elsewhere each time."""
        return (
            kind_of(url) == "http"
            and self.options.resolve_url is None
            and not self.dandi.handles(url)
        )

    async def _read_document(self, url: str) -> bytes:
        self.access.check(url)
        shown = redact(url)
        key = (url, tuple(sorted(self.options.header_rules.for_url(url).items())))
        kept = DOCUMENTS.get(key)

        async def attempt(target: str) -> Answer:
            return await self.http.get_whole(
                target, None, shown, if_none_match=kept[0] if kept else None
            )

        answer = await self._remote(url, shown, attempt)
        self.stats.add(requests=1, bytes=len(answer.data))
        if answer.not_modified and kept is not None:
            self.stats.add(cache_hits=1)
            return kept[1]
        data = bytes(answer.data)
        if answer.etag is not None and is_entity_tag(answer.etag):
            DOCUMENTS.put(key, answer.etag, data)
        else:
            DOCUMENTS.forget(key)
        return data

    @_http_at_home
    async def probe(self, url: str) -> SourceInfo:
        """What ``url`` is now: size and ETag (one 1-byte ranged GET, which a presigned URL
        answers where a HEAD is refused; HEAD on object stores), or a local file's identity."""
        self.access.check(url)
        kind = kind_of(url)
        if kind == "local":
            return await asyncio.to_thread(probe_local, url)
        shown = redact(url)

        async def attempt(target: str) -> Answer:
            # A 1-byte GET, not a HEAD: what a presigned URL or a GetObject-only policy allows.
            if kind_of(target) == "object_store":
                return await self.objects.get(target, 0, 1, None, shown)
            return await self.http.get_range(target, 0, 1, None, shown)

        try:
            answer = await self._remote(url, shown, attempt)
        except RangeNotSatisfiable:
            return SourceInfo(size=0)
        self.stats.add(requests=1, bytes=len(answer.data))
        # an ETag a reference may not record (a control byte, a space) is as good as none
        etag = answer.etag if answer.etag is not None and is_entity_tag(answer.etag) else None
        return SourceInfo(size=answer.total, etag=etag)

    # -- many ranges ----------------------------------------------------------------------------

    @_http_at_home
    async def read_many(
        self,
        url: str,
        ranges: list[tuple[int, int]],
        *,
        expect: SourceInfo | None = None,
        max_gap: int = 0,
        max_span: int | None = None,
        singles: bool = False,
    ) -> list[Answer]:
        """The answers for each ``[start, end)`` range, read concurrently in one round.

        Ranges closer than ``max_gap`` bytes share a request (up to ``max_span`` bytes each);
        over HTTP several runs go in one multi-range request while the server answers them with
        their parts. A server that does not (S3's 200 with the whole object) is asked that once
        per source, without its body being read, and singly from then on. ``singles``: each run
        in a request of its own whatever the server answers (a caller that asks the question
        beside this round with `probe_multi_range`, instead of before it).
        """
        expect = expect or _UNKNOWN
        self.access.check(url)
        out = [Answer(b"", expect.size, expect.etag)] * len(ranges)
        wanted = [i for i, (a, b) in enumerate(ranges) if b > a]
        runs = coalesce([ranges[i] for i in wanted], max_gap, max_span)
        if not runs:
            return out
        self.stats.add(rounds=1)
        kind = kind_of(url)
        if kind == "local":
            shown = redact(url)
            spans: list[tuple[int, int | None]] = [(r.start, r.end) for r in runs]
            answers = await asyncio.to_thread(self._read_local_many, url, spans, expect, shown)
        elif kind == "http" and self.options.multi_range and len(runs) > 1 and not singles:
            answers = await self._read_multi(url, runs, expect)
        else:
            answers = await self._read_singles(url, runs, expect)
        for run, answer in zip(runs, answers, strict=True):
            if len(run.members) == 1 and answer.final is None and not answer.not_modified:
                a, b = ranges[wanted[run.members[0]]]
                if a == run.start and len(answer.data) <= b - a:  # the answer is the range's
                    out[wanted[run.members[0]]] = answer
                    continue
            for member in run.members:
                a, b = ranges[wanted[member]]
                out[wanted[member]] = Answer(
                    answer.data[a - run.start : b - run.start], answer.total, answer.etag
                )
        return out

    async def _read_multi(self, url: str, runs: list[Run], expect: SourceInfo) -> list[Answer]:
        per = self.options.max_ranges_per_request
        groups = [runs[i : i + per] for i in range(0, len(runs), per)]
        answers: list[list[Answer]] = []
        if self.multi_range_known(url) is None:
            # Ask once, alone: a server that answers with the whole object costs one answer's
            # headers, not one whole object per group.
            answers.append(await self._read_group(url, groups[0], expect))
            groups = groups[1:]
        answers.extend(
            await asyncio.gather(*(self._read_group(url, group, expect) for group in groups))
        )
        return [answer for group in answers for answer in group]

    async def _read_singles(self, url: str, runs: list[Run], expect: SourceInfo) -> list[Answer]:
        """Each run in a request of its own, all at once (`singles.read_singles`)."""
        return await read_singles(self, url, runs, expect)

    @_http_at_home
    async def probe_multi_range(self, url: str, expect: SourceInfo | None = None) -> None:
        """Ask ``url`` once whether it answers multi-range requests with their parts (two
        one-byte ranges; S3's whole object is closed unread), unless that is known."""
        if self.multi_range_known(url) is not None or not self.options.multi_range:
            return
        if kind_of(url) != "http" or (expect is not None and (expect.size or 0) < 3):
            return
        parts = await self._ask_multi(url, [(0, 1), (2, 3)], expect or _UNKNOWN, redact(url))
        self.stats.add(requests=1, bytes=sum(len(part.data) for part in parts or ()))

    def multi_range_known(self, url: str) -> bool | None:
        """Whether ``url`` answered a multi-range request with its parts (None: not asked)."""
        with self._lock:
            return self._single_range.get(url)

    async def _read_group(self, url: str, runs: list[Run], expect: SourceInfo) -> list[Answer]:
        if len(runs) == 1 or self.multi_range_known(url) is False:
            return await self._read_singles(url, runs, expect)
        spans = [(r.start, r.end) for r in runs]
        shown = f"{redact(url)} ({len(runs)} ranges from {runs[0].start} to {runs[-1].end - 1})"
        parts = await self._ask_multi(url, spans, expect, shown)
        if parts is None:
            self.stats.add(requests=1)
            return await self._read_singles(url, runs, expect)
        for part in parts:
            self._check(part, expect, shown)
        self.stats.add(requests=1, bytes=sum(len(part.data) for part in parts))
        return parts

    async def _ask_multi(
        self, url: str, spans: list[tuple[int, int]], expect: SourceInfo, shown: str
    ) -> list[Answer] | None:
        """The parts of one multi-range request, or None where the server does not answer
        with them (noted for ``url``)."""

        async def attempt(target: str) -> list[Answer] | None:
            if kind_of(target) != "http":
                return None  # resolved to an object store: one range per request
            parts = await self.http.get_many(target, spans, expect.etag, shown)
            for part in parts or ():
                consistent(part, expect, shown)
            return parts

        parts = await self._remote(url, shown, attempt)
        with self._lock:
            self._single_range[url] = parts is not None
        return parts

    # -- backends -------------------------------------------------------------------------------

    def _read_local_many(
        self, url: str, spans: list[tuple[int, int | None]], expect: SourceInfo, shown: str
    ) -> list[Answer]:
        """In a worker thread: the recorded identity checked on the first read of a file, the
        file's stamp on every read (the same file, not rewritten since)."""
        key = (url, expect)
        with self._lock:
            pinned = self._pinned.get(key)
        blobs, size, stamp = read_local(url, spans, expect.size, recorded=expect, pinned=pinned)
        if pinned is None:
            self._pin(key, stamp, shown)
        self.stats.add(requests=len(blobs), bytes=sum(len(blob) for blob in blobs))
        return [Answer(blob, size, None) for blob in blobs]

    def _pin(self, key: tuple[str, SourceInfo], stamp: Stamp, shown: str) -> Stamp:
        """Keep the first stamp seen; a concurrent first read that saw another one raises."""
        with self._lock:
            pinned = self._pinned.setdefault(key, stamp)
        if pinned != stamp:
            raise changed_under(shown, pinned, stamp)
        return pinned

    async def local_stamp(self, url: str, expect: SourceInfo | None = None) -> Stamp:
        """The stamp local file ``url`` is read under by this transport, checked against the
        file now (one ``stat``; the first time, the recorded identity too, in a worker thread):
        what a cache keys its rows of a local file by, so a replaced file never hits old rows
        nor writes new bytes under an old identity."""
        expect = expect or _UNKNOWN
        key = (url, expect)
        self.access.check(url)
        with self._lock:
            pinned = self._pinned.get(key)
        if pinned is None:
            stamp = await asyncio.to_thread(check_identity, url, expect)
            return self._pin(key, stamp, redact(url))
        now = stamp_now(url)
        if now != pinned:
            raise changed_under(redact(url), pinned, now)
        return pinned

    async def _remote[T](self, url: str, shown: str, attempt: Callable[[str], Awaitable[T]]) -> T:
        """``attempt(physical URL)`` with retries and a deadline, after the ``resolve_url``
        hook and DANDI resolution; an expired or refused presigned URL is resolved again once."""
        physical, renewable = await self._physical(url, shown)
        try:
            result = await self._deadline(shown, lambda: attempt(physical))
        except SourceAccessError:
            if not renewable:
                raise
            self.dandi.forget(url, physical)
            with self._lock:
                self._redirects.pop(url, None)
            physical, _ = await self._physical(url, shown)
            result = await self._deadline(shown, lambda: attempt(physical))
        self._note_redirect(url, physical, result)
        return result

    def _note_redirect(self, url: str, physical: str, result: object) -> None:
        """Remember where ``url`` redirected to (a presigned URL, a mirror), so the next
        requests go there directly, until it is refused or ``presigned_url_ttl`` passes."""
        first = result[0] if isinstance(result, list) and result else result
        final = first.final if isinstance(first, Answer) else None
        if final is not None and final != physical:
            with self._lock:
                self._redirects[url] = (final, time.monotonic() + self.options.presigned_url_ttl)

    async def _physical(self, url: str, shown: str) -> tuple[str, bool]:
        """The URL to request for ``url`` and whether it can be renewed after a refusal."""
        hook = self.options.resolve_url
        if hook is not None:
            resolved = hook(url)
            if inspect.isawaitable(resolved):
                resolved = await resolved
            if resolved is not None:
                self.stats.add(url_resolutions=1)
                self.access.check(resolved)
                return resolved, False
        if self.dandi.handles(url):
            if self.dandi.cached(url) is None:
                self.stats.add(url_resolutions=1)
            presigned = await self._deadline(
                shown, lambda: self.dandi.resolve(self.http, url, self.options)
            )
            self.access.check(presigned)
            return presigned, True
        with self._lock:
            remembered = self._redirects.get(url)
        if remembered is not None and remembered[1] > time.monotonic():
            self.access.check(remembered[0])
            return remembered[0], True
        return url, False

    async def _deadline[T](
        self, shown: str, attempt: Callable[[], Awaitable[T]], *, retried: bool = True
    ) -> T:
        """``attempt()`` retried on transient failures (unless it retries its own parts), all
        of it within ``deadline`` seconds."""
        options = self.options
        scope = asyncio.timeout(options.deadline)
        try:
            async with scope:
                return await (self._retried(attempt) if retried else attempt())
        except TimeoutError as exc:
            if not scope.expired() or isinstance(exc, SourceTimeoutError):
                raise
            raise SourceTimeoutError(
                f"{shown}: no complete answer within the {options.deadline} s deadline"
            ) from exc

    async def _retried[T](
        self, attempt: Callable[[], Awaitable[T]], *, failed: TransientError | None = None
    ) -> T:
        """``attempt()`` retried on transient failures, with backoff; ``failed``: the failure
        of a first attempt made by the caller (the next one is the second)."""
        options = self.options
        last = failed
        for number in range(0 if failed is None else 1, options.attempts):
            if number:
                self.stats.add(retries=1)
                assert last is not None
                await asyncio.sleep(options.delay(number - 1, last.retry_after))
            try:
                return await attempt()
            except TransientError as exc:
                last = exc
        assert last is not None
        raise SourceError(f"{last} (gave up after {options.attempts} attempts)") from last

    @staticmethod
    def _check(answer: Answer, expect: SourceInfo, shown: str) -> None:
        """What the answer says about the file must match what was recorded."""
        if expect.size is not None and answer.total is not None and answer.total != expect.size:
            raise SourceChangedError(
                f"{shown}: the source is now {answer.total} bytes, the references were made for "
                f"{expect.size} bytes: the source has changed"
            )
        if expect.etag and answer.etag and not same_etag(answer.etag, expect.etag):
            raise SourceChangedError(
                f"{shown}: the ETag is now {escaped(answer.etag)}, the references were made "
                f"for {escaped(expect.etag)}: the source has changed"
            )

    # -- lifetime -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP session of the running loop."""
        await self.http.aclose()

    def close(self) -> None:
        """Close the HTTP sessions of every loop still running."""
        self.http.close()

    def forget_loops(self) -> None:
        """After a fork: sessions and in-flight state of the parent are not ours."""
        self.http.forget_loops()
        self._lock = threading.Lock()


def transport_for(
    options: TransportOptions | None = None, stats: StoreStats | None = None
) -> Transport:
    """The transport of every caller: the one place a `Transport` is built outside tests, so
    each store, generator, command and bridge reads with the settings it was given and counts
    in its own ``stats``, while the connections under it are the process's (one pool per
    origin, on the transport's loop: `home`, `pools`). Close it with ``aclose`` when done."""
    return Transport(options, stats)


_TRANSPORTS: weakref.WeakSet[Transport] = weakref.WeakSet()


def close_all() -> None:
    for transport in list(_TRANSPORTS):
        transport.close()
    close_all_pools()


def _after_fork() -> None:
    for transport in list(_TRANSPORTS):
        transport.forget_loops()


os.register_at_fork(after_in_child=_after_fork)
