"""The offline switch: a ``resolve_url`` hook that refuses every HTTP read while it is on.

Going through the store's own hook keeps the store untouched: every physical HTTP read asks the
hook for its URL first, so a refusal there happens before any byte leaves the machine. Local
files are not network reads and stay readable.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shadowzarr_store.remote.errors import OfflineError

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from shadowzarr_store.options import ResolveUrl

__all__ = ["OfflineGuard", "OfflineSwitch"]


@dataclass(slots=True)
class OfflineSwitch:
    """Shared, mutable: one array's online store consults it on every read."""

    offline: bool = False


@dataclass(frozen=True, slots=True)
class OfflineGuard:
    """``resolve_url`` hook: raise `OfflineError` when offline, else defer to ``inner``."""

    switch: OfflineSwitch = field(default_factory=OfflineSwitch)
    inner: ResolveUrl | None = None

    async def __call__(self, url: str) -> str | None:
        if self.switch.offline:
            raise OfflineError(f"offline: {url} is not cached and will not be fetched")
        if self.inner is None:
            return None
        resolved: str | Awaitable[str | None] | None = self.inner(url)
        if inspect.isawaitable(resolved):
            return await resolved
        return resolved
