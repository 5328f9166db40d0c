"""Every public function that took the threshold's old name now takes ``manifest_threshold`` and
still accepts the old name (with a DeprecationWarning, see shadowzarr_spec.deprecation)."""

from __future__ import annotations

import importlib
import inspect

import pytest

OLD_NAME = "chunk_index_threshold"

ENTRY_POINTS = [
    ("shadowzarr_spec", "write_rfs"),
    ("shadowzarr_spec.io", "reference_files"),
    ("shadowzarr_spec", "VirtualArray.add_to"),
    ("shadowzarr_store", "write_rfs"),
    ("shadowzarr_hdf5", "generate_rfs"),
    ("shadowzarr_tiff", "generate_rfs_tiff"),
    ("shadowzarr_nwb", "write_virtual_nwb"),
    ("shadowzarr_nwb.write", "virtual_nwb_rfs"),
    ("shadowzarr_icechunk.virtualizarr", "manifest_store_to_rfs"),
    ("shadowzarr_icechunk.virtualizarr", "manifest_group_to_rfs"),
    ("shadowzarr_catalog", "generate_catalog"),
    ("shadowzarr", "generate_rfs"),
    ("shadowzarr", "write_rfs"),
]


@pytest.mark.parametrize(("module", "name"), ENTRY_POINTS)
def test_the_old_threshold_keyword_is_still_accepted(module: str, name: str) -> None:
    function: object = importlib.import_module(module)
    for part in name.split("."):
        function = getattr(function, part)
    assert "manifest_threshold" in inspect.signature(function).parameters  # type: ignore[arg-type]
    assert getattr(function, "__renamed_keywords__", None) == {OLD_NAME: "manifest_threshold"}
