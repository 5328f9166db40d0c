"""Remote HDF5 access: a prefetching file object for h5py (the index parsing is `..format`).

h5py reads a chunk index one node at a time; over HTTP that is one round trip per node. Here the
index is recognised from the bytes h5py asks for and fetched a whole level at a time.

Examples
--------
>>> with RemoteFile(url) as remote, h5py.File(remote, "r") as f:  # doctest: +SKIP
...     f["data"].id.chunk_iter(print)        # index nodes: a few rounds, then all cache hits
...     tables = read_chunk_tables(remote, [f["data"], f["other"]])  # lockstep, from the bytes
...     remote.stats                          # StatsSnapshot(requests=…, bytes=…, rounds=…)

``read_chunk_table(source, dataset)`` needs no h5py at all given an object header address (a
``shadowzarr_store.transport.RangeSource`` reads the bytes), and gives the right coordinates where
HDF5's ``chunk_iter`` does not (extensible arrays whose unlimited dimension is not the first).
Every request goes through the store's transport; servers that answer multi-range requests
(nginx) cut the request count further, and S3's whole-object answer is noticed once.
"""

from __future__ import annotations

from ..format.byte_source import RangeFetcher
from ..format.chunk_index import ChunkTable
from ..h5py_glue import read_chunk_table, read_chunk_tables
from .remote_file import RemoteFile

__all__ = [
    "ChunkTable",
    "RangeFetcher",
    "RemoteFile",
    "read_chunk_table",
    "read_chunk_tables",
]
