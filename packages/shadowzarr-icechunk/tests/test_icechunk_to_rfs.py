"""Icechunk → rfs: a repository's virtual, native and inline chunks as references, read through
RfsStore and compared with the repository's own read."""

from __future__ import annotations

from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr
from icechunk_samples import assert_same, local_container, local_put, make_repository, write_sample
from shadowzarr_spec import FileRef, InlineRef, RfsBuilder, read_local_rfs, write_rfs
from shadowzarr_store import open_rfs
from shadowzarr_testing.nginx import NginxServer

from shadowzarr_icechunk import icechunk_to_rfs, rfs_to_icechunk


def _arrays(group: zarr.Group) -> dict[str, zarr.Array]:
    return {
        path: array
        for path, array in group.members(max_depth=None)
        if isinstance(array, zarr.Array)
    }


def _assert_same_as_repository(rfs_group: zarr.Group, repo_group: zarr.Group) -> None:
    repo_arrays = _arrays(repo_group)
    assert set(_arrays(rfs_group)) == set(repo_arrays)
    for path, array in repo_arrays.items():
        assert_same(rfs_group[path][...], np.asarray(array[...]), path)
        assert rfs_group[path].attrs.asdict() == array.attrs.asdict(), path
    assert rfs_group.attrs.asdict() == repo_group.attrs.asdict()


def _sample_repository(tmp_path: Path, sample_folder: Path) -> icechunk.Repository:
    sample = write_sample(local_put(sample_folder))
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session)
    # a chunk the repository stores itself, too big to be inlined in the manifest
    native = zarr.create_array(
        session.store, name="native", shape=(5000,), chunks=(1000,), dtype="<f8"
    )
    native[:] = np.arange(5000) / 7
    session.commit("sample and native")
    return repo


def test_virtual_native_and_inline_chunks(tmp_path: Path, sample_folder: Path) -> None:
    repo = _sample_repository(tmp_path, sample_folder)
    session = repo.readonly_session("main")
    rfs = icechunk_to_rfs(session)
    assert isinstance(rfs.refs["values/c/0"], FileRef)
    assert rfs.refs["values/c/0"].url == (sample_folder / "values.zlib").resolve().as_uri()
    assert isinstance(rfs.refs["native/c/0"], InlineRef)  # copied in
    assert isinstance(rfs.refs["acq/samples/c/10/0"], InlineRef)  # the padded short chunk
    _assert_same_as_repository(open_rfs(rfs), zarr.open_group(session.store, mode="r"))


def test_native_chunks_referenced_in_place(tmp_path: Path, sample_folder: Path) -> None:
    repo = _sample_repository(tmp_path, sample_folder)
    session = repo.readonly_session("main")
    rfs = icechunk_to_rfs(session, native_chunks_prefix=str(tmp_path / "repo" / "chunks"))
    ref = rfs.refs["native/c/0"]
    assert isinstance(ref, FileRef)
    assert Path(ref.url).parent == tmp_path / "repo" / "chunks"
    write_rfs(rfs, tmp_path / "back.json")
    _assert_same_as_repository(
        open_rfs(tmp_path / "back.json"), zarr.open_group(session.store, mode="r")
    )


def test_manifest_above_1000_chunks(tmp_path: Path, sample_folder: Path) -> None:
    put = local_put(sample_folder)
    values = np.arange(4000, dtype="<i4")
    url = put("many.bin", values.tobytes())
    builder = RfsBuilder()
    builder.add_array("many", shape=values.shape, data_type=values.dtype, chunk_shape=(2,))
    builder.add_strided_chunks("many", url=url, start=0, stride=8, length=8, count=2000)
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(builder.build(), session)
    session.commit("many")

    rfs = icechunk_to_rfs(repo.readonly_session("main"))
    assert set(rfs.indexes) == {"many"}
    assert not any(key.startswith("many/c/") for key in rfs.refs)
    write_rfs(rfs, tmp_path / "back.shadowzarr")
    assert read_local_rfs(tmp_path / "back.shadowzarr").indexes["many"].path is not None
    assert_same(open_rfs(tmp_path / "back.shadowzarr")["many"][:], values, "many")


def test_url_for_maps_locations(tmp_path: Path, sample_folder: Path) -> None:
    repo = _sample_repository(tmp_path, sample_folder)
    rfs = icechunk_to_rfs(
        repo.readonly_session("main"), url_for=lambda url: url.removeprefix("file://")
    )
    assert rfs.refs["values/c/0"].url == str((sample_folder / "values.zlib").resolve())  # type: ignore[union-attr]
    session = repo.readonly_session("main")
    _assert_same_as_repository(open_rfs(rfs), zarr.open_group(session.store, mode="r"))


@pytest.mark.network
def test_http_virtual_chunks(tmp_path: Path, nginx: NginxServer) -> None:
    def put(name: str, data: bytes) -> str:
        nginx.write_file(name, data)
        return nginx.url(name)

    sample = write_sample(put)
    repo = make_repository(tmp_path / "repo", {nginx.url(""): icechunk.http_store()})
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session)
    session.commit("http")
    session = repo.readonly_session("main")
    rfs = icechunk_to_rfs(session)
    assert rfs.refs["values/c/0"].url == nginx.url("values.zlib")  # type: ignore[union-attr]
    nginx.reset()
    _assert_same_as_repository(open_rfs(rfs), zarr.open_group(session.store, mode="r"))
    assert nginx.count(path_prefix="/values.zlib") > 0
