"""Every knob of the read path in one frozen value, so a store pickles and compares by it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from shadowzarr_store.transport.headers import HeaderRules
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
    max_connections: int = 128
    max_total_connections: int = 256
    max_whole_file_bytes: int = 2 * 1024**3
    timeout: float = 60.0
    deadline: float = 300.0
    retries: int = 5
    backoff: float = 0.1
    max_backoff: float = 5.0
    resolve_url: ResolveUrl | None = None
    dandi_api_hosts: Mapping[str, str] = field(
        default_factory=lambda: dict(DEFAULT_DANDI_API_HOSTS)
    )
    presigned_url_ttl: float = 600.0
    index_cache_chunks: int = 64
    max_chunk_bytes: int = 2 << 30
    """Most bytes one decoded chunk may hold; arrays with larger chunks are refused at open."""
    sharded_view: int | Literal["auto"] = 0
    grouped_view: int | Literal["auto"] = "auto"
    """Arrays of many small chunks shown as shards of them (see `views.grouped`); 0: off."""
    allowed_urls: tuple[str, ...] | None = None
    allow_local_files: bool | None = None
    headers: HeaderRules | Mapping[str, Mapping[str, str]] | None = None
    """``{"https://host[:port][/path]": {"Name": "value"}}``, normalised to `HeaderRules`."""
    storage_options: Any = field(default=None, repr=False)
    """Object-store settings (credentials, region, endpoint…); never shown or written."""
    proxy: str | bool | None = field(default=None, repr=False)
    """The forward proxy of every request (a URL; False or ``""``: none); None: the
    environment's ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``."""

    def __post_init__(self) -> None:
        for name in ("merge_gap", "max_merge_size", "merge_below", "retries"):
            if (getattr(self, name) or 0) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
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
        if isinstance(self.allowed_urls, str):
            raise TypeError("allowed_urls must be a list of URL prefixes, not one string")
        if self.allowed_urls is not None:
            object.__setattr__(self, "allowed_urls", tuple(self.allowed_urls))
        object.__setattr__(self, "headers", HeaderRules.parse(self.headers))

    @property
    def header_rules(self) -> HeaderRules:
        """``headers`` after validation (a mapping given by the user becomes `HeaderRules`)."""
        assert isinstance(self.headers, HeaderRules)
        return self.headers

    def transport(self, *, allow_local_files: bool) -> TransportOptions:
        """The settings of this store's `Transport` (local files as the store decided)."""
        return TransportOptions(
            headers=self.headers,
            allowed_urls=self.allowed_urls,
            allow_local_files=allow_local_files,
            storage_options=self.storage_options,
            proxy=self.proxy,
            max_connections=self.max_connections,
            max_total_connections=self.max_total_connections,
            max_whole_file_bytes=self.max_whole_file_bytes,
            timeout=self.timeout,
            deadline=self.deadline,
            retries=self.retries,
            backoff=self.backoff,
            max_backoff=self.max_backoff,
            resolve_url=self.resolve_url,
            dandi_api_hosts=self.dandi_api_hosts,
            presigned_url_ttl=self.presigned_url_ttl,
        )

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> StoreOptions:
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown RfsStore options: {sorted(unknown)}")
        return cls(**options)
