"""tools/bench/http2.py runs end to end at a small size: nginx over TLS offering HTTP/2 and
HTTP/1.1 starts, our transport reads it with the user's trust store (``SSL_CERT_FILE``), and
every answer is checked against the file. Numbers are not judged; the HTTP/2 row is measured
only where httpx and h2 are installed (the script says so otherwise)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from shadowzarr_testing.scripts import run_script

HTTP2 = Path(__file__).resolve().parents[1] / "tools" / "bench" / "http2.py"


@pytest.mark.network
def test_http2_script_reads_every_range_right_over_tls() -> None:
    completed = run_script(
        HTTP2, "--size-mib", "9", "--scattered", "40", "--runs", "1", timeout=120
    )
    out = completed.stdout
    assert "offering h2 and http/1.1" in out
    ours = re.findall(r"ours: HTTP/1\.1, kept-alive connections +(\d+) ms .* (\d+) MB/s", out)
    assert len(ours) == 2, out  # the bulk case and the scattered one, each measured
    assert "WRONG" not in out, out
    assert "httpx + h2" in out
