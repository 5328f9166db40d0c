"""A reader-only environment: shadowzarr-store's locked closure (spec, zarr, numcodecs, aiohttp,
numpy), nothing else.

A fresh virtual environment holding exactly that closure must open a version 2 reference
directory served by nginx, with templates, gen, a chunk manifest with missing chunks, a selection
and a short last chunk, without h5py, tifffile, neo, hdmf, pynwb, icechunk or virtualizarr being
installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, BytesCodec

from .closures import Target, build

if TYPE_CHECKING:
    from shadowzarr_testing import NginxServer

ABSENT = ["h5py", "tifffile", "neo", "hdmf", "pynwb", "icechunk", "virtualizarr"]
MISSING = 2**64 - 1


def _meta(shape: list[int], chunks: list[int], dtype: str, fill: int) -> str:
    return json.dumps(
        {
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {},
        }
    )


def _write_version_2_directory(www: Path, base_url: str) -> dict[str, np.ndarray]:
    """Source files and a hand-written reference directory; returns the expected values."""
    rng = np.random.default_rng(11)
    data = www / "data"
    data.mkdir()
    # gen over a raw recording after a 16-byte header; the last slab runs past the file's end.
    samples = rng.integers(-(2**15), 2**15, size=(1000, 3), dtype="<i2")
    (data / "raw.bin").write_bytes(b"\xff" * 16 + samples.tobytes())
    # interleaved records: 4 int16 channels + a 2-byte counter; the selection drops the counter.
    records = rng.integers(-500, 500, size=(300, 5), dtype="<i2")
    (data / "records.bin").write_bytes(records.tobytes())
    # a chunk manifest over 40 chunks of 25 float32, three never written
    series = rng.standard_normal(1000).astype("<f4")
    table = np.full((40, 2), MISSING, dtype=np.uint64)
    blob = bytearray(b"\0" * 64)
    for chunk in rng.permutation(40):
        if chunk in (3, 17, 39):
            continue
        table[chunk] = (len(blob), 100)
        blob += series[chunk * 25 : (chunk + 1) * 25].tobytes()
    (data / "series.bin").write_bytes(bytes(blob))
    expected_series = series.copy()
    for chunk in (3, 17, 39):
        expected_series[chunk * 25 : (chunk + 1) * 25] = -1.0

    refs_dir = www / "refs.shadowzarr"
    document = {
        "version": 2,
        "templates": {"u0": f"{base_url}/raw.bin", "u1": f"{base_url}/records.bin"},
        "refs": {
            "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
            "slabs/zarr.json": _meta([1000, 3], [400, 3], "int16", -3),
            # the last slab holds the file's last 200 rows: its reference ends at the file's end
            "slabs/c/2/0": ["{{u0}}", 16 + 2 * 2400, 1200],
            "picked/zarr.json": _meta([300, 4], [128, 4], "int16", 0),
            "picked/c/2/0": ["{{u1}}", 2 * 1280, 440],  # the last 44 records of 10 bytes
            "series/zarr.json": _meta([1000], [25], "float32", -1),
        },
        "gen": [
            {
                "key": "slabs/c/{{i}}/0",
                "url": "{{u0}}",
                "offset": "{{16 + i * 2400}}",
                "length": "2400",
                "dimensions": {"i": {"start": 0, "stop": 2, "step": 1}},
            },
            {
                "key": "picked/c/{{i}}/0",
                "url": "{{u1}}",
                "offset": "{{i * 1280}}",
                "length": "1280",
                "dimensions": {"i": [0, 1]},
            },
        ],
        "selections": {"picked": {"record_size": 10, "keep": [[0, 8]]}},
        "indexes": {"series": {"url": f"{base_url}/series.bin", "index": "index/series"}},
        # Sizes as recorded: a reference past the end of its file would be refused.
        "sources": {
            f"{base_url}/{name}": {"size": (data / name).stat().st_size}
            for name in ("raw.bin", "records.bin")
        },
    }
    refs_dir.mkdir()
    (refs_dir / "refs.json").write_text(json.dumps(document))
    index = zarr.create_array(
        store=str(refs_dir / "index" / "series"),
        shape=table.shape,
        chunks=table.shape,
        dtype="uint64",
        fill_value=MISSING,
        serializer=BytesCodec(endian="little"),
        compressors=[BloscCodec(cname="zstd", clevel=5, shuffle="shuffle", typesize=8)],
        zarr_format=3,
    )
    index[...] = table
    return {
        "slabs": samples,
        "picked": records[:, :4],
        "series": expected_series,
    }


_CHILD = textwrap.dedent(
    """
    import importlib.util
    import sys

    import numpy as np

    absent = sys.argv[3].split(",")
    present = [name for name in absent if importlib.util.find_spec(name) is not None]
    if present:
        sys.exit(f"installed although they must not be: {present}")
    import shadowzarr_store
    from shadowzarr_store import open_rfs

    root = open_rfs(sys.argv[1])
    expected = np.load(sys.argv[2])
    for name in expected.files:
        got = root[name][...]
        if not np.array_equal(got, expected[name]):
            sys.exit(f"{name}: wrong values")
    print("ok", shadowzarr_store.__version__, sorted(expected.files))
    """
)


@pytest.mark.slow
@pytest.mark.network
def test_reader_only_environment_reads_a_version_2_directory(
    nginx: NginxServer, nginx_root: Path, tmp_path: Path
) -> None:
    expected = _write_version_2_directory(nginx_root, nginx.url("data"))
    np.savez(tmp_path / "expected.npz", **expected)
    closure = build(Target("shadowzarr-store", (), "store"), tmp_path / "venv")
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(
        [
            str(closure.python),
            str(script),
            nginx.url("refs.shadowzarr"),
            str(tmp_path / "expected.npz"),
            ",".join(ABSENT),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    assert result.stdout.startswith("ok")
    uris = {entry.uri for entry in nginx.entries()}
    assert "/refs.shadowzarr/index/series/c/0/0" in uris
    assert "/data/series.bin" in uris
