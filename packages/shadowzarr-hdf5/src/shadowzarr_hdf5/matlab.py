"""Files with a userblock (MATLAB v7.3 .mat files have 512 bytes of it in front of the HDF5 data).

HDF5 1.14 and later report chunk and contiguous offsets from the start of the file; HDF5 1.10
reported them from the end of the userblock. One stored block is compared with the file's bytes
at both places, and the offsets are corrected when only the second one matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import h5py
import numpy as np

__all__ = ["userblock_offset_shift"]

_PROBE_BYTES = 256


def userblock_offset_shift(file: h5py.File, read_bytes: Callable[[int, int], bytes]) -> int:
    """0 when h5py's offsets are absolute, the userblock size when they are not."""
    userblock = int(file.userblock_size or 0)
    if userblock == 0:
        return 0
    for offset, expected in _stored_blocks(file):
        if not expected or len(set(expected)) == 1:
            continue  # a block of one repeated byte matches anywhere
        if read_bytes(offset, len(expected)) == expected:
            return 0
        if read_bytes(offset + userblock, len(expected)) == expected:
            return userblock
    return 0


def _stored_blocks(file: h5py.File) -> Iterator[tuple[int, bytes]]:
    """(offset h5py reports, the bytes stored there) for the root's datasets (MATLAB keeps its
    variables there), until the caller stops. Not ``visititems``: it walks every chunk index."""
    found = [file[name] for name in file if isinstance(file.get(name, getlink=True), h5py.HardLink)]
    for dataset in (obj for obj in found if isinstance(obj, h5py.Dataset)):
        plist = dataset.id.get_create_plist()
        if plist.get_external_count() or dataset.shape is None or dataset.size == 0:
            continue
        layout = plist.get_layout()
        if layout == h5py.h5d.CONTIGUOUS and dataset.dtype.kind in "iufcbV":
            offset = dataset.id.get_offset()
            if offset is None:
                continue
            rows = dataset[()] if dataset.ndim == 0 else dataset[: min(dataset.shape[0], 64)]
            raw = np.ascontiguousarray(rows).tobytes()[:_PROBE_BYTES]
            yield int(offset), raw
        elif layout == h5py.h5d.CHUNKED and dataset.id.get_num_chunks():
            info = dataset.id.get_chunk_info(0)
            _mask, raw = dataset.id.read_direct_chunk(info.chunk_offset)
            yield int(info.byte_offset), bytes(raw[:_PROBE_BYTES])
