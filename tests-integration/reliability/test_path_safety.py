"""Where references may make the reader go: not out of their directory, not to local files when
they came from a URL, only to allowed URL prefixes, and redirects only to allowed places.

Regression tests of the store's ``allowed_urls`` / ``allow_local_files`` options and of the
index-chunk containment check (symlinks and ``file://`` index paths).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest
import zarr
from shadowzarr_spec import (
    ReferenceFormatError,
    SourceAccessError,
    UnsafePathError,
    rfs_from_json,
    rfs_to_json,
    write_rfs,
)
from shadowzarr_store import RfsStore, load_rfs
from shadowzarr_testing import assert_array_equal_exact

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer


def _open(refs, **options) -> zarr.Array:
    return zarr.open_array(RfsStore(refs, **options), path="pattern", mode="r", zarr_format=3)


@pytest.mark.parametrize(
    "key",
    [
        "../zarr.json",
        "a/../../zarr.json",
        "/etc/passwd",
        "a//b/zarr.json",
        "a/./zarr.json",
        "a\\..\\zarr.json",
        "a\x00/zarr.json",
        "x" * 5000,
    ],
)
def test_keys_escaping_the_reference_directory_are_refused(key: str) -> None:
    with pytest.raises(UnsafePathError):
        rfs_from_json({"version": 1, "refs": {key: "{}"}})


@pytest.mark.parametrize(
    "index_path", ["../outside", "index/../../outside", "/tmp/index", "index\\..\\x", "file:///etc"]
)
def test_index_paths_escaping_the_directory_are_refused(
    tmp_path: Path, make_pattern, index_path: str
) -> None:
    """At load time for relative forms; a ``file://`` base is refused when the index is read."""
    pattern = make_pattern(tmp_path / "p.bin", chunks=2000, chunk_items=4)
    directory = write_rfs(pattern.references(str(pattern.path)), tmp_path / "refs")
    document = json.loads((directory / "refs.json").read_text())
    document["indexes"]["pattern"]["index"] = index_path
    (directory / "refs.json").write_text(json.dumps(document))
    with pytest.raises(ReferenceFormatError):
        _open(directory)[:]


def test_a_symlinked_index_leading_out_of_the_directory_is_refused(
    tmp_path: Path, make_pattern
) -> None:
    pattern = make_pattern(tmp_path / "p.bin", chunks=2000, chunk_items=4)
    directory = write_rfs(pattern.references(str(pattern.path)), tmp_path / "refs")
    assert_array_equal_exact(_open(directory)[:], pattern.expected, "before the link")
    outside = tmp_path / "outside-index"
    (directory / "index" / "pattern").rename(outside)
    os.symlink(outside, directory / "index" / "pattern")
    with pytest.raises(UnsafePathError, match="outside the reference directory"):
        _open(directory)[:]


def _serve_references(nginx: NginxServer, refs, name: str = "refs.json") -> str:
    nginx.write_file(name, json.dumps(rfs_to_json(refs, expand=True)).encode())
    return nginx.url(name)


@pytest.mark.network
@pytest.mark.parametrize("form", ["path", "file-url"])
def test_references_from_a_url_may_not_read_local_files(
    nginx: NginxServer, tmp_path: Path, make_pattern, form: str
) -> None:
    """Unless ``allow_local_files=True`` is passed explicitly."""
    pattern = make_pattern(tmp_path / "secret.bin", chunks=2, chunk_items=16)
    url = str(pattern.path) if form == "path" else pattern.path.as_uri()
    refs_url = _serve_references(nginx, pattern.references(url))
    with pytest.raises(SourceAccessError, match="allow_local_files"):
        _open(load_rfs(refs_url))[:]
    allowed = _open(load_rfs(refs_url), allow_local_files=True)[:]
    assert_array_equal_exact(allowed, pattern.expected, "allowed explicitly")
    with pytest.raises(SourceAccessError):
        _open(pattern.references(url), allow_local_files=False)[:]


@pytest.mark.network
def test_allowed_urls_keep_requests_to_the_listed_prefixes(
    nginx: NginxServer, nginx_root: Path, make_nginx, tmp_path: Path, make_pattern
) -> None:
    """A reference to another server (an internal service) is refused before any request."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=4, chunk_items=16)
    internal_root = tmp_path / "internal"
    internal_root.mkdir()
    internal = make_nginx(internal_root)
    (internal_root / "p.bin").write_bytes(pattern.path.read_bytes())
    allowed = [nginx.url("")]
    assert_array_equal_exact(
        _open(pattern.references(nginx.url("p.bin")), allowed_urls=allowed)[:],
        pattern.expected,
        "allowed",
    )
    internal.reset()
    for url in (internal.url("p.bin"), nginx.url("p.bin").replace("127.0.0.1", "localhost")):
        with pytest.raises(SourceAccessError, match="allowed_urls"):
            _open(pattern.references(url), allowed_urls=allowed)[:]
    assert internal.count() == 0
    lookalike = nginx.url("").rstrip("/") + ".evil.example/p.bin"
    with pytest.raises(SourceAccessError):
        _open(pattern.references(lookalike), allowed_urls=[nginx.url("")])[:]
    with pytest.raises(TypeError):
        RfsStore(pattern.references(nginx.url("p.bin")), allowed_urls=nginx.url(""))


@pytest.mark.network
def test_redirects_are_followed_only_to_allowed_places(
    nginx: NginxServer, nginx_root: Path, make_proxy, make_pattern
) -> None:
    """The proxy's download URL answers 302 to another origin (like S3 behind DANDI)."""
    pattern = make_pattern(nginx_root / "p.bin", chunks=4, chunk_items=16)
    proxy = make_proxy()
    download = proxy.add_asset("asset-1", "p.bin")
    refs = pattern.references(download)
    plain = {"dandi_api_hosts": {}}
    with pytest.raises(SourceAccessError, match="allowed_urls"):
        _open(refs, allowed_urls=[proxy.url("")], **plain)[:]
    assert not [e for e in proxy.log if e["route"] == "presigned"]
    both = [proxy.url(""), proxy.presigned_base_url]
    assert_array_equal_exact(
        _open(refs, allowed_urls=both, **plain)[:], pattern.expected, "redirect allowed"
    )
    assert [e for e in proxy.log if e["route"] == "presigned"]
