"""HTTPS as users meet it (DANDI, S3): ranges go over the transport's own kept-alive
connections (`shadowzarr_store.transport.http1`), whole files over aiohttp; both verify the
server's certificate against the trust store the user configured (``SSL_CERT_FILE``), and a
certificate that is not trusted, or names another host, fails with our error, untried again.

The reads that must succeed run in a child interpreter started with ``SSL_CERT_FILE`` naming
the tests' own certificate authority (trustme), as a user behind a company's TLS proxy would
configure it; the refusals run here, where that authority is unknown."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trustme
from shadowzarr_spec import SourceError
from shadowzarr_testing import QuietHandler, handler_server

from shadowzarr_store import load_rfs
from shadowzarr_store.transport import RangeSource, TransportOptions

DATA = bytes(range(256)) * 4096  # 1 MiB
REFS = json.dumps({"version": 1, "refs": {".zgroup": '{"zarr_format": 2}'}}).encode()


@contextmanager
def _https_server(certificate: trustme.LeafCert) -> Iterator[tuple[str, list[str]]]:
    """A keep-alive HTTPS server answering single ranges of `DATA` (and `REFS` whole)."""
    seen: list[str] = []

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(f"{self.path} {self.headers.get('Range')}")
            if self.path.endswith("refs.json"):
                self._answer(200, REFS, {})
                return
            spec = self.headers.get("Range", "").removeprefix("bytes=")
            first, _, last = spec.partition("-")
            start, end = int(first), min(int(last), len(DATA) - 1)
            self._answer(
                206, DATA[start : end + 1], {"Content-Range": f"bytes {start}-{end}/{len(DATA)}"}
            )

        def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(context)
    with handler_server(Handler, tls=context) as port:
        yield f"https://{{host}}:{port}", seen


_CHILD = """
import json, sys
from shadowzarr_spec import SourceError
from shadowzarr_store import load_rfs
from shadowzarr_store.transport import RangeSource, TransportOptions
base, misnamed, ranges = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
with RangeSource(base + "/data.bin", TransportOptions(multi_range=False), max_gap=0) as source:
    parts = source.fetch_many([tuple(r) for r in ranges])
    again = source.fetch_many([tuple(r) for r in ranges])
refs = load_rfs(base + "/refs.json")
refused = []  # a trusted certificate naming another host
for read in (
    lambda: RangeSource(misnamed + "/data.bin", TransportOptions(multi_range=False))
    .fetch_many([(0, 9)]),
    lambda: load_rfs(misnamed + "/refs.json"),
):
    try:
        read()
        refused.append(None)
    except SourceError as exc:
        refused.append(str(exc))
print(json.dumps({"parts": [p.hex() for p in parts], "same": parts == again,
                  "keys": sorted(refs.refs), "refused": refused}))
"""


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


def test_ranges_and_whole_files_over_https_with_the_users_trust_store(
    authority: trustme.CA, tmp_path: Path
) -> None:
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    ranges = [(i * 20_000 + 7, 3_000 + i) for i in range(30)] + [(len(DATA) - 5, 5)]
    with (
        _https_server(authority.issue_cert("127.0.0.1", "localhost")) as (base, seen),
        _https_server(authority.issue_cert("elsewhere.example")) as (misnamed, misnamed_seen),
    ):
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                base.format(host="localhost"),
                misnamed.format(host="localhost"),
                json.dumps(ranges),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "SSL_CERT_FILE": str(bundle)},
            check=False,
        )
    assert completed.returncode == 0, completed.stderr[-3000:]
    answer = json.loads(completed.stdout)
    assert [bytes.fromhex(p) for p in answer["parts"]] == [DATA[o : o + n] for o, n in ranges]
    assert answer["same"] is True
    assert answer["keys"] == ["zarr.json"]  # the v2 document, read as Zarr v3
    asked = [line for line in seen if line.startswith("/data.bin")]
    assert len(asked) == 2 * len(ranges)  # one request per range (no multi-range), no retries
    assert sum(line.startswith("/refs.json") for line in seen) == 1
    # The authority is trusted, but the certificate names another host: refused, not asked.
    assert len(answer["refused"]) == 2
    for said in answer["refused"]:
        assert said is not None
        assert "certificate was refused" in said, said
        assert "mismatch" in said, said
    assert misnamed_seen == []


def test_a_certificate_of_an_unknown_authority_fails_with_our_error_at_once(
    authority: trustme.CA,
) -> None:
    with _https_server(authority.issue_cert("127.0.0.1", "localhost")) as (base, seen):
        url = base.format(host="localhost")
        started = time.monotonic()
        with (
            RangeSource(url + "/data.bin", TransportOptions(multi_range=False), max_gap=0) as src,
            pytest.raises(SourceError, match="certificate") as refused,
        ):
            src.fetch_many([(0, 100), (500_000, 100)])
        with pytest.raises(SourceError, match="certificate"):
            load_rfs(url + "/refs.json")
        assert time.monotonic() - started < 20  # refused, not retried with back-off
    assert seen == []  # nothing was asked of a server we could not verify
    assert "Traceback" not in str(refused.value)
