"""s3:// sources, references, open_array addresses and materialize, against moto's real S3
server on loopback: anonymous (a public bucket) and with credentials (passed in, or from the
environment), and a replaced object detected by its ETag."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

import h5py
import numpy as np
import pytest
import zarr
from shadowzarr import open_array
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import SourceAccessError, SourceChangedError, write_rfs
from shadowzarr_store import materialize, open_rfs
from shadowzarr_testing import assert_array_equal_exact

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, MotoS3

pytestmark = pytest.mark.network


def _h5(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = {
        "x": rng.integers(0, 1000, size=(300, 40), dtype="<i4"),
        "group/y": rng.standard_normal(5000).astype("<f8"),
    }
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=values["x"], chunks=(50, 40), compression="gzip")
        f.create_dataset("group/y", data=values["group/y"], chunks=(1000,))
    return values


@pytest.fixture
def bucket(
    moto_s3: MotoS3, s3_bucket_name: str, tmp_path: Path
) -> tuple[str, dict[str, np.ndarray]]:
    """A private bucket holding file.h5."""
    moto_s3.create_bucket(s3_bucket_name)
    values = _h5(tmp_path / "file.h5")
    moto_s3.put(s3_bucket_name, "data/file.h5", (tmp_path / "file.h5").read_bytes())
    return s3_bucket_name, values


def test_generate_open_and_replace_with_credentials(
    moto_s3: MotoS3, bucket: tuple[str, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    name, values = bucket
    url = f"s3://{name}/data/file.h5"
    options = moto_s3.storage_options()
    rfs = generate_rfs(url, storage_options=options, progress=False)
    assert rfs.sources[url].etag
    assert rfs.sources[url].size
    group = open_rfs(rfs, storage_options=options)
    for path, expected in values.items():
        assert_array_equal_exact(group[path][:], expected, path)

    # References stored in the bucket, opened by their s3:// URL.
    write_rfs(rfs, tmp_path / "refs.shadowzarr")
    moto_s3.upload_tree(name, "refs/file.shadowzarr", tmp_path / "refs.shadowzarr")
    remote = open_rfs(f"s3://{name}/refs/file.shadowzarr", storage_options=options)
    assert_array_equal_exact(remote["x"][:], values["x"], "x through s3 references")

    # Without credentials the private bucket refuses, with our error type.
    with pytest.raises(SourceAccessError):
        open_rfs(rfs, storage_options=moto_s3.storage_options(anonymous=True))["x"][:]

    # The object replaced (same size, other bytes): the recorded ETag no longer matches.
    other = tmp_path / "other.h5"
    _h5(other, seed=1)
    moto_s3.put(name, "data/file.h5", other.read_bytes())
    with pytest.raises(SourceChangedError) as caught:
        open_rfs(rfs, storage_options=options)["x"][:]
    shown = "".join(traceback.format_exception(caught.value))
    assert options["secret_access_key"] not in shown
    assert options["secret_access_key"] not in repr(open_rfs(rfs, storage_options=options).store)


def test_anonymous_public_bucket_and_open_array(
    moto_s3: MotoS3, s3_bucket_name: str, tmp_path: Path
) -> None:
    moto_s3.create_bucket(s3_bucket_name, public=True)
    values = _h5(tmp_path / "file.h5")
    moto_s3.put(s3_bucket_name, "file.h5", (tmp_path / "file.h5").read_bytes())
    anonymous = moto_s3.storage_options(anonymous=True)
    array = open_array(
        f"s3://{s3_bucket_name}/file.h5::/group/y",
        storage_options=anonymous,
        cache="none",
        cache_dir=tmp_path / "cache",
    )
    assert_array_equal_exact(array[:], values["group/y"], "open_array over s3")
    assert array.identity is not None
    assert array.identity.etag


def test_credentials_from_the_environment(
    moto_s3: MotoS3,
    bucket: tuple[str, dict[str, np.ndarray]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, values = bucket
    for variable, value in moto_s3.environment().items():
        monkeypatch.setenv(variable, value)
    rfs = generate_rfs(f"s3://{name}/data/file.h5", progress=False)
    assert_array_equal_exact(open_rfs(rfs)["x"][:], values["x"], "x with AWS_* credentials")


def test_materialize_from_and_to_s3(
    moto_s3: MotoS3, bucket: tuple[str, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    name, values = bucket
    options = moto_s3.storage_options()
    rfs = generate_rfs(f"s3://{name}/data/file.h5", storage_options=options, progress=False)
    write_rfs(rfs, tmp_path / "refs.shadowzarr")
    moto_s3.upload_tree(name, "refs/r.shadowzarr", tmp_path / "refs.shadowzarr")

    local = tmp_path / "copy.zarr"
    materialize(f"s3://{name}/refs/r.shadowzarr", local, storage_options=options)
    assert_array_equal_exact(zarr.open_group(local, mode="r")["x"][:], values["x"], "to local")

    report = materialize(rfs, f"s3://{name}/out.zarr", storage_options=options)
    assert report.arrays
    assert "out.zarr/zarr.json" in moto_s3.keys(name, "out.zarr")
    from obstore.store import S3Store
    from zarr.storage import ObjectStore

    store = S3Store(
        name,
        prefix="out.zarr",
        endpoint=moto_s3.endpoint,
        region="us-east-1",
        access_key_id=options["access_key_id"],
        secret_access_key=options["secret_access_key"],
        client_options={"allow_http": True},
    )
    written = zarr.open_group(ObjectStore(store, read_only=True), mode="r")
    assert_array_equal_exact(written["group/y"][:], values["group/y"], "written to s3")


@pytest.mark.parametrize("name", ["refs/file.shadowzarr", "refs/file.shadowzarr.json"])
def test_write_rfs_publishes_to_the_bucket(
    moto_s3: MotoS3, bucket: tuple[str, dict[str, np.ndarray]], name: str
) -> None:
    """shadowzarr.write_rfs writes an s3:// destination (a directory with an index array, or
    one JSON document) and open_rfs reads it back; nothing is written locally."""
    import shadowzarr
    from shadowzarr_store.transport import list_objects

    bucket_name, values = bucket
    options = moto_s3.storage_options()
    rfs = generate_rfs(f"s3://{bucket_name}/data/file.h5", storage_options=options)
    target = f"s3://{bucket_name}/{name}"
    written = shadowzarr.write_rfs(rfs, target, storage_options=options, manifest_threshold=2)
    assert written == target
    keys = [o.key for o in list_objects(f"s3://{bucket_name}/refs/", options)]
    if name.endswith(".json"):
        assert keys == [name]
    else:
        assert f"{name}/refs.json" in keys
        assert any(k.startswith(f"{name}/index/") for k in keys)
    group = open_rfs(target, storage_options=options)
    for path, expected in values.items():
        assert_array_equal_exact(group[path][:], expected, path)


def test_one_reference_set_over_two_buckets_with_their_own_credentials(
    moto_s3: MotoS3,
    make_proxy: Callable[..., LatencyProxy],
    s3_bucket_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One reference set whose arrays live in two private buckets, opened with a registry of
    URL prefixes: one bucket's options as s3fs spells them, the other an obstore store built
    by the user. moto sits behind a proxy that logs each request's Authorization header, so
    the access key that signed each bucket's requests is read from what the server got."""
    import json
    import os
    import re

    from obstore.store import S3Store

    for variable in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(variable)  # none of the machine's credentials
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    front = make_proxy(moto_s3.endpoint)
    endpoint = front.url("").rstrip("/")
    first, second = s3_bucket_name, s3_bucket_name + "-second"
    values = {
        "a": np.arange(1024, dtype="<i2"),
        "b": np.arange(1024, 2048, dtype="<i2"),
    }
    moto_s3.create_bucket(first)
    moto_s3.create_bucket(second)
    moto_s3.put(first, "raw/a.bin", values["a"].tobytes())
    moto_s3.put(second, "raw/b.bin", values["b"].tobytes())
    refs: dict[str, object] = {"zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"})}
    for name, bucket in (("a", first), ("b", second)):
        refs[f"{name}/zarr.json"] = json.dumps(
            {
                "zarr_format": 3,
                "node_type": "array",
                "shape": [1024],
                "data_type": "int16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [256]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": 0,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            }
        )
        for i in range(4):
            refs[f"{name}/c/{i}"] = [f"s3://{bucket}/raw/{name}.bin", i * 512, 512]
    (tmp_path / "two.json").write_text(json.dumps({"version": 1, "refs": refs}))
    store = S3Store(
        second,
        endpoint=endpoint,
        region="us-east-1",
        access_key_id="AKIDSTOREOBJECT",
        secret_access_key="s",
        client_options={"allow_http": True},
    )
    registry = {
        f"s3://{first}": {"key": "AKIDFSSPECNAMES", "secret": "s", "endpoint_url": endpoint},
        f"s3://{second}/raw/": store,
    }
    group = open_rfs(tmp_path / "two.json", storage_options=registry)
    for name, expected in values.items():
        assert_array_equal_exact(group[name][:], expected, name)
    signed_with: dict[str, set[str]] = {}
    for entry in front.log:
        found = re.search(r"Credential=([^/]+)/", entry["headers"].get("authorization", ""))
        signed_with.setdefault(entry["path"].split("/")[1], set()).add(
            found[1] if found else "unsigned"
        )
    assert signed_with == {first: {"AKIDFSSPECNAMES"}, second: {"AKIDSTOREOBJECT"}}
    # the second bucket has no options of its own without the registry: the environment's
    # (none here), and our error says so before any request
    front.reset()
    only_first = {f"s3://{first}": registry[f"s3://{first}"]}
    with pytest.raises(SourceAccessError, match="no credentials found"):
        open_rfs(tmp_path / "two.json", storage_options=only_first)["b"][:]
    assert all(entry["path"].split("/")[1] != second for entry in front.log)


def test_a_virtualizarr_registry_is_taken_as_storage_options(
    moto_s3: MotoS3, bucket: tuple[str, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    """VirtualiZarr's ``ObjectStoreRegistry`` (obspec-utils) of obstore stores, as a user of
    VirtualiZarr already has one, serves generation and reading; a registered store that is
    not an obstore store is refused by name, as is a registry naming another bucket's store."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore, S3Store
    from shadowzarr_store.transport import StorageOptionsError

    name, values = bucket
    options = moto_s3.storage_options()

    def store_for(bucket_name: str) -> S3Store:
        return S3Store(
            bucket_name,
            endpoint=options["endpoint"],
            region=options["region"],
            access_key_id=options["access_key_id"],
            secret_access_key=options["secret_access_key"],
            client_options={"allow_http": True},
        )

    registry = ObjectStoreRegistry({f"s3://{name}": store_for(name)})
    rfs = generate_rfs(f"s3://{name}/data/file.h5", storage_options=registry, progress=False)
    group = open_rfs(rfs, storage_options=registry)
    for path, expected in values.items():
        assert_array_equal_exact(group[path][:], expected, path)
    nested = ObjectStoreRegistry({f"s3://{name}/data": store_for(name)})
    assert_array_equal_exact(open_rfs(rfs, storage_options=nested)["x"][:], values["x"], "x")
    wrong = ObjectStoreRegistry({f"s3://{name}": store_for(name + "-other")})
    with pytest.raises(StorageOptionsError, match="not '" + name + "'"):
        open_rfs(rfs, storage_options=wrong)["x"][:]
    not_obstore = ObjectStoreRegistry({f"s3://{name}": object()})
    with pytest.raises(StorageOptionsError, match="not object"):
        open_rfs(rfs, storage_options=not_obstore)["x"][:]
    local = ObjectStoreRegistry({f"s3://{name}": LocalStore(str(tmp_path))})
    with pytest.raises(StorageOptionsError):
        open_rfs(rfs, storage_options=local)["x"][:]
