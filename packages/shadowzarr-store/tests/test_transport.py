"""The one transport against nginx, the project's proxy and hostile locations."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import (
    SourceAccessError,
    SourceChangedError,
    SourceError,
    SourceInfo,
    SourceNotFoundError,
)
from shadowzarr_testing import FaultRule, QuietHandler, handler_server

from shadowzarr_store import RfsStore, load_rfs
from shadowzarr_store.transport import (
    AccessPolicy,
    AnswerTooLargeError,
    RangeSource,
    SourceTimeoutError,
    Transport,
    TransportOptions,
    redact,
    run_blocking,
)
from shadowzarr_store.transport.dandi import token_header

if TYPE_CHECKING:
    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network

WORKSPACE = Path(__file__).resolve().parents[3]
NETWORK_MODULES = ("aiohttp", "requests", "urllib.request", "urllib.error", "http.client")
NETWORK_MODULES += ("obstore", "httpx", "urllib3", "yarl", "fsspec")
NETWORK_MODULES += (  # zarr's remote stores open their own connections with their own options
    "zarr.storage.FsspecStore",
    "zarr.storage.ObjectStore",
    "zarr.storage._fsspec",
    "zarr.storage._obstore",
)
FOREIGN_BASELINES = {("packages/shadowzarr/src/shadowzarr/demo/__init__.py", "fsspec")}
"""The demo measures h5py over fsspec as users read HDF5 without shadowzarr: a foreign reader
timed against ours, not a request of ours."""
TRANSPORT = WORKSPACE / "packages/shadowzarr-store/src/shadowzarr_store/transport"


def _read(url: str, start: int, end: int | None, **options: object) -> bytes:
    async def go() -> bytes:
        transport = Transport(TransportOptions(**options))  # type: ignore[arg-type]
        try:
            return (await transport.read(url, start, end)).data
        finally:
            await transport.aclose()

    return run_blocking(go())


def test_http_is_made_only_inside_the_transport() -> None:
    """No package but the transport imports an HTTP or object-store client (the test server
    machinery of shadowzarr-testing and the demo's range *server* are not clients)."""
    offenders = []
    for path in sorted(WORKSPACE.glob("packages/*/src/**/*.py")):
        if TRANSPORT in path.parents or "shadowzarr-testing" in path.parts:
            continue
        where = path.relative_to(WORKSPACE).as_posix()
        for line, name in network_names(path.read_text(encoding="utf-8")):
            if (where, name.partition(".")[0]) not in FOREIGN_BASELINES:
                offenders.append(f"{where}:{line}: {name}")
    assert offenders == []
    spec = WORKSPACE / "packages/shadowzarr-spec/src"
    assert not [p for p in spec.rglob("*.py") if "urllib.request" in p.read_text()]


def network_names(source: str) -> list[tuple[int, str]]:
    """The network clients ``source`` imports or uses, by full dotted name: every import, and
    every attribute chain read through what an import bound (``zarr.storage.FsspecStore``,
    ``storage.FsspecStore`` after ``from zarr import storage``, ``zs.ObjectStore`` after
    ``import zarr.storage as zs``)."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # a name an import binds -> the dotted name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    head = alias.name.partition(".")[0]
                    bound[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute):
            head, _, rest = _dotted(node).partition(".")
            if head in bound:
                names = [f"{bound[head]}.{rest}"]
        found += [
            (node.lineno, name)
            for name in names
            if any(name == m or name.startswith(m + ".") for m in NETWORK_MODULES)
        ]
    return found


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for an attribute chain on a name; ``""`` for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def test_the_guard_catches_every_spelling() -> None:
    """`network_names` finds a remote store or client however it is named (a check that
    finds nothing proves nothing until it is seen to find something)."""
    source = (
        "import fsspec\n"
        "import zarr\n"
        "import zarr.storage as zs\n"
        "from zarr import storage\n"
        "from zarr.storage import FsspecStore as F, LocalStore\n"
        "from zarr.storage._fsspec import FsspecStore\n"
        "import obstore.store\n"
        "a = zarr.storage.FsspecStore.from_url('s3://b/k')\n"
        "b = zs.ObjectStore(None)\n"
        "c = storage.FsspecStore.from_url('https://h/x')\n"
        "d = zarr.storage.LocalStore('x')\n"
        "e = zarr.open_group(zs.LocalStore('x'))\n"
    )
    assert sorted(network_names(source)) == [
        (1, "fsspec"),
        (5, "zarr.storage.FsspecStore"),
        (6, "zarr.storage._fsspec"),
        (6, "zarr.storage._fsspec.FsspecStore"),
        (7, "obstore.store"),
        (8, "zarr.storage.FsspecStore"),
        (8, "zarr.storage.FsspecStore.from_url"),
        (9, "zarr.storage.ObjectStore"),
        (10, "zarr.storage.FsspecStore"),
        (10, "zarr.storage.FsspecStore.from_url"),
    ]


@pytest.mark.parametrize(
    "url",
    [
        "http://host/public-secret/x",
        "http://host/public/../private/x",
        "http://host/public/%2e%2e/private/x",
        "http://host/public/%2E%2E/private/x",
        "http://host/public/./../private",
        "http://host/public%2f..%2fprivate/x",
        "http://host:8080/public/x",
        "https://host/public/x",
        "http://other/public/x",
        "http://host@evil/public/x",
        "ws://host/public/x",
        "ftp://host/public/x",
        "gopher://host/public/x",
        "unix:///var/run/x.sock",
        "s3://host/public/x",
    ],
)
def test_allow_list_bypasses_are_refused(url: str) -> None:
    policy = AccessPolicy.of(("http://host/public",), allow_local_files=False)
    with pytest.raises(SourceAccessError):
        policy.check(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://host/public",
        "http://host/public/x",
        "http://HOST:80/public/a/../b",
        "http://host/public/%78",
        "http://user:pw@host/public/x",
    ],
)
def test_allow_list_admits_whole_segments(url: str) -> None:
    AccessPolicy.of(("http://host/public",), allow_local_files=False).check(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999/x",
        "http://[::1/x",
        "http:///x",
        "https://user:hunter2@127.0.0.1:70000/x",
        "http://user:hunter2@[::1/x?sig=hunter2",
    ],
)
def test_an_unusable_url_is_refused_with_our_error(url: str) -> None:
    """A reference may hold any string: a URL no client can send is a `SourceAccessError`
    naming it (without its password), never yarl's or urllib's ValueError; no allow-list is
    needed for that."""
    with pytest.raises(SourceAccessError, match="not a usable URL") as refused:
        _read(url, 0, 8, retries=0)
    assert "hunter2" not in str(refused.value)
    assert "/x" in str(refused.value)  # named all the same


def test_object_store_prefixes_and_redirects() -> None:
    policy = AccessPolicy.of(("s3://bucket/data/",), allow_local_files=True)
    policy.check("s3://bucket/data/a.h5")
    for refused in ("s3://bucket/datab/x", "s3://other/data/x", "gs://bucket/data/x"):
        with pytest.raises(SourceAccessError):
            policy.check(refused)
    for hop in ("file:///etc/passwd", "unix:///tmp/s", "/etc/passwd", "s3://bucket/data/x"):
        with pytest.raises(SourceAccessError, match="redirect"):
            policy.check_redirect(hop)


def test_refused_before_any_request(nginx: NginxServer, nginx_root: Path) -> None:
    (nginx_root / "public").mkdir()
    (nginx_root / "private").mkdir()
    (nginx_root / "private" / "x.bin").write_bytes(b"secret")
    allowed = (nginx.url("public"),)
    for url in (nginx.url("public/../private/x.bin"), nginx.url("public/%2e%2e/private/x.bin")):
        with pytest.raises(SourceAccessError):
            _read(url, 0, 4, allowed_urls=allowed)
    with pytest.raises(SourceAccessError):
        _read(nginx.url("public-secret/x"), 0, 4, allowed_urls=allowed)
    assert nginx.count() == 0


def test_relative_sources_of_remote_references_are_resolved_before_the_check(
    nginx: NginxServer, nginx_root: Path
) -> None:
    (nginx_root / "public").mkdir()
    (nginx_root / "private.bin").write_bytes(b"\1" * 8)
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [8],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
    }
    refs = json.dumps(
        {
            "version": 1,
            "refs": {
                "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
                "x/zarr.json": json.dumps(meta),
                "x/c/0": ["../private.bin", 0, 8],
            },
        }
    )
    (nginx_root / "public" / "refs.json").write_text(refs)
    store = RfsStore(nginx.url("public/refs.json"), allowed_urls=[nginx.url("public/")])
    with pytest.raises(SourceAccessError):
        zarr.open_array(store, path="x", mode="r")[:]
    assert [e.uri for e in nginx.entries()] == ["/public/refs.json"]


def test_a_trickling_server_hits_the_deadline(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    (nginx_root / "slow.bin").write_bytes(os.urandom(100))
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=FaultRule("trickle", stall_seconds=0.5))
    started = time.monotonic()
    with pytest.raises(SourceTimeoutError, match="deadline"):
        _read(proxy.url("slow.bin"), 0, 100, deadline=2.0, timeout=1.0)
    assert time.monotonic() - started < 3.5
    assert isinstance(SourceTimeoutError("x"), TimeoutError | SourceError)


def test_a_server_ignoring_if_match_is_caught_by_the_etag(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    (nginx_root / "f.bin").write_bytes(b"a" * 4096)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=FaultRule("ignore_if_match"))
    url = proxy.url("f.bin")
    with RangeSource(url) as source:
        assert source.fetch_many([(0, 10)]) == [b"a" * 10]
        etag = source.etag
        assert etag
        time.sleep(1.1)  # nginx's ETag holds the mtime in seconds
        nginx.write_file("f.bin", b"b" * 4096)  # same size, new ETag
        with pytest.raises(SourceChangedError, match="ETag"):
            source.fetch_many([(100, 10)])
    sent = [e for e in proxy.log if e["range"] == "bytes=100-109"]
    assert sent
    assert all(e["headers"].get("if-match") == etag for e in sent)
    assert all(e["status"] == 206 for e in sent)  # the server did not refuse: we did


def test_a_short_body_is_retried_not_a_changed_source(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = os.urandom(50_000)
    (nginx_root / "f.bin").write_bytes(data)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=FaultRule("truncate", times=2))
    info = SourceInfo(size=len(data))
    transport = Transport(TransportOptions(backoff=0))

    async def go() -> bytes:
        try:
            return (await transport.read(proxy.url("f.bin"), 100, 40_100, expect=info)).data
        finally:
            await transport.aclose()

    assert run_blocking(go()) == data[100:40_100]
    assert transport.stats.snapshot().retries == 2


@pytest.mark.parametrize(
    "rule",
    [
        FaultRule("wrong_range", times=2, shift=7, honest=True),
        FaultRule("short_end", times=2),
        FaultRule("ignore_range", times=2),
    ],
    ids=["another Content-Range", "short, claiming the end", "200 to a Range"],
)
def test_a_wrong_content_range_is_retried_not_a_changed_source(
    make_proxy, nginx: NginxServer, nginx_root: Path, rule: FaultRule
) -> None:
    """Reported: a short body or a wrong Content-Range was a `SourceChangedError`, never
    retried, though the file had not changed (its ETag, recorded, says so); a 200 to a Range
    request was an error at once (found by the long fuzz run). Each is a framing error:
    retried, and the right bytes come back."""
    data = os.urandom(50_000)
    (nginx_root / "f.bin").write_bytes(data)
    proxy: LatencyProxy = make_proxy(nginx.url(""), faults=rule)
    transport = Transport(TransportOptions(backoff=0))

    async def go() -> bytes:
        try:
            recorded = await transport.probe(nginx.url("f.bin"))  # not through the proxy
            assert recorded.etag
            assert recorded.size == len(data)
            answer = await transport.read(proxy.url("f.bin"), 100, 40_100, expect=recorded)
            return answer.data
        finally:
            await transport.aclose()

    assert run_blocking(go()) == data[100:40_100]
    assert transport.stats.snapshot().retries == 2
    assert [e["fault"] for e in proxy.log] == [rule.kind, rule.kind, None]


def test_s3_like_server_is_noticed_once_and_its_body_never_read(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    data = os.urandom(4_000_000)
    (nginx_root / "big.bin").write_bytes(data)
    # A bandwidth cap, so that what the proxy pushes before the client hangs up is measurable.
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3", bandwidth=20e6)
    ranges = [(i * 200_000, 100) for i in range(10)]
    with RangeSource(proxy.url("big.bin"), max_gap=0) as source:
        assert source.fetch_many(ranges) == [data[o : o + n] for o, n in ranges]
        assert source.fetch_many(ranges[:5]) == [data[o : o + n] for o, n in ranges[:5]]
    proxy.wait_idle()
    several = [e for e in proxy.log if e["range"] and "," in e["range"]]
    assert len(several) == 1  # asked once per source
    assert several[0]["status"] == 200
    assert proxy.bytes_sent() < len(data) / 4  # the whole object was not downloaded
    assert len([e for e in proxy.log if e["range"] and "," not in e["range"]]) == 15


def test_the_multi_range_question_goes_on_the_first_answers_connection(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """The first multi-range request to a source asks whether the server answers them; it goes
    on the connection the first range came on (no set-up of its own), and S3's whole object is
    refused at its head: the ranges are then asked singly, every value right."""
    data = os.urandom(1_000_000)
    (nginx_root / "probe.bin").write_bytes(data)
    proxy: LatencyProxy = make_proxy(nginx.url(""), ranges="s3", bandwidth=20e6)
    ranges = [(i * 100_000, 10) for i in range(5)]
    with RangeSource(proxy.url("probe.bin"), max_gap=0) as source:
        assert source.fetch_many([(0, 100)]) == [data[:100]]
        assert source.fetch_many(ranges) == [data[o : o + n] for o, n in ranges]
    proxy.wait_idle()
    (question,) = [e for e in proxy.log if e["range"] and "," in e["range"]]
    assert question["new_connection"] is False
    assert question["status"] == 200
    assert proxy.bytes_sent() < len(data) / 2  # the whole object was not read


def test_multi_range_server_answers_many_ranges_per_request(
    nginx: NginxServer, nginx_root: Path
) -> None:
    data = os.urandom(2_000_000)
    (nginx_root / "blob.bin").write_bytes(data)
    ranges = [(i * 9_973, 100 + i) for i in range(200)]
    with RangeSource(nginx.url("blob.bin"), max_gap=0) as source:
        assert source.fetch_many(ranges) == [data[o : o + n] for o, n in ranges]
        assert source.stats.requests == nginx.count("GET") == 2
        assert source.stats.rounds == 1
        tail = [(1_000, 10), (500_000, 10), (1_999_990, 100)]  # past the end too
        assert source.fetch_many(tail) == [data[o : o + n] for o, n in tail]
    assert source.transport.multi_range_known(nginx.url("blob.bin")) is True


def test_dandi_token_never_goes_over_plain_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SZ_TOKEN", "t0ken")
    assert token_header("http://api.example.org/api/assets/a/download/", "SZ_TOKEN") == {}
    assert token_header("https://api.example.org/api/assets/a/download/", "SZ_TOKEN") == {
        "Authorization": "token t0ken"
    }
    # This machine: the request never leaves it.
    assert token_header("http://127.0.0.1:8000/api/assets/a/download/", "SZ_TOKEN")
    monkeypatch.delenv("SZ_TOKEN")
    assert token_header("https://api.example.org/api/", "SZ_TOKEN") == {}


def test_a_password_in_a_url_never_reaches_a_message(
    nginx: NginxServer, nginx_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret_url = nginx.url("missing.bin").replace("://", "://reader:hunter2@")
    assert "hunter2" not in redact(secret_url)
    assert "hunter2" not in redact(secret_url + "?X-Amz-Signature=abc&sig=hunter2")
    with pytest.raises(SourceNotFoundError) as caught:
        _read(secret_url, 0, 10)
    shown = "".join(traceback.format_exception(caught.value))
    assert "hunter2" not in shown
    assert "missing.bin" in shown
    with pytest.raises(SourceAccessError) as refused:
        _read(secret_url.replace("http://", "ws://"), 0, 10)
    assert "hunter2" not in str(refused.value)
    assert "hunter2" not in caplog.text
    transport = Transport(TransportOptions(storage_options={"secret_access_key": "hunter2"}))
    assert "hunter2" not in repr(transport.options)


def test_the_user_headers_go_with_the_first_request(
    nginx: NginxServer, nginx_root: Path, make_proxy
) -> None:
    (nginx_root / "f.bin").write_bytes(b"x" * 100)
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    headers = {proxy.url(""): {"Authorization": "Bearer abc"}}
    assert _read(proxy.url("f.bin"), 0, 10, headers=headers) == b"x" * 10
    assert proxy.log[0]["headers"]["authorization"] == "Bearer abc"


async def test_sessions_per_loop_and_concurrent_reads(nginx: NginxServer, nginx_root: Path) -> None:
    data = os.urandom(100_000)
    (nginx_root / "d.bin").write_bytes(data)
    transport = Transport()
    answers = await asyncio.gather(
        *(transport.read(nginx.url("d.bin"), i * 1000, i * 1000 + 10) for i in range(50))
    )
    assert [a.data for a in answers] == [data[i * 1000 : i * 1000 + 10] for i in range(50)]
    await transport.aclose()


def test_local_identity_catches_a_same_size_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    values = np.arange(10_000, dtype="<i4")
    path.write_bytes(values.tobytes())
    with RangeSource(path) as source:
        info = source.info
    assert info.size == values.nbytes
    assert info.mtime_ns
    assert info.sample_hash
    document = {
        "version": 1,
        "refs": {
            "zarr.json": '{"zarr_format":3,"node_type":"group"}',
            "v/zarr.json": (
                '{"zarr_format":3,"node_type":"array","shape":[10000],"data_type":"int32",'
                '"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[1000]}},'
                '"chunk_key_encoding":{"name":"default","configuration":{"separator":"/"}},'
                '"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}'
            ),
            **{f"v/c/{i}": [str(path), i * 4000, 4000] for i in range(10)},
        },
        "sources": {str(path): info.to_json()},
    }
    np.testing.assert_array_equal(
        zarr.open_array(RfsStore(load_rfs(document)), path="v")[:], values
    )
    # A copy (new mtime, same bytes) still reads.
    os.utime(path, ns=(info.mtime_ns + 5_000_000_000, info.mtime_ns + 5_000_000_000))
    np.testing.assert_array_equal(
        zarr.open_array(RfsStore(load_rfs(document)), path="v")[:], values
    )
    # A rewrite of the same size is caught, however the bytes were asked for.
    path.write_bytes(values[::-1].tobytes())
    with pytest.raises(SourceChangedError, match="rewritten"):
        zarr.open_array(RfsStore(load_rfs(document)), path="v")[:]


@contextmanager
def _server(seen: list[tuple[str, str | None]], redirects: dict[str, str]) -> Iterator[str]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            seen.append((f"{self.server.server_port}{self.path}", self.headers.get("X-Key")))
            target = redirects.get(self.path.removesuffix("/refs.json"))
            if target is not None:
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b'{"version": 1, "refs": {}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with handler_server(Handler) as port:
        yield f"http://127.0.0.1:{port}"


def test_reference_file_headers_follow_redirects_within_their_prefix_only() -> None:
    """A reference file at a URL is read by the transport: the caller's headers go to their
    own prefix, along a redirect within it, never along one to another origin."""
    seen: list[tuple[str, str | None]] = []
    with (
        _server(seen, {}) as other,
        _server(seen, {"/same": "/refs.json", "/away": other + "/refs.json"}) as home,
    ):
        headers = {home: {"X-Key": "secret"}}
        assert load_rfs(home + "/same/refs.json", headers=headers).refs == {}
        assert load_rfs(home + "/away/refs.json", headers=headers).refs == {}
    home_port = home.rsplit(":", 1)[1]
    other_port = other.rsplit(":", 1)[1]
    assert (f"{home_port}/same/refs.json", "secret") in seen
    assert (f"{home_port}/refs.json", "secret") in seen  # a redirect on the same origin keeps it
    assert (f"{other_port}/refs.json", None) in seen  # another port is another origin: dropped
    assert all(key is None for where, key in seen if where.startswith(other_port))


@pytest.mark.parametrize("target", ["file:///etc/passwd", "unix:///run/x.sock", "ws://h/x"])
def test_a_redirect_to_another_scheme_is_refused_with_our_error(target: str) -> None:
    seen: list[tuple[str, str | None]] = []
    with (
        _server(seen, {"/hop": target}) as home,
        pytest.raises(SourceAccessError, match="redirect"),
    ):
        load_rfs(home + "/hop/refs.json")
    assert len(seen) == 1  # the hop itself, nothing after it


@pytest.mark.parametrize("target", ["file:///etc/passwd", "unix:///run/x.sock", "ws://h/x"])
def test_a_redirect_of_a_range_to_another_scheme_is_refused_with_our_error(target: str) -> None:
    """Ranges go over the transport's own connections, which follow redirects themselves:
    the same refusal as for whole reads, and nothing asked of the place it points to."""
    seen: list[tuple[str, str | None]] = []
    with (
        _server(seen, {"/hop": target}) as home,
        RangeSource(home + "/hop", TransportOptions(multi_range=False), max_gap=0) as source,
        pytest.raises(SourceAccessError, match="redirect"),
    ):
        source.fetch_many([(0, 10)])
    assert len(seen) == 1  # the hop itself, refused where it was answered


def test_a_redirect_in_a_batch_is_followed_only_within_the_allowed_urls(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """A batch's single-range requests go over the transport's own HTTP/1.1 connections, which
    leave a redirect to aiohttp: each hop checked, the place remembered for the next batch."""
    data = os.urandom(200_000)
    (nginx_root / "f.bin").write_bytes(data)
    ranges = [(i * 5_000, 100 + i) for i in range(40)]
    proxy: LatencyProxy = make_proxy(nginx.url(""))
    seen: list[tuple[str, str | None]] = []
    with _server(seen, {"/f.bin": proxy.url("f.bin")}) as home:
        options = TransportOptions(multi_range=False, allowed_urls=[home + "/", proxy.url("")])
        with RangeSource(home + "/f.bin", options, max_gap=0) as source:
            for _ in range(2):
                assert source.fetch_many(ranges) == [data[o : o + n] for o, n in ranges]
        # Each range of the first batch was redirected; the second went straight there.
        assert proxy.count() == 2 * len(ranges)
        options = TransportOptions(multi_range=False, allowed_urls=[home + "/"])
        with (
            RangeSource(home + "/f.bin", options, max_gap=0) as source,
            pytest.raises(SourceAccessError, match="allowed_urls"),
        ):
            source.fetch_many(ranges)
    assert proxy.count() == 2 * len(ranges)


@pytest.mark.parametrize("how", ["plain", "gzip for those who accept it", "chunked"])
def test_a_whole_file_reads_right_however_the_server_frames_it(how: str) -> None:
    """Whole files go on our own connections when the answer has a Content-Length; a chunked
    answer is read by aiohttp instead. Every request asks for the bytes as stored (identity),
    so a server that compresses for clients accepting gzip (nginx's ``gzip on``) sends them
    plain: the bytes are the file's in every case."""
    import gzip

    document = json.dumps({"version": 1, "refs": {".zgroup": '{"zarr_format": 2}'}}).encode()
    asked: list[str | None] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            accepted = self.headers.get("Accept-Encoding")
            asked.append(accepted)
            compress = how.startswith("gzip") and "gzip" in (accepted or "")
            body = gzip.compress(document) if compress else document
            self.send_response(200)
            if compress:
                self.send_header("Content-Encoding", "gzip")
            if how == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with handler_server(Handler) as port:
        rfs = load_rfs(f"http://127.0.0.1:{port}/refs.json")
    assert sorted(rfs.refs) == ["zarr.json"]  # the v2 document, read as Zarr v3
    assert asked == ["identity"]  # once: a chunked answer is not asked for again


def test_a_whole_file_claiming_more_than_memory_holds_fails_with_our_error() -> None:
    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(10**15))
            self.end_headers()
            self.wfile.write(b"{}")

    with handler_server(Handler) as port:
        url = f"http://127.0.0.1:{port}/refs.json"
        # refused by the whole-file limit before anything is allocated
        with pytest.raises(AnswerTooLargeError, match="max_whole_file_bytes"):
            load_rfs(url, retries=0)
        with pytest.raises(SourceError, match="more than memory holds"):
            load_rfs(url, retries=0, max_whole_file_bytes=10**16)


def test_a_server_answering_in_chunks_costs_one_request_per_read_on_one_connection() -> None:
    """A server (or a proxy before it) that answers every range and file with
    ``Transfer-Encoding: chunked`` instead of a Content-Length: each read is one request, and
    the connection is kept for the next read, not closed and asked again."""
    data = os.urandom(40_000)
    seen: list[tuple[int, str | None]] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            asked = self.headers.get("Range")
            seen.append((self.client_address[1], asked))
            if asked:
                first, _, last = asked.removeprefix("bytes=").partition("-")
                start, end = int(first), min(int(last), len(data) - 1)
                body = data[start : end + 1]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            else:
                body = data
                self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(body), 7_000):  # several chunks, as a streaming server sends
                piece = body[i : i + 7_000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")

    with handler_server(Handler) as port:
        url = f"http://127.0.0.1:{port}/d.bin"

        async def reads() -> tuple[list[bytes], bytes, int | None]:
            transport = Transport(TransportOptions(retries=0))
            ranges = [
                bytes((await transport.read(url, i * 1000, i * 1000 + 900)).data) for i in range(20)
            ]
            whole = await transport.read_whole(url)
            return ranges, whole, (await transport.probe(url)).size

        ranges, whole, size = asyncio.run(reads())
    assert ranges == [data[i * 1000 : i * 1000 + 900] for i in range(20)]
    assert whole == data
    assert size == len(data)
    assert len(seen) == 22  # one request per read
    assert len({client for client, _ in seen}) == 1  # all on one kept connection


def test_reads_awaited_on_a_users_loops_share_the_transports_pool() -> None:
    """Reads awaited on a user's own loops (two ``asyncio.run`` calls) run on the transport's
    loop: the user's loop registers no pool or session of its own (nothing is left behind when
    it ends), and the second loop's reads go on the first loop's kept connection."""
    from shadowzarr_store.transport import run_blocking
    from shadowzarr_store.transport.pools import pools

    data = os.urandom(5_000)
    clients: list[int] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            clients.append(self.client_address[1])
            first, _, last = self.headers["Range"].removeprefix("bytes=").partition("-")
            start, end = int(first), min(int(last or len(data)), len(data) - 1)
            body = data[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    async def kept_connections(port: int) -> int:
        origins = pools().origins.items()
        return sum(pool.open_connections for key, pool in origins if key[2] == port)

    with handler_server(Handler) as port:
        url = f"http://127.0.0.1:{port}/d.bin"

        async def read() -> bytes:
            transport = Transport(TransportOptions(retries=0))
            got = (await transport.read(url, 10, 20)).data
            rest = (await transport.read(url, 4_990, None)).data  # to the end: the same pool
            assert rest == data[4_990:]
            registry = pools()  # this (the user's) loop's registry: never used
            assert registry.origins == {}
            assert registry.sessions == {}
            return bytes(got)

        assert asyncio.run(read()) == data[10:20]
        assert run_blocking(kept_connections(port)) == 1  # kept on the transport's loop
        assert asyncio.run(read()) == data[10:20]
    assert len(clients) == 4
    assert len(set(clients)) == 1  # one connection for both loops


_TO_THE_END_ANSWERS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "stops before the end": (206, {"Content-Range": "bytes 100-199/1000"}, b"x" * 100),
    "starts elsewhere": (206, {"Content-Range": "bytes 50-999/1000"}, b"x" * 950),
    "no Content-Range": (206, {}, b"x" * 900),
    "a range past the size it gives": (206, {"Content-Range": "bytes 100-999/500"}, b"x" * 900),
    "the whole file": (200, {}, b"x" * 1000),
    "compressed": (206, {"Content-Range": "bytes 100-999/1000", "Content-Encoding": "gzip"}, b"x"),
    "a body past the recorded size": (
        206,
        {"Content-Range": "bytes 100-1099/1100", "Transfer-Encoding": "chunked"},
        b"x" * 1000,
    ),
    "not satisfiable": (416, {"Content-Range": "bytes */50"}, b""),
    "a redirect to itself": (302, {"Location": "/d.bin"}, b""),
}


@pytest.mark.parametrize("case", sorted(_TO_THE_END_ANSWERS))
def test_wrong_answers_to_an_open_ended_range_are_our_errors(case: str) -> None:
    """``read(url, 100, None)`` (to the end) held to what it asked: each wrong answer is one
    of our errors naming the URL, never bytes of another range or a Python error."""
    status, headers, body = _TO_THE_END_ANSWERS[case]

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if headers.get("Transfer-Encoding") == "chunked":
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with handler_server(Handler) as port:
        url = f"http://127.0.0.1:{port}/d.bin"
        expect = SourceInfo(size=1000) if "recorded" in case else None

        async def read() -> None:
            transport = Transport(TransportOptions(retries=1, backoff=0))
            await transport.read(url, 100, None, expect=expect)

        with pytest.raises(SourceError) as raised:
            asyncio.run(read())
    assert url in str(raised.value)
    if case == "a body past the recorded size":
        assert isinstance(raised.value, SourceChangedError)
