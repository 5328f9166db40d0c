"""A group's listing names its members only: a stray key of a hostile or damaged reference file
is no member (zarr's member walk left its KeyError unretrieved when another member failed)."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
import zarr
from shadowzarr_spec import ShadowzarrError

from shadowzarr_store import RfsStore


def _array(shape: list[int]) -> str:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        }
    )


def _document(**extra: Any) -> dict[str, Any]:
    group = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
    refs = {
        "zarr.json": group,
        "a/zarr.json": _array([2]),
        "a/c/0": "base64:AQACAA==",
        "g/zarr.json": group,
        "g/b/zarr.json": _array([2]),
        "stray}/c/0": "base64:AQACAA==",
        "g/odd/c/0": "base64:AQACAA==",
        **extra,
    }
    return {"version": 1, "refs": refs}


async def _names(store: RfsStore, prefix: str) -> list[str]:
    return [name async for name in store.list_dir(prefix)]


def test_a_group_lists_only_names_that_hold_nodes() -> None:
    store = RfsStore(_document(), grouped_view=0)
    root = zarr.open_group(store, mode="r", zarr_format=3)
    assert sorted(name for name, _ in root.members()) == ["a", "g"]
    assert sorted(name for name, _ in root["g"].members()) == ["b"]
    assert root["a"][:].tolist() == [1, 2]
    # an array's listing is its keys, as before
    assert zarr.core.sync.sync(_names(store, "a")) == ["c", "zarr.json"]
    assert "stray}" not in zarr.core.sync.sync(_names(store, ""))


def test_a_failing_member_is_our_error_and_leaves_no_task_unretrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = RfsStore(_document(**{"bad/zarr.json": "{not json"}), grouped_view=0)
    root = zarr.open_group(store, mode="r", zarr_format=3)
    for _ in range(5):  # the member tasks finish in any order
        with pytest.raises(ShadowzarrError):
            dict(root.members())
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
