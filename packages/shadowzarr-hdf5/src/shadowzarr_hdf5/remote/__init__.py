"""Remote HDF5 access: range fetchers, a prefetching file object for h5py, direct index parsing.

h5py reads a chunk index one node at a time; over HTTP that is one round trip per node. Here the
index is recognised from the bytes h5py asks for and fetched a whole level at a time.
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
