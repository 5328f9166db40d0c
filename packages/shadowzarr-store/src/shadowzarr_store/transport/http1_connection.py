"""One kept-alive HTTP/1.1 connection as an asyncio protocol: a prepared head written, the
answer's head parsed (`http1_heads`) and its body received straight into one array of its
length. The pool (`http1`) opens, reuses and closes these."""

from __future__ import annotations

import asyncio

import numpy as np

from shadowzarr_store.transport.errors import FramingError
from shadowzarr_store.transport.head_values import escaped
from shadowzarr_store.transport.http1_bodies import AnswerTooLong, ChunkedBody, UntilCloseBody
from shadowzarr_store.transport.http1_heads import (
    HEAD_END,
    MAX_INTERIM,
    Head,
    content_length,
    parse_head,
)
from shadowzarr_store.transport.prefault import MIN_BYTES, populate
from shadowzarr_store.transport.prefault import stats as prefault_stats

__all__ = ["Connection"]

_MAX_HEAD = 64 * 1024
_HEAD_BUFFER = 16 * 1024


type _Growing = ChunkedBody | UntilCloseBody


class Connection(asyncio.BufferedProtocol):
    """One connection; one request on it at a time. Bytes are received straight into their
    final place (``recv_into``): the head into a small buffer, the body, once its length is
    known, into one array of that length, so a large body is never joined from pieces. A body
    whose length the head does not give (chunked, or ended by closing) grows into one buffer
    up to the most bytes the request may take."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reusable = False
        self._heads = bytearray(_HEAD_BUFFER)
        self._filled = 0
        self._body: memoryview | None = None
        self._growing: _Growing | None = None
        self._scratch = bytearray(_HEAD_BUFFER)
        self._received = 0
        self._waiter: asyncio.Future[tuple[Head, memoryview]] | None = None
        self._head: Head | None = None
        self._keep = False
        self._interim = 0
        self.progress = 0
        self._lost = False
        self._most: int | None = None
        self._tunnel = False
        self._prepared: np.ndarray | None = None
        self.idle_since = 0.0
        self.timer: asyncio.TimerHandle | None = None
        """The pool's stall timer of the requests on this connection (`OriginPool._watch`),
        with the time of its next look at the request in flight, and its progress then."""
        self.check_at = 0.0
        self.seen = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    @property
    def in_flight(self) -> bool:
        """Whether a request waits for its answer."""
        return self._waiter is not None and not self._waiter.done()

    @property
    def usable(self) -> bool:
        return not self._lost and self.transport is not None and not self.transport.is_closing()

    def send(
        self,
        head: bytes,
        waiter: asyncio.Future[tuple[Head, memoryview]],
        most: int | None = None,
        *,
        tunnel: bool = False,
        body: np.ndarray | None = None,
    ) -> None:
        """Write a request; ``most``: the most body bytes its answer may have (a longer one,
        such as a whole object from a server ignoring ``Range``, fails before it is read:
        `AnswerTooLong`). ``tunnel``: a CONNECT to a proxy, whose answer is its head alone.
        ``body``: a fresh buffer for a body of exactly its length (`prefault.prepared`)."""
        assert self.transport is not None
        self._prepared = body
        self._waiter, self._head, self.reusable = waiter, None, False
        self._most, self._interim, self._tunnel = most, 0, tunnel
        self.transport.write(head)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._body is not None:
            return self._body[self._received :]
        if self._growing is not None:
            return memoryview(self._scratch)
        if self._filled == len(self._heads):  # a head longer than the buffer: keep it whole
            self._heads.extend(bytes(_HEAD_BUFFER))
        return memoryview(self._heads)[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self.progress += 1
        if self._body is not None:
            self._received += nbytes
            if self._received == len(self._body):
                self._finish()
            return
        if self._growing is not None:
            self._grow(memoryview(self._scratch)[:nbytes])
            return
        self._filled += nbytes
        if self._waiter is None:
            self._fail(FramingError("bytes arrived with no request in flight"))
            return
        self._read_head()

    def _read_head(self) -> None:
        """Parse the answer's head once it is in; skip 1xx interim answers (RFC 9110 §15.2)."""
        while True:
            found = HEAD_END.search(self._heads, 0, self._filled)
            if found is None and self._filled <= _MAX_HEAD:
                return  # more of the head to come
            if found is None or found.start() > _MAX_HEAD:
                self._fail(FramingError("an answer head longer than 64 KiB"))
                return
            try:
                head, reusable = parse_head(self._heads[: found.start()])
            except (ValueError, UnicodeDecodeError) as exc:
                self._fail(FramingError(f"an unreadable answer head ({exc})"))
                return
            if not 100 <= head.status < 200:
                if self._tunnel:
                    self._tunnel_answered(head, found.end())
                else:
                    self._begin_body(head, reusable, found.end())
                return
            self._interim += 1
            if head.status == 101 or self._interim > MAX_INTERIM:
                self._fail(FramingError(f"an unexpected HTTP {head.status}"))
                return
            rest = bytes(self._heads[found.end() : self._filled])
            self._heads[: len(rest)] = rest
            self._filled = len(rest)

    def _tunnel_answered(self, head: Head, end: int) -> None:
        """A proxy's answer to CONNECT: a 2xx is the tunnel open, with nothing after its head
        (RFC 9110 §9.3.6; a byte the server sent before our TLS hello would be an attack on
        the handshake); any other answer is handed over as it is, the connection not reused."""
        if 200 <= head.status < 300 and self._filled > end:
            self._fail(FramingError("bytes after the proxy's answer to CONNECT"))
            return
        self._tunnel, self._filled, self._keep = False, 0, 200 <= head.status < 300
        self._head, self._body = head, memoryview(b"")
        self._finish()

    def _begin_body(self, head: Head, reusable: bool, start: int) -> None:
        already = memoryview(self._heads)[start : self._filled]
        most = self._most
        if most is not None and not 200 <= head.status < 300:
            most = max(most, _MAX_HEAD)  # an error page may have up to 64 KiB
        self._head, self._keep = head, reusable
        coding = head.headers.get("transfer-encoding")
        length = head.headers.get("content-length")
        try:
            if coding is not None:
                if coding.lower() != "chunked":
                    raise FramingError(f"Transfer-Encoding {escaped(coding, 40)} is not read")
                # with a Content-Length beside it, the chunking decides (RFC 9112 §6.3) and
                # the connection is not used again
                self._keep = reusable and length is None
                self._filled = 0
                self._growing = ChunkedBody(most)
                self._grow(bytes(already))
                return
            if head.status in (204, 304):
                size = 0
            elif length is None:
                self._keep, self._filled = False, 0
                self._growing = UntilCloseBody(most)
                self._grow(bytes(already))
                return
            else:
                size = content_length(length)
            if most is not None and size > most:
                raise AnswerTooLong(size, head.status)
        except (FramingError, AnswerTooLong) as exc:
            self._fail(exc)
            return
        if len(already) > size:
            self._fail(FramingError("more bytes than Content-Length said"))
            return
        body, self._prepared = self._prepared, None
        if body is not None and len(body) == size:
            prefault_stats().received_into += 1
        elif size < MIN_BYTES:  # too small to populate: numpy's buffer costs more than it saves
            self._received, self._filled = len(already), 0
            if len(already) == size:  # all of it came with the head
                self._body = memoryview(bytearray(already))
                self._finish()
            else:
                self._body = memoryview(bytearray(size))
                self._body[: len(already)] = already
            return
        else:
            try:
                body = np.empty(size, dtype=np.uint8)
            except (MemoryError, ValueError):
                self._fail(FramingError(f"an answer of {length} bytes, more than memory holds"))
                return
            populate(body)  # its pages mapped by another thread while the bytes arrive
        self._body = memoryview(body).cast("B")
        self._body[: len(already)] = already
        self._received, self._filled = len(already), 0
        if len(already) == len(self._body):
            self._finish()

    def _grow(self, piece: bytes | memoryview) -> None:
        growing = self._growing
        assert growing is not None
        try:
            growing.feed(piece)
        except (FramingError, AnswerTooLong) as exc:
            self._fail(exc)
            return
        except MemoryError:
            self._fail(FramingError("an answer longer than memory holds"))
            return
        if growing.done:
            self._keep = self._keep and not growing.extra
            self._body = memoryview(growing.data)
            self._finish()

    def _finish(self) -> None:
        body, self._body, self._growing = self._body, None, None
        self._prepared = None
        assert body is not None
        assert self._head is not None
        self.reusable = self._keep  # only once the whole answer is in
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((self._head, body.toreadonly()))

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        growing = self._growing
        if isinstance(growing, UntilCloseBody) and exc is None and self._waiter is not None:
            growing.done = True  # the close is the body's end
            self._body = memoryview(growing.data)
            self._finish()
            return
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            said = f"{type(exc).__name__}: {exc}" if exc else "the server closed the connection"
            waiter.set_exception(ConnectionError(said))

    def _fail(self, exc: Exception) -> None:
        self._body, self._growing, self._filled = None, None, 0
        self._prepared = None
        waiter, self._waiter = self._waiter, None
        self.reusable = False
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()
