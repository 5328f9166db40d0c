"""The chunk manifest's vectorized lookups against numpy's plain indexing: which points lie in the
grid, and the gather of entries from an index chunk in every memory order a decoded chunk can
have (C, F, and the transposes the ``transpose`` codec gives)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from shadowzarr_store.manifests import _column_bounds, _gather, _rows_inside


@pytest.mark.parametrize("seed", range(20))
def test_rows_inside_agrees_with_a_mask_per_row(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    grid = tuple(int(g) for g in rng.integers(1, 9, size=ndim))
    points = rng.integers(-2, 11, size=(int(rng.integers(1, 50)), ndim))
    if seed % 2:  # every point inside: the usual shard
        points = points % np.array(grid)
    expected = ((points >= 0) & (points < np.array(grid))).all(axis=1)
    found = _rows_inside(points, grid, _column_bounds(points))
    if expected.all():
        assert found is None
    else:
        assert found is not None
        np.testing.assert_array_equal(found, expected)


def test_column_bounds_are_each_columns_least_and_greatest() -> None:
    points = np.array([[3, -1], [0, 7], [5, 2]])
    assert _column_bounds(points) == ([0, -1], [5, 7])


@pytest.mark.parametrize("axes", list(itertools.permutations(range(3))))
@pytest.mark.parametrize("order", ["C", "F"])
def test_gather_agrees_with_indexing_by_a_tuple_of_arrays(
    axes: tuple[int, ...], order: str
) -> None:
    rng = np.random.default_rng(7)
    stored = np.asarray(rng.integers(0, 2**40, size=(6, 5, 2)), dtype=np.uint64, order=order)
    block = stored.transpose(axes)  # dense in memory, though not always C or F ordered
    local = np.stack([rng.integers(0, n, size=40) for n in block.shape[:-1]], axis=1)
    for last in range(block.shape[-1]):
        expected = block[(*local.T, np.full(len(local), last))]
        np.testing.assert_array_equal(_gather(block, local, last), expected)


def test_gather_of_a_strided_view_falls_back_to_plain_indexing() -> None:
    block = np.arange(4 * 6 * 2, dtype=np.uint64).reshape(4, 6, 2)[:, ::2]  # not contiguous
    local = np.array([[0, 0], [3, 2], [1, 1]])
    np.testing.assert_array_equal(_gather(block, local, 1), block[(*local.T, np.ones(3, int))])
