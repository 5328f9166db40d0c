"""sum, mean, min, max, var and std of a remote array, read one block of whole chunks at a time.

Memory stays at one block (about `BLOCK_ELEMENTS` values, as float64 for the variance) plus the
result, however large the array. Each block is one zarr read, so its chunks are fetched in
parallel and neighbours are merged into one request.

Why not numpy on the whole array: it does not fit in memory. Why not dask: the read path does
not depend on it. The arithmetic is chosen so the result is what numpy would give on the whole
array, or closer to the exact one:

- integer (and bool) sums are exact: each block is summed in 64 bits (a 64-bit input split in
  32-bit halves first), and blocks are added as Python integers. A total that fits numpy's result
  type is returned in it; a larger one (where numpy would wrap around) as exact Python ints;
- float sums and means add float64 block sums (numpy's pairwise summation inside a block, so
  float32 values are summed in float64) with Neumaier's compensation across blocks, then round
  once to numpy's result type: the error stays near ``eps * log(n)`` of the sum of magnitudes
  however many blocks there are;
- the variance combines per-block counts, means and squared deviations (Chan, Golub and
  LeVeque's pairwise update), never the cancellation-prone ``E[x²] - E[x]²``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

__all__ = [
    "BLOCK_ELEMENTS",
    "Axes",
    "block_slices",
    "reduce_extreme",
    "reduce_mean",
    "reduce_sum",
    "reduce_var",
]

BLOCK_ELEMENTS = 8 * 2**20
"""Values read per block at most (64 MiB as float64), unless one chunk alone holds more."""

type Axes = int | Sequence[int] | None
type ReadBlock = Callable[[tuple[slice, ...]], np.ndarray]


def block_slices(
    shape: tuple[int, ...], chunks: tuple[int, ...], max_elements: int = BLOCK_ELEMENTS
) -> Iterator[tuple[slice, ...]]:
    """Blocks of whole chunks covering ``shape``, grown along the last axes first (the ones
    stored closest together) while they hold at most ``max_elements`` values."""
    ndim = len(shape)
    counts = [1] * ndim
    size = math.prod(chunks)
    for axis in reversed(range(ndim)):
        grid = -(-shape[axis] // chunks[axis]) if shape[axis] else 0
        counts[axis] = max(1, min(grid, max_elements // max(size, 1)))
        size *= counts[axis]
        if counts[axis] < grid:
            break
    steps = [chunks[axis] * counts[axis] for axis in range(ndim)]
    starts = [range(0, shape[axis], steps[axis]) for axis in range(ndim)]
    for corner in itertools.product(*starts):
        yield tuple(
            slice(start, min(start + step, size_))
            for start, step, size_ in zip(corner, steps, shape, strict=True)
        )


@dataclass(frozen=True, slots=True)
class _Plan:
    """The axes reduced and where a block's partial result goes in the (keepdims) output."""

    shape: tuple[int, ...]
    axes: tuple[int, ...]

    @classmethod
    def of(cls, shape: tuple[int, ...], axis: Axes) -> _Plan:
        ndim = len(shape)
        if axis is None:
            axes = tuple(range(ndim))
        else:
            given = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
            axes = tuple(sorted({int(normalize_axis_index(int(a), ndim)) for a in given}))
            if len(axes) != len(given):
                raise ValueError("duplicate value in 'axis'")
        return cls(shape, axes)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(1 if axis in self.axes else n for axis, n in enumerate(self.shape))

    @property
    def count(self) -> int:
        return math.prod(self.shape[axis] for axis in self.axes)

    def target(self, block: tuple[slice, ...]) -> tuple[slice, ...]:
        return tuple(slice(0, 1) if axis in self.axes else part for axis, part in enumerate(block))

    def finish(self, value: np.ndarray, keepdims: bool) -> Any:
        result = (
            value
            if keepdims
            else value.reshape([n for axis, n in enumerate(value.shape) if axis not in self.axes])
        )
        return result[()] if result.ndim == 0 else result


def _blocks(
    read: ReadBlock, shape: tuple[int, ...], chunks: tuple[int, ...]
) -> Iterator[tuple[tuple[slice, ...], np.ndarray]]:
    for block in block_slices(shape, chunks, BLOCK_ELEMENTS):
        yield block, np.asarray(read(block))


def reduce_sum(
    read: ReadBlock,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: np.dtype[Any],
    axis: Axes = None,
    keepdims: bool = False,
    result_dtype: Any = None,
) -> Any:
    """The sum, as numpy's ``sum`` of the whole array would give it (exact for integers)."""
    plan = _Plan.of(shape, axis)
    numpy_type = (
        np.sum(np.zeros(1, dtype)).dtype if result_dtype is None else np.dtype(result_dtype)
    )
    if dtype.kind in "biu":
        total = _exact_integer_sum(read, plan, chunks, dtype)
        return plan.finish(_to_integers(total, numpy_type), keepdims)
    if dtype.kind == "f":
        total, _ = _compensated_sum(read, plan, chunks)
        return plan.finish(total.astype(numpy_type), keepdims)
    if dtype.kind == "c":
        plain = np.zeros(plan.out_shape, np.complex128)
        for block, values in _blocks(read, shape, chunks):
            plain[plan.target(block)] += values.sum(plan.axes, keepdims=True, dtype=np.complex128)
        return plan.finish(plain.astype(numpy_type), keepdims)
    raise TypeError(f"cannot sum an array of {dtype}")


def reduce_mean(
    read: ReadBlock,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: np.dtype[Any],
    axis: Axes = None,
    keepdims: bool = False,
    result_dtype: Any = None,
) -> Any:
    """The mean: an exact or compensated sum over the count, rounded once."""
    plan = _Plan.of(shape, axis)
    if plan.count == 0:
        raise ValueError("mean of an empty selection")
    numpy_type = (
        np.dtype(result_dtype)
        if result_dtype is not None
        else (dtype if dtype.kind in "fc" else np.dtype(np.float64))
    )
    if dtype.kind in "biu":
        total = _exact_integer_sum(read, plan, chunks, dtype)
        mean = np.vectorize(lambda value: value / plan.count, otypes=[np.float64])(total)
        return plan.finish(mean.astype(numpy_type), keepdims)
    if dtype.kind == "f":
        total, _ = _compensated_sum(read, plan, chunks)
        return plan.finish((total / plan.count).astype(numpy_type), keepdims)
    total = reduce_sum(read, shape, chunks, dtype, axis, True, np.complex128)
    return plan.finish((np.asarray(total) / plan.count).astype(numpy_type), keepdims)


def reduce_extreme(
    read: ReadBlock,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    which: str,
    axis: Axes = None,
    keepdims: bool = False,
) -> Any:
    """``which`` = "min" or "max"; NaN propagates as in numpy."""
    plan = _Plan.of(shape, axis)
    if math.prod(shape) == 0:
        raise ValueError(
            f"zero-size array to reduction operation {which}imum which has no identity"
        )
    pick = np.minimum if which == "min" else np.maximum
    reduce = np.min if which == "min" else np.max
    out: np.ndarray | None = None
    filled: np.ndarray | None = None
    for block, values in _blocks(read, shape, chunks):
        part = reduce(values, axis=plan.axes, keepdims=True)
        if out is None:
            out = np.empty(plan.out_shape, values.dtype)
            filled = np.zeros(plan.out_shape, bool)
        where = plan.target(block)
        out[where] = np.where(filled[where], pick(out[where], part), part)  # type: ignore[index]
        filled[where] = True  # type: ignore[index]
    assert out is not None
    return plan.finish(out, keepdims)


def reduce_var(
    read: ReadBlock,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: np.dtype[Any],
    axis: Axes = None,
    keepdims: bool = False,
    ddof: int = 0,
    result_dtype: Any = None,
) -> Any:
    """The variance from per-block (count, mean, squared deviations), combined pairwise."""
    if dtype.kind not in "biuf":
        raise TypeError(f"var and std of {dtype} arrays are not supported")
    plan = _Plan.of(shape, axis)
    numpy_type = (
        np.dtype(result_dtype)
        if result_dtype is not None
        else (dtype if dtype.kind == "f" else np.dtype(np.float64))
    )
    count = np.zeros(plan.out_shape, np.float64)
    mean = np.zeros(plan.out_shape, np.float64)
    squares = np.zeros(plan.out_shape, np.float64)
    for block, values in _blocks(read, shape, chunks):
        where = plan.target(block)
        n_b = float(math.prod(values.shape[axis] for axis in plan.axes))
        if n_b == 0:
            continue
        as_float = values.astype(np.float64, copy=False)
        mean_b = as_float.mean(plan.axes, keepdims=True)
        squares_b = np.square(as_float - mean_b).sum(plan.axes, keepdims=True)
        n_a = count[where]
        n = n_a + n_b
        delta = mean_b - mean[where]
        mean[where] += delta * (n_b / n)
        squares[where] += squares_b + np.square(delta) * (n_a * n_b / n)
        count[where] = n
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = squares / (count - ddof)
    variance[count - ddof <= 0] = np.nan
    return plan.finish(variance.astype(numpy_type), keepdims)


def _exact_integer_sum(
    read: ReadBlock, plan: _Plan, chunks: tuple[int, ...], dtype: np.dtype[Any]
) -> np.ndarray:
    """Python-int sums per output element; 64-bit inputs are summed as two 32-bit halves so
    no block sum can wrap around."""
    total = np.zeros(plan.out_shape, dtype=object)
    wide = np.uint64 if dtype.kind == "u" else np.int64
    for block, values in _blocks(read, plan.shape, chunks):
        where = plan.target(block)
        if dtype.itemsize < 8:
            part = values.sum(plan.axes, keepdims=True, dtype=wide).astype(object)
        else:
            low = (values & np.array(0xFFFFFFFF, dtype)).astype(np.uint64)
            high = values >> np.array(32, dtype)
            part = low.sum(plan.axes, keepdims=True, dtype=np.uint64).astype(object) + (
                high.sum(plan.axes, keepdims=True, dtype=wide).astype(object) * (1 << 32)
            )
        total[where] += part
    return total


def _to_integers(total: np.ndarray, numpy_type: np.dtype[Any]) -> np.ndarray:
    info = np.iinfo(numpy_type) if numpy_type.kind in "iu" else None
    if info is None:
        return total.astype(numpy_type)
    flat = total.ravel()
    if all(info.min <= int(value) <= info.max for value in flat):
        return total.astype(numpy_type)
    return total  # exact Python ints where numpy's own type would have wrapped around


def _compensated_sum(
    read: ReadBlock, plan: _Plan, chunks: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Neumaier-compensated float64 sum of the block sums (each block summed pairwise)."""
    total = np.zeros(plan.out_shape, np.float64)
    compensation = np.zeros(plan.out_shape, np.float64)
    for block, values in _blocks(read, plan.shape, chunks):
        where = plan.target(block)
        part = values.sum(plan.axes, keepdims=True, dtype=np.float64)
        running = total[where]
        updated = running + part
        with np.errstate(invalid="ignore"):
            lost = np.where(
                np.abs(running) >= np.abs(part),
                (running - updated) + part,
                (part - updated) + running,
            )
        compensation[where] += np.where(np.isfinite(lost), lost, 0.0)
        total[where] = updated
    return total + compensation, compensation
