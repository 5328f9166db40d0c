"""rfs → Icechunk: written into a repository on the local filesystem, read back with zarr and
compared with the arrays the source files were written from."""

from __future__ import annotations

import json
from pathlib import Path

import icechunk
import numpy as np
import pytest
import requests
import zarr
from icechunk_samples import (
    assert_same,
    local_container,
    local_put,
    make_repository,
    write_sample,
)
from shadowzarr_spec import (
    NON_FINITE_CONVENTION,
    RfsBuilder,
    decode_attributes,
    write_rfs,
)
from shadowzarr_store import load_rfs, open_rfs
from shadowzarr_testing.nginx import NginxServer

from shadowzarr_icechunk import (
    MissingVirtualChunkContainerError,
    SelectionNotSupportedError,
    required_containers,
    rfs_to_icechunk,
    write_icechunk_repository,
)


def _read_all(group: zarr.Group, expected: dict[str, np.ndarray]) -> None:
    for path, values in expected.items():
        assert_same(group[path][...], values, path)


def test_local_files_round_trip(tmp_path: Path, sample_folder: Path) -> None:
    sample = write_sample(local_put(sample_folder))
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session)
    session.commit("sample")

    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    _read_all(root, sample.expected)
    # the references themselves read the same through RfsStore
    _read_all(open_rfs(sample.rfs), sample.expected)
    assert root["acq/samples"].metadata.dimension_names == ("time", "channel")


def test_chunk_kinds(tmp_path: Path, sample_folder: Path) -> None:
    """Full chunks are virtual, the short last one, inline and string chunks are native."""
    sample = write_sample(local_put(sample_folder))
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session)
    virtual = icechunk.ChunkType.virtual
    assert session.chunk_type("/acq/samples", [0, 0]) == virtual
    assert session.chunk_type("/acq/samples", [10, 0]) != virtual  # short: past the end of file
    assert session.chunk_type("/values", [3]) == virtual
    assert session.chunk_type("/scalar", []) == virtual
    assert session.chunk_type("/small", [0]) != virtual
    assert session.chunk_type("/names", [0]) != virtual
    assert set(session.all_virtual_chunk_locations()) == {
        (sample_folder / name).resolve().as_uri()
        for name in ("samples.bin", "values.zlib", "scalar.bin")
    }


def test_attributes_and_consolidated_metadata(tmp_path: Path, sample_folder: Path) -> None:
    sample = write_sample(local_put(sample_folder))
    assert "consolidated_metadata" in json.loads(sample.rfs.refs["zarr.json"].data)  # type: ignore[union-attr]
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session)
    session.commit("sample")
    store = repo.readonly_session("main").store
    root = zarr.open_group(store, mode="r")
    raw = zarr.core.sync.sync(store.get("zarr.json", zarr.core.buffer.default_buffer_prototype()))
    document = json.loads(raw.to_bytes())
    assert "consolidated_metadata" not in document or document["consolidated_metadata"] is None
    attributes = root.attrs.asdict()
    assert attributes["missing"] == "NaN"
    assert NON_FINITE_CONVENTION["uuid"] in {c["uuid"] for c in attributes["zarr_conventions"]}
    assert np.isnan(decode_attributes(attributes)["missing"])
    array_attributes = decode_attributes(root["acq/samples"].attrs.asdict())
    assert array_attributes == {"rate": 30000.0, "offset": float("-inf")}


def test_bare_non_finite_tokens_written_as_strings(tmp_path: Path, sample_folder: Path) -> None:
    """Legacy references hold bare NaN tokens, which Icechunk refuses."""
    folder = local_put(sample_folder)
    url = folder("x.bin", np.arange(4, dtype="<f4").tobytes())
    document = {
        "version": 1,
        "refs": {
            "zarr.json": '{"zarr_format":3,"node_type":"group","attributes":{"gain":NaN}}',
            "x/zarr.json": json.dumps(
                {
                    "zarr_format": 3,
                    "node_type": "array",
                    "shape": [4],
                    "data_type": "float32",
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
                    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                    "fill_value": 0.0,
                    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                    "attributes": {"resolution": float("inf"), "unit": "NaN"},
                }
            ),
            "x/c/0": [url, 0, 16],
        },
    }
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(document, session)
    session.commit("legacy")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert root.attrs["gain"] == "NaN"
    assert root["x"].attrs["resolution"] == "Infinity"
    assert decode_attributes(root["x"].attrs.asdict()) == {"resolution": np.inf, "unit": "NaN"}
    assert_same(root["x"][:], np.arange(4, dtype="<f4"), "x")


def test_implicit_groups_written(tmp_path: Path, sample_folder: Path) -> None:
    """References without the zarr.json of some groups (as kerchunk files may be)."""
    url = local_put(sample_folder)("x.bin", np.arange(6, dtype="<i8").tobytes())
    metadata = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [6],
        "data_type": "int64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }
    document = {
        "version": 1,
        "refs": {
            "a/b/x/zarr.json": json.dumps(metadata),
            "a/b/x/c/0": [url, 0, 24],
            "a/b/x/c/1": [url, 24, 24],
        },
    }
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(document, session)
    session.commit("implicit")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert isinstance(root["a/b"], zarr.Group)
    assert_same(root["a/b/x"][:], np.arange(6, dtype="<i8"), "x")


def test_manifest_and_whole_file(tmp_path: Path, sample_folder: Path) -> None:
    """An array whose chunks are in a stored chunk manifest, and a chunk that is a whole file."""
    put = local_put(sample_folder)
    values = np.arange(3000, dtype="<u2")
    url = put("long.bin", values[::-1].tobytes())
    builder = RfsBuilder()
    builder.add_array("long", shape=values.shape, data_type=values.dtype, chunk_shape=(2,))
    for i in range(1500):  # chunk i holds values[2i:2i+2], stored reversed in the file
        builder.add_chunk("long", (i,), url, (1499 - i) * 4, 4)
    whole = np.array([7, 8, 9], dtype="<i8")
    whole_url = put("whole.bin", whole.tobytes())
    builder.add_array("whole", shape=(3,), data_type=whole.dtype)
    rfs = builder.build()
    rfs.refs["whole/c/0"] = type(rfs.refs["long/c/0"])(whole_url)  # [url]: the whole file
    write_rfs(rfs, tmp_path / "refs.shadowzarr")
    loaded = load_rfs(tmp_path / "refs.shadowzarr")
    assert "long" in loaded.indexes
    assert loaded.indexes["long"].path is not None
    expected_long = values[::-1].reshape(1500, 2)[::-1].ravel()

    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(tmp_path / "refs.shadowzarr", session)
    session.commit("index")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert_same(root["long"][:], expected_long, "long")
    assert_same(root["whole"][:], whole, "whole")


def test_selection_refused_unless_copied(tmp_path: Path, sample_folder: Path) -> None:
    put = local_put(sample_folder)
    records = np.arange(60, dtype="<i2").reshape(20, 3)
    url = put("records.bin", records.tobytes())
    builder = RfsBuilder()
    builder.add_array("ch1", shape=(20,), data_type="<i2", chunk_shape=(8,))
    for i in range(3):
        builder.add_chunk("ch1", (i,), url, i * 48, min(48, 120 - i * 48))  # the file's 20 records
    builder.add_selection("ch1", 6, [[2, 4]])
    rfs = builder.build()
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    with pytest.raises(SelectionNotSupportedError, match="copy_selections=True"):
        rfs_to_icechunk(rfs, session)
    assert not session.has_uncommitted_changes
    rfs_to_icechunk(rfs, session, copy_selections=True)
    session.commit("copied")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert_same(root["ch1"][:], records[:, 1], "ch1")
    assert repo.readonly_session("main").all_virtual_chunk_locations() == []


def test_missing_containers_reported(tmp_path: Path, sample_folder: Path) -> None:
    sample = write_sample(local_put(sample_folder))
    prefix = f"{sample_folder.resolve().as_uri()}/"
    assert required_containers(sample.rfs) == [prefix]
    repo = make_repository(tmp_path / "repo", {})
    session = repo.writable_session("main")
    with pytest.raises(MissingVirtualChunkContainerError) as caught:
        rfs_to_icechunk(sample.rfs, session)
    assert caught.value.prefixes == [prefix]
    assert prefix in str(caught.value)
    assert not session.has_uncommitted_changes


def test_url_for_maps_locations(tmp_path: Path, sample_folder: Path) -> None:
    """References to a place Icechunk has no container for, mapped to the local copies."""
    sample = write_sample(lambda name, data: f"https://archive.example/blobs/{name}")
    actual = write_sample(local_put(sample_folder))

    def url_for(url: str) -> str | None:
        name = url.rsplit("/", 1)[-1]
        return (sample_folder / name).resolve().as_uri()

    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session, url_for=url_for)
    session.commit("mapped")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    _read_all(root, actual.expected)


@pytest.mark.network
def test_http_round_trip_and_changed_source_refused(tmp_path: Path, nginx: NginxServer) -> None:
    def put(name: str, data: bytes) -> str:
        nginx.write_file(name, data)
        return nginx.url(name)

    def etag_of(url: str) -> str:
        return requests.head(url, timeout=10).headers["ETag"]

    sample = write_sample(put, etag_of=etag_of)
    assert all(source.etag for source in sample.rfs.sources.values())
    prefix = nginx.url("")
    repo = make_repository(tmp_path / "repo", {prefix: icechunk.http_store()})
    session = repo.writable_session("main")
    rfs_to_icechunk(sample.rfs, session)
    session.commit("http")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    _read_all(root, sample.expected)

    # Replace the compressed file with other bytes of the same length: a new ETag.
    original = nginx.path("values.zlib").read_bytes()
    nginx.write_file("values.zlib", original[::-1])
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    # The unchanged file first: icechunk abandons the refused response mid-body, and under load
    # its next request on the same pooled connection can fail as "connection closed before
    # message completed" (seen once in CI), which is icechunk's transport, not the references.
    assert_same(root["acq/samples"][:], sample.expected["acq/samples"], "unchanged file")
    with pytest.raises(icechunk.IcechunkError, match=r"checksum .* has changed"):
        root["values"][:]


def test_write_icechunk_repository(tmp_path: Path, sample_folder: Path) -> None:
    """What ``shadowzarr convert REFS OUT.icechunk`` calls."""
    sample = write_sample(local_put(sample_folder))
    write_rfs(sample.rfs, tmp_path / "sample.json")
    repo = write_icechunk_repository(tmp_path / "sample.json", tmp_path / "out.icechunk")
    assert list(repo.config.virtual_chunk_containers or {}) == [
        f"{sample_folder.resolve().as_uri()}/"
    ]
    reopened = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(tmp_path / "out.icechunk")),
        authorize_virtual_chunk_access={
            f"{sample_folder.resolve().as_uri()}/": icechunk.credentials.LocalFileSystemAccess
        },
    )
    root = zarr.open_group(reopened.readonly_session("main").store, mode="r")
    _read_all(root, sample.expected)


@pytest.mark.network
def test_each_file_keeps_its_own_etag(tmp_path: Path, nginx: NginxServer) -> None:
    """One array in two files: replacing one file refuses only the chunks in it."""
    values = np.arange(400, dtype="<f4")
    for index in range(2):
        nginx.write_file(f"part{index}.bin", values[index * 200 : (index + 1) * 200].tobytes())
    builder = RfsBuilder()
    builder.add_array("values", shape=values.shape, data_type=values.dtype, chunk_shape=(100,))
    for chunk in range(4):
        url = nginx.url(f"part{chunk // 2}.bin")
        builder.add_chunk("values", (chunk,), url, (chunk % 2) * 400, 400)
    for index in range(2):
        url = nginx.url(f"part{index}.bin")
        builder.add_source(url, size=800, etag=requests.head(url, timeout=10).headers["ETag"])
    repo = make_repository(tmp_path / "repo", {nginx.url(""): icechunk.http_store()})
    session = repo.writable_session("main")
    rfs_to_icechunk(builder.build(), session)
    session.commit("two files")
    array = zarr.open_array(repo.readonly_session("main").store, path="values", mode="r")
    assert_same(array[:], values, "values")

    nginx.write_file("part1.bin", values[200:][::-1].tobytes())
    assert_same(array[:200], values[:200], "unchanged part")
    with pytest.raises(icechunk.IcechunkError, match=r"checksum .* has changed"):
        array[200:]


@pytest.mark.network
@pytest.mark.parametrize("carried", [True, False], ids=["index in refs.json", "index fetched"])
def test_reference_directory_served_over_http(
    tmp_path: Path, nginx: NginxServer, carried: bool
) -> None:
    """References loaded from a URL: relative source paths, and the chunk manifest carried in
    refs.json or read from beside it on the server."""
    values = np.arange(3000, dtype="<i4")
    nginx.write_file("data/values.bin", values.tobytes())
    builder = RfsBuilder()
    builder.add_array("values", shape=values.shape, data_type=values.dtype, chunk_shape=(2,))
    for i in range(1500):
        builder.add_chunk("values", (i,), "../../data/values.bin", i * 8, 8)
    carry = {} if carried else {"inline_index_bytes": 0}
    write_rfs(builder.build(), nginx.path("refs") / "values.shadowzarr", **carry)
    rfs = load_rfs(nginx.url("refs/values.shadowzarr"))
    assert rfs.indexes["values"].path is not None
    assert bool(rfs.indexes["values"].files) == carried
    assert_same(open_rfs(rfs)["values"][:], values, "values through RfsStore")
    repo = make_repository(tmp_path / "repo", {nginx.url(""): icechunk.http_store()})
    session = repo.writable_session("main")
    rfs_to_icechunk(rfs, session)
    session.commit("from a URL")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert_same(root["values"][:], values, "values")


def test_uneven_gen_entry_and_transposed_chunks(tmp_path: Path, sample_folder: Path) -> None:
    """A gen entry whose offsets are not evenly spaced, over a Fortran-ordered array (the
    transpose codec): chunk (i, 0) holds columns-first bytes at an offset no stride gives."""
    full = np.arange(8 * 6, dtype="<u2").reshape(8, 6)
    blocks = [np.asfortranarray(full[2 * i : 2 * i + 2]).tobytes(order="F") for i in range(4)]
    order = [2, 0, 3, 1]  # block i is stored at position order[i]
    stored = b"".join(blocks[order.index(position)] for position in range(4))
    url = local_put(sample_folder)("fortran.bin", stored)
    metadata = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [8, 6],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 6]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [
            {"name": "transpose", "configuration": {"order": [1, 0]}},
            {"name": "bytes", "configuration": {"endian": "little"}},
        ],
        "attributes": {},
    }
    document = {
        "version": 2,
        "refs": {
            "zarr.json": '{"zarr_format":3,"node_type":"group","attributes":{}}',
            "f/zarr.json": json.dumps(metadata),
        },
        "gen": [
            {
                "key": "f/c/{{i}}/0",
                "url": url,
                "offset": "{{(2 * ((i + 1) % 2) + i // 2) * 24}}",
                "length": "24",
                "dimensions": {"i": {"stop": 4}},
            }
        ],
    }
    assert [(2 * ((i + 1) % 2) + i // 2) for i in range(4)] == order
    assert_same(open_rfs(document)["f"][:], full, "through RfsStore")
    repo = make_repository(tmp_path / "repo", local_container(sample_folder))
    session = repo.writable_session("main")
    rfs_to_icechunk(document, session)
    session.commit("uneven gen")
    root = zarr.open_group(repo.readonly_session("main").store, mode="r")
    assert_same(root["f"][:], full, "f")


@pytest.mark.network
def test_open_icechunk_repository_authorizes_what_it_declares(
    tmp_path: Path, nginx: NginxServer
) -> None:
    """A repository of chunks on an HTTP server and in a local folder: opened with nothing
    but its path, both containers read; opened plainly, Icechunk refuses the chunks."""
    from shadowzarr_icechunk import open_icechunk_repository, opening_code

    remote = np.arange(200, dtype="<i4")
    nginx.write_file("remote.bin", remote.tobytes())
    local = np.arange(100, dtype="<f8") / 3
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "local.bin").write_bytes(local.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    for path, url, values in (
        ("remote", nginx.url("remote.bin"), remote),
        ("local", str(tmp_path / "data" / "local.bin"), local),
    ):
        builder.add_array(path, shape=[len(values)], data_type=values.dtype.str, chunk_shape=[50])
        builder.add_contiguous_chunks(
            path, url=url, start=0, shape=[len(values)], chunk_shape=[50], itemsize=values.itemsize
        )
    write_rfs(builder.build(), tmp_path / "refs.json")
    path = tmp_path / "both.icechunk"
    written = write_icechunk_repository(tmp_path / "refs.json", path)
    prefixes = sorted(written.config.virtual_chunk_containers or {})
    assert prefixes == sorted([nginx.url(""), f"{(tmp_path / 'data').as_uri()}/"])
    root = zarr.open_group(open_icechunk_repository(path).readonly_session("main").store, mode="r")
    np.testing.assert_array_equal(root["remote"][:], remote)
    np.testing.assert_array_equal(root["local"][:], local)
    plain = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))
    with pytest.raises(icechunk.IcechunkError, match="authorize"):
        zarr.open_group(plain.readonly_session("main").store, mode="r")["remote"][:]
    code = "\n".join(opening_code(path, prefixes))
    assert "icechunk.credentials.HttpAccess" in code
    assert "icechunk.credentials.LocalFileSystemAccess" in code
