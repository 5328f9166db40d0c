"""One request per range, all of a batch's ranges at once: `Transport.read_many`'s requests
where a server answers one range per request (S3), or where the caller asks for that.

Each range is what `Transport.read` does for it: the size recorded checked first, retries of
transient failures with backoff, a presigned URL resolved again once refused, the answer's
size and ETag compared with those recorded. What does not depend on the range is done once
per batch: the physical URL, the names in errors, the counters, and over HTTP the request's
hop, pool and checked head (`HttpBackend.range_batch`). A generator asks thousands of B-tree
nodes at once, and the layers of `read`, not the network, were the cost of its round.

Over HTTP, on the transport's loop, the ranges are taken in order by as many workers as the
origin's connections may carry (``max_connections``), not by a task each: the thousands of
tasks waiting for a connection were most of the objects the garbage collector went over,
again and again, during the batch. Each range's first attempt goes straight to the pool
(`RangeBatch.get`); a transient failure goes on with the retries left, as `read` would.
The first failure is the batch's: the requests under way finish, and no other range is
asked for. Elsewhere (an object store, a head that cannot be sent) each range is a task of
its own, as before (all of them go on after a failure).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from shadowzarr_spec import SourceAccessError

from shadowzarr_store.transport.errors import RangeNotSatisfiable, TransientError
from shadowzarr_store.transport.framing import consistent
from shadowzarr_store.transport.locations import kind_of, redact

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from shadowzarr_spec import SourceInfo

    from shadowzarr_store.transport.answer import Answer
    from shadowzarr_store.transport.coalesce import Run
    from shadowzarr_store.transport.http import HttpBackend
    from shadowzarr_store.transport.object_store import ObjectStoreBackend
    from shadowzarr_store.transport.options import TransportOptions
    from shadowzarr_store.transport.stats import StoreStats

__all__ = ["read_singles"]


class Reader(Protocol):
    """What of `Transport` a batch uses (named here, not imported: the client imports this)."""

    http: HttpBackend
    objects: ObjectStoreBackend
    options: TransportOptions
    stats: StoreStats

    def read(
        self, url: str, start: int, end: int | None, /, *, expect: SourceInfo | None = None
    ) -> Awaitable[Answer]: ...

    async def _physical(self, url: str, shown: str) -> tuple[str, bool]: ...

    async def _deadline[T](
        self, shown: str, attempt: Callable[[], Awaitable[T]], *, retried: bool = True
    ) -> T: ...

    async def _retried[T](
        self, attempt: Callable[[], Awaitable[T]], *, failed: TransientError | None = None
    ) -> T: ...

    def _note_redirect(self, url: str, physical: str, result: object) -> None: ...

    def _check(self, answer: Answer, expect: SourceInfo, shown: str) -> None: ...


async def read_singles(
    transport: Reader, url: str, runs: list[Run], expect: SourceInfo
) -> list[Answer]:
    """The answer to each run of ``url``, one request each (see the module)."""
    if len(runs) == 1:
        return [await transport.read(url, runs[0].start, runs[0].end, expect=expect)]
    named = redact(url)
    physical, renewable = await transport._physical(url, named)
    http = kind_of(physical) == "http"
    get = transport.http.get_range if http else transport.objects.get
    fast = transport.http.range_batch(physical, expect.etag) if http else None
    etag, size = expect.etag, expect.size
    counted: list[int] = []  # bytes of the answers counted here (`read` counts its own)

    async def one(start: int, end: int) -> Answer:
        shown = f"{named} bytes {start}-{end - 1}"
        if size is not None and end > start >= size:
            raise RangeNotSatisfiable(
                f"{shown}: starts past the end of the file ({size} bytes recorded)"
            )

        async def attempt() -> Answer:
            answer = await get(physical, start, end, etag, shown)
            consistent(answer, expect, shown)
            return answer

        try:
            if fast is None:
                answer = await transport._retried(attempt)
            else:
                try:
                    answer = await fast.get(start, end, shown)
                    consistent(answer, expect, shown)
                except TransientError as exc:  # the first attempt's: on with the others
                    answer = await transport._retried(attempt, failed=exc)
        except SourceAccessError:
            if not renewable:
                raise
            return await transport.read(url, start, end, expect=expect)  # resolves again
        if answer.final is not None:
            transport._note_redirect(url, physical, answer)
        transport._check(answer, expect, shown)
        counted.append(len(answer.data))
        return answer

    async def tasks() -> list[Answer]:
        return list(await asyncio.gather(*(one(r.start, r.end) for r in runs)))

    async def workers() -> list[Answer]:
        answers: list[Answer | None] = [None] * len(runs)
        order = iter(range(len(runs)))  # shared: each worker takes the next range

        async def worker() -> None:
            for at in order:
                run = runs[at]
                try:
                    answers[at] = await one(run.start, run.end)
                except BaseException:
                    for _ in order:  # the batch failed: no range after it is asked for
                        pass
                    raise

        count = min(len(runs), transport.options.max_connections)
        await asyncio.gather(*(worker() for _ in range(count)))
        return answers  # type: ignore[return-value]  # every one filled, or gather raised

    # The requests start together, so one deadline for the batch is each one's deadline
    # (asyncio.timeout cost a tenth of a request's CPU).
    shown = f"{named} ({len(runs)} ranges from {runs[0].start} to {runs[-1].end - 1})"
    try:
        return await transport._deadline(shown, tasks if fast is None else workers, retried=False)
    finally:
        transport.stats.add(requests=len(counted), bytes=sum(counted))
