"""User headers are bound to a scheme, host, port and path prefix, and never shown."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from store_handmade import write_reference_directory, write_sources

from shadowzarr_store import RfsStore, StoreOptions, open_rfs
from shadowzarr_store.transport.headers import HeaderRules

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

SECRET = "sz-unit-secret-9c1f"
RULES = HeaderRules.parse(
    {
        "https://Data.Example.org/api/": {"Authorization": f"Bearer {SECRET}"},
        "https://data.example.org/api/v2": {"X-Key": "v2"},
        "http://127.0.0.1:8080": {"X-Local": "local"},
    }
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://data.example.org/api/file.nwb", {"Authorization": f"Bearer {SECRET}"}),
        ("https://DATA.example.org:443/api", {"Authorization": f"Bearer {SECRET}"}),
        ("https://data.example.org/api/v2/x", {"X-Key": "v2"}),  # the longest prefix wins
        ("https://data.example.org/api/v20", {"Authorization": f"Bearer {SECRET}"}),
        ("https://data.example.org/apix/file", {}),  # whole segments only
        ("https://data.example.org/file", {}),
        ("http://data.example.org/api/file", {}),  # another scheme
        ("https://data.example.org:8443/api/file", {}),  # another port
        ("https://evil.example.org/api/file", {}),
        ("https://data.example.org.evil.net/api/file", {}),
        ("https://data.example.org/api/../private", {}),  # dot segments resolved first
        ("https://data.example.org/api/%2E%2E/private", {}),
        ("http://127.0.0.1:8080/any/path", {"X-Local": "local"}),
        ("http://127.0.0.1:8081/any/path", {}),
        ("http://localhost:8080/any/path", {}),
        ("/local/file.h5", {}),
        ("http://[::1/broken", {}),
    ],
)
def test_headers_go_only_where_they_are_bound(url: str, expected: dict[str, str]) -> None:
    assert RULES.for_url(url) == expected


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ("https://host/", TypeError),
        ({"host.example.org": {"X": "v"}}, ValueError),  # no scheme: ambiguous
        ({"ftp://host/": {"X": "v"}}, ValueError),
        ({"https://user@host/": {"X": "v"}}, ValueError),
        ({"https://host/?q=1": {"X": "v"}}, ValueError),
        ({"https://host:99999/": {"X": "v"}}, ValueError),
        ({"https://host/": {"Bad Name": "v"}}, ValueError),
        ({"https://host/": {"Range": "bytes=0-1"}}, ValueError),
        ({"https://host/": {"if-match": "x"}}, ValueError),
        ({"https://host/": {"X": f"{SECRET}\r\nX-Injected: 1"}}, ValueError),
        ({"https://host/": {"X": 1}}, TypeError),
        ({"https://host/": "X: v"}, TypeError),
        ({"https://host/a": {"X": "1"}, "https://HOST:443/a/": {"X": "2"}}, ValueError),
    ],
)
def test_invalid_headers_are_refused_without_showing_values(headers, error) -> None:
    with pytest.raises(error) as caught:
        StoreOptions.from_kwargs({"headers": headers})
    assert SECRET not in str(caught.value)


def test_values_never_appear_in_reprs_but_survive_pickling() -> None:
    options = StoreOptions.from_kwargs({"headers": {"https://host/": {"Authorization": SECRET}}})
    rules = options.transport_options.header_rules
    for text in (repr(options), str(options), repr(rules), repr(RULES)):
        assert SECRET not in text
    assert "Authorization" in repr(options)
    store = RfsStore({"version": 1, "refs": {}}, headers={"https://host/": {"X": SECRET}})
    assert SECRET not in repr(store)
    copy = pickle.loads(pickle.dumps(store))
    assert copy.options == store.options
    assert copy.options.transport_options.header_rules.for_url("https://host/f") == {"X": SECRET}
    assert StoreOptions.from_kwargs({"headers": RULES}).transport_options.header_rules is RULES
    assert not StoreOptions().transport_options.header_rules


@pytest.mark.network
def test_every_request_for_chunks_and_index_arrays_carries_the_header(
    make_proxy, nginx: NginxServer, nginx_root: Path
) -> None:
    """A reference directory behind the proxy: data chunks and index chunks both get it."""
    proxy = make_proxy()
    sources = write_sources(nginx_root / "data")
    write_reference_directory(sources, nginx_root / "refs.shadowzarr", proxy.url("data"))
    root = open_rfs(proxy.url("refs.shadowzarr"), headers={proxy.base_url: {"X-Key": SECRET}})
    for name, values in sources.expected.items():
        np.testing.assert_array_equal(root[name][...], values, err_msg=name)
    proxy.wait_idle()
    reads = [e for e in proxy.log if not e["path"].endswith("refs.json")]
    assert any(e["path"].startswith("/data/") for e in reads)
    assert any(e["path"].startswith("/refs.shadowzarr/index/") for e in reads)
    assert all(e["headers"].get("x-key") == SECRET for e in reads)


@pytest.mark.network
def test_the_reference_file_and_materialize_carry_the_header(
    make_proxy, nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    """refs.json itself is fetched with the header bound to it, by open_rfs and materialize."""
    from shadowzarr_store import materialize

    proxy = make_proxy()
    sources = write_sources(nginx_root / "data")
    write_reference_directory(sources, nginx_root / "refs.shadowzarr", proxy.url("data"))
    headers = {proxy.base_url: {"X-Key": SECRET}}
    materialize(proxy.url("refs.shadowzarr"), tmp_path / "copy.zarr", headers=headers)
    proxy.wait_idle()
    assert [e for e in proxy.log if e["path"].endswith("refs.json")]
    assert all(e["headers"].get("x-key") == SECRET for e in proxy.log)
    copy = zarr.open_group(tmp_path / "copy.zarr", mode="r")
    for name, values in sources.expected.items():
        np.testing.assert_array_equal(copy[name][...], values, err_msg=name)
