"""`recorded_location`: what a reference may record of a URL (no credentials, no signature)."""

from __future__ import annotations

import pytest

from shadowzarr_spec import RfsBuilder
from shadowzarr_spec.signed_urls import recorded_location, signing_parameters_in


@pytest.mark.parametrize(
    ("url", "recorded"),
    [
        (
            "https://b.s3.amazonaws.com/k.h5?AWSAccessKeyId=AKID&Signature=abc%3D&Expires=1700000000",
            "https://b.s3.amazonaws.com/k.h5",
        ),
        (
            "https://b.s3.amazonaws.com/k.h5?versionId=3&X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKID%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=x"
            "&X-Amz-Expires=600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok"
            "&X-Amz-Signature=beef",
            "https://b.s3.amazonaws.com/k.h5?versionId=3",
        ),
        (
            "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            "&X-Goog-Credential=sa%40p&X-Goog-Signature=ab&generation=7",
            "https://storage.googleapis.com/b/o?generation=7",
        ),
        (
            "https://storage.googleapis.com/b/o?GoogleAccessId=sa%40p&Expires=1&Signature=x",
            "https://storage.googleapis.com/b/o",
        ),
        (
            "https://acct.blob.core.windows.net/c/f.h5?sv=2022-11-02&ss=b&srt=o&sp=r"
            "&se=2026-01-01T00:00:00Z&st=2025-01-01&spr=https&sip=1.2.3.4&skoid=x&sig=abc%3D",
            "https://acct.blob.core.windows.net/c/f.h5",
        ),
        ("https://user:pw@host.org/f.h5", "https://host.org/f.h5"),
        ("https://host.org/f.h5?sv=1&se=2", "https://host.org/f.h5?sv=1&se=2"),  # no sig: kept
        ("https://host.org/f.h5?Expires=3", "https://host.org/f.h5?Expires=3"),  # unsigned
        (
            "https://d.cloudfront.net/f?Policy=p&Signature=s&Key-Pair-Id=k",
            "https://d.cloudfront.net/f",
        ),
        ("s3://bucket/key.h5", "s3://bucket/key.h5"),
        ("/data/local file.h5", "/data/local file.h5"),
    ],
)
def test_recorded_location(url: str, recorded: str) -> None:
    assert recorded_location(url) == recorded
    assert not signing_parameters_in(recorded)


def test_the_builder_records_no_signature_anywhere() -> None:
    signed = "https://h.org/f.h5?X-Amz-Credential=AKID&X-Amz-Signature=s"
    builder = RfsBuilder()
    builder.add_array("a", shape=(4,), chunk_shape=(2,), data_type="<i4")
    builder.add_chunk("a", (0,), signed, 0, 8)
    builder.add_chunks("a", [[1]], signed, [8], [8])
    builder.add_source(signed, size=16)
    assert builder.has_source(signed)
    rfs = builder.build()
    assert list(rfs.sources) == ["https://h.org/f.h5"]
    shown = repr(dict(rfs.refs))
    assert "AKID" not in shown
    assert "X-Amz" not in shown
