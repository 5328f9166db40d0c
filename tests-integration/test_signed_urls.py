"""A presigned URL given to a generator: its signature is never written into the references
(every known signing parameter is looked for in the written files), and the references read
again when the reader signs each request itself (a ``resolve_url`` hook), against moto's real
S3 server behind a proxy that logs what each request carried."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import boto3
import h5py
import numpy as np
import pytest
from botocore.config import Config
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import SourceAccessError, write_rfs
from shadowzarr_spec.signed_urls import SIGNING_PARAMETERS, recorded_location
from shadowzarr_store import open_rfs

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, MotoS3

pytestmark = pytest.mark.network


def _signer(endpoint: str, version: str) -> Callable[[str], str]:
    """Presigns GETs of ``endpoint/bucket/key`` URLs with moto's test credentials."""
    from shadowzarr_testing.s3 import ACCESS_KEY, REGION, SECRET_KEY

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=Config(signature_version=version, s3={"addressing_style": "path"}),
    )

    def sign(url: str) -> str:
        bucket, _, key = urlsplit(url).path.lstrip("/").partition("/")
        return client.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=600
        )

    return sign


def _written_text(root: Path) -> str:
    return "\n".join(
        path.read_bytes().decode("latin-1") for path in sorted(root.rglob("*")) if path.is_file()
    )


@pytest.mark.parametrize("version", ["s3", "s3v4"])
def test_a_presigned_generation_writes_no_signature(
    moto_s3: MotoS3,
    make_proxy: Callable[..., LatencyProxy],
    s3_bucket_name: str,
    tmp_path: Path,
    version: str,
) -> None:
    values = np.random.default_rng(5).integers(0, 1000, size=(400, 30), dtype="<i4")
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(50, 30), compression="gzip")
    moto_s3.create_bucket(s3_bucket_name)
    moto_s3.put(s3_bucket_name, "data/f.h5", (tmp_path / "f.h5").read_bytes())
    front = make_proxy(moto_s3.endpoint)
    sign = _signer(front.url("").rstrip("/"), version)
    presigned = sign(front.url(f"{s3_bucket_name}/data/f.h5"))
    signed_names = {
        name.lower() for name in (p.split("=")[0] for p in presigned.split("?")[1].split("&"))
    }
    assert signed_names & (SIGNING_PARAMETERS | {"x-amz-signature"}), presigned

    rfs = generate_rfs(presigned, progress=False)
    bare = recorded_location(presigned)
    assert "?" not in bare
    assert list(rfs.sources) == [bare]
    for layout in ("json", "directory"):
        written = tmp_path / f"refs-{layout}"
        target = written / "refs.json" if layout == "json" else written / "refs.shadowzarr"
        written.mkdir()
        write_rfs(rfs, target)
        text = _written_text(written).lower()
        signature = presigned.split("?")[1]
        for pair in signature.split("&"):
            name, _, value = pair.partition("=")
            assert f"{name.lower()}=" not in text
            assert value.lower() not in text
    document = json.loads((tmp_path / "refs-json" / "refs.json").read_text())
    assert all("?" not in url for url in document.get("templates", {}).values())

    # the reader signs every request anew
    front.reset()
    group = open_rfs(tmp_path / "refs-json" / "refs.json", resolve_url=sign)
    np.testing.assert_array_equal(group["x"][:], values)
    assert front.log
    marker = "signature=" if version == "s3" else "x-amz-signature="
    assert all(marker in entry["query"].lower() for entry in front.log)
    # without a way to sign, the bare URL is asked for, and the private bucket refuses it:
    # the references carry no working credential
    front.reset()
    with pytest.raises(SourceAccessError, match="403"):
        open_rfs(tmp_path / "refs-json" / "refs.json")["x"][:]
    assert front.log
    assert all(entry["query"] == "" for entry in front.log)
