"""A local source replaced by a file of the same size: every read after it is refused, by a
store that had read the old file and by a new one, with a cache or without; never a mix."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

import numpy as np
import pytest
from shadowzarr_spec import SourceChangedError

from shadowzarr_store import LocalCache, open_rfs_array
from shadowzarr_store.transport.blocking import RangeSource
from shadowzarr_store.transport.local import probe_local

if TYPE_CHECKING:
    from pathlib import Path

CHUNKS = 12
CHUNK = 1000
OLD = np.arange(CHUNKS * CHUNK, dtype="<i4")
NEW = OLD[::-1].copy()  # the same size, other bytes in every chunk

# Linux stamps a file's times from a clock that may tick every few milliseconds: a rewrite
# within the tick of the version a store checked keeps its ctime (see the store README).
TICK = 0.05


def _document(path: Path, recorded: bool) -> dict:
    array = json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [CHUNKS * CHUNK],
            "data_type": "int32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [CHUNK]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        }
    )
    document: dict = {
        "version": 1,
        "refs": {
            "zarr.json": '{"zarr_format":3,"node_type":"group"}',
            "v/zarr.json": array,
            **{f"v/c/{i}": [str(path), i * CHUNK * 4, CHUNK * 4] for i in range(CHUNKS)},
        },
    }
    if recorded:
        document["sources"] = {str(path): probe_local(str(path)).to_json()}
    return document


def _replace(path: Path, how: str) -> None:
    """Put NEW's bytes where OLD's were: by a rename (a new inode) or in place; with the old
    modification time put back where ``how`` says so (the ctime moves all the same)."""
    time.sleep(TICK)
    before = path.stat()
    if how.startswith("rename"):
        spare = path.with_suffix(".new")
        spare.write_bytes(NEW.tobytes())
        os.replace(spare, path)
    else:
        with path.open("r+b") as stream:
            stream.write(NEW.tobytes())
    if how.endswith("same mtime"):
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert after.st_size == before.st_size
    assert (after.st_mtime_ns == before.st_mtime_ns) == how.endswith("same mtime")


def _each_chunk(array) -> list[object]:
    """Every chunk read on its own: its values, or the error raised."""
    out: list[object] = []
    for i in range(CHUNKS):
        try:
            out.append(array[i * CHUNK : (i + 1) * CHUNK])
        except SourceChangedError as exc:
            out.append(exc)
    return out


def _all_refused(outcomes: list[object], path: Path) -> None:
    for i, outcome in enumerate(outcomes):
        assert isinstance(outcome, SourceChangedError), f"chunk {i} read after the replacement"
        assert str(path) in str(outcome)


REPLACEMENTS = ["rename", "rename same mtime", "in place", "in place same mtime"]


@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "local cache"])
@pytest.mark.parametrize("how", REPLACEMENTS)
def test_a_long_lived_store_refuses_every_read_after_a_same_size_replacement(
    tmp_path: Path, how: str, cached: bool
) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(OLD.tobytes())
    options = {"local_cache": LocalCache(tmp_path / "cache")} if cached else {}
    document = _document(path, recorded=True)
    array = open_rfs_array(document, "v", **options)
    np.testing.assert_array_equal(array[: CHUNKS * CHUNK // 2], OLD[: CHUNKS * CHUNK // 2])
    _replace(path, how)
    _all_refused(_each_chunk(array), path)
    # A new store, over the same cache: refused too, by the recorded identity.
    again = open_rfs_array(document, "v", **options)
    _all_refused(_each_chunk(again), path)


@pytest.mark.parametrize("how", REPLACEMENTS)
def test_without_a_recorded_identity_a_store_keeps_to_the_file_it_first_read(
    tmp_path: Path, how: str
) -> None:
    """References without ``sources``: a store holds to the file it read first; a new store
    reads the new file whole, never old cached rows with it."""
    path = tmp_path / "data.bin"
    path.write_bytes(OLD.tobytes())
    cache = LocalCache(tmp_path / "cache")
    array = open_rfs_array(_document(path, recorded=False), "v", local_cache=cache)
    np.testing.assert_array_equal(array[:], OLD)
    _replace(path, how)
    _all_refused(_each_chunk(array), path)
    fresh = open_rfs_array(_document(path, recorded=False), "v", local_cache=cache)
    np.testing.assert_array_equal(fresh[:], NEW)


def test_unchecked_reads_never_fill_the_cache_under_the_recorded_identity(
    tmp_path: Path,
) -> None:
    """``validate_sources=False`` reads whatever the file holds; those bytes must not become
    rows a checking store then serves as the recorded file's."""
    path = tmp_path / "data.bin"
    path.write_bytes(OLD.tobytes())
    document = _document(path, recorded=True)
    cache = LocalCache(tmp_path / "cache")
    _replace(path, "in place same mtime")
    unchecked = open_rfs_array(document, "v", local_cache=cache, validate_sources=False)
    np.testing.assert_array_equal(unchecked[:], NEW)
    checked = open_rfs_array(document, "v", local_cache=cache)
    _all_refused(_each_chunk(checked), path)


@pytest.mark.parametrize("how", REPLACEMENTS)
def test_a_range_source_refuses_a_file_replaced_while_a_generator_reads_it(
    tmp_path: Path, how: str
) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(OLD.tobytes())
    with RangeSource(path) as source:
        assert source.fetch_many([(0, 16)]) == [OLD.tobytes()[:16]]
        _replace(path, how)
        with pytest.raises(SourceChangedError, match="changed since this store first read it"):
            source.fetch_many([(16, 16)])
