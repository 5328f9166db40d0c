"""Forward proxies as users configure them (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
``NO_PROXY`` or the ``proxy`` option), through a real tinyproxy whose own log says what went
through it: our HTTP/1.1 connections, aiohttp and obstore decide alike; a proxy that cannot be
reached fails the read naming it (never a direct read instead); a ``NO_PROXY`` host is asked
directly; a proxy's credentials go only to the proxy and are never shown."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
import trustme
from shadowzarr_testing import QuietHandler, free_port, handler_server

from shadowzarr_store.transport import Transport, TransportOptions
from shadowzarr_store.transport.errors import ProxyError
from shadowzarr_store.transport.proxies import NoProxy, ProxyConfig, ProxyConfigError

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, MotoS3, NginxServer, TinyProxy

pytestmark = pytest.mark.network

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the proxy variables it means; none leak in from the machine."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _data(nginx_root: Path) -> bytes:
    data = os.urandom(50_000)
    (nginx_root / "d.bin").write_bytes(data)
    return data


async def _every_kind_of_read(url: str, data: bytes, **options: object) -> None:
    """A range (ours), a whole file (ours), an open-ended range and a multi-range request
    (aiohttp) and a probe: every path a request takes."""
    transport = Transport(TransportOptions(**options))  # type: ignore[arg-type]
    assert (await transport.read(url, 10, 100)).data == data[10:100]
    assert await transport.read_whole(url) == data
    assert (await transport.read(url, 49_000, None)).data == data[49_000:]
    parts = await transport.read_many(url, [(0, 10), (20_000, 20_010)])
    assert [p.data for p in parts] == [data[:10], data[20_000:20_010]]
    assert (await transport.probe(url)).size == len(data)


def test_every_http_request_goes_through_the_environments_proxy(
    monkeypatch: pytest.MonkeyPatch, tinyproxy: TinyProxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = _data(nginx_root)
    monkeypatch.setenv("http_proxy", tinyproxy.url)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")  # lower case wins
    asyncio.run(_every_kind_of_read(nginx.url("d.bin"), data))
    proxied = tinyproxy.requests()
    assert [r.method for r in proxied] == ["GET"] * 5
    assert {r.target for r in proxied} == {nginx.url("d.bin")}  # absolute targets
    assert len(nginx.entries()) == 5  # what the proxy forwarded, nothing else


def test_a_no_proxy_host_is_asked_directly(
    monkeypatch: pytest.MonkeyPatch, tinyproxy: TinyProxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = _data(nginx_root)
    monkeypatch.setenv("HTTP_PROXY", tinyproxy.url)
    for no_proxy in (
        "127.0.0.1",
        "127.0.0.0/8",
        f"127.0.0.1:{nginx.port}",
        "*",
        "x.org, 127.0.0.1",
    ):
        monkeypatch.setenv("NO_PROXY", no_proxy)
        asyncio.run(_every_kind_of_read(nginx.url("d.bin"), data))
    monkeypatch.setenv("NO_PROXY", f"127.0.0.1:{nginx.port + 1}")  # another port: proxied
    asyncio.run(_every_kind_of_read(nginx.url("d.bin"), data))
    assert len(tinyproxy.requests()) == 5
    assert len(nginx.entries()) == 6 * 5


def test_a_proxy_that_cannot_be_reached_fails_the_read_naming_it(
    monkeypatch: pytest.MonkeyPatch, nginx: NginxServer, nginx_root: Path
) -> None:
    _data(nginx_root)
    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ALL_PROXY", closed)
    url = nginx.url("d.bin")

    async def reads() -> list[BaseException]:
        transport = Transport(TransportOptions(backoff=0))
        failures = []
        for read in (
            lambda: transport.read(url, 0, 10),
            lambda: transport.read(url, 10, None),
            lambda: transport.read_whole(url),
        ):
            with pytest.raises(ProxyError) as raised:
                await read()
            failures.append(raised.value)
        return failures

    for failure in asyncio.run(reads()):
        assert f"cannot connect to the proxy {closed}" in str(failure)
    assert nginx.entries() == []  # never asked directly instead


def test_the_proxy_option_overrides_the_environment(
    monkeypatch: pytest.MonkeyPatch, tinyproxy: TinyProxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = _data(nginx_root)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    asyncio.run(_every_kind_of_read(nginx.url("d.bin"), data, proxy=tinyproxy.url))
    assert len(tinyproxy.requests()) == 5
    asyncio.run(_every_kind_of_read(nginx.url("d.bin"), data, proxy=False))
    asyncio.run(_every_kind_of_read(nginx.url("d.bin"), data, proxy=""))
    assert len(tinyproxy.requests()) == 5
    assert len(nginx.entries()) == 15


def test_proxy_credentials_go_only_to_the_proxy_and_are_never_shown(
    make_tinyproxy: Callable[..., TinyProxy],
    make_proxy: Callable[..., LatencyProxy],
    nginx: NginxServer,
    nginx_root: Path,
) -> None:
    data = _data(nginx_root)
    guarded = make_tinyproxy(credentials=("reader", "s3cret-word"))
    origin = make_proxy(nginx.url(""))  # logs the headers the origin receives
    asyncio.run(_every_kind_of_read(origin.url("d.bin"), data, proxy=guarded.url))
    assert len(guarded.requests()) == 5
    assert all("proxy-authorization" not in entry["headers"] for entry in origin.log)
    options = TransportOptions(proxy=guarded.url)
    assert "s3cret" not in repr(options)
    assert "s3cret" not in repr(ProxyConfig.resolve(guarded.url))
    without = f"http://127.0.0.1:{guarded.port}"

    async def refused() -> list[str]:
        transport = Transport(TransportOptions(proxy=without))
        said = []
        for read in (
            lambda: transport.read(origin.url("d.bin"), 0, 10),
            lambda: transport.read(origin.url("d.bin"), 10, None),
        ):
            with pytest.raises(ProxyError, match="asks for credentials") as raised:
                await read()
            said.append(str(raised.value))
        return said

    for message in asyncio.run(refused()):
        assert without in message
    with pytest.raises(ProxyError) as raised:
        asyncio.run(
            Transport(TransportOptions(proxy=guarded.url.replace(str(guarded.port), "1"))).read(
                origin.url("d.bin"), 0, 10
            )
        )
    assert "s3cret" not in str(raised.value)
    assert "reader" not in str(raised.value)


def test_object_store_requests_follow_the_same_decision(
    monkeypatch: pytest.MonkeyPatch, tinyproxy: TinyProxy, moto_s3: MotoS3, s3_bucket_name: str
) -> None:
    moto_s3.create_bucket(s3_bucket_name)
    moto_s3.put(s3_bucket_name, "k.bin", b"0123456789" * 100)
    url = f"s3://{s3_bucket_name}/k.bin"
    storage = moto_s3.storage_options()

    def read(**options: object) -> bytes:
        transport = Transport(TransportOptions(storage_options=storage, **options))  # type: ignore[arg-type]
        return asyncio.run(transport.read(url, 5, 15)).data

    monkeypatch.setenv("HTTP_PROXY", tinyproxy.url)
    assert read() == b"5678901234"
    assert [r.target for r in tinyproxy.requests()] == [
        f"{moto_s3.endpoint}/{s3_bucket_name}/k.bin"
    ]
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert read() == b"5678901234"
    monkeypatch.delenv("NO_PROXY")
    assert read(proxy=False) == b"5678901234"  # obstore's own reading of HTTP_PROXY is off
    assert len(tinyproxy.requests()) == 1
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ProxyError, match=r"cannot connect to the proxy http://127\.0\.0\.1"):
        read(retries=0)


_HTTPS_CHILD = """
import asyncio, json, sys
from shadowzarr_store.transport import Transport, TransportOptions
url, expected_size = sys.argv[1], int(sys.argv[2])
async def main():
    transport = Transport(TransportOptions(multi_range=False))
    ranged = (await transport.read(url, 100, 200)).data
    rest = (await transport.read(url, expected_size - 50, None)).data
    many = [a.data for a in await transport.read_many(url, [(0, 10), (5000, 5010)])]
    return {"ranged": ranged.hex(), "rest": rest.hex(), "many": [m.hex() for m in many]}
print(json.dumps(asyncio.run(main())))
"""


def test_https_goes_through_a_connect_tunnel(tinyproxy: TinyProxy, tmp_path: Path) -> None:
    """Run in a child interpreter that trusts the tests' certificate authority."""
    authority = trustme.CA()
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    data = os.urandom(20_000)
    seen: list[str] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(f"{self.path} {self.headers.get('Proxy-Authorization')}")
            first, _, last = self.headers["Range"].removeprefix("bytes=").partition("-")
            start = int(first)
            end = min(int(last), len(data) - 1) if last else len(data) - 1
            body = data[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(context)
    with handler_server(Handler, tls=context) as port:
        url = f"https://localhost:{port}/d.bin"
        environment = {
            **{k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARIABLES},
            "SSL_CERT_FILE": str(bundle),
            "HTTPS_PROXY": tinyproxy.url,
        }
        completed = subprocess.run(
            [sys.executable, "-c", _HTTPS_CHILD, url, str(len(data))],
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
            check=False,
        )
    assert completed.returncode == 0, completed.stderr[-3000:]
    answer = json.loads(completed.stdout)
    assert bytes.fromhex(answer["ranged"]) == data[100:200]
    assert bytes.fromhex(answer["rest"]) == data[-50:]
    assert [bytes.fromhex(m) for m in answer["many"]] == [data[:10], data[5000:5010]]
    proxied = tinyproxy.requests()
    assert proxied, "nothing went through the proxy"
    assert {r.method for r in proxied} == {"CONNECT"}
    assert {r.target for r in proxied} == {f"localhost:{port}"}
    assert len(seen) == 4
    assert all(line.endswith(" None") for line in seen)  # no proxy credentials to the origin


@pytest.mark.parametrize(
    ("entries", "host", "port", "bypassed"),
    [
        ("*", "anything.example", 80, True),
        ("example.com", "example.com", 443, True),
        ("example.com", "data.example.com", 443, True),
        (".example.com", "example.com", 443, True),
        (".example.com", "a.b.example.com", 443, True),
        ("example.com", "notexample.com", 443, False),
        ("EXAMPLE.com", "Data.Example.COM.", 443, True),
        ("10.0.0.0/8", "10.1.2.3", 80, True),
        ("10.0.0.0/8", "11.1.2.3", 80, False),
        ("192.168.1.5", "192.168.1.5", 80, True),
        ("fd00::/8", "[fd12::1]", 80, True),
        ("[::1]:8080", "::1", 8080, True),
        ("[::1]:8080", "::1", 8081, False),
        ("example.com:8443", "example.com", 8443, True),
        ("example.com:8443", "example.com", 443, False),
        ("a.org b.org,,c.org", "b.org", 80, True),
        ("", "example.com", 80, False),
    ],
)
def test_no_proxy_follows_curl(entries: str, host: str, port: int, bypassed: bool) -> None:
    assert NoProxy.parse(entries).bypasses(host, port) is bypassed


def test_the_environment_is_read_as_curl_reads_it() -> None:
    lower_first = ProxyConfig.resolve(
        None, {"http_proxy": "http://lower:1", "HTTP_PROXY": "http://upper:2"}
    )
    assert lower_first.http is not None
    assert lower_first.http.host == "lower"
    every = ProxyConfig.resolve(None, {"ALL_PROXY": "proxy.local:3128"})
    assert every.http == every.https
    assert every.for_url("https", "x.org", None) is not None
    assert every.for_url("http", "x.org", None) is not None
    only_https = ProxyConfig.resolve(None, {"HTTPS_PROXY": "http://p:1"})
    assert only_https.for_url("http", "x.org", 80) is None
    # as a CGI script, HTTP_PROXY may come from a client's Proxy: header ("httpoxy")
    cgi = ProxyConfig.resolve(None, {"HTTP_PROXY": "http://evil:1", "REQUEST_METHOD": "GET"})
    assert cgi.http is None
    assert ProxyConfig.resolve(False, {"HTTP_PROXY": "http://p:1"}).http is None
    assert ProxyConfig.resolve("", {"HTTP_PROXY": "http://p:1"}).http is None
    explicit = ProxyConfig.resolve("http://mine:8", {"NO_PROXY": "inside.org"})
    assert explicit.for_url("http", "inside.org", 80) is None  # NO_PROXY still applies


@pytest.mark.parametrize(
    "setting", ["socks5://p:1080", "https://p:443", "http://p:99999", "http://u:a\r\nb@p:1"]
)
def test_an_unusable_proxy_setting_is_refused_by_name(setting: str) -> None:
    with pytest.raises(ProxyConfigError) as raised:
        TransportOptions(proxy=setting)
    assert "\r" not in str(raised.value)
    assert "a\r\nb" not in str(raised.value)


def test_a_remote_arrays_every_request_takes_the_proxy_option(
    tinyproxy: TinyProxy, nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    """The identity probe, the Zarr metadata reads and the chunk reads of `open_remote_array`
    all carry the caller's transport options (the proxy among them), not only the chunk reads."""
    import numpy as np
    import zarr

    from shadowzarr_store.remote import open_remote_array

    values = np.arange(60, dtype="<i4").reshape(6, 10)
    zarr.create_array(nginx_root / "p.zarr", data=values, chunks=(3, 5), zarr_format=3)
    remote = open_remote_array(
        nginx.url("p.zarr"), proxy=tinyproxy.url, cache_dir=tmp_path, reference_cache=False
    )
    np.testing.assert_array_equal(remote[:], values)
    proxied = tinyproxy.requests()
    assert len(proxied) == len(nginx.entries()) >= 3  # a probe, zarr.json, chunks
    assert {r.target.partition("p.zarr")[0] for r in proxied} == {nginx.url("")}
