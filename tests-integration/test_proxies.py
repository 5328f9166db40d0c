"""Generation and reading through a real forward proxy (tinyproxy), as a user behind a company
proxy runs them: an HDF5 file over HTTP and in an S3 bucket, references fetched by URL, chunks
read; the environment's ``HTTP_PROXY`` or the ``proxy`` option of `generate_rfs`/`open_rfs`,
and ``NO_PROXY``. Counts come from the proxy's and nginx's own logs."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from typing import TYPE_CHECKING, ClassVar

import h5py
import numpy as np
import pytest
import trustme
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_store.transport import ProxyError
from shadowzarr_testing import QuietHandler, free_port, handler_server

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
    # references kept in the bucket, opened by their s3:// URL: through the proxy too
    moto_s3.put(s3_bucket_name, "refs/f.json", (tmp_path / "f.json").read_bytes())
    tinyproxy.reset()
    group = open_rfs(f"s3://{s3_bucket_name}/refs/f.json", storage_options=options)
    np.testing.assert_array_equal(group["x"][:], values)
    assert {r.target for r in tinyproxy.requests()} == {
        f"{moto_s3.endpoint}/{s3_bucket_name}/refs/f.json",
        f"{moto_s3.endpoint}/{s3_bucket_name}/f.h5",
    }
    # NO_PROXY names the object store's host: generation and every read go straight to it
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    tinyproxy.reset()
    again = generate_rfs(url, storage_options=options, progress=False)
    assert again.refs.keys() == rfs.refs.keys()
    group = open_rfs(f"s3://{s3_bucket_name}/refs/f.json", storage_options=options)
    np.testing.assert_array_equal(group["x"][:], values)
    assert tinyproxy.requests() == []


_HTTPS_CHILD = """
import sys
import numpy as np
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import write_rfs
from shadowzarr_store import open_rfs
base, folder = sys.argv[1], sys.argv[2]
rfs = generate_rfs(base + "f.h5", progress=False)
assert list(rfs.sources) == [base + "f.h5"], list(rfs.sources)
write_rfs(rfs, folder + "/f.json")
np.save(folder + "/read.npy", open_rfs(base + "f.json")["x"][:])
"""


def _https_files(folder: Path) -> type[QuietHandler]:
    """A keep-alive HTTPS file server: whole files (with an ETag) and single ranges; its log
    is each request's client port (one per connection) and target."""

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"
        log: ClassVar[list[tuple[int, str]]] = []

        def do_GET(self) -> None:
            Handler.log.append((self.client_address[1], self.path))
            path = folder / self.path.lstrip("/")
            data = path.read_bytes()
            asked = self.headers.get("Range", "").removeprefix("bytes=")
            headers = {"ETag": f'"{path.stat().st_mtime_ns}-{len(data)}"'}
            if asked and "," not in asked:
                first, _, last = asked.partition("-")
                start = int(first)
                end = min(int(last), len(data) - 1) if last else len(data) - 1
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                status, body = 206, data[start : end + 1]
            else:  # no range, or several: the whole file
                status, body = 200, data
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def test_https_sources_and_references_go_through_connect_tunnels(
    tinyproxy: TinyProxy, tmp_path: Path
) -> None:
    """Generation of an HTTPS source, references fetched by an https:// URL and their chunks,
    in a child interpreter that trusts the tests' certificate authority: with HTTPS_PROXY
    every connection the server accepts is a tunnel tinyproxy opened; with the server's host
    in NO_PROXY, tinyproxy sees nothing."""
    authority = trustme.CA()
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    served = tmp_path / "served"
    served.mkdir()
    values = _h5(served / "f.h5")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(context)
    handler = _https_files(served)
    variables = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    clean = {k: v for k, v in os.environ.items() if k.lower() not in variables}
    with handler_server(handler, tls=context) as port:
        base = f"https://localhost:{port}/"
        for extra in (
            {"HTTPS_PROXY": tinyproxy.url},
            {
                "HTTPS_PROXY": tinyproxy.url,
                "NO_PROXY": "localhost",
            },
        ):
            tinyproxy.reset()
            handler.log.clear()
            (served / "f.json").unlink(missing_ok=True)
            completed = subprocess.run(
                [sys.executable, "-c", _HTTPS_CHILD, base, str(served)],
                capture_output=True,
                text=True,
                timeout=300,
                env={**clean, "SSL_CERT_FILE": str(bundle), **extra},
                check=False,
            )
            assert completed.returncode == 0, completed.stderr[-3000:]
            np.testing.assert_array_equal(np.load(served / "read.npy"), values)
            assert {path for _, path in handler.log} == {"/f.h5", "/f.json"}
            connections = {client for client, _ in handler.log}
            proxied = tinyproxy.requests()
            if "NO_PROXY" in extra:
                assert proxied == []
            else:
                assert {(r.method, r.target) for r in proxied} == {("CONNECT", f"localhost:{port}")}
                assert len(proxied) == len(connections)  # no connection made around it
