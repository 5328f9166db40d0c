"""Remote archives: an S3 prefix (moto's real S3 server) published to S3 and read back from
there, and a dandiset listed page by page through the DANDI-like proxy, whose download URLs
redirect to presigned URLs on another origin."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest
from catalog_archive import write_hdf5
from shadowzarr_spec import SourceError
from shadowzarr_store import open_rfs
from shadowzarr_store.transport.object_store import list_objects
from shadowzarr_testing import assert_array_equal_exact

from shadowzarr_catalog import AssetLeftOutWarning, dandi, generate_catalog

if TYPE_CHECKING:
    from shadowzarr_testing import LatencyProxy, MotoS3

pytestmark = pytest.mark.network


def test_a_bucket_prefix_published_to_the_bucket(
    moto_s3: MotoS3, s3_bucket_name: str, tmp_path: Path
) -> None:
    bucket = moto_s3.create_bucket(s3_bucket_name)
    expected = {}
    for i, name in enumerate(["a.h5", "deep/b.nwb", "deep/c.h5"]):
        expected[name] = write_hdf5(tmp_path / "files" / name, i)
        moto_s3.put(bucket, f"archive/{name}", (tmp_path / "files" / name).read_bytes())
    moto_s3.put(bucket, "archive/readme.txt", b"not data")
    moto_s3.put(bucket, "elsewhere/d.h5", (tmp_path / "files" / "a.h5").read_bytes())
    options = moto_s3.storage_options()
    destination = f"s3://{bucket}/catalogs/one"

    summary = generate_catalog(
        f"s3://{bucket}/archive/", destination, storage_options=options, form="json"
    )
    assert summary.statuses == {"ok": 3, "skipped": 1}
    table = pd.read_parquet(io.BytesIO(moto_s3.get(bucket, "catalogs/one/catalog.parquet")))
    rows = table.set_index("asset_id")
    assert sorted(rows.index) == ["a.h5", "deep/b.nwb", "deep/c.h5", "readme.txt"]
    assert rows.loc["a.h5", "source_url"] == f"s3://{bucket}/archive/a.h5"
    assert rows.etag.notna().all()
    index = json.loads(moto_s3.get(bucket, "catalogs/one/index.json"))
    for name, values in expected.items():
        assert index[name] == f"refs/{name}.shadowzarr.json"
        group = open_rfs(f"{destination}/{index[name]}", storage_options=options)
        for path, array in values.items():
            assert_array_equal_exact(group[path][:], array, f"{name}:{path}")
    keys = [o.key for o in list_objects(f"s3://{bucket}/catalogs/", options)]
    assert "catalogs/one/catalog.sqlite" in keys

    # Unchanged objects cost nothing but the listing; a replaced one is generated again.
    again = generate_catalog(f"s3://{bucket}/archive/", destination, storage_options=options)
    assert again.generated == 3  # directories asked for now: each published asset again
    same = generate_catalog(f"s3://{bucket}/archive/", destination, storage_options=options)
    assert (same.generated, same.unchanged) == (0, 4)
    expected["a.h5"] = write_hdf5(tmp_path / "files" / "a.h5", 7)
    moto_s3.put(bucket, "archive/a.h5", (tmp_path / "files" / "a.h5").read_bytes())
    changed = generate_catalog(f"s3://{bucket}/archive/", destination, storage_options=options)
    assert changed.generated == 1
    group = open_rfs(f"{destination}/refs/a.h5.shadowzarr", storage_options=options)
    assert_array_equal_exact(group["signal"][:], expected["a.h5"]["signal"], "replaced a.h5")


def test_a_dandiset_listed_page_by_page(
    nginx, make_proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(dandi, "PAGE_SIZE", 2)
    proxy: LatencyProxy = make_proxy()
    expected = {}
    for i, path in enumerate(["sub-1/a.nwb", "sub-1/b.nwb", "sub-2/c.nwb", "sub-2/d.nwb", "e.h5"]):
        expected[path] = write_hdf5(nginx.path(path), i)
        proxy.add_asset(f"asset-{i}", path)
    dandiset = proxy.url("api/dandisets/000123/versions/draft/")
    destination = tmp_path / "catalog"

    summary = generate_catalog(dandiset, destination, dandi_api_key="a-key")
    generation_bytes = proxy.bytes_sent("/presigned/")
    assert summary.statuses == {"ok": 5}
    assert proxy.count("GET", "/api/dandisets/") == 3  # five assets, two a page
    listings = [e for e in proxy.log if e["path"].startswith("/api/dandisets/")]
    assert all(e["headers"].get("authorization") == "token a-key" for e in listings)
    rows = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    index = json.loads((destination / "index.json").read_text())
    for i, (path, values) in enumerate(expected.items()):
        asset = f"asset-{i}"
        assert rows.loc[asset, "path"] == path
        assert rows.loc[asset, "source_url"] == proxy.asset_download_url(asset)
        assert rows.loc[asset, "size"] == Path(nginx.path(path)).stat().st_size
        assert index[asset] == f"refs/{path}.shadowzarr"
        group = open_rfs(str(destination / index[asset]))
        assert_array_equal_exact(group["counts"][:], values["counts"], path)

    # What each generation cost, counted by its own transports: the proxy saw the same bytes.
    assert (rows.requests > 0).all()
    assert rows.bytes_read.sum() == generation_bytes

    proxy.reset()
    again = generate_catalog(dandiset, destination)
    assert (again.generated, again.unchanged) == (0, 5)
    downloads = [e for e in proxy.log if "/download" in e["path"] or "presigned" in e["path"]]
    assert downloads == []  # an unchanged asset costs no request to the asset itself


def test_a_path_a_dandiset_lists_twice_is_published_once(nginx, make_proxy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A listing naming one path under two asset ids (a draft changed while it was listed):
    the first id keeps the path's row and reference set, the other is left out with a warning,
    instead of two jobs writing one reference set, run after run."""
    proxy: LatencyProxy = make_proxy()
    values = write_hdf5(nginx.path("sub-1/x.nwb"), 3)
    proxy.add_asset("asset-a", "sub-1/x.nwb")
    proxy.add_asset("asset-b", "sub-1/x.nwb")
    dandiset = proxy.url("api/dandisets/000123/versions/draft/")
    destination = tmp_path / "catalog"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AssetLeftOutWarning)
        first = generate_catalog(dandiset, destination)
        second = generate_catalog(dandiset, destination)
    assert first.statuses == second.statuses == {"ok": 1}
    assert (first.generated, second.generated) == (1, 0)
    assert sum(w.category is AssetLeftOutWarning for w in caught) == 2
    rows = pd.read_parquet(destination / "catalog.parquet")
    assert list(rows.asset_id) == ["asset-a"]
    index = json.loads((destination / "index.json").read_text())
    assert index == {"asset-a": "refs/sub-1/x.nwb.shadowzarr"}
    group = open_rfs(str(destination / index["asset-a"]))
    assert_array_equal_exact(group["counts"][:], values["counts"], "sub-1/x.nwb")


def test_an_asset_shifted_across_pages_while_listed_is_not_missed(
    nginx, make_proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The first asset of a draft is deleted after the first page of a listing is read: the
    third one moves up onto the page already read, so the second page skips it. The asset
    count the pages report changed, so the version is listed again; the asset is published,
    not missed (nor marked removed in a catalog that had it)."""
    monkeypatch.setattr(dandi, "PAGE_SIZE", 2)
    proxy: LatencyProxy = make_proxy()
    paths = ["a.h5", "b.h5", "c.h5", "d.h5", "e.h5"]
    expected = {path: write_hdf5(nginx.path(path), i) for i, path in enumerate(paths)}
    for i, path in enumerate(paths):
        proxy.add_asset(f"asset-{i}", path)
    dandiset = proxy.url("api/dandisets/000123/versions/draft/")
    destination = tmp_path / "catalog"
    assert generate_catalog(dandiset, destination).statuses == {"ok": 5}

    def delete_the_first(page: int) -> None:
        if page == 1:
            proxy.after_listing_page = None
            proxy.remove_asset("asset-0")

    proxy.after_listing_page = delete_the_first
    proxy.reset()
    again = generate_catalog(dandiset, destination)
    assert (again.generated, again.unchanged, again.removed) == (0, 4, 1)
    rows = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    assert rows.status.to_dict() == {
        "asset-0": "removed",
        "asset-1": "ok",
        "asset-2": "ok",
        "asset-3": "ok",
        "asset-4": "ok",
    }
    assert proxy.count("GET", "/api/dandisets/") == 2 + 2  # two pages, each listing
    index = json.loads((destination / "index.json").read_text())
    group = open_rfs(str(destination / index["asset-2"]))
    assert_array_equal_exact(group["counts"][:], expected["c.h5"]["counts"], "c.h5")


def test_a_dandiset_edited_during_every_listing_misses_no_asset(
    nginx, make_proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The first asset is deleted after the first page of each of the three listings, so each
    listing misses another asset: the assets of the three are taken together, so none that is
    still there is marked removed. The deleted ones keep their rows until a steady listing
    marks them removed."""
    monkeypatch.setattr(dandi, "PAGE_SIZE", 2)
    proxy: LatencyProxy = make_proxy()
    paths = [f"{letter}.h5" for letter in "abcdefgh"]
    for i, path in enumerate(paths):
        write_hdf5(nginx.path(path), i)
        proxy.add_asset(f"asset-{i}", path)
    dandiset = proxy.url("api/dandisets/000123/versions/draft/")
    destination = tmp_path / "catalog"
    assert generate_catalog(dandiset, destination).statuses == {"ok": 8}

    deleted = iter(["asset-0", "asset-1", "asset-2"])

    def delete_one(page: int) -> None:
        if page == 1:
            gone = next(deleted, None)
            if gone is not None:
                proxy.remove_asset(gone)

    proxy.after_listing_page = delete_one
    proxy.reset()
    edited = generate_catalog(dandiset, destination)
    proxy.after_listing_page = None
    assert (edited.generated, edited.removed) == (0, 0)
    assert edited.statuses == {"ok": 8}
    assert proxy.count("GET", "/api/dandisets/") == 4 + 3 + 3

    steady = generate_catalog(dandiset, destination)
    assert (steady.generated, steady.removed) == (0, 3)
    rows = pd.read_parquet(destination / "catalog.parquet").set_index("asset_id")
    assert rows.status.to_dict() == {f"asset-{i}": "removed" if i < 3 else "ok" for i in range(8)}


def test_a_listing_entry_that_is_not_text_is_left_out(nginx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A DANDI-like API (here nginx serving a listing page) whose entries carry lone
    surrogates (JSON's ``\\ud800``) in an asset id, a path or a blob id: no row, URL or
    database can hold them, so each is left out with a warning, and the run publishes the
    asset beside them instead of stopping at a UnicodeEncodeError."""
    version = "api/dandisets/000123/versions/draft"
    good = write_hdf5(nginx.path("api/assets/asset-c/download/index.html"), 4)
    entries = [
        {"asset_id": "asset-\ud800", "path": "a.h5", "size": 10, "blob": "x"},
        {"asset_id": "asset-b", "path": "b\udce9.h5", "size": 10, "blob": "y"},
        {"asset_id": "asset-d", "path": "d.h5", "size": 10, "blob": "\udfff"},
        {"asset_id": "asset-c", "path": "c.h5", "size": None, "blob": "z"},
    ]
    page = {"count": 4, "next": None, "results": entries}
    nginx.write_file(f"{version}/assets/index.html", json.dumps(page).encode())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AssetLeftOutWarning)
        summary = generate_catalog(nginx.url(f"{version}/"), tmp_path / "catalog")
    assert summary.statuses == {"ok": 1}
    assert sum(w.category is AssetLeftOutWarning for w in caught) == 3
    index = json.loads((tmp_path / "catalog" / "index.json").read_text())
    assert index == {"asset-c": "refs/c.h5.shadowzarr"}
    group = open_rfs(str(tmp_path / "catalog" / index["asset-c"]))
    assert_array_equal_exact(group["counts"][:], good["counts"], "c.h5")


@pytest.mark.parametrize(
    ("page", "reason"),
    [
        (b"<html>maintenance</html>", "not JSON"),
        (b"[1, 2]", "not an object with a list"),
        (b'{"count": 1, "results": 5}', "not an object with a list"),
    ],
)
def test_a_listing_page_that_is_no_listing_is_a_source_error(  # type: ignore[no-untyped-def]
    nginx, tmp_path: Path, page: bytes, reason: str
) -> None:
    version = "api/dandisets/000123/versions/draft"
    nginx.write_file(f"{version}/assets/index.html", page)
    with pytest.raises(SourceError, match=reason):
        generate_catalog(nginx.url(f"{version}/"), tmp_path / "catalog")


def test_listing_pages_that_point_back_are_a_source_error(nginx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Two pages whose ``next`` links point at each other: the page read already is refused
    at once, not read again and again up to the listing's bound of pages."""
    version = "api/dandisets/000123/versions/draft"
    first = {"count": 0, "next": nginx.url(f"{version}/assets/p2/"), "results": []}
    back = nginx.url(f"{version}/assets/?page_size={dandi.PAGE_SIZE}&order=path")
    second = {"count": 0, "next": back, "results": []}
    nginx.write_file(f"{version}/assets/index.html", json.dumps(first).encode())
    nginx.write_file(f"{version}/assets/p2/index.html", json.dumps(second).encode())
    nginx.reset()
    with pytest.raises(SourceError, match="was read already"):
        generate_catalog(nginx.url(f"{version}/"), tmp_path / "catalog")
    assert nginx.count(path_prefix=f"{version}/assets/") == 2


@pytest.mark.parametrize(
    ("link", "reason"),
    [
        ("http://[abc/api/next", r"'http://\[abc/api/next' leaves the API"),
        ("https://user:secret@elsewhere/p?X-Amz-Signature=s3cret", "leaves the API"),
        # a password longer than the message shows of the link: cut before its "@", it would
        # no longer read as one
        (f"https://user:secret{'x' * 150}@elsewhere/", "leaves the API"),
        (["not", "a", "link"], "leaves the API"),
    ],
)
def test_a_next_page_off_the_api_is_a_source_error_that_shows_no_secret(  # type: ignore[no-untyped-def]
    nginx, tmp_path: Path, link: object, reason: str
) -> None:
    """A listing's ``next`` link is the server's: one that is no URL, one to another host
    (credentials and a signature in it), or no string at all ends the listing with a
    `SourceError`, and the message shows no secret the link carried (redacted before it is
    shortened)."""
    version = "api/dandisets/000123/versions/draft"
    page = {"count": 0, "next": link, "results": []}
    nginx.write_file(f"{version}/assets/index.html", json.dumps(page).encode())
    with pytest.raises(SourceError, match=reason) as raised:
        generate_catalog(nginx.url(f"{version}/"), tmp_path / "catalog")
    assert "secret" not in str(raised.value)
    assert "s3cret" not in str(raised.value)
