"""The one range-coalescing rule: join ranges of one file when the gap costs less than a request.

Used by the store's merge queue (reads zarr asks for at the same time) and by `read_many`
(the ranges a generator asks for in one call).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Run", "coalesce"]


class Run(NamedTuple):
    """``[start, end)`` of one request and the positions of the ranges it serves (a tuple:
    a frozen dataclass cost a batch of thousands of ranges a few ms to make)."""

    start: int
    end: int
    members: tuple[int, ...]


def coalesce(ranges: list[tuple[int, int]], max_gap: int, max_span: int | None = None) -> list[Run]:
    """Group ``[start, end)`` ranges into runs, in file order.

    Neighbours join while the gap between them is at most ``max_gap`` bytes and the run spans
    at most ``max_span`` bytes (None: no bound); a range longer than ``max_span`` is a run alone.
    """
    order = sorted(range(len(ranges)), key=lambda i: ranges[i])
    runs: list[Run] = []
    members: list[int] = []
    start = end = 0
    for i in order:
        a, b = ranges[i]
        if members and a - end <= max_gap and (max_span is None or max(end, b) - start <= max_span):
            members.append(i)
            end = max(end, b)
            continue
        if members:
            runs.append(Run(start, end, tuple(members)))
        start, end, members = a, b, [i]
    if members:
        runs.append(Run(start, end, tuple(members)))
    return runs
