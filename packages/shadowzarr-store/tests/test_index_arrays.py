"""The store reads an index array as its own zarr.json describes it, and an error leaves nothing
behind.

An index rewritten by zarr-python with chunks unlike shadowzarr's (which failed with "index
chunk holds 19200 bytes, expected 38400") reads equal over nginx, for the index's metadata once
and one index chunk per region of data chunks (nginx's own log counts them). A damaged index
chunk, read by 64 concurrent chunk reads in a child process, gives one typed error and a clean
exit: no "Task was destroyed but it is pending!", no "Event loop is closed", nothing else.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from shadowzarr_spec import MISSING_CHUNK, RfsBuilder, load_index_table, read_local_rfs, write_rfs

from shadowzarr_store import open_rfs

if TYPE_CHECKING:
    from pathlib import Path

    from shadowzarr_testing import NginxServer

CHUNKS = 4800


def _directory(root: Path, data_url: str, *, carried: bool = True) -> tuple[Path, np.ndarray]:
    values = np.arange(CHUNKS * 2, dtype="<u4")
    (root / "data.bin").write_bytes(values.tobytes())
    builder = RfsBuilder()
    builder.add_group("")
    builder.add_array(
        "a",
        shape=(CHUNKS * 2,),
        data_type="<u4",
        chunk_shape=(2,),
        fill_value=7,
        codecs=[{"name": "bytes", "configuration": {"endian": "little"}}],
    )
    for i in range(CHUNKS):
        builder.add_chunk("a", (i,), data_url, 8 * i, 8)
    carry = {} if carried else {"inline_index_bytes": 0}  # index files in refs.json, or not
    return write_rfs(builder.build(), root / "refs", **carry), values


@pytest.mark.network
def test_an_index_of_other_chunks_reads_over_http_one_index_chunk_a_region(
    nginx: NginxServer, nginx_root: Path
) -> None:
    directory, values = _directory(nginx_root, nginx.url("data.bin"))
    table = load_index_table(read_local_rfs(directory), "a")
    shutil.rmtree(directory / "index" / "a")
    index = zarr.create_array(
        store=str(directory / "index" / "a"),
        shape=table.shape,
        chunks=(600, 2),  # shadowzarr would write one chunk of 4800 entries
        dtype="uint64",
        fill_value=int(MISSING_CHUNK),
        zarr_format=3,
    )
    index[...] = table
    # a tool that rewrites the index array rewrites its entry in refs.json too: the copy of
    # the old files carried there (`IndexRef.files`) goes
    document = json.loads((directory / "refs.json").read_text())
    del document["indexes"]["a"]["files"]
    (directory / "refs.json").write_text(json.dumps(document))
    # chunks as stored: a grouped view's shard index reads the index chunks of its whole shard
    array = open_rfs(nginx.url("refs"), grouped_view=0)["a"]
    nginx.reset()
    np.testing.assert_array_equal(array[1300:1310], values[1300:1310])  # index chunk 1
    uris = sorted(entry.uri for entry in nginx.entries() if "/index/" in entry.uri)
    # beside the zarr.json, the chunk of the layout write_rfs would write (c/0/0) was read on
    # a guess and dropped: this layout is not that one
    assert uris == ["/refs/index/a/c/0/0", "/refs/index/a/c/1/0", "/refs/index/a/zarr.json"]
    nginx.reset()
    np.testing.assert_array_equal(array[1400:1500], values[1400:1500])  # the same index chunk
    np.testing.assert_array_equal(array[9000:9010], values[9000:9010])  # index chunk 7
    uris = sorted(entry.uri for entry in nginx.entries() if "/index/" in entry.uri)
    assert uris == ["/refs/index/a/c/7/0"]
    np.testing.assert_array_equal(array[:], values)


_READ_ALL = """
    import sys
    import zarr
    from shadowzarr_store import open_rfs

    array = open_rfs(sys.argv[1])["a"]
    with zarr.config.set({"async.concurrency": 64}):
        array[:]
"""


def test_an_error_in_a_wide_read_leaves_no_task_behind(tmp_path: Path) -> None:
    directory, _ = _directory(tmp_path, str(tmp_path / "data.bin"), carried=False)
    (directory / "index" / "a" / "c" / "0" / "0").write_bytes(b"not an index chunk" * 4)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_READ_ALL), str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("shadowzarr_spec.errors.ReferenceFormatError: index of 'a'"), last
    for noise in (
        "Task was destroyed",
        "Event loop is closed",
        "never retrieved",
        "Exception ignored",
        "did not finish cleanly",
    ):
        assert noise not in result.stderr, result.stderr[-3000:]
    # The one traceback is all: it ends with the error, and only its chain precedes it.
    assert result.stderr.count("Traceback (most recent call last)") <= 2
