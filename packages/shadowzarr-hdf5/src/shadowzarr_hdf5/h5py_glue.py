"""Where h5py objects meet the format reader: addresses of h5py datasets, h5py's own dtypes.

`shadowzarr_hdf5.format` reads bytes and knows nothing of h5py; these helpers let callers
holding h5py datasets ask it, and give the parsed types the form h5py reports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from .format.chunk_index import read_chunk_tables_at
from .format.datatypes import Datatype, DatatypeKind

if TYPE_CHECKING:
    from .format.byte_source import RangeFetcher
    from .format.chunk_index import ChunkTable
    from .format.superblock import Superblock

__all__ = ["dataset_address", "h5py_dtype", "read_chunk_table", "read_chunk_tables"]


def dataset_address(dataset: Any) -> int:
    """Object header address of an h5py dataset, or an address given directly."""
    if isinstance(dataset, int):
        return dataset
    return int(h5py.h5o.get_info(dataset.id).addr)


def read_chunk_table(
    source: RangeFetcher, dataset: Any, *, superblock: Superblock | None = None
) -> ChunkTable:
    """Parse one dataset's chunk index from the file bytes.

    Parameters
    ----------
    source
        A ``RangeFetcher`` or a ``RemoteFile`` (whose caches serve what h5py already read).
    dataset
        An h5py dataset or its object header address (relative to the superblock base).
    superblock
        The parsed superblock, to skip reading it again.
    """
    return read_chunk_tables(source, [dataset], superblock=superblock)[0]


def read_chunk_tables(
    source: RangeFetcher, datasets: list[Any], *, superblock: Superblock | None = None
) -> list[ChunkTable]:
    """Parse several indexes (h5py datasets or header addresses) in lockstep."""
    addresses = [dataset_address(d) for d in datasets]
    return read_chunk_tables_at(source, addresses, superblock=superblock)


def h5py_dtype(datatype: Datatype) -> np.dtype:
    """The dtype h5py reports for a parsed datatype (its reference type for references)."""
    return h5py.ref_dtype if datatype.kind is DatatypeKind.REFERENCE else datatype.dtype
