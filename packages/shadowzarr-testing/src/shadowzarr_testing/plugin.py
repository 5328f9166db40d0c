"""pytest plugin of the shadowzarr workspace (registered through the ``pytest11`` entry point).

Fixtures: ``nginx_root``, ``nginx``, ``make_nginx``, ``proxy``, ``make_proxy``, ``moto_s3``
(one moto S3 server per test session), ``s3_bucket_name`` (a fresh bucket name per test) and
``tinyproxy`` / ``make_tinyproxy`` (a real forward proxy, `TinyProxy`).
In CI (the ``CI`` environment variable set to anything but ``""``, ``0``, ``false`` or ``no``)
a skipped test is reported as a failure: CI must prove that everything ran, and a missing tool
or file has to be fixed, not skipped.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from shadowzarr_testing._ports import free_port
from shadowzarr_testing.nginx import CorsMode, NginxServer
from shadowzarr_testing.proxy import LatencyProxy
from shadowzarr_testing.s3 import MotoS3
from shadowzarr_testing.tinyproxy import TinyProxy

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator, Mapping
    from pathlib import Path

    from _pytest.reports import CollectReport, TestReport
    from pluggy import Result

__all__ = [
    "MakeNginx",
    "MakeProxy",
    "free_port",
    "in_ci",
    "make_nginx",
    "make_proxy",
    "moto_s3",
    "nginx",
    "nginx_root",
    "proxy",
    "s3_bucket_name",
    "tinyproxy",
]

_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
SKIP_IN_CI_PREFIX = "skips are not allowed in CI: "


def in_ci() -> bool:
    """Whether the ``CI`` environment variable asks for the strict CI behaviour."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE_WORDS


class MakeNginx(Protocol):
    def __call__(
        self,
        root: str | os.PathLike[str],
        cors: CorsMode = "full",
        protected: Mapping[str, tuple[str, str]] | None = None,
    ) -> NginxServer: ...


class MakeProxy(Protocol):
    def __call__(self, upstream: str | None = None, **options: Any) -> LatencyProxy: ...


@pytest.fixture
def nginx_root(tmp_path: Path) -> Path:
    """An empty directory for the ``nginx`` fixture to serve; write test files into it."""
    root = tmp_path / "www"
    root.mkdir()
    return root


@pytest.fixture
def make_nginx() -> Iterator[MakeNginx]:
    """Factory ``make_nginx(root, cors="full", protected=None)``; every server is stopped at
    teardown."""
    servers: list[NginxServer] = []

    def make(
        root: str | os.PathLike[str],
        cors: CorsMode = "full",
        protected: Mapping[str, tuple[str, str]] | None = None,
    ) -> NginxServer:
        server = NginxServer(root, cors=cors, protected=protected)
        servers.append(server)
        return server.start()

    yield make
    for server in reversed(servers):
        server.stop()


@pytest.fixture
def nginx(make_nginx: MakeNginx, nginx_root: Path) -> NginxServer:
    """nginx serving ``nginx_root`` with full CORS, for one test."""
    return make_nginx(nginx_root, cors="full")


@pytest.fixture
def make_proxy(request: pytest.FixtureRequest) -> Iterator[MakeProxy]:
    """Factory ``make_proxy(upstream=None, **options)`` of running `LatencyProxy` objects.

    Without ``upstream`` the proxy forwards to the ``nginx`` fixture. Every proxy is stopped
    (its thread joined) at teardown.
    """
    proxies: list[LatencyProxy] = []

    def make(upstream: str | None = None, **options: Any) -> LatencyProxy:
        if upstream is None:
            server: NginxServer = request.getfixturevalue("nginx")
            upstream = server.url("")
        created = LatencyProxy(upstream, **options)
        proxies.append(created)
        return created.start()

    yield make
    for created in reversed(proxies):
        created.stop()


@pytest.fixture
def proxy(make_proxy: MakeProxy, nginx: NginxServer) -> LatencyProxy:
    """`LatencyProxy` in front of the ``nginx`` fixture, no latency, no faults, for one test."""
    return make_proxy(nginx.url(""))


@pytest.fixture
def make_tinyproxy() -> Iterator[Callable[..., TinyProxy]]:
    """Factory ``make_tinyproxy(credentials=None)`` of running `TinyProxy` forward proxies;
    every one is stopped at teardown."""
    started: list[TinyProxy] = []

    def make(credentials: tuple[str, str] | None = None) -> TinyProxy:
        created = TinyProxy(credentials)
        started.append(created)
        return created.start()

    yield make
    for created in reversed(started):
        created.stop()


@pytest.fixture
def tinyproxy(make_tinyproxy: Callable[..., TinyProxy]) -> TinyProxy:
    """A tinyproxy forward proxy on loopback (no credentials), for one test."""
    return make_tinyproxy()


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    """moto's S3 server on loopback, shared by the tests of a session (buckets per test)."""
    with MotoS3() as server:
        yield server


@pytest.fixture
def s3_bucket_name(request: pytest.FixtureRequest) -> str:
    """A bucket name no other test of the session uses (S3 wants 3 to 63 characters)."""
    _BUCKETS[0] += 1
    return f"sz-test-{_BUCKETS[0]}"


_BUCKETS = [0]


def _skip_reason(report: TestReport | CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail_skip(report: TestReport | CollectReport) -> None:
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        report.longrepr = SKIP_IN_CI_PREFIX + _skip_reason(report)
        report.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Result[TestReport], None]:
    """In CI, turn a skipped test (setup, call or teardown) into a failure."""
    outcome = yield
    _fail_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, Result[CollectReport], None]:
    """In CI, turn a module-level skip (``pytest.importorskip``…) into a collection error."""
    outcome = yield
    _fail_skip(outcome.get_result())
