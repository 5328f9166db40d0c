"""Renamed keywords: the old name still works (warning, naming the new one) until it is removed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from shadowzarr_spec import RfsBuilder, read_local_rfs, write_rfs
from shadowzarr_spec.deprecation import renamed_keyword

OLD_NAME = "chunk_index_threshold"
"""The old name of ``manifest_threshold`` (kept by `renamed_keyword` on every public entry)."""


def _listed(tmp_path: Path) -> RfsBuilder:
    """An array of 10 chunks listed one by one in a raw file."""
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(40, dtype="<i4").tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array("signal", shape=[40], data_type="<i4", chunk_shape=[4])
    for i in range(10):
        builder.add_chunk("signal", (i,), str(raw), 16 * i, 16)
    return builder


def test_the_old_threshold_keyword_warns_and_writes_the_same_manifest(tmp_path: Path) -> None:
    rfs = _listed(tmp_path).build()
    new = write_rfs(rfs, tmp_path / "new.shadowzarr", manifest_threshold=5)
    with pytest.warns(DeprecationWarning, match=f"'{OLD_NAME}' is deprecated, use 'manifest_thr"):
        old = write_rfs(rfs, tmp_path / "old.shadowzarr", **{OLD_NAME: 5})
    assert list(read_local_rfs(new).indexes) == list(read_local_rfs(old).indexes) == ["signal"]
    assert (old / "refs.json").read_bytes() == (new / "refs.json").read_bytes()


def test_both_names_at_once_are_refused(tmp_path: Path) -> None:
    rfs = _listed(tmp_path).build()
    with pytest.raises(TypeError, match=f"both '{OLD_NAME}' and 'manifest_threshold'"):
        write_rfs(rfs, tmp_path / "x", manifest_threshold=5, **{OLD_NAME: 5})
    assert not (tmp_path / "x").exists()


def test_the_decorated_function_keeps_its_name_signature_and_record() -> None:
    @renamed_keyword("old_name", "new_name")
    def scaled(value: int, *, new_name: int = 2) -> int:
        """Doc."""
        return value * new_name

    assert scaled.__name__ == "scaled"
    assert scaled.__doc__ == "Doc."
    assert scaled.__renamed_keywords__ == {"old_name": "new_name"}  # type: ignore[attr-defined]
    assert scaled(3, new_name=4) == 12
    with pytest.warns(DeprecationWarning, match="'old_name' is deprecated, use 'new_name'"):
        assert scaled(3, old_name=5) == 15  # type: ignore[call-arg]
