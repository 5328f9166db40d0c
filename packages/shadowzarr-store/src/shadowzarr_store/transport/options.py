"""Every setting of the transport in one frozen value (the store's options hold one, as it is)."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shadowzarr_store.transport.access import AccessPolicy
from shadowzarr_store.transport.headers import HeaderRules
from shadowzarr_store.transport.proxies import ProxyConfig, ProxySetting

__all__ = ["DEFAULT_DANDI_API_HOSTS", "ResolveUrl", "TransportOptions"]

type ResolveUrl = Callable[[str], str | Awaitable[str | None] | None]
"""Maps a URL to the URL to read (None: not handled, use the default resolution)."""

DEFAULT_DANDI_API_HOSTS: Mapping[str, str] = {
    "api.dandiarchive.org": "DANDI_API_KEY",
    "api.sandbox.dandiarchive.org": "DANDI_SANDBOX_API_KEY",
    "api-staging.dandiarchive.org": "DANDI_SANDBOX_API_KEY",
}


@dataclass(frozen=True, slots=True)
class TransportOptions:
    """How requests are made: who may be asked, with which headers, how patiently.

    ``headers`` are ``{"https://host[:port][/path]": {"Name": "value"}}`` (see `HeaderRules`);
    ``allowed_urls`` URL prefixes every request and redirect must fall under (None: any);
    ``allow_local_files`` whether local paths may be read; ``storage_options`` the object-store
    settings (see `shadowzarr_store.transport.object_store`). ``timeout`` bounds connecting and
    each socket read, ``deadline`` a whole request with its retries. ``proxy`` the forward
    proxy of every request (a URL; False or ``""``: none), None: the environment's
    (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``; see
    `shadowzarr_store.transport.proxies`).
    """

    headers: HeaderRules | Mapping[str, Mapping[str, str]] | None = None
    allowed_urls: Iterable[str] | None = None
    allow_local_files: bool = True
    storage_options: Any = field(default=None, repr=False)
    max_connections: int = 128
    """The most connections open at once to one origin (``scheme://host:port``)."""
    max_total_connections: int = 256
    """The most connections open at once across all origins, per event loop: thousands of
    chunks spread over many origins open no more than this."""
    timeout: float = 60.0
    deadline: float = 300.0
    retries: int = 5
    backoff: float = 0.1
    max_backoff: float = 5.0
    max_retry_after: float = 30.0
    resolve_url: ResolveUrl | None = None
    dandi_api_hosts: Mapping[str, str] = field(
        default_factory=lambda: dict(DEFAULT_DANDI_API_HOSTS)
    )
    presigned_url_ttl: float = 600.0
    multi_range: bool = True
    """Ask for many ranges in one request where the server answers them (nginx); a server that
    answers otherwise (S3's 200 with the whole object) is noticed once and asked singly."""
    max_ranges_per_request: int = 100
    proxy: ProxySetting = field(default=None, repr=False)
    max_whole_file_bytes: int = 2 * 1024**3
    """The most bytes a whole-file read (a reference file, an index file, a chunk without a
    size) may take when no size of the file is recorded; a longer answer is refused
    (`AnswerTooLargeError`) before it is read. Where a size is recorded, that size is the
    limit (a longer answer: `SourceChangedError`)."""

    def __post_init__(self) -> None:
        if isinstance(self.allowed_urls, str):
            raise TypeError("allowed_urls must be a list of URL prefixes, not one string")
        if self.allowed_urls is not None:
            object.__setattr__(self, "allowed_urls", tuple(self.allowed_urls))
        object.__setattr__(self, "headers", HeaderRules.parse(self.headers))
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections}")
        if self.max_total_connections < 1:
            raise ValueError(
                f"max_total_connections must be at least 1, got {self.max_total_connections}"
            )
        if self.max_whole_file_bytes < 0:
            raise ValueError(
                f"max_whole_file_bytes must not be negative, got {self.max_whole_file_bytes}"
            )
        if self.retries < 0:
            raise ValueError(f"retries must not be negative, got {self.retries}")
        if not self.deadline > 0:
            raise ValueError(f"deadline must be positive, got {self.deadline}")
        self.access  # noqa: B018 - validate the prefixes now, not at the first request
        if self.proxy is not None:
            ProxyConfig.resolve(self.proxy)  # a proxy URL that cannot be used fails here

    @property
    def header_rules(self) -> HeaderRules:
        assert isinstance(self.headers, HeaderRules)
        return self.headers

    @property
    def access(self) -> AccessPolicy:
        return AccessPolicy.of(self.allowed_urls, self.allow_local_files)

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds before attempt ``attempt + 1``: full-jitter exponential backoff, or what the
        server's ``Retry-After`` asked (bounded by ``max_retry_after``)."""
        ceiling = float(min(self.max_backoff, self.backoff * 2**attempt))
        wait = ceiling / 2 + random.random() * ceiling / 2
        if retry_after is not None:
            wait = min(max(retry_after, wait), self.max_retry_after)
        return wait
