"""RemoteArray reductions, read block by block, against numpy on the whole array.

The arrays are Zarr stores written by zarr-python (chunked along every axis, compressed, with
chunks never written), opened through `open_remote_array`; a small block size forces many
blocks so that the combining steps are what is tested.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import zarr

from shadowzarr_store.remote import open_remote_array, reductions
from shadowzarr_store.remote.reductions import block_slices

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_store.remote import RemoteArray


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reductions, "BLOCK_ELEMENTS", 1000)


def _remote(tmp_path: Path, values: np.ndarray, chunks: tuple[int, ...], **kw: Any) -> RemoteArray:
    store = tmp_path / "data.zarr"
    array = zarr.create_array(
        store, name="x", shape=values.shape, chunks=chunks, dtype=values.dtype, **kw
    )
    array[...] = values
    return open_remote_array(f"{store}/x", cache="none", reference_cache=False)


CASES: list[tuple[Any, bool]] = [(None, False), (0, True), (-1, False), ((0, 1), True)]


@pytest.mark.parametrize("dtype", ["int16", "uint8", "bool", "float32", "float64"])
def test_reductions_match_numpy(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(7)
    values = (rng.standard_normal((203, 37)) * 1000).astype(dtype)
    remote = _remote(tmp_path, values, (64, 10))
    floating = values.dtype.kind == "f"
    for axis, keepdims in CASES:
        for name in ("sum", "mean", "min", "max"):
            ours = getattr(remote, name)(axis, keepdims=keepdims)
            theirs = getattr(np, name)(values, axis=axis, keepdims=keepdims)
            assert np.shape(ours) == np.shape(theirs), (name, axis)
            assert np.asarray(ours).dtype == np.asarray(theirs).dtype, (name, axis)
            if floating or name == "mean":
                # numpy sums float32 along a strided axis one by one in float32; the float64
                # result is the one to be near.
                exact = getattr(np, name)(values.astype("float64"), axis=axis, keepdims=keepdims)
                np.testing.assert_allclose(ours, exact, rtol=1e-6 if dtype == "float32" else 1e-12)
            else:
                np.testing.assert_array_equal(ours, theirs)
        if dtype != "bool":
            for ddof in (0, 1):
                np.testing.assert_allclose(
                    remote.std(axis, ddof=ddof, keepdims=keepdims),
                    np.std(values.astype("float64"), axis=axis, ddof=ddof, keepdims=keepdims),
                    rtol=2e-6 if dtype == "float32" else 1e-10,
                )
                np.testing.assert_allclose(
                    remote.var(axis, ddof=ddof),
                    np.var(values.astype("float64"), axis, ddof=ddof),
                    rtol=2e-6 if dtype == "float32" else 1e-10,
                )


def test_integer_sums_are_exact_where_numpy_wraps(tmp_path: Path) -> None:
    values = np.full((40, 3), 2**62 + 12345, dtype="int64")
    values[::7, 1] = -(2**62) - 3
    remote = _remote(tmp_path, values, (6, 2))
    exact = sum(int(v) for v in values.ravel())
    assert exact > np.iinfo(np.int64).max  # numpy's own sum wraps around
    assert remote.sum() == exact
    assert [int(v) for v in remote.sum(axis=0)] == [sum(int(v) for v in col) for col in values.T]
    small = _remote(tmp_path / "u", np.arange(2**16, dtype="uint64").reshape(256, 256), (30, 70))
    assert small.sum() == np.uint64(sum(range(2**16)))
    assert small.sum().dtype == np.uint64


def test_float_sums_are_compensated(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    values = np.concatenate([np.full(3000, 1e8), rng.standard_normal(3000), np.full(3000, -1e8)])
    values = rng.permutation(values).astype("float64").reshape(90, 100)
    remote = _remote(tmp_path, values, (7, 13))
    exact = math.fsum(values.ravel())
    magnitude = float(np.sum(np.abs(values)))
    # Pairwise within blocks, compensated across them: the error stays near eps * log(n) of the
    # magnitude (one-by-one accumulation over these 9000 values would be ~2000 times larger).
    assert abs(remote.sum() - exact) <= 1e-14 * magnitude
    assert abs(remote.sum(axis=0) - np.array([math.fsum(c) for c in values.T])).max() <= (
        1e-14 * magnitude
    )
    assert abs(remote.mean() - exact / values.size) <= 1e-14 * magnitude / values.size
    # The variance of data with a large offset: no cancellation (E[x²] - E[x]² would lose it).
    offset = (1e9 + rng.standard_normal(5000)).reshape(50, 100)
    shifted = _remote(tmp_path / "o", offset, (9, 11))
    assert shifted.std() == pytest.approx(np.std(offset), rel=1e-9)


def test_nan_fill_values_and_empty(tmp_path: Path) -> None:
    values = np.arange(120, dtype="float64").reshape(12, 10)
    values[5, 5] = np.nan
    remote = _remote(tmp_path, values, (4, 4))
    assert np.isnan(remote.min())
    assert np.isnan(remote.max())
    assert np.isnan(remote.sum())
    np.testing.assert_array_equal(remote.max(axis=0), np.max(values, axis=0))
    # Chunks never written read as the fill value, and count.
    store = tmp_path / "sparse.zarr"
    sparse = zarr.create_array(
        store, name="x", shape=(100,), chunks=(10,), dtype="i4", fill_value=3
    )
    sparse[20:30] = 7
    remote = open_remote_array(f"{store}/x", cache="none", reference_cache=False)
    assert remote.sum() == 90 * 3 + 10 * 7
    assert remote.min() == 3
    empty = zarr.create_array(
        tmp_path / "e.zarr", name="x", shape=(0, 4), chunks=(5, 4), dtype="f8"
    )
    assert empty.shape == (0, 4)
    remote = open_remote_array(f"{tmp_path / 'e.zarr'}/x", cache="none", reference_cache=False)
    with pytest.raises(ValueError, match="zero-size"):
        remote.min()
    assert remote.sum() == 0


@pytest.mark.parametrize(
    ("shape", "chunks", "budget"),
    [((100, 37), (7, 5), 50), ((10,), (3,), 1), ((5, 6, 7), (2, 3, 4), 1000), ((), (), 10)],
)
def test_blocks_cover_every_element_once(
    shape: tuple[int, ...], chunks: tuple[int, ...], budget: int
) -> None:
    seen = np.zeros(shape, dtype=int)
    for block in block_slices(shape, chunks, budget):
        seen[block] += 1
        for part, step, size in zip(block, chunks, shape, strict=True):
            assert part.start % step == 0  # blocks are whole chunks
            assert part.stop % step == 0 or part.stop == size
        assert math.prod(p.stop - p.start for p in block) <= max(budget, math.prod(chunks))
    assert (seen == 1).all()
