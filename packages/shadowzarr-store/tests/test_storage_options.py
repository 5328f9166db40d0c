"""``storage_options`` as users spell them (s3fs/fsspec, obstore, an obstore store, a
registry of URL prefixes), credentials from the environment and from AWS profile files, against
moto's real S3 server. A reverse proxy in front of moto logs each request's ``Authorization``
header, so every test sees which access key id the request was signed with."""

from __future__ import annotations

import asyncio
import os
import re
from typing import TYPE_CHECKING, Any

import pytest

from shadowzarr_store.transport import Transport, TransportOptions
from shadowzarr_store.transport.storage_options import (
    MissingCredentialsError,
    StorageOptionsError,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, MotoS3

pytestmark = pytest.mark.network

DATA = bytes(range(256)) * 8
_CREDENTIAL = re.compile(r"Credential=([^/]+)/")


@pytest.fixture(autouse=True)
def aws_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS variable or ~/.aws of the machine's; no instance metadata service reachable
    (were obstore to look, it would find this closed port, never 169.254.169.254)."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")
    return home


@pytest.fixture
def front(moto_s3: MotoS3, make_proxy: Callable[..., LatencyProxy]) -> LatencyProxy:
    """moto behind a proxy that logs the headers of every request."""
    return make_proxy(moto_s3.endpoint)


def _bucket(moto_s3: MotoS3, name: str, *, public: bool = False) -> str:
    moto_s3.create_bucket(name, public=public)
    moto_s3.put(name, "data/d.bin", DATA)
    return f"s3://{name}/data/d.bin"


def _read(url: str, storage_options: Any) -> bytes:
    transport = Transport(TransportOptions(storage_options=storage_options, retries=0))
    return asyncio.run(transport.read(url, 100, 300)).data


def _keys_used(front: LatencyProxy) -> list[str | None]:
    used = []
    for entry in front.log:
        found = _CREDENTIAL.search(entry["headers"].get("authorization", ""))
        used.append(found[1] if found else None)
    return used


def _s3fs_spellings(endpoint: str) -> dict[str, dict[str, Any]]:
    return {
        "key/secret/endpoint_url": {
            "key": "AKIDSPELLING1",
            "secret": "s",
            "endpoint_url": endpoint,
            "client_kwargs": {"region_name": "us-east-1"},
        },
        "client_kwargs endpoint_url": {
            "key": "AKIDSPELLING2",
            "secret": "s",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        },
        "token": {"key": "AKIDSPELLING3", "secret": "s", "token": "t", "endpoint_url": endpoint},
        "requester_pays and config_kwargs": {
            "key": "AKIDSPELLING4",
            "secret": "s",
            "endpoint_url": endpoint,
            "requester_pays": True,
            "config_kwargs": {"region_name": "us-east-1", "s3": {"addressing_style": "path"}},
            "default_block_size": 2**20,  # fsspec's own knob, ignored
        },
        "obstore's names": {
            "access_key_id": "AKIDSPELLING5",
            "secret_access_key": "s",
            "endpoint": endpoint,
            "region": "us-east-1",
            "allow_http": True,
        },
    }


@pytest.mark.parametrize(
    "spelling",
    [
        "key/secret/endpoint_url",
        "client_kwargs endpoint_url",
        "token",
        "requester_pays and config_kwargs",
        "obstore's names",
    ],
)
def test_every_spelling_reads_with_its_own_key(
    moto_s3: MotoS3, front: LatencyProxy, s3_bucket_name: str, spelling: str
) -> None:
    url = _bucket(moto_s3, s3_bucket_name)
    options = _s3fs_spellings(front.url("").rstrip("/"))[spelling]
    assert _read(url, options) == DATA[100:300]
    key = options.get("key") or options.get("access_key_id")
    assert _keys_used(front) == [key]


@pytest.mark.parametrize(
    "options", [{"anon": True}, {"config_kwargs": {"signature_version": "UNSIGNED"}}]
)
def test_a_public_bucket_reads_unsigned(
    moto_s3: MotoS3, front: LatencyProxy, s3_bucket_name: str, options: dict[str, Any]
) -> None:
    url = _bucket(moto_s3, s3_bucket_name, public=True)
    assert _read(url, {**options, "endpoint_url": front.url("").rstrip("/")}) == DATA[100:300]
    assert _keys_used(front) == [None]
    assert "authorization" not in front.log[0]["headers"]


def test_credentials_from_the_environment_and_from_profiles(
    monkeypatch: pytest.MonkeyPatch,
    moto_s3: MotoS3,
    front: LatencyProxy,
    s3_bucket_name: str,
    aws_home: Path,
    tmp_path: Path,
) -> None:
    url = _bucket(moto_s3, s3_bucket_name)
    endpoint = {"endpoint_url": front.url("").rstrip("/")}
    home = aws_home
    (home / ".aws").mkdir()
    (home / ".aws/credentials").write_text(
        "[default]\naws_access_key_id = AKIDDEFAULTFILE\naws_secret_access_key = s\n"
        "[work]\naws_access_key_id = AKIDWORKFILE\naws_secret_access_key = s\n"
    )
    (home / ".aws/config").write_text(
        "[default]\nregion = us-east-1\n[profile work]\nregion = us-east-1\n"
    )
    assert _read(url, endpoint) == DATA[100:300]  # ~/.aws/credentials, [default]
    assert _read(url, {**endpoint, "profile": "work"}) == DATA[100:300]
    monkeypatch.setenv("AWS_PROFILE", "work")
    assert _read(url, endpoint) == DATA[100:300]
    monkeypatch.delenv("AWS_PROFILE")
    # files named by the environment, the profile's keys in the config file
    elsewhere = tmp_path / "aws-config"
    elsewhere.write_text(
        "[profile other]\naws_access_key_id = AKIDCONFIGFILE\naws_secret_access_key = s\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(elsewhere))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "absent"))
    assert _read(url, {**endpoint, "profile": "other"}) == DATA[100:300]
    # the environment's keys come before the files
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    assert _read(url, endpoint) == DATA[100:300]
    assert _keys_used(front) == [
        "AKIDDEFAULTFILE",
        "AKIDWORKFILE",
        "AKIDWORKFILE",
        "AKIDCONFIGFILE",
        "AKIDENVIRONMENT",
    ]
    with pytest.raises(MissingCredentialsError, match="'nobody'"):
        _read(url, {**endpoint, "profile": "nobody"})


def test_two_buckets_with_their_own_credentials(
    moto_s3: MotoS3, front: LatencyProxy, s3_bucket_name: str
) -> None:
    first = _bucket(moto_s3, s3_bucket_name)
    second = _bucket(moto_s3, s3_bucket_name + "-b")
    endpoint = front.url("").rstrip("/")
    registry = {
        f"s3://{s3_bucket_name}": {"key": "AKIDFIRST", "secret": "s", "endpoint_url": endpoint},
        f"s3://{s3_bucket_name}-b/data/": {
            "key": "AKIDSECOND",
            "secret": "s",
            "endpoint_url": endpoint,
        },
    }
    transport = Transport(TransportOptions(storage_options=registry))

    async def both() -> list[bytes]:
        return [(await transport.read(u, 0, 10)).data for u in (first, second, first)]

    assert asyncio.run(both()) == [DATA[:10]] * 3
    by_bucket = {
        entry["path"].split("/")[1]: key
        for entry, key in zip(front.log, _keys_used(front), strict=True)
    }
    assert by_bucket == {s3_bucket_name: "AKIDFIRST", f"{s3_bucket_name}-b": "AKIDSECOND"}


def test_an_obstore_store_is_used_for_its_own_bucket_only(
    moto_s3: MotoS3, s3_bucket_name: str
) -> None:
    from obstore.store import S3Store

    url = _bucket(moto_s3, s3_bucket_name)
    other = _bucket(moto_s3, s3_bucket_name + "-other")
    options = moto_s3.storage_options()
    store = S3Store(
        s3_bucket_name,
        endpoint=options["endpoint"],
        region=options["region"],
        access_key_id=options["access_key_id"],
        secret_access_key=options["secret_access_key"],
        client_options={"allow_http": True},
    )
    assert _read(url, store) == DATA[100:300]
    assert _read(url, {f"s3://{s3_bucket_name}": store}) == DATA[100:300]
    prefixed = S3Store(
        s3_bucket_name,
        prefix="data",
        endpoint=options["endpoint"],
        region=options["region"],
        skip_signature=False,
        access_key_id=options["access_key_id"],
        secret_access_key=options["secret_access_key"],
        client_options={"allow_http": True},
    )
    assert _read(url, prefixed) == DATA[100:300]
    with pytest.raises(StorageOptionsError, match="not '" + s3_bucket_name + "-other'"):
        _read(other, store)  # would read this bucket's data/d.bin: refused


def test_no_credentials_is_our_error_before_any_request(
    moto_s3: MotoS3, front: LatencyProxy, s3_bucket_name: str
) -> None:
    url = _bucket(moto_s3, s3_bucket_name)
    with pytest.raises(MissingCredentialsError) as raised:
        _read(url, {"endpoint_url": front.url("").rstrip("/")})
    said = str(raised.value)
    assert "no credentials found" in said
    assert "anon=True" in said
    assert "169.254" not in said
    assert front.log == []


def test_unknown_fsspec_settings_are_refused_by_name(moto_s3: MotoS3, s3_bucket_name: str) -> None:
    url = _bucket(moto_s3, s3_bucket_name)
    with pytest.raises(StorageOptionsError, match="client_kwargs\\['verify'\\]"):
        _read(url, {"anon": True, "client_kwargs": {"verify": False}})
    with pytest.raises(StorageOptionsError, match="mixes URL prefixes"):
        _read(url, {"anon": True, "s3://x": {}})


def test_the_xarray_engine_takes_storage_options_directly(
    moto_s3: MotoS3, s3_bucket_name: str
) -> None:
    import json

    import numpy as np
    import xarray as xr

    values = np.arange(512, dtype="<i2")
    moto_s3.create_bucket(s3_bucket_name)
    moto_s3.put(s3_bucket_name, "v.bin", values.tobytes())
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [512],
        "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [128]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "dimension_names": ["t"],
    }
    refs: dict[str, Any] = {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "v/zarr.json": json.dumps(meta),
    }
    for i in range(4):
        refs[f"v/c/{i}"] = [f"s3://{s3_bucket_name}/v.bin", i * 256, 256]
    moto_s3.put(s3_bucket_name, "refs.json", json.dumps({"version": 1, "refs": refs}).encode())
    options = {
        "key": "AKIDXARRAY",
        "secret": "s",
        "client_kwargs": {"endpoint_url": moto_s3.endpoint, "region_name": "us-east-1"},
    }
    dataset = xr.open_dataset(
        f"s3://{s3_bucket_name}/refs.json", engine="shadowzarr", storage_options=options
    )
    np.testing.assert_array_equal(dataset["v"].values, values)
