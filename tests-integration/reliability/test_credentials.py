"""DANDI tokens go only to the DANDI API host, and never into references, caches, logs, errors
or exported (materialized) copies: every one of them is grepped for the token.

Budget: one embargoed asset read through the proxy's DANDI-like API (2 API requests at most,
a few presigned range requests), one refused asset, one materialize.
"""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
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
