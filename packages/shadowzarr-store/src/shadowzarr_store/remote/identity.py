"""Who a source is right now: its URL plus ETag and size (a local file: its identity), as the
transport's probe found it; the key under which generated references are kept."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowzarr_spec import SourceInfo

    from shadowzarr_store.transport import Transport

__all__ = ["SourceIdentity", "probe_identity"]


@dataclass(frozen=True, slots=True)
class SourceIdentity:
    """A source as it is now; a replaced file has a different ETag or size (a local file: a
    different modification time and sampled hash, written into ``etag``)."""

    url: str
    etag: str | None
    size: int | None

    @classmethod
    def of(cls, url: str, info: SourceInfo) -> SourceIdentity:
        etag = info.etag
        if etag is None and (info.mtime_ns is not None or info.sample_hash is not None):
            etag = f"local:{info.mtime_ns}:{info.sample_hash}"
        return cls(url, etag, info.size)

    @property
    def digest(self) -> str:
        """A file-name-safe key of this identity."""
        text = f"{self.url}\x00{self.etag or ''}\x00{'' if self.size is None else self.size}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]


async def probe_identity(transport: Transport, url: str) -> SourceIdentity:
    """The current identity of ``url`` (one 1-byte ranged GET, a HEAD, or a local probe)."""
    return SourceIdentity.of(url, await transport.probe(url))
