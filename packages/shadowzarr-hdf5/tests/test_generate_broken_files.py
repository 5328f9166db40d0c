"""A file HDF5 cannot open (truncated, its superblock damaged, an empty object) is a
`SourceFormatError` naming it, locally and over HTTP, not h5py's bare OSError or a range error;
a refused read stays the read's error."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from shadowzarr_spec import SourceAccessError
from shadowzarr_store.remote.errors import SourceFormatError

from shadowzarr_hdf5 import generate_rfs


def _whole(path: Path) -> bytes:
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(5000, dtype="<i4"), chunks=(500,))
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["truncated", "superblock"])
def test_a_broken_local_file_is_a_format_error(tmp_path: Path, damage: str) -> None:
    whole = _whole(tmp_path / "whole.h5")
    broken = (
        whole[: len(whole) // 2] if damage == "truncated" else whole[:8] + bytes(200) + whole[208:]
    )
    (tmp_path / "broken.h5").write_bytes(broken)
    with pytest.raises(SourceFormatError, match=r"broken\.h5: HDF5 cannot open it"):
        generate_rfs(tmp_path / "broken.h5", progress=False)


def test_a_text_file_named_hdf5_is_a_format_error(tmp_path: Path) -> None:
    (tmp_path / "page.nwb").write_text("<html>please log in</html>")
    with pytest.raises(SourceFormatError, match="not an HDF5 file"):
        generate_rfs(tmp_path / "page.nwb", progress=False)


@pytest.mark.network
def test_over_http_too_and_a_refusal_stays_a_refusal(nginx, make_proxy) -> None:  # type: ignore[no-untyped-def]
    whole = _whole(Path(nginx.path("whole.h5")))
    Path(nginx.path("broken.h5")).write_bytes(whole[: len(whole) // 3])
    with pytest.raises(SourceFormatError, match="HDF5 cannot open it"):
        generate_rfs(nginx.url("broken.h5"), progress=False)
    # An empty object, as S3 answers its first range: 416.
    Path(nginx.path("empty.h5")).write_bytes(b"")
    s3 = make_proxy(ranges="s3", root=Path(nginx.path("empty.h5")).parent)
    with pytest.raises(SourceFormatError, match="an empty file"):
        generate_rfs(s3.url("empty.h5"), progress=False)
    with pytest.raises(SourceAccessError):
        generate_rfs(nginx.url("whole.h5"), progress=False, allowed_urls=["https://elsewhere/"])
