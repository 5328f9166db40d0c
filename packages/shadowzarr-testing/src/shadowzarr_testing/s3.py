"""A real S3-compatible server on loopback: moto's standalone server, started by the tests.

S3 answers range requests its own way (one range per request, a multi-range request with 200
and the whole object, ``If-Match`` with 412); tests of object-store URLs talk to a server that
does the same, with real signatures, instead of a mock. Buckets are made with boto3 (moto's own
client library); a bucket can be public (anonymous ``GetObject`` allowed by a bucket policy) or
private (signed requests only).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowzarr_testing._ports import free_port

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["MotoS3", "MotoS3Error"]

ACCESS_KEY = "shadowzarr-test-access-key"
SECRET_KEY = "shadowzarr-test-secret-key-do-not-leak"
REGION = "us-east-1"


class MotoS3Error(RuntimeError):
    """moto's server could not be started."""


def _moto_server() -> str:
    beside = Path(sys.executable).parent / "moto_server"
    found = str(beside) if beside.exists() else shutil.which("moto_server")
    if found is None:
        raise MotoS3Error("moto_server not found: install moto[server] (the root dev group)")
    return found


class MotoS3:
    """``moto_server -H 127.0.0.1 -p PORT`` for the length of a ``with`` block (or start/stop)."""

    def __init__(self) -> None:
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._client: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoS3:
        self.port = free_port()
        self._process = subprocess.Popen(
            [_moto_server(), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise MotoS3Error(f"moto_server exited with status {self._process.returncode}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                break
            time.sleep(0.05)
        else:
            self.stop()
            raise MotoS3Error("moto_server did not accept connections within 30 s")
        import boto3

        self._client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def __enter__(self) -> MotoS3:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- buckets and objects --------------------------------------------------------------------

    def create_bucket(self, name: str, *, public: bool = False) -> str:
        """A new bucket (names of at least 3 characters); public ones allow anonymous reads."""
        self._client.create_bucket(Bucket=name)
        if public:
            policy = {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": ["s3:GetObject"],
                        "Resource": f"arn:aws:s3:::{name}/*",
                    }
                ],
            }
            self._client.put_bucket_policy(Bucket=name, Policy=json.dumps(policy))
        return name

    def put(self, bucket: str, key: str, data: bytes) -> str:
        """Write an object; return its ETag (quoted, as S3 sends it)."""
        answer = self._client.put_object(Bucket=bucket, Key=key, Body=data)
        return str(answer["ETag"])

    def get(self, bucket: str, key: str) -> bytes:
        return bytes(self._client.get_object(Bucket=bucket, Key=key)["Body"].read())

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def upload_tree(self, bucket: str, prefix: str, root: str | os.PathLike[str]) -> None:
        """Every file under the local folder ``root`` as ``prefix/<relative path>``."""
        base = Path(root)
        for path in sorted(base.rglob("*")):
            if path.is_file():
                self.put(
                    bucket,
                    f"{prefix.rstrip('/')}/{path.relative_to(base).as_posix()}",
                    path.read_bytes(),
                )

    # -- settings for readers -------------------------------------------------------------------

    def storage_options(self, *, anonymous: bool = False) -> dict[str, Any]:
        """What `storage_options` a reader passes to reach this server."""
        options: dict[str, Any] = {"endpoint": self.endpoint, "region": REGION, "allow_http": True}
        if anonymous:
            options["anon"] = True
        else:
            options.update(access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY)
        return options

    def environment(self) -> dict[str, str]:
        """The ``AWS_*`` variables that let a reader find this server and its credentials."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }
