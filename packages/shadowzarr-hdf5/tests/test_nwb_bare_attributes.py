"""NWB files keep non-finite attributes as bare tokens (for hdmf-zarr); every other attribute must
still read back as h5py reads it, the Bytes convention's escapes included."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import h5py
import numpy as np
import zarr
from shadowzarr_spec import decode_attributes
from shadowzarr_store import RfsStore

from shadowzarr_hdf5 import generate_rfs

if TYPE_CHECKING:
    from pathlib import Path


def test_bare_non_finite_attributes_keep_the_bytes_conventions_escapes(tmp_path: Path) -> None:
    path = tmp_path / "session.nwb"
    with h5py.File(path, "w") as f:
        f.attrs["nwb_version"] = "2.8.0"
        g = f.create_group("acquisition")
        written = {
            "resolution": np.nan,
            "rate": np.inf,
            "label": "NaN",
            "blob": np.void(b"\xff\x00\x01"),
            "looks_like_bytes": "base64:AAE=",
            "escaped": "_str_y",
            "escaped_word": "_str_NaN",
        }
        for name, value in written.items():
            g.attrs[name] = value
    rfs = generate_rfs(str(path), local_hdf5_path=path, inline_threshold=0)
    text = rfs.refs["acquisition/zarr.json"].data.decode()
    assert '"resolution":NaN' in text  # the bare form hdmf-zarr 0.14 reads
    group = zarr.open_group(RfsStore(rfs), path="acquisition", mode="r", zarr_format=3)
    got = decode_attributes(group.attrs.asdict())
    assert math.isnan(got["resolution"])
    assert got["rate"] == math.inf
    assert got["label"] == "NaN"
    assert got["blob"] == b"\xff\x00\x01"
    assert got["looks_like_bytes"] == "base64:AAE="
    assert got["escaped"] == "_str_y"
    assert got["escaped_word"] == "_str_NaN"
