"""LZF chunks that imagecodecs' codec cannot decode, rewritten so that it can.

``imagecodecs_lzf`` (no header) is not told the chunk size and decodes into a buffer eight
times the compressed size, so a chunk HDF5 compressed beyond 8:1 (zeros, padded edge chunks)
fails to decode. Such a chunk is either all fill value (then it is left out and reads as the
fill value) or is re-encoded as an LZF stream of literal runs only, which any LZF decoder reads
and which is never smaller than the data.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LZF_MAX_RATIO", "literal_lzf", "overcompressed"]

LZF_MAX_RATIO = 8
_LITERAL_RUN = 32  # an LZF control byte below 32 copies (byte + 1) literal bytes


def overcompressed(sizes: np.ndarray, chunk_bytes: int) -> np.ndarray:
    """Which stored sizes imagecodecs_lzf cannot decode to ``chunk_bytes``."""
    return np.asarray(sizes, dtype=np.uint64) * LZF_MAX_RATIO < chunk_bytes


def literal_lzf(data: bytes) -> bytes:
    """``data`` as an LZF stream of literal runs (decodes to ``data`` with any LZF decoder)."""
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(view), _LITERAL_RUN):
        block = view[start : start + _LITERAL_RUN]
        out.append(len(block) - 1)
        out += block
    return bytes(out)
