"""Remote HDF5 access: range fetchers, a prefetching file object for h5py, direct index parsing.

h5py reads a chunk index one node at a time; over HTTP that is one round trip per node. Here the
index is recognised from the bytes h5py asks for and fetched a whole level at a time.

Examples
--------
>>> with RemoteFile(url) as remote, h5py.File(remote, "r") as f:  # doctest: +SKIP
...     f["data"].id.chunk_iter(print)        # index nodes: a few rounds, then all cache hits
...     tables = read_chunk_tables(remote, [f["data"], f["other"]])  # lockstep, from the bytes
...     remote.stats                          # FetchStats(requests=…, bytes=…, rounds=…)

``read_chunk_table(fetcher, dataset)`` needs no h5py at all given an object header address, and
gives the right coordinates where HDF5's ``chunk_iter`` does not (extensible arrays whose
unlimited dimension is not the first). Servers that answer multi-range requests (nginx) cut the
request count further with ``RemoteFile(url, multi_range=True)``.
"""

from __future__ import annotations

from .chunk_table import ChunkTable, read_chunk_table, read_chunk_tables
from .http_fetcher import HttpRangeFetcher
from .ranges import FetchStats, LocalRangeFetcher, RangeFetcher
from .remote_file import RemoteFile

__all__ = [
    "ChunkTable",
    "FetchStats",
    "HttpRangeFetcher",
    "LocalRangeFetcher",
    "RangeFetcher",
    "RemoteFile",
    "read_chunk_table",
    "read_chunk_tables",
]
