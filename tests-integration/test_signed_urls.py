"""A presigned URL given to a generator: its signature is never written into the references
(every known signing parameter is looked for in the written files), and the references read
again when the reader signs each request itself (a ``resolve_url`` hook), against moto's real
S3 server behind a proxy that logs what each request carried."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import boto3
import h5py
import numpy as np
import pytest
from botocore.config import Config
from shadowzarr_hdf5 import generate_rfs
from shadowzarr_spec import SourceAccessError, write_rfs
from shadowzarr_spec.signed_urls import (
    SIGNING_PARAMETERS,
    recorded_location,
    signing_parameters_in,
)
from shadowzarr_store import open_rfs

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from shadowzarr_testing import LatencyProxy, MotoS3, NginxServer

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


_SIGNED_QUERIES = {
    "AWS SigV2": "AWSAccessKeyId=AKIDV2&Expires=1900000000&Signature=c2lnbmF0dXJl%3D",
    "AWS SigV4": (
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDV4%2F20261207%2Fus-east-1%2Fs3"
        "%2Faws4_request&X-Amz-Date=20261207T000000Z&X-Amz-Expires=600"
        "&X-Amz-Security-Token=tokentoken&X-Amz-SignedHeaders=host&X-Amz-Signature=abcdef0123"
    ),
    "GCS V4": (
        "X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=reader%40p.iam%2F20261207"
        "&X-Goog-Date=20261207T000000Z&X-Goog-Expires=600&X-Goog-SignedHeaders=host"
        "&X-Goog-Signature=0a1b2c3d"
    ),
    "GCS V2": "GoogleAccessId=reader%40p.iam&Expires=1900000000&Signature=Z2NzLXYy",
    "CloudFront": "Policy=eyJTdGF0ZW1lbnQiOltdfQ__&Signature=Y2xvdWRmcm9udA__&Key-Pair-Id=KPID",
    "Azure SAS": (
        "sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00%3A00%3A00Z&st=2026-12-01"
        "&spr=https&sip=10.1.2.3&skoid=oid&sktid=tid&skt=2026-12-01&ske=2026-12-31&sks=b"
        "&skv=2022-11-02&rscd=attachment&sig=c2FzLXNpZ25hdHVyZQ%3D%3D"
    ),
}
_QUERY_NAME = re.compile(r"[?&]([A-Za-z0-9_.~%-]+)=", re.ASCII)


@pytest.mark.parametrize("family", sorted(_SIGNED_QUERIES))
def test_no_known_signing_parameter_or_user_info_is_written(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path, family: str
) -> None:
    """A generation through a URL signed as each family signs (nginx ignores the query), with
    a user and password in it too and a parameter of the site's own: the written references,
    in both forms, hold none of the parameters any family signs with (every name of
    `SIGNING_PARAMETERS` and every ``X-Amz-*``/``X-Goog-*`` looked for), no user info, and
    keep the site's parameter."""
    values = np.arange(2000, dtype="<i4").reshape(100, 20)
    with h5py.File(nginx_root / "f.h5", "w") as f:
        f.create_dataset("x", data=values, chunks=(25, 20))
    query = _SIGNED_QUERIES[family]
    signed = f"http://reader:pa55word@127.0.0.1:{nginx.port}/f.h5?version=3&{query}"
    rfs = generate_rfs(signed, progress=False)
    bare = f"http://127.0.0.1:{nginx.port}/f.h5?version=3"
    assert list(rfs.sources) == [bare]
    assert signing_parameters_in(signed)
    for layout in ("refs.json", "refs.shadowzarr"):
        written = tmp_path / layout.replace(".", "-")
        written.mkdir()
        write_rfs(rfs, written / layout)
        text = _written_text(written)
        names = {name.lower() for name in _QUERY_NAME.findall(text)}
        assert names == {"version"}, names
        leaked = [
            n for n in names if n in SIGNING_PARAMETERS or n.startswith(("x-amz-", "x-goog-"))
        ]
        assert leaked == []
        for secret in ("pa55word", "reader@", "reader%40", *re.findall(r"=([^&]{6,})", query)):
            assert secret not in text, secret
        np.testing.assert_array_equal(open_rfs(written / layout)["x"][:], values)
