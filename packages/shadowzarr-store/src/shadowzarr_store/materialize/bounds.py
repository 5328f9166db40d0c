"""How many chunks materialize would write or check for each array, counted before anything is
written: references may claim 10**12 chunks (a gen entry) or 10**15 elements in a few bytes of
JSON, and a copy of that size would run for ever. Above ``max_chunks`` materialize refuses."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from shadowzarr_spec.keys import array_of_chunk_key, chunk_grid_shape

from shadowzarr_store.materialize.plan import regions

if TYPE_CHECKING:
    from shadowzarr_spec import ReferenceFileSystem

    from shadowzarr_store.materialize.plan import ArrayPlan

__all__ = ["MAX_CHUNKS", "chunks_to_write"]

MAX_CHUNKS = 10**7
"""Most chunks materialize writes (or verifies) for one array unless told otherwise: 40 TiB in
the default 4 MiB chunks; the progress of a rewrite keeps one number per chunk written."""


def chunks_to_write(
    rfs: ReferenceFileSystem, plans: list[ArrayPlan], verify: bool
) -> dict[str, int]:
    """For each array, at most how many chunks materialize goes through: a rewrite's destination
    chunks or source grid positions (the larger); a copy's stored chunks, or every grid
    position when verified."""
    stored = _stored_chunk_counts(rfs)
    out: dict[str, int] = {}
    for plan in plans:
        document = plan.document
        chunk_shape = document["chunk_grid"]["configuration"]["chunk_shape"]
        positions = math.prod(chunk_grid_shape(document["shape"], chunk_shape))
        if plan.rewrite:
            # Every source chunk of the grid is asked for, stored or not (fill).
            out[plan.path] = max(len(regions(plan.shape, plan.chunk_shape)), positions)
        elif verify or plan.path in rfs.indexes:
            out[plan.path] = positions
        else:
            out[plan.path] = min(positions, stored[plan.path])
    return out


def _stored_chunk_counts(rfs: ReferenceFileSystem) -> Counter[str]:
    """Chunk keys each array's references list (gen entries by the keys they claim)."""
    counts: Counter[str] = Counter()
    for key in rfs.refs:
        split = array_of_chunk_key(key)
        if split is not None:
            counts[split[0]] += 1
    for entry in rfs.gen:
        template = entry.chunk_template()
        if template is not None:
            counts[template[0]] += entry.count
    return counts
