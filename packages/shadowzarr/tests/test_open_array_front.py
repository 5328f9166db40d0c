"""shadowzarr.open_array as a new user meets it: addresses without a suffix and DANDI download
URLs, errors that name the dataset and the file, exports that reopen by themselves, plain
pickle, and the rest of blosc2's RemoteArray API, against h5py reading the same files."""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
import tifffile
from shadowzarr_spec import DatasetNotFoundError, SourceAccessError
from shadowzarr_store.remote import AddressError

import shadowzarr

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, NginxServer

pytestmark = pytest.mark.network

DATA = "acquisition/ElectricalSeries/data"


def _write(path: Path) -> np.ndarray:
    data = np.random.default_rng(3).integers(-3000, 3000, (1000, 6), dtype=np.int16)
    with h5py.File(path, "w") as file:
        series = file.create_group("acquisition/ElectricalSeries")
        series.create_dataset("data", data=data, chunks=(100, 6), compression="gzip")
        series["data"].attrs["unit"] = "volts"
        file.create_dataset("other", data=np.arange(5))
    return data


def test_a_name_without_a_suffix_is_told_by_its_first_bytes(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    data = _write(nginx_root / "blob")
    remote = shadowzarr.open_array(nginx.url("blob"), dataset=DATA, cache_dir=tmp_path)
    np.testing.assert_array_equal(remote[:], data)
    (nginx_root / "notes").write_text("plain text, not a container\n")
    with pytest.raises(AddressError, match=r"notes.*first bytes"):
        shadowzarr.open_array(nginx.url("notes"), dataset="x", cache_dir=tmp_path)


def test_first_bytes_are_read_with_the_callers_access_options(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    """The sniff of a suffix-less name goes through the transport like every other read: a URL
    outside ``allowed_urls`` is refused before nginx sees a single request."""
    data = _write(nginx_root / "blob")
    nginx.reset()
    with pytest.raises(SourceAccessError):
        shadowzarr.open_array(
            nginx.url("blob"),
            dataset=DATA,
            cache_dir=tmp_path,
            allowed_urls=[nginx.url("elsewhere/")],
        )
    assert nginx.count() == 0
    remote = shadowzarr.open_array(
        nginx.url("blob"), dataset=DATA, cache_dir=tmp_path, allowed_urls=[nginx.url("")]
    )
    np.testing.assert_array_equal(remote[:10], data[:10])


def test_dandi_download_urls_as_they_are(
    nginx: NginxServer, nginx_root: Path, proxy: LatencyProxy, tmp_path: Path
) -> None:
    (nginx_root / "blobs" / "ab").mkdir(parents=True)
    data = _write(nginx_root / "blobs" / "ab" / "asset.nwb")
    proxy.add_asset("a1b2", "blobs/ab/asset.nwb")
    url = proxy.asset_download_url("a1b2")
    assert url.endswith("/api/assets/a1b2/download/")
    for index, remote in enumerate(
        (
            shadowzarr.open_array(url, dataset=DATA, cache_dir=tmp_path / "1"),
            shadowzarr.open_array(f"{url}::/{DATA}", cache_dir=tmp_path / "2"),
            shadowzarr.open_array(f"{url}{DATA}", cache_dir=tmp_path / "3"),
        )
    ):
        assert remote.dataset == DATA, index
        np.testing.assert_array_equal(remote[250:750, 2], data[250:750, 2])


def test_errors_name_the_dataset_and_the_file(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    _write(nginx_root / "session.nwb")
    url = nginx.url("session.nwb")
    with pytest.raises(DatasetNotFoundError) as missing:
        shadowzarr.open_array(f"{url}::/acquisition/nope", cache_dir=tmp_path)
    assert "acquisition/nope" in str(missing.value)
    assert url in str(missing.value)
    assert " object at 0x" not in str(missing.value)
    with pytest.raises(DatasetNotFoundError, match=r"'acquisition' is not a dataset .*a group"):
        shadowzarr.open_array(f"{url}::/acquisition", cache_dir=tmp_path)
    tifffile.imwrite(nginx_root / "flat.tif", np.zeros((32, 32), "uint8"))
    flat = nginx.url("flat.tif")
    with pytest.raises(
        DatasetNotFoundError, match=r"flat\.tif is not a pyramid: it has no level 2"
    ):
        shadowzarr.open_array(flat, level=2, cache_dir=tmp_path)
    with pytest.raises(DatasetNotFoundError, match=r"flat\.tif has no series 3"):
        shadowzarr.open_array(flat, series=3, cache_dir=tmp_path)


def test_exports_reopen_without_naming_the_dataset(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    data = _write(nginx_root / "session.nwb")
    remote = shadowzarr.open_array(
        nginx.url("session.nwb") + f"::/{DATA}", cache="disk", cache_dir=tmp_path / "c"
    )
    remote.fetch(slice(0, 300))
    folder = remote.save(tmp_path / "warm.shadowzarr")
    single = remote.save(tmp_path / "warm.json")
    cold = remote.save(tmp_path / "cold.shadowzarr", include_cache=False)
    frame = remote.to_cframe()
    nginx.reset()
    for carrier in (folder, single, frame):
        again = shadowzarr.open_array(carrier, cache="none", offline=True)
        assert again.dataset == DATA
        np.testing.assert_array_equal(again[:300], data[:300])  # warm: nothing fetched
    assert nginx.count() == 0
    reopened = shadowzarr.open_array(cold, cache="none")
    np.testing.assert_array_equal(reopened[:], data)
    assert nginx.count(path_prefix="session.nwb") > 0
    whole = shadowzarr.generate_rfs(nginx.url("session.nwb"), progress=False)
    with pytest.raises(AddressError, match=r"holds 2 arrays; name one"):
        shadowzarr.open_array(whole)


def test_plain_pickle(nginx: NginxServer, nginx_root: Path, tmp_path: Path) -> None:
    data = _write(nginx_root / "session.nwb")
    for options in ({"cache": "memory"}, {"cache": "disk"}, {"assume_immutable": False}):
        remote = shadowzarr.open_array(
            nginx.url("session.nwb") + f"::/{DATA}", cache_dir=tmp_path, **options
        )
        remote[:100]
        copy = pickle.loads(pickle.dumps(remote))
        np.testing.assert_array_equal(copy[:], data)
        assert copy.urlpath == remote.urlpath
        assert copy.cache_policy == remote.cache_policy
    assert copy.refresh() is False  # a copy that checks its source still can


def test_the_rest_of_the_remote_array_api(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    data = _write(nginx_root / "session.nwb")
    url = nginx.url("session.nwb")
    signed = shadowzarr.open_array(f"{url}?token=s3cr3t&part=1", dataset=DATA, cache_dir=tmp_path)
    assert signed.urlpath == f"{url}?part=1::/{DATA}"  # no credential-like parameter
    remote = shadowzarr.open_array(f"{url}::/{DATA}", cache="memory", cache_dir=tmp_path)
    assert remote.urlpath == f"{url}::/{DATA}"
    assert remote.vlmeta["unit"] == "volts"
    with pytest.raises(TypeError):
        remote.vlmeta["unit"] = "other"  # type: ignore[index]
    assert not remote.cache_contains()
    remote.fetch(slice(0, 200))
    assert remote.cache_contains(slice(0, 200))
    assert remote.cache_contains(nchunk=1)
    assert not remote.cache_contains(nchunk=2)
    with h5py.File(nginx_root / "session.nwb") as file:
        _, stored = file[DATA].id.read_direct_chunk((300, 0))
    assert remote.get_chunk(3) == stored  # the bytes as stored in the file
    assert remote.chunk_region(3) == (slice(300, 400), slice(0, 6))
    with pytest.raises(IndexError, match="10 chunks"):
        remote.get_chunk(10)
    assert remote.trim_cache(0, max_chunks=1) == 1
    assert remote.cache_contains(nchunk=1) != remote.cache_contains(nchunk=0)
    assert remote.trim_cache(0) >= 1
    assert remote.cache_bytes == 0
    copy = remote.materialize((slice(10, 20), 3))
    np.testing.assert_array_equal(copy, data[10:20, 3])
    copy[:] = 0  # independent of the array
    np.testing.assert_array_equal(remote[10:20, 3], data[10:20, 3])
    assert remote.sum() == int(data.astype(np.int64).sum())
    np.testing.assert_array_equal(remote.max(axis=0), data.max(axis=0))
    np.testing.assert_allclose(remote.std(axis=1, ddof=1), data.std(axis=1, ddof=1))
