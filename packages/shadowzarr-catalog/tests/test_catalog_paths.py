"""A reference location never leaves the destination, whatever path an asset claims."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadowzarr_catalog.paths import reference_location, safe_relative_path


@pytest.mark.parametrize(
    ("path", "safe"),
    [
        ("sub-01/ses-1_ecephys.nwb", "sub-01/ses-1_ecephys.nwb"),
        ("../../etc/passwd", None),
        ("/absolute/x.h5", None),
        ("C:\\Users\\x.h5", None),
        ("a/./b/../c.h5", None),
        ("odd\x00name\n.h5", None),
        (".hidden/.x", None),
        ("", None),
    ],
)
def test_asset_paths_are_made_safe(path: str, safe: str | None) -> None:
    got = safe_relative_path(path, asset_id=path)
    if safe is not None:
        assert got == safe  # a path that is already safe is kept as it is
    else:
        assert got != path
        assert "-" in got.rsplit("/", 1)[-1]
    _assert_inside(got)


def test_no_asset_lands_inside_another_assets_references() -> None:
    outer = reference_location("x", "asset-x", "directory")
    inner = reference_location("x.shadowzarr/refs.json", "asset-y", "directory")
    assert outer == "refs/x.shadowzarr"
    assert not inner.startswith(outer + "/")


def test_two_paths_that_clean_alike_stay_apart() -> None:
    a = reference_location("x y.h5", "asset-a", "directory")
    b = reference_location("x_y.h5", "asset-b", "directory")
    c = reference_location("x?y.h5", "asset-c", "json")
    assert len({a, b, c}) == 3
    assert b == "refs/x_y.h5.shadowzarr"
    assert c.endswith(".shadowzarr.json")


@given(st.text(max_size=300), st.text(min_size=1, max_size=40))
def test_no_path_escapes(path: str, asset_id: str) -> None:
    _assert_inside(safe_relative_path(path, asset_id))


def _assert_inside(relative: str) -> None:
    parts = PurePosixPath(relative).parts
    assert parts
    assert not PurePosixPath(relative).is_absolute()
    for part in parts:
        assert part not in (".", "..")
        assert not part.startswith(".")
        assert all(c.isascii() and (c.isalnum() or c in "._+=@,-") for c in part), part
        assert 0 < len(part) <= 131
