"""The one transport: every byte the project reads from a file, a URL or an object store.

`Transport` (async), `RangeSource` (synchronous, for code that cannot await) and `RangeFile` (a
seekable file object over a `RangeSource` for h5py and tifffile, with a pluggable read-ahead)
are the only ways the packages of this workspace make requests: chunk reads of `RfsStore`, the
generators' header and index reads, probes of a source's size and ETag, reference files,
DANDI resolution, index arrays and Zarr sources.

Modules, one job each: `locations` (kinds of location, redaction), `access` (``allowed_urls``,
``allow_local_files``), `headers` (user headers bound to URL prefixes), `head_values` (the one
check of every value bound for a request head), `options`, `status` (the one status map),
`errors`, `http` (requests, redirects, aiohttp for the redirect question only) with
`answer` (what an attempt hands back), `redirects` (each hop checked, loops ended), `framing`
(Content-Range and multipart parts held to the range asked) and `aiohttp_errors` (aiohttp's
failures in our words), `http1` (a pool of our kept-alive HTTP/1.1 connections per origin) with
`http1_connection` (one connection), `http1_heads` (an answer's head read strictly) and
`http1_bodies` (chunked and close-ended bodies), `pools` (one pool per origin per event loop
for the process), `budget` (connections across origins), `proxies` (the one proxy decision),
`documents` (reference files kept by ETag), `content_coding` (gzip and deflate undone),
`object_store` (obstore) with `storage_options` (the spellings users bring), `local` (local
files and their identity), `dandi` (DANDI download URLs), `multipart` (the one
``multipart/byteranges`` parser), `coalesce` (the one range-coalescing rule), `stats`,
`client` (the facade), `blocking` (the synchronous face on a private loop thread),
`range_file` (the file object) and `read_ahead` (its policies).

Why two HTTP clients. Object stores (``s3://``, ``gs://``, ``az://``) go through obstore, which
signs requests and finds credentials the way their users expect; writing signing code is not
ours to do. Plain HTTP(S) stays ours (aiohttp and `http1`), because there we need what
obstore's HTTP store does not give: each redirect hop checked against ``allowed_urls`` before it
is requested and given only the headers bound to its own origin (a token must not follow a
redirect to S3), DANDI's redirect to a presigned URL resolved once and reused, our own header
rules, strict Content-Range validation of every 206, and multi-range requests
(``multipart/byteranges``) where a server answers them. Ranges and whole files with a
Content-Length go on our own kept-alive HTTP/1.1 connections (`http1`), received straight into
one buffer per answer. HTTP/2 is not spoken: S3, and so DANDI's bucket, answers HTTP/1.1 only,
aiohttp has no HTTP/2, and httpx + h2 took five times our CPU on nginx over TLS and failed on a
batch of more than nginx's 1,000 requests per connection (`tools/bench/http2.py`).

The public face. Other packages import from ``shadowzarr_store.transport`` only (never one of
its modules; a test holds them to it), and build a transport with `transport_for`, the one
construction site outside tests.
"""

from __future__ import annotations

from shadowzarr_store.transport.access import AccessPolicy
from shadowzarr_store.transport.answer import Answer
from shadowzarr_store.transport.blocking import DEFAULT_MAX_GAP, RangeSource, run_blocking
from shadowzarr_store.transport.client import Transport, same_etag, transport_for
from shadowzarr_store.transport.dandi import token_header
from shadowzarr_store.transport.errors import (
    AnswerTooLargeError,
    ContentCodingError,
    FramingError,
    ProxyError,
    RangeNotSatisfiable,
    RedirectError,
    SourceTimeoutError,
    TransientError,
    UnsafeRequestError,
)
from shadowzarr_store.transport.headers import HeaderRules
from shadowzarr_store.transport.local import probe_local
from shadowzarr_store.transport.locations import (
    is_local,
    is_loopback,
    join_location,
    kind_of,
    local_path,
    redact,
)
from shadowzarr_store.transport.object_store import (
    ListedObject,
    delete_objects,
    get_object,
    list_objects,
    obstore_for,
    put_objects,
    split_object_url,
)
from shadowzarr_store.transport.options import TransportOptions
from shadowzarr_store.transport.pools import OriginStats, close_all_pools, pool_stats
from shadowzarr_store.transport.prefault import PrefaultStats, populate
from shadowzarr_store.transport.prefault import stats as prefault_stats
from shadowzarr_store.transport.range_file import RangeFile
from shadowzarr_store.transport.read_ahead import CachedBlocks, GrowingRuns, NoReadAhead, ReadAhead
from shadowzarr_store.transport.stats import StatsSnapshot, StoreStats, counted
from shadowzarr_store.transport.storage_options import (
    MissingCredentialsError,
    StorageOptionsError,
    StorageSettings,
    storage_settings,
)

__all__ = [
    "DEFAULT_MAX_GAP",
    "AccessPolicy",
    "Answer",
    "AnswerTooLargeError",
    "CachedBlocks",
    "ContentCodingError",
    "FramingError",
    "GrowingRuns",
    "HeaderRules",
    "ListedObject",
    "MissingCredentialsError",
    "NoReadAhead",
    "OriginStats",
    "PrefaultStats",
    "ProxyError",
    "RangeFile",
    "RangeNotSatisfiable",
    "RangeSource",
    "ReadAhead",
    "RedirectError",
    "SourceTimeoutError",
    "StatsSnapshot",
    "StorageOptionsError",
    "StorageSettings",
    "StoreStats",
    "TransientError",
    "Transport",
    "TransportOptions",
    "UnsafeRequestError",
    "close_all_pools",
    "counted",
    "delete_objects",
    "get_object",
    "is_local",
    "is_loopback",
    "join_location",
    "kind_of",
    "list_objects",
    "local_path",
    "obstore_for",
    "pool_stats",
    "populate",
    "prefault_stats",
    "probe_local",
    "put_objects",
    "redact",
    "run_blocking",
    "same_etag",
    "split_object_url",
    "storage_settings",
    "token_header",
    "transport_for",
]
