"""The three ways to name a dandiset version (the short form, the web page, an API URL) name
the same listing; anything else is refused as a dandiset."""

from __future__ import annotations

import pytest
from shadowzarr_spec import SourceError

from shadowzarr_catalog.dandi import MAIN_API, dandiset_version_url, is_dandiset

MAIN = f"{MAIN_API}/api/dandisets/000123/versions"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("dandi://000123/draft", (MAIN_API, f"{MAIN}/draft")),
        ("dandi://000123", (MAIN_API, f"{MAIN}/draft")),
        ("dandi://000123/0.230101.1234/", (MAIN_API, f"{MAIN}/0.230101.1234")),
        ("https://dandiarchive.org/dandiset/000123/draft", (MAIN_API, f"{MAIN}/draft")),
        ("https://dandiarchive.org/dandiset/000123", (MAIN_API, f"{MAIN}/draft")),
        ("https://www.dandiarchive.org/dandiset/000123/draft/files", (MAIN_API, f"{MAIN}/draft")),
        (
            "https://api.sandbox.dandiarchive.org/api/dandisets/000123/versions/draft/",
            (
                "https://api.sandbox.dandiarchive.org",
                "https://api.sandbox.dandiarchive.org/api/dandisets/000123/versions/draft",
            ),
        ),
        (
            "http://127.0.0.1:8000/api/dandisets/000123/versions/draft/assets/?page=2",
            ("http://127.0.0.1:8000", "http://127.0.0.1:8000/api/dandisets/000123/versions/draft"),
        ),
    ],
)
def test_every_form_names_the_version(source: str, expected: tuple[str, str]) -> None:
    assert is_dandiset(source)
    assert dandiset_version_url(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "dandi://123/draft",  # six digits
        "dandi://000123/draft/extra",
        "https://example.org/dandiset/000123/draft",
        "s3://dandiarchive/blobs/",
        "https://dandiarchive.org/",
        "",
    ],
)
def test_other_addresses_are_no_dandiset(source: str) -> None:
    assert not is_dandiset(source)
    with pytest.raises(SourceError, match="names no dandiset version"):
        dandiset_version_url(source)
