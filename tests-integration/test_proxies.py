"""Generation and reading through a real forward proxy (tinyproxy), as a user behind a company
proxy runs them: an HDF5 file over HTTP and in an S3 bucket, references fetched by URL, chunks
read; the environment's ``HTTP_PROXY`` or the ``proxy`` option of `generate_rfs`/`open_rfs`,
and ``NO_PROXY``. Counts come from the proxy's and nginx's own logs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import ProxyError
from shadowzarr_testing import free_port

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import MotoS3, NginxServer, TinyProxy

pytestmark = pytest.mark.network


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _h5(path: Path) -> np.ndarray:
    values = np.random.default_rng(11).integers(0, 1000, size=(300, 40), dtype="<i4")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values, chunks=(50, 40), compression="gzip")
    return values


def test_generation_references_and_chunks_go_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch, tinyproxy: TinyProxy, nginx: NginxServer, nginx_root: Path
) -> None:
    values = _h5(nginx_root / "f.h5")
    monkeypatch.setenv("HTTP_PROXY", tinyproxy.url)
    rfs = generate_rfs(nginx.url("f.h5"), progress=False)
    write_rfs(rfs, nginx_root / "f.json")
    np.testing.assert_array_equal(open_rfs(nginx.url("f.json"))["x"][:], values)
    proxied = tinyproxy.requests()
    targets = {r.target for r in proxied}
    assert targets == {nginx.url("f.h5"), nginx.url("f.json")}
    assert len(proxied) == len(nginx.entries())  # every request went through it
    # NO_PROXY: straight to the server
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    tinyproxy.reset()
    nginx.reset()
    np.testing.assert_array_equal(open_rfs(nginx.url("f.json"))["x"][:], values)
    assert nginx.entries()
    assert tinyproxy.requests() == []


def test_the_proxy_option_of_generate_rfs_and_open_rfs(
    monkeypatch: pytest.MonkeyPatch, tinyproxy: TinyProxy, nginx: NginxServer, nginx_root: Path
) -> None:
    values = _h5(nginx_root / "f.h5")
    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("HTTP_PROXY", closed)
    with pytest.raises(ProxyError, match=closed):
        generate_rfs(nginx.url("f.h5"), progress=False)
    assert nginx.entries() == []  # not read directly instead
    rfs = generate_rfs(nginx.url("f.h5"), progress=False, proxy=tinyproxy.url)
    write_rfs(rfs, nginx_root / "f.json")
    group = open_rfs(nginx.url("f.json"), proxy=tinyproxy.url)
    np.testing.assert_array_equal(group["x"][:], values)
    assert len(tinyproxy.requests()) == len(nginx.entries())
    tinyproxy.reset()
    np.testing.assert_array_equal(open_rfs(nginx.url("f.json"), proxy=False)["x"][:], values)
    assert tinyproxy.requests() == []


def test_an_s3_source_goes_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
    tinyproxy: TinyProxy,
    moto_s3: MotoS3,
    s3_bucket_name: str,
    tmp_path: Path,
) -> None:
    values = _h5(tmp_path / "f.h5")
    moto_s3.create_bucket(s3_bucket_name)
    moto_s3.put(s3_bucket_name, "f.h5", (tmp_path / "f.h5").read_bytes())
    url = f"s3://{s3_bucket_name}/f.h5"
    options = moto_s3.storage_options()
    monkeypatch.setenv("HTTP_PROXY", tinyproxy.url)
    rfs = generate_rfs(url, storage_options=options, progress=False)
    write_rfs(rfs, tmp_path / "f.json")
    np.testing.assert_array_equal(
        open_rfs(tmp_path / "f.json", storage_options=options)["x"][:], values
    )
    proxied = tinyproxy.requests()
    assert proxied
    assert {r.target for r in proxied} == {f"{moto_s3.endpoint}/{s3_bucket_name}/f.h5"}
