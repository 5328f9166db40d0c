"""What the index parsers read through: anything that fetches many ranges of one file at once.

`shadowzarr_store.transport.RangeSource` is one (every request goes through the transport);
`RemoteFile` is another, serving what h5py already read from its caches.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["RangeFetcher"]


@runtime_checkable
class RangeFetcher(Protocol):
    """Fetches byte ranges of one file; ``fetch_many`` issues its requests concurrently."""

    @property
    def size(self) -> int:
        """Total size of the file in bytes."""
        ...

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Return the bytes of each ``(offset, size)``, clipped at the end of the file."""
        ...
