"""The conversion reads what it reads itself (remote chunk manifests, source sizes, copied
chunks) as the user's store would: with their headers, ``allowed_urls`` and
``storage_options``; and references into S3 get an S3 container."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
import zarr
from icechunk_samples import assert_same
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import RfsBuilder, SourceAccessError, write_rfs
from shadowzarr_spec.model import FileRef
from shadowzarr_store import load_rfs

from shadowzarr_icechunk import required_containers, write_icechunk_repository

if TYPE_CHECKING:
    from shadowzarr_testing import MotoS3
    from shadowzarr_testing.plugin import MakeNginx

pytestmark = pytest.mark.network

SECRET = "sz-icechunk-key-5e0d"


def _protected_references(make_nginx: MakeNginx, root: Path) -> tuple[str, str, np.ndarray]:
    """nginx whose /private/ wants ``X-Key: SECRET``; there, references whose 1,500-chunk
    manifest is fetched from beside refs.json (not carried in it) and a whole file without a
    recorded size. Returns (references URL, /private/ URL, the values)."""
    nginx = make_nginx(root, protected={"/private/": ("X-Key", SECRET)})
    values = np.arange(3000, dtype="<i4")
    nginx.write_file("data/values.bin", values.tobytes())
    nginx.write_file("private/whole.bin", np.array([7, 8, 9], dtype="<i8").tobytes())
    builder = RfsBuilder()
    builder.add_array("values", shape=values.shape, data_type=values.dtype, chunk_shape=(2,))
    for i in range(1500):
        builder.add_chunk("values", (i,), nginx.url("data/values.bin"), i * 8, 8)
    builder.add_array("whole", shape=(3,), data_type="<i8")
    rfs = builder.build()
    rfs.refs["whole/c/0"] = FileRef(nginx.url("private/whole.bin"))  # no size anywhere
    write_rfs(rfs, nginx.path("private") / "refs.shadowzarr", inline_index_bytes=0)
    return nginx.url("private/refs.shadowzarr"), nginx.url("private/"), values


def test_remote_index_and_sizes_are_read_with_the_users_headers(
    make_nginx: MakeNginx, nginx_root: Path, tmp_path: Path
) -> None:
    url, private, values = _protected_references(make_nginx, nginx_root)
    headers = {private: {"X-Key": SECRET}}
    rfs = load_rfs(url, headers=headers)
    assert rfs.indexes["values"].path is not None
    assert not rfs.indexes["values"].files

    # The references are in hand, but the index beside them and the whole file's size are
    # behind the header: without it the conversion is refused (403), not filled in.
    with pytest.raises(SourceAccessError):
        write_icechunk_repository(rfs, tmp_path / "refused.icechunk")

    # With the header bound to the references folder only, the index is read but the size
    # of whole.bin (a HEAD to /private/whole.bin) is refused: the probe carries the headers.
    only_index = {url + "/": {"X-Key": SECRET}}
    with pytest.raises(SourceAccessError):
        write_icechunk_repository(rfs, tmp_path / "no-size.icechunk", headers=only_index)

    repo = write_icechunk_repository(url, tmp_path / "repo.icechunk", headers=headers)
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert_same(root["values"][:], values, "values")  # public data: Icechunk reads it itself
    assert SECRET.encode() not in b"".join(
        p.read_bytes() for p in (tmp_path / "repo.icechunk").rglob("*") if p.is_file()
    )


def test_allowed_urls_bound_what_the_conversion_reads(
    make_nginx: MakeNginx, nginx_root: Path, tmp_path: Path
) -> None:
    url, private, _ = _protected_references(make_nginx, nginx_root)
    headers = {private: {"X-Key": SECRET}}
    rfs = load_rfs(url, headers=headers)
    data = private.replace("/private/", "/data/")
    with pytest.raises(SourceAccessError):  # the index lives outside what is allowed
        required_containers(rfs, headers=headers, allowed_urls=[data])
    with pytest.raises(SourceAccessError):  # so does the data whose size is asked
        required_containers(rfs, headers=headers, allowed_urls=[private])
    prefixes = required_containers(rfs, headers=headers, allowed_urls=[private, data])
    assert prefixes == [private.removesuffix("private/")]


def test_s3_references_convert_and_read_back(
    moto_s3: MotoS3, s3_bucket_name: str, tmp_path: Path
) -> None:
    moto_s3.create_bucket(s3_bucket_name)
    rng = np.random.default_rng(3)
    values = {
        "x": rng.integers(0, 1000, size=(300, 40), dtype="<i4"),
        "y": rng.standard_normal(5000).astype("<f8"),
    }
    with h5py.File(tmp_path / "file.h5", "w") as f:
        f.create_dataset("x", data=values["x"], chunks=(50, 40), compression="gzip")
        f.create_dataset("y", data=values["y"], chunks=(1000,))
    moto_s3.put(s3_bucket_name, "data/file.h5", (tmp_path / "file.h5").read_bytes())
    options = moto_s3.storage_options()
    url = f"s3://{s3_bucket_name}/data/file.h5"
    rfs = generate_rfs(url, storage_options=options, progress=False)

    repo = write_icechunk_repository(rfs, tmp_path / "repo.icechunk", storage_options=options)
    assert list(repo.config.virtual_chunk_containers or {}) == [f"s3://{s3_bucket_name}/"]
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    for path, expected in values.items():
        assert_same(root[path][:], expected, path)
    stored = b"".join(
        p.read_bytes() for p in (tmp_path / "repo.icechunk").rglob("*") if p.is_file()
    )
    assert options["secret_access_key"].encode() not in stored
