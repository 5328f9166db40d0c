"""The plugin: skips fail in CI, are plain skips elsewhere; fixtures clean up after themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from shadowzarr_testing.plugin import free_port, in_ci

if TYPE_CHECKING:
    from shadowzarr_testing import LatencyProxy, NginxServer

pytest_plugins = ["pytester"]

SKIPPING_TESTS = """
import pytest

def test_skipped():
    pytest.skip("no data file")

@pytest.mark.skip(reason="marker reason")
def test_marked():
    pass

@pytest.mark.xfail(reason="known", strict=True)
def test_xfail():
    assert False

def test_passes():
    pass
"""


def _run_inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    # Only our plugin, loaded explicitly (it is also an installed entry point), in process.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_inprocess("-p", "shadowzarr_testing.plugin", "-p", "no:cacheprovider")


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    pytester.makepyfile(test_skips=SKIPPING_TESTS)
    return _run_inner(pytester, monkeypatch)


@pytest.mark.parametrize("value", ["true", "1"])
def test_skips_fail_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    result = _run(pytester, monkeypatch)
    # A skip marker skips during setup: that becomes an error, a skip in the body a failure.
    result.assert_outcomes(failed=1, errors=1, passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*skips are not allowed in CI: no data file*"])
    result.stdout.fnmatch_lines(["*skips are not allowed in CI: marker reason*"])


@pytest.mark.parametrize("value", [None, "false"])
def test_skips_are_skips_outside_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    result = _run(pytester, monkeypatch)
    result.assert_outcomes(skipped=2, passed=1, xfailed=1)


def test_module_level_skip_fails_collection_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(
        test_module_skip="""
        import pytest
        pytest.importorskip("a_module_that_does_not_exist_anywhere")

        def test_never_runs():
            pass
        """
    )
    result = _run_inner(pytester, monkeypatch)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*skips are not allowed in CI*a_module_that_does_not_exist*"])


def test_in_ci_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert in_ci()
    for value in ("", "0", "false", "no", "off"):
        monkeypatch.setenv("CI", value)
        assert not in_ci()
    monkeypatch.delenv("CI")
    assert not in_ci()


def test_free_port_is_bindable() -> None:
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.network
def test_fixtures_wire_proxy_to_nginx(nginx: NginxServer, proxy: LatencyProxy) -> None:
    import urllib.request

    nginx.write_file("hello.txt", b"hello")
    with urllib.request.urlopen(proxy.url("hello.txt")) as response:
        assert response.read() == b"hello"
    assert proxy.upstream == nginx.base_url
    assert proxy.count() == 1
    assert nginx.count(path_prefix="hello.txt") == 1
