"""One-call remote arrays: open one dataset of a remote container, with cache policies,
prefetch, cached reads, an offline mode, summaries and portable export with warm chunks."""

from __future__ import annotations

from shadowzarr_store.remote.address import Address, SourceFormat, parse_address
from shadowzarr_store.remote.errors import AddressError, OfflineError, SourceFormatError
from shadowzarr_store.remote.export import export_references, scrub_url
from shadowzarr_store.remote.identity import SourceIdentity, probe_identity
from shadowzarr_store.remote.info import RemoteInfo
from shadowzarr_store.remote.opener import Generate, open_remote_array
from shadowzarr_store.remote.policy import DEFAULT_CACHE_BYTES, CachePolicy, Caches, make_caches
from shadowzarr_store.remote.reference_cache import ReferenceCache
from shadowzarr_store.remote.remote_array import RemoteArray

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "Address",
    "AddressError",
    "CachePolicy",
    "Caches",
    "Generate",
    "OfflineError",
    "ReferenceCache",
    "RemoteArray",
    "RemoteInfo",
    "SourceFormat",
    "SourceFormatError",
    "SourceIdentity",
    "export_references",
    "make_caches",
    "open_remote_array",
    "parse_address",
    "probe_identity",
    "scrub_url",
]
