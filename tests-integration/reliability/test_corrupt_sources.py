"""Truncated, corrupt and lying HDF5 and TIFF files: the generators refuse them with a clear
error, or the references they make read the intact values or raise; never garbage.

Budget: one HDF5 file (a gzip-chunked and a contiguous dataset) x 8 damages (5 cut points, 3
seeded 64-byte overwrites) and one TIFF (4 tiled pages) x 9 damages (the same, plus tile byte
counts lying past the end of the file); expected values come from h5py / tifffile reading the
damaged file itself.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
import tifffile
import zarr
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import ShadowzarrError
from shadowzarr_store import RfsStore
from shadowzarr_tiff import generate_rfs_tiff

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

# What a generator may raise for a damaged file: one of ours, or the OSError h5py/tifffile give
# for a file that is not readable at all (both name the file or the problem).
GENERATOR_ERRORS = (ShadowzarrError, OSError, ValueError, KeyError)


def _write_hdf5(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    values = {
        "chunked": rng.integers(0, 2**31, size=(64, 256), dtype="<i4"),
        "contiguous": rng.standard_normal(size=(40_000,)),
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("chunked", data=values["chunked"], chunks=(8, 64), compression="gzip")
        f.create_dataset("contiguous", data=values["contiguous"])
    return values


def _truncate(fraction: float) -> Callable[[bytes], bytes]:
    return lambda data: data[: int(len(data) * fraction)]


def _flip(seed: int) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        rng = np.random.default_rng(seed)
        out = bytearray(data)
        start = int(rng.integers(0, len(data) - 64))
        out[start : start + 64] = rng.integers(0, 256, size=64, dtype=np.uint8).tobytes()
        return bytes(out)

    return damage


DAMAGES = {
    "cut-0.01": _truncate(0.01),
    "cut-0.3": _truncate(0.3),
    "cut-0.6": _truncate(0.6),
    "cut-0.9": _truncate(0.9),
    "cut-last-byte": lambda data: data[:-1],
    "flip-1": _flip(1),
    "flip-2": _flip(2),
    "flip-3": _flip(3),
}


def _check_references(rfs, expected: dict[str, np.ndarray | None]) -> None:
    """Every array reads what the native library reads from the damaged file, or raises;
    where the native library cannot read it (None), the references must not read it either."""
    store = RfsStore(rfs)
    for name, values in expected.items():
        try:
            array = zarr.open_array(store, path=name, mode="r", zarr_format=3)
            actual = array[...]
        except (ShadowzarrError, KeyError, FileNotFoundError):
            continue
        except (ValueError, RuntimeError) as exc:
            # A codec refusing garbage (zlib's 'invalid stored block') is refused data, not read.
            if "reshape" in str(exc):
                raise
            continue
        assert values is not None, f"{name}: the native reader fails, the references read"
        np.testing.assert_array_equal(actual, values, err_msg=f"{name} read garbage")


def _h5py_values(path: Path, names) -> dict[str, np.ndarray | None]:
    values: dict[str, np.ndarray | None] = {}
    for name in names:
        try:
            with h5py.File(path, "r") as f:
                values[name] = f[name][...]
        except (OSError, KeyError, ValueError, RuntimeError):
            values[name] = None
    return values


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_hdf5_is_refused_or_reads_exact_values(tmp_path: Path, damage: str) -> None:
    intact = tmp_path / "intact.h5"
    expected = _write_hdf5(intact)
    broken = tmp_path / "broken.h5"
    broken.write_bytes(DAMAGES[damage](intact.read_bytes()))
    try:
        rfs = generate_rfs(broken, progress=False)
    except GENERATOR_ERRORS as exc:
        message = str(exc)
    else:
        message = None
    if message is not None:
        assert message, "an error without a message"
        return
    _check_references(rfs, _h5py_values(broken, expected))


def _write_tiff(path: Path) -> np.ndarray:
    values = np.random.default_rng(6).integers(0, 2**16, size=(4, 128, 128), dtype="<u2")
    tifffile.imwrite(path, values, tile=(32, 32), photometric="minisblack")
    return values


def _lie_about_strip_sizes(data: bytes) -> bytes:
    """Double every TileByteCounts (tag 325) value: tiles claim bytes beyond the file's end."""
    out = bytearray(data)
    offset = struct.unpack_from("<I", data, 4)[0]
    while offset:
        count = struct.unpack_from("<H", data, offset)[0]
        for i in range(count):
            entry = offset + 2 + 12 * i
            tag, _kind, n, value = struct.unpack_from("<HHII", data, entry)
            if tag == 325:
                for k in range(n):
                    at = value + 4 * k
                    struct.pack_into(
                        "<I", out, at, min(struct.unpack_from("<I", data, at)[0] * 50, 2**32 - 1)
                    )
        offset = struct.unpack_from("<I", data, offset + 2 + 12 * count)[0]
    return bytes(out)


TIFF_DAMAGES = {**DAMAGES, "tile-sizes-lie": _lie_about_strip_sizes}


@pytest.mark.parametrize("damage", sorted(TIFF_DAMAGES))
def test_damaged_tiff_is_refused_or_reads_exact_values(tmp_path: Path, damage: str) -> None:
    intact = tmp_path / "intact.tif"
    values = _write_tiff(intact)
    broken = tmp_path / "broken.tif"
    broken.write_bytes(TIFF_DAMAGES[damage](intact.read_bytes()))
    try:
        rfs = generate_rfs_tiff(broken)
    except GENERATOR_ERRORS as exc:
        message = str(exc)
    else:
        message = None
    if message is not None:
        assert message, "an error without a message"
        return
    paths = [key[: -len("/zarr.json")] for key in rfs.refs if key.endswith("/zarr.json")]
    arrays = [
        p for p in paths if json.loads(rfs.refs[p + "/zarr.json"].data)["node_type"] == "array"
    ]
    assert arrays
    try:
        native: np.ndarray | None = tifffile.imread(broken)
    except (OSError, ValueError, KeyError, IndexError, RuntimeError):
        native = None
    assert values.shape == (4, 128, 128)
    _check_references(rfs, dict.fromkeys(arrays, native))
