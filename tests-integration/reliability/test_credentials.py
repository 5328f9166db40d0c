"""DANDI tokens go only to the DANDI API host, and user headers (the ``headers`` option) only to
the origin and path they are bound to; neither goes into references, caches, logs, errors or
exported (materialized) copies: every one of them is grepped for the secrets.

Budget: one embargoed asset read through the proxy's DANDI-like API (2 API requests at most,
a few presigned range requests), one refused asset, one materialize; for user headers, two
proxies (two hosts), one cross-origin redirect, three reads, one missing asset, three refused
header settings, one materialize.
"""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
import shadowzarr
import zarr
from shadowzarr_spec import SourceAccessError, SourceNotFoundError, rfs_to_json, write_rfs
from shadowzarr_store import LocalCache, RfsStore, materialize
from shadowzarr_testing import assert_array_equal_exact

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

pytestmark = [pytest.mark.network]
SECRET = "sz-secret-token-5f1d7c0e9a"


def _files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_dandi_token_goes_only_to_its_host_and_is_never_written(
    nginx: NginxServer,
    nginx_root: Path,
    make_proxy,
    make_pattern,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("DANDI_API_KEY", SECRET)
    pattern = make_pattern(nginx_root / "p.bin", chunks=8, chunk_items=256)
    proxy = make_proxy(api_key=SECRET)
    download = proxy.add_asset("embargoed-1", "p.bin", embargoed=True)
    api_host = urlsplit(proxy.url("")).netloc
    options = {
        "dandi_api_hosts": {api_host: "DANDI_API_KEY"},
        "local_cache": LocalCache(tmp_path / "cache"),
    }
    refs = pattern.references(download)
    array = zarr.open_array(RfsStore(refs, **options), path="pattern", mode="r", zarr_format=3)
    assert_array_equal_exact(array[:], pattern.expected, "embargoed asset")

    # Same host, but not a download URL: no token.
    plain = pattern.references(proxy.url("p.bin"))
    plain_array = zarr.open_array(RfsStore(plain, **options), path="pattern", mode="r")
    assert_array_equal_exact(plain_array[:], pattern.expected, "plain URL on the API host")

    proxy.wait_idle()
    with_token = [e for e in proxy.log if SECRET in json.dumps(e["headers"])]
    assert with_token, "the token was never sent to the API"
    assert {e["route"] for e in with_token} == {"api"}
    assert all("/download" in e["path"] for e in with_token)
    assert [e for e in proxy.log if e["route"] == "presigned"]
    assert [e for e in proxy.log if e["route"] == "proxy"]

    # Errors name the asset, never the token.
    missing = pattern.references(download.replace("embargoed-1", "no-such-asset"))
    with pytest.raises(SourceNotFoundError) as caught:
        zarr.open_array(RfsStore(missing, **options), path="pattern", mode="r")[:]
    shown = "".join(traceback.format_exception(caught.value))
    assert SECRET not in shown
    monkeypatch.setenv("DANDI_API_KEY", "wrong-token")
    refused = RfsStore(refs, dandi_api_hosts={api_host: "DANDI_API_KEY"})
    with pytest.raises(SourceAccessError) as caught:
        zarr.open_array(refused, path="pattern", mode="r")[:]
    assert "wrong-token" not in "".join(traceback.format_exception(caught.value))
    monkeypatch.setenv("DANDI_API_KEY", SECRET)

    # Nothing written anywhere holds it: references, cache, materialized copy, logs, output.
    export = tmp_path / "export"
    write_rfs(refs, export / "refs")
    (export / "refs.json").write_text(json.dumps(rfs_to_json(refs, expand=True)))
    materialize(refs, export / "copy.zarr", progress=False, **options)
    assert_array_equal_exact(
        zarr.open_array(export / "copy.zarr", path="pattern", mode="r")[:],
        pattern.expected,
        "materialized",
    )
    options["local_cache"].close()
    assert _files_holding(tmp_path, SECRET.encode()) == []
    assert caplog.records, "nothing was logged at DEBUG: the log check would be empty"
    assert SECRET not in caplog.text
    out, err = capfd.readouterr()
    assert SECRET not in out
    assert SECRET not in err


OTHER_SECRET = "sz-other-secret-3b9e41d2c8"


def test_user_headers_go_only_to_their_origin_and_path_and_are_never_written(
    nginx: NginxServer,
    nginx_root: Path,
    make_proxy,
    make_pattern,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Two proxies in front of nginx are two hosts (two loopback ports). Proxy A's header is
    bound to its ``/api/`` path; its download URL answers 302 to another origin (the presigned
    port), which must not get it; nor may A's other paths or proxy C (which has its own)."""
    caplog.set_level(logging.DEBUG)
    pattern = make_pattern(nginx_root / "p.bin", chunks=8, chunk_items=256)
    proxy_a, proxy_c = make_proxy(), make_proxy()
    download = proxy_a.add_asset("open-1", "p.bin")
    assert download.startswith(proxy_a.url("api/"))
    headers = {
        proxy_a.url("api/"): {"X-Api-Key": SECRET},
        proxy_c.base_url: {"Authorization": f"Bearer {OTHER_SECRET}"},
    }
    cache = LocalCache(tmp_path / "cache")
    options = {"dandi_api_hosts": {}, "headers": headers, "local_cache": cache}
    references = {
        "redirected": pattern.references(download),
        "other path": pattern.references(proxy_a.url("p.bin")),
        "other host": pattern.references(proxy_c.url("p.bin")),
    }
    for what, refs in references.items():
        array = zarr.open_array(RfsStore(refs, **options), path="pattern", mode="r")
        assert_array_equal_exact(array[:], pattern.expected, what)
    # The umbrella's open_rfs takes the same option (a fresh store, no cache: C is asked again).
    requests_before = proxy_c.requests
    group = shadowzarr.open_rfs(references["other host"], headers=headers)
    assert_array_equal_exact(group["pattern"][:], pattern.expected, "umbrella open_rfs")
    proxy_a.wait_idle()
    proxy_c.wait_idle()
    assert proxy_c.requests > requests_before

    def sent(entry: dict, secret: str) -> bool:
        return secret in json.dumps(entry["headers"])

    api = [e for e in proxy_a.log if e["route"] == "api"]
    assert api, "the download URL was never asked"
    assert all(sent(e, SECRET) for e in api)
    assert all(e["path"].startswith("/api/") for e in proxy_a.log if sent(e, SECRET))
    presigned = [e for e in proxy_a.log if e["route"] == "presigned"]
    assert presigned, "the redirect was never followed"
    assert not [e for e in presigned if sent(e, SECRET) or sent(e, OTHER_SECRET)]
    plain = [e for e in proxy_a.log if e["route"] == "proxy"]
    assert plain, "A's other path was never read"
    assert not [e for e in plain if sent(e, SECRET) or sent(e, OTHER_SECRET)]
    assert proxy_c.log
    assert all(sent(e, OTHER_SECRET) and not sent(e, SECRET) for e in proxy_c.log)

    # Errors name the URL, never a value: a missing asset, a refused header, a bad header.
    missing = pattern.references(download.replace("open-1", "no-such-asset"))
    with pytest.raises(SourceNotFoundError) as caught:
        zarr.open_array(RfsStore(missing, **options), path="pattern", mode="r")[:]
    shown = ["".join(traceback.format_exception(caught.value))]
    for bad in (
        {proxy_a.url(""): {"X-Api-Key": f"{SECRET}\r\nX-Injected: 1"}},
        {"ftp://example.org/": {"X-Api-Key": SECRET}},
        {proxy_a.url(""): {"Range": SECRET}},
    ):
        with pytest.raises((ValueError, TypeError)) as refused:
            RfsStore(missing, headers=bad)
        shown.append("".join(traceback.format_exception(refused.value)))
    store = RfsStore(missing, **options)
    shown += [repr(store), repr(store.options), str(store.options)]
    assert "X-Api-Key" in repr(store.options), "the repr should name the header"
    for text in shown:
        assert SECRET not in text
        assert OTHER_SECRET not in text

    # Nothing written holds either value: references, cache, materialized copy, logs, output.
    export = tmp_path / "export"
    write_rfs(references["redirected"], export / "refs")
    refs_json = rfs_to_json(references["redirected"], expand=True)
    (export / "refs.json").write_text(json.dumps(refs_json))
    materialize(references["redirected"], export / "copy.zarr", progress=False, **options)
    assert_array_equal_exact(
        zarr.open_array(export / "copy.zarr", path="pattern", mode="r")[:],
        pattern.expected,
        "materialized",
    )
    cache.close()
    assert any((tmp_path / "cache").rglob("*")), "the cache is empty: its check would be empty"
    for secret in (SECRET, OTHER_SECRET):
        assert _files_holding(tmp_path, secret.encode()) == []
        assert secret not in caplog.text
    assert caplog.records, "nothing was logged at DEBUG: the log check would be empty"
    out, err = capfd.readouterr()
    for secret in (SECRET, OTHER_SECRET):
        assert secret not in out
        assert secret not in err
