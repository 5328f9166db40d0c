"""Generation over HTTP asks as the reads will: the user's headers on every request, If-Match
with the ETag seen first, nothing sent outside ``allowed_urls`` (counted by the proxy's own log),
for HDF5, TIFF, ``open_array`` and the command line; a file replaced while HDF5 generation reads
it is detected."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
import tifffile
from shadowzarr import open_array
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import SourceAccessError, SourceChangedError
from shadowzarr_store import open_rfs
from shadowzarr_testing import assert_array_equal_exact
from shadowzarr_tiff import generate_rfs_tiff

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network
TOKEN = "Bearer sz-generation-token"


def _h5(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    values = {name: rng.integers(0, 255, size=(4000, 16), dtype="u1") for name in ("a", "b")}
    with h5py.File(path, "w", libver="earliest") as f:
        for name, data in values.items():
            f.create_dataset(name, data=data, chunks=(100, 16), compression="gzip")
            f[name].attrs["units"] = "volts"
    return values


def _check_requests(proxy: LatencyProxy, etag: str | None) -> None:
    log = proxy.log
    assert log, "no request reached the server"
    assert all(entry["headers"].get("authorization") == TOKEN for entry in log)
    later = log[1:]
    assert later, "generation made a single request"
    assert all(entry["headers"].get("if-match") == etag for entry in later), [
        entry["headers"].get("if-match") for entry in later
    ]


def test_hdf5_generation_sends_headers_and_if_match(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    values = _h5(nginx_root / "f.h5")
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    url = proxy.url("f.h5")
    headers = {proxy.url(""): {"Authorization": TOKEN}}
    rfs = generate_rfs(url, headers=headers, datasets=["a", "b"], progress=False)
    etag = rfs.sources[url].etag
    assert etag
    _check_requests(proxy, etag)
    group = open_rfs(rfs, headers=headers)
    for name, expected in values.items():
        assert_array_equal_exact(group[name][:], expected, name)


def test_tiff_generation_sends_headers_and_if_match(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    frames = np.arange(30 * 64 * 64, dtype="<u2").reshape(30, 64, 64)
    tifffile.imwrite(nginx_root / "s.tif", frames, photometric="minisblack")
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    url = proxy.url("s.tif")
    rfs = generate_rfs_tiff(url, headers={proxy.url(""): {"Authorization": TOKEN}})
    _check_requests(proxy, rfs.sources[url].etag)


@pytest.mark.parametrize("kind", ["hdf5", "tiff", "open_array", "cli"])
def test_outside_allowed_urls_is_refused_before_any_request(
    kind: str, make_proxy, nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    _h5(nginx_root / "f.h5")
    tifffile.imwrite(nginx_root / "s.tif", np.zeros((2, 8, 8), "u1"), photometric="minisblack")
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    allowed = [proxy.url("public/")]
    if kind == "hdf5":
        with pytest.raises(SourceAccessError):
            generate_rfs(proxy.url("f.h5"), allowed_urls=allowed, progress=False)
    elif kind == "tiff":
        with pytest.raises(SourceAccessError):
            generate_rfs_tiff(proxy.url("public/../s.tif"), allowed_urls=allowed)
    elif kind == "open_array":
        with pytest.raises(SourceAccessError):
            open_array(proxy.url("f.h5::/a"), allowed_urls=allowed, cache_dir=tmp_path / "c")
    else:
        done = _cli("generate", proxy.url("f.h5"), "-o", str(tmp_path / "o.json"),
                    "--allowed-url", allowed[0])  # fmt: skip
        assert done.returncode == 1
        assert "not under any of the allowed_urls" in done.stderr
    assert proxy.count() == 0


def test_open_array_sends_the_headers_from_the_first_request(
    make_proxy, nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    values = _h5(nginx_root / "f.h5")
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    headers = {proxy.url(""): {"Authorization": TOKEN}}
    array = open_array(proxy.url("f.h5::/b"), headers=headers, cache_dir=tmp_path / "c")
    assert_array_equal_exact(array[:], values["b"], "b")
    assert all(entry["headers"].get("authorization") == TOKEN for entry in proxy.log)


def test_cli_generation_sends_headers(
    make_proxy, nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    _h5(nginx_root / "f.h5")
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    out = tmp_path / "f.json"
    done = _cli("generate", proxy.url("f.h5"), "-o", str(out),
                "--header", proxy.url(""), f"Authorization: {TOKEN}")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.exists()
    assert all(entry["headers"].get("authorization") == TOKEN for entry in proxy.log)
    assert TOKEN not in out.read_text()
    missing = _cli("generate", proxy.url("nope.h5"), "-o", str(tmp_path / "n.json"))
    assert missing.returncode == 1
    assert "nope.h5" in missing.stderr
    assert "404" in missing.stderr


def test_a_file_replaced_during_hdf5_generation_is_detected(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    # Two datasets appended in turns: the second one's index nodes lie all over the file, and
    # are first read after the first dataset is done.
    path = nginx_root / "f.h5"
    rng = np.random.default_rng(5)
    with h5py.File(path, "w", libver="earliest") as f:
        for name in ("a", "b"):
            f.create_dataset(
                name, shape=(0, 1024), maxshape=(None, 1024), chunks=(4, 1024), dtype="u1"
            )
        for _ in range(300):
            for name in ("a", "b"):
                f[name].resize((f[name].shape[0] + 20, 1024))
                f[name][-20:] = rng.integers(0, 255, size=(20, 1024), dtype="u1")
    original = path.read_bytes()
    proxy: LatencyProxy = make_proxy(nginx.url(""))

    def replace(done: int, total: int, name: str) -> None:
        if done == 1:  # after the first dataset: the same bytes, rewritten (a new ETag)
            stat = path.stat()
            path.write_bytes(original)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**10))

    with pytest.raises(SourceChangedError):
        generate_rfs(proxy.url("f.h5"), parse_indexes=False, datasets=["a", "b"], progress=replace)
    assert any(entry["status"] == 412 for entry in proxy.log)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shadowzarr.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
