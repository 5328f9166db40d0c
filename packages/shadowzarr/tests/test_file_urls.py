"""A ``file://`` URL is the file it names, for every generator and ``open_array``: the
references point at the file itself and read back its values."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import tifffile
from shadowzarr_store import open_rfs
from shadowzarr_testing import assert_array_equal_exact

import shadowzarr
from shadowzarr.cli import main

LAYOUT = ("--dtype", "int16", "--channels", "4", "--sampling-rate", "1000")


def test_open_array_of_a_file_url_with_a_dataset(tmp_path: Path) -> None:
    values = np.arange(600, dtype="<i4").reshape(30, 20)
    with h5py.File(tmp_path / "data.h5", "w") as f:
        f.create_dataset("group/x", data=values, chunks=(10, 20))
    address = f"{(tmp_path / 'data.h5').as_uri()}::/group/x"
    array = shadowzarr.open_array(address, cache_dir=tmp_path / "cache")
    assert_array_equal_exact(array[:], values, address)


def test_tiff_generator_and_open_array_of_a_file_url(tmp_path: Path) -> None:
    stack = np.arange(3 * 40 * 24, dtype="<u2").reshape(3, 40, 24)
    path = tmp_path / "stack.tif"
    tifffile.imwrite(path, stack, tile=(16, 16), compression="zlib", photometric="minisblack")
    rfs = shadowzarr.generate_rfs_tiff(path.as_uri())
    urls = {ref.url for ref in rfs.refs.values() if hasattr(ref, "url")}
    assert urls == {str(path.resolve())}
    assert rfs.sources[str(path.resolve())].mtime_ns  # identified as a local file
    assert_array_equal_exact(open_rfs(rfs)["0"][:], stack, "generate_rfs_tiff(file://)")
    array = shadowzarr.open_array(path.as_uri(), cache_dir=tmp_path / "cache")
    assert_array_equal_exact(array[:], stack, "open_array(file://…tif)")


def test_neo_generation_of_a_file_url(tmp_path: Path) -> None:
    samples = np.arange(4 * 500, dtype="<i2").reshape(500, 4)
    path = tmp_path / "rec.bin"
    path.write_bytes(samples.tobytes())
    out = tmp_path / "rec.shadowzarr"
    assert main(["generate", path.as_uri(), *LAYOUT, "-o", str(out)]) == 0
    ((_, array),) = list(open_rfs(out).arrays())  # NEO read an empty recording before
    assert_array_equal_exact(array[:], samples, "rec.bin through file://")
