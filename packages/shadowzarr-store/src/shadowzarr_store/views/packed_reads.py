"""Reading the stored chunks of a packed inner chunk straight from their manifest entries.

An inner chunk of the grouped view of an uncompressed array packs many stored chunks (see
`shadowzarr_store.views.grouped`). Reading each through the store's per-key path costs tens of
microseconds of Python apiece, as much as zarr's own per-chunk cost that packing removes. When
every one of them comes straight from the chunk manifest as a plain, full-size chunk, their ranges
are sorted and joined with numpy, each contiguous run is one read, and the bytes are cut with one
gather. Anything else (a short or over-long chunk, one past the recorded end of the file, a short
answer) goes back to the per-key path, which pads, checks and names the chunk in its errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shadowzarr_store.merge import gathered_reads

if TYPE_CHECKING:
    from shadowzarr_store.source_reader import SourceReader

__all__ = ["read_runs"]


async def read_runs(
    reader: SourceReader,
    entries: tuple[str, np.ndarray, np.ndarray] | None,
    positions: np.ndarray,
    nbytes: int | None,
    bound: int | None = None,
) -> list[np.ndarray] | list[memoryview] | None:
    """Stored chunks ``positions`` of ``entries`` (url, offsets, sizes). When every one is a
    plain chunk of ``nbytes``: consecutive pieces of (chunks, ``nbytes``) bytes, together the
    chunks in the order asked for (each piece an answer's own bytes where the file holds them
    in that order: no copy to join them). With ``nbytes`` None: encoded chunks of up to
    ``bound`` bytes each, one buffer per chunk. None when the fast path does not apply."""
    if entries is None:
        return None
    if not len(positions):
        return []
    url, offsets, sizes = entries
    where = offsets[positions].astype(np.int64)
    size = sizes[positions].astype(np.int64)
    if nbytes is not None and bool((size != nbytes).any()):
        return None
    if nbytes is None and (bool((size <= 0).any()) or (bound is not None and size.max() > bound)):
        return None
    recorded = reader.rfs.sources.get(url)
    if (
        recorded is not None
        and recorded.size is not None
        and bool((where + size > recorded.size).any())
    ):
        return None
    order = np.argsort(where, kind="stable")
    ordered, lengths = where[order], size[order]
    breaks = np.flatnonzero(ordered[1:] != ordered[:-1] + lengths[:-1]) + 1
    firsts = np.concatenate(([0], breaks)).tolist()
    lasts = np.concatenate((breaks, [len(ordered)])).tolist()
    spans = [
        (int(ordered[a]), int(ordered[b - 1] + lengths[b - 1]))
        for a, b in zip(firsts, lasts, strict=True)
    ]
    with gathered_reads():
        answers = await reader.read_many(url, spans)
    pieces = []
    for (a, b), (raw, cached) in zip(spans, answers, strict=True):
        if len(raw) != b - a:
            return None
        if not cached and reader.caches:
            await reader.remember(url, a, b, raw)
        pieces.append(np.frombuffer(raw, dtype=np.uint8))
    if nbytes is not None and bool((order == np.arange(len(order))).all()):
        return [piece.reshape(-1, nbytes) for piece in pieces]  # the answers' own bytes
    joined = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    if nbytes is None:
        ends = np.cumsum(lengths)
        cut = [
            memoryview(joined[e - n : e])
            for e, n in zip(ends.tolist(), lengths.tolist(), strict=True)
        ]
        found: list[memoryview] = [cut[0]] * len(cut)
        for i, j in enumerate(order.tolist()):
            found[j] = cut[i]
        return found
    joined = joined.reshape(-1, nbytes)
    out = np.empty_like(joined)
    out[order] = joined
    return [out]
