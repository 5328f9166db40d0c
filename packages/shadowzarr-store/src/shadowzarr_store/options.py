"""Every knob of the read path in one frozen value, so a store pickles and compares by it.

The store's own knobs (merging, caches, views, checks) are fields; how requests are made is one
`TransportOptions`, held as it is (``transport_options``), so the transport's settings and their
defaults live in one place. The keyword form (`StoreOptions.from_kwargs`, what `RfsStore` and
`open_rfs` take) accepts the transport's names too (``headers``, ``timeout``, ``proxy``…)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from shadowzarr_store.transport.options import (
    DEFAULT_DANDI_API_HOSTS,
    ResolveUrl,
    TransportOptions,
)

if TYPE_CHECKING:
    from shadowzarr_store.local_cache import LocalCache
    from shadowzarr_store.memory_cache import MemoryCache

__all__ = ["DEFAULT_DANDI_API_HOSTS", "ResolveUrl", "StoreOptions"]


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Options of `RfsStore` and `open_rfs` (see their docstrings)."""

    validate_sources: bool = True
    merge_gap: int = 32 * 1024
    max_merge_size: int = 8 * 1024 * 1024
    merge_below: int | None = None
    merge_window: float = 0.0
    local_cache: LocalCache | None = None
    memory_cache: MemoryCache | None = None
    index_cache_chunks: int = 64
    max_chunk_bytes: int = 2 << 30
    """Most bytes one decoded chunk may hold; arrays with larger chunks are refused at open."""
    sharded_view: int | Literal["auto"] = 0
    grouped_view: int | Literal["auto"] = "auto"
    """Arrays of many small chunks shown as shards of them (see `views.grouped`); 0: off."""
    allow_local_files: bool | None = None
    """Whether the sources may be local files; None: unless the references came from a URL.
    The store decides this, not ``transport_options.allow_local_files``."""
    transport_options: TransportOptions = field(default_factory=TransportOptions)
    """How requests are made (headers, ``allowed_urls``, ``storage_options``, proxy, timeouts,
    retries, connections); each also given by its own name to `from_kwargs`."""

    def __post_init__(self) -> None:
        for name in ("merge_gap", "max_merge_size", "merge_below"):
            if (getattr(self, name) or 0) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if self.sharded_view != "auto" and (
            not isinstance(self.sharded_view, int) or self.sharded_view < 0
        ):
            raise ValueError(
                "sharded_view must be 0 (off), 'auto' or a target inner chunk size in bytes"
            )
        if isinstance(self.grouped_view, bool):  # True / False read naturally as on / off
            object.__setattr__(self, "grouped_view", "auto" if self.grouped_view else 0)
        if self.grouped_view != "auto" and (
            not isinstance(self.grouped_view, int) or self.grouped_view < 0
        ):
            raise ValueError(
                "grouped_view must be 0 (off), 'auto' or a target shard size in bytes, got "
                f"{self.grouped_view!r}"
            )
        if self.max_chunk_bytes < 1:
            raise ValueError(f"max_chunk_bytes must be positive, got {self.max_chunk_bytes}")
        if self.index_cache_chunks < 1:
            raise ValueError("index_cache_chunks must be at least 1")
        if not isinstance(self.transport_options, TransportOptions):
            raise TypeError(
                "transport_options must be a TransportOptions, not "
                f"{type(self.transport_options).__name__}"
            )

    def transport(self, *, allow_local_files: bool) -> TransportOptions:
        """The settings of this store's `Transport` (local files as the store decided)."""
        if self.transport_options.allow_local_files == allow_local_files:
            return self.transport_options
        return dataclasses.replace(self.transport_options, allow_local_files=allow_local_files)

    @classmethod
    def keyword_names(cls) -> frozenset[str]:
        """Every name `from_kwargs` takes: the store's fields and the transport's settings."""
        return frozenset(cls.__dataclass_fields__) | _TRANSPORT_NAMES

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> StoreOptions:
        """Options from keywords; the transport's (``headers``, ``timeout``…) go into
        ``transport_options`` (over the fields of one given as ``transport_options=``)."""
        unknown = set(options) - cls.keyword_names()
        if unknown:
            raise TypeError(unknown_options_message(sorted(unknown), cls.keyword_names()))
        own = {k: v for k, v in options.items() if k not in _TRANSPORT_NAMES}
        settings = {k: v for k, v in options.items() if k in _TRANSPORT_NAMES}
        if settings:
            base = own.get("transport_options") or TransportOptions()
            if not isinstance(base, TransportOptions):
                raise TypeError(
                    f"transport_options must be a TransportOptions, not {type(base).__name__}"
                )
            own["transport_options"] = dataclasses.replace(base, **settings)
        return cls(**own)


_TRANSPORT_NAMES = frozenset(TransportOptions.__dataclass_fields__) - {"allow_local_files"}
"""Transport settings a store takes by name (local files are the store's own decision)."""


_CACHE_WORDS = ("cache", "cache_policy", "cache_path", "cache_dir", "max_cache_bytes", "refs")


def unknown_options_message(unknown: list[str], known: frozenset[str]) -> str:
    """The error for option names neither the store nor its transport takes: the close name
    for a typo, and where blosc2's or `open_array`'s caching and reference options belong."""
    advice = []
    for name in unknown:
        if name in _CACHE_WORDS:
            advice.append(
                f"{name}: a store caches chunks with local_cache=LocalCache(folder) or "
                "memory_cache=MemoryCache(bytes); shadowzarr.open_array(url, cache=..., "
                "cache_dir=..., refs=...) takes blosc2's names for one array"
            )
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1)
        if close:
            advice.append(f"{name}: did you mean {close[0]}=?")
    text = f"unknown RfsStore options: {unknown}"
    return text + (f" ({'; '.join(advice)})" if advice else "")
